"""scripts/kernel_zygote.py: the build's kernels, forked from one process
that imported torch once. A forked kernel must be an ordinary kernel to the
chapter (its folder, its environment, the inline figures), obey an
interrupt, and leave nothing running when its client or the build ends."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_cache.executors.utils import single_nb_execution
from jupyter_client import KernelManager

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import kernel_zygote  # noqa: E402  (scripts/kernel_zygote.py)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (ended, not yet reaped) is not running
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def wait_until(test, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return True
        time.sleep(0.05)
    return test()


def notebook(*sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def test_a_forked_kernel_runs_a_chapter_as_a_fresh_one_would(tmp_path, monkeypatch):
    """Its folder is the notebook's, its environment the launcher's, sys.path
    starts with the folder, figures are inline PNGs; torch was imported
    before (the zygote's), and the kernel is not the zygote itself."""
    monkeypatch.setenv("MHA_ZYGOTE_CHECK", "passed on")
    nb = notebook(
        "import os, sys; print(os.getcwd()); print(os.environ['MHA_ZYGOTE_CHECK']);"
        " print(repr(sys.path[0]))",
        "print('torch' in sys.modules, 'matplotlib.pyplot' in sys.modules)",
        "import matplotlib.pyplot as plt; plt.plot([0, 1]); plt.show()",
    )
    with kernel_zygote.forked_kernels() as ready:
        assert ready, "the zygote did not start"
        result = single_nb_execution(nb, cwd=str(tmp_path), timeout=60, allow_errors=False,
                                     meta_override=True)
    assert not result.err, result.exc_string
    first, second, third = (c.outputs for c in nb.cells)
    assert first[0].text.split("\n")[:3] == [str(tmp_path), "passed on", "''"]
    # torch came from the zygote; pyplot was not imported there (it would
    # have chosen the figure backend before the kernel could)
    assert second[0].text.strip() == "True False"
    assert any("image/png" in o.get("data", {}) for o in third), third
    assert "JUPYTER_PATH" not in os.environ or "mha-zygote" not in os.environ["JUPYTER_PATH"]


def test_an_interrupt_reaches_the_kernel_and_nothing_is_left_running():
    """jupyter_client interrupts by signalling the client; the kernel gets
    the KeyboardInterrupt. Killing the client (as a shutdown that timed out
    does) kills the kernel; stopping the zygote leaves no process."""
    with kernel_zygote.forked_kernels() as ready:
        assert ready
        km = KernelManager(kernel_name="python3")
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        got = []
        kc.execute_interactive("import os; print(os.getpid())", timeout=30,
                               output_hook=lambda m: got.append(m["content"].get("text", "")))
        kernel = int("".join(got).strip())
        assert kernel != km.provisioner.process.pid and alive(kernel)
        msg_id = kc.execute("import time; print('asleep', flush=True); time.sleep(60)")
        while True:  # the cell runs (an idle ipykernel ignores SIGINT)
            msg = kc.get_iopub_msg(timeout=20)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                    and "asleep" in msg["content"]["text"]):
                break
        t = time.monotonic()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=20)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - t < 10
        kc.stop_channels()
        os.kill(km.provisioner.process.pid, signal.SIGKILL)  # the client, killed
        km.provisioner.process.wait()
        assert wait_until(lambda: not alive(kernel)), "the kernel outlived its client"
        km.cleanup_resources()


def test_the_zygote_ends_with_the_process_that_started_it(tmp_path):
    """A build stopped hard (its process killed) leaves no zygote behind."""
    script = textwrap.dedent(f"""
        import subprocess, sys
        z = subprocess.Popen([sys.executable, {str(ROOT / 'scripts' / 'kernel_zygote.py')!r},
                              "--serve", {str(tmp_path / 'z.sock')!r}],
                             stdout=subprocess.PIPE, text=True)
        assert z.stdout.readline().strip() == "ready"
        print(z.pid, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    zygote = int(out.stdout.split()[-1])
    assert wait_until(lambda: not alive(zygote), 10), "the zygote outlived its parent"


def test_a_connection_that_says_nothing_or_nonsense_does_not_stop_the_zygote():
    """The zygote reads a request within 5 s and drops what is not one; the
    next kernel still starts and runs a cell."""
    with kernel_zygote.forked_kernels() as ready:
        assert ready
        sock = Path(os.environ["JUPYTER_PATH"].split(os.pathsep)[0]) / "zygote.sock"
        silent, rude = (socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2))
        silent.connect(str(sock))  # connects, sends nothing, stays open
        rude.connect(str(sock))
        rude.sendall(b"not a request\n")
        rude.settimeout(30)
        assert rude.recv(64) == b"", "a request that is not JSON was answered"
        km = KernelManager(kernel_name="python3")
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            got = []
            kc.execute_interactive("print(6 * 7)", timeout=30, output_hook=lambda m: got.append(
                m["content"].get("text", "")))
            assert "".join(got).strip() == "42"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            silent.close()
            rude.close()


@pytest.mark.parametrize("argv, code, words", [
    (["--serve"], 2, "expected one argument"),
    ([], 2, "a kernel needs --socket"),
    (["--socket", "/nonexistent/zygote.sock", "-f", "k.json"], 1, "no kernel from the zygote"),
])
def test_bad_arguments_get_one_line(argv, code, words):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "kernel_zygote.py"), *argv],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == code and words in out.stderr and "Traceback" not in out.stderr
    assert len([line for line in out.stderr.splitlines() if words in line]) == 1
