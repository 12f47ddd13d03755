"""The benchmarks' and tests' local server (scripts/site_browser.serve)."""
from __future__ import annotations

import socket
import struct
import time
import urllib.request

from site_browser import serve


def test_a_download_cut_short_is_not_a_traceback(tmp_path, capsys):
    """A browser that stops reading a file (a page closed mid-download) left
    a ConnectionResetError traceback on the terminal of every benchmark; the
    server says nothing of it, and goes on serving."""
    (tmp_path / "big.bin").write_bytes(b"\0" * 20_000_000)
    (tmp_path / "index.html").write_text("hi")
    with serve(tmp_path) as base:
        host, port = base.split("//")[1].split(":")
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.0 200")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, as a browser's cancelled request
        time.sleep(0.5)
        assert urllib.request.urlopen(base + "/index.html").read() == b"hi"
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
