"""Kernels for the build's chapters, forked from one process that has
already imported torch (``scripts/execute_chapters.py`` starts it).

    python scripts/kernel_zygote.py --serve SOCKET   # the zygote
    python scripts/kernel_zygote.py -f CONNECTION    # a kernel (the kernelspec's argv)

Every chapter runs in a kernel of its own, and each kernel used to spend
about 2.7 of its CPU seconds importing the same libraries (torch 1.4 s,
ipykernel, ipywidgets, matplotlib, numpy: ``python -X importtime``): a
fifth of the chapters' CPU time in a build from nothing. Here one process,
the zygote, imports them once and waits on a Unix socket. A kernel launch
(the kernelspec :func:`kernelspec` writes, found first through
``JUPYTER_PATH``) is this script as a small client: it sends its working
folder, environment and connection file; the zygote forks, and the child
becomes an ordinary ipykernel in that folder and environment. The client
stays as the kernel's stand-in for jupyter_client: it forwards the signals
it gets (an interrupt is SIGINT) and exits with the kernel's status; if the
client is killed, the zygote kills the kernel.

What a forked kernel shares with the zygote is only what importing did: no
thread, no zmq context, no figure. The zygote sets ``MPLBACKEND`` to the
inline backend before importing matplotlib, as ipykernel would before the
chapter imports it, and does not import ``matplotlib.pyplot`` (that would
choose the backend).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

#: Imported once by the zygote: what every chapter's kernel imports.
PRELOAD = ("numpy", "torch", "matplotlib", "ipywidgets", "ipykernel.kernelapp",
           "mhacourse")


def kernelspec(folder: Path, socket_path: Path) -> Path:
    """Write a ``python3`` kernelspec under ``folder/kernels`` whose kernel
    is this script's client of the zygote at ``socket_path``; put ``folder``
    first in ``JUPYTER_PATH`` to use it. Returns the kernelspec's folder."""
    spec = Path(folder) / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(Path(__file__).resolve()), "--socket",
                 str(socket_path), "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel, forked)", "language": "python",
        "interrupt_mode": "signal"}))
    return spec


@contextlib.contextmanager
def forked_kernels(ready_within: float = 120.0):
    """Within: every ``python3`` kernel this process (and its threads)
    starts is forked from a zygote (:func:`serve`) started here, through
    ``JUPYTER_PATH``; after, the zygote is stopped and the environment as it
    was. Yields True, or False (a note printed) where the zygote did not
    start: the kernels are then the usual ones."""
    folder = Path(tempfile.mkdtemp(prefix="mha-zygote-"))
    sock = folder / "zygote.sock"
    kernelspec(folder, sock)
    zygote = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve",
                               str(sock)], stdout=subprocess.PIPE, text=True)
    ready = _ready(zygote, ready_within)
    old = os.environ.get("JUPYTER_PATH")
    if ready:
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(folder), old]))
    else:
        print("kernel_zygote: the zygote did not start; each chapter imports its "
              "libraries itself", flush=True)
    try:
        yield ready
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
        zygote.terminate()
        try:
            zygote.wait(timeout=10)
        except subprocess.TimeoutExpired:
            zygote.kill()
            zygote.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _ready(zygote: subprocess.Popen, seconds: float) -> bool:
    """Whether ``zygote`` said "ready" within ``seconds``."""
    chosen = selectors.DefaultSelector()
    chosen.register(zygote.stdout, selectors.EVENT_READ)
    ok = bool(chosen.select(timeout=seconds)) and zygote.stdout.readline().strip() == "ready"
    chosen.close()
    return ok


# ---------------------------------------------------------------- the zygote

def _child(request: dict) -> None:
    """In the forked child: become an ipykernel for ``request``."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = ""  # as `python -m ipykernel_launcher` has it: the working folder
    sys.argv = ["ipykernel_launcher", "-f", request["connection_file"], *request["args"]]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=sys.argv[1:])


def serve(socket_path: Path) -> None:
    """Import :data:`PRELOAD`, then fork a kernel for each client, until
    SIGTERM or until the process that started it ends. One thread: children
    are reaped in the loop."""
    parent = os.getppid()
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in PRELOAD:
        __import__(name)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(socket_path))
    server.listen(16)
    print("ready", flush=True)
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    kernels: dict[int, socket.socket] = {}  # pid -> its client
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while not stop and os.getppid() == parent:
        for key, _ in selector.select(timeout=0.1):
            if key.fileobj is server:
                conn, _ = server.accept()
                request = _request(conn)
                if request is None:  # not a client of ours, or one that said nothing
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    server.close()
                    conn.close()
                    try:
                        _child(request)
                    finally:
                        os._exit(0)
                conn.sendall(f"{pid}\n".encode())
                kernels[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            else:  # a client's line: a signal to pass on, or nothing (it died)
                pid, data = key.data, key.fileobj.recv(64)
                if not data:
                    selector.unregister(key.fileobj)
                    _kill(pid)
                    continue
                for line in data.decode().split():
                    _kill(pid, int(line))
        while kernels:  # reap every kernel that ended; tell its client
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = kernels.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass  # its client is gone
                if conn in (k.fileobj for k in selector.get_map().values()):
                    selector.unregister(conn)
                conn.close()
    for pid in kernels:
        _kill(pid)
    server.close()


def _request(conn: socket.socket, seconds: float = 5.0) -> dict | None:
    """A client's request (one JSON line: ``cwd``, ``env``,
    ``connection_file``, ``args``), read within ``seconds`` so that a
    connection that sends nothing cannot stop the zygote; ``None`` for
    anything else."""
    conn.settimeout(seconds)
    try:
        request = json.loads(conn.makefile("r").readline())
    except (OSError, ValueError):
        return None
    conn.settimeout(None)
    keys = {"cwd": str, "env": dict, "connection_file": str, "args": list}
    if not isinstance(request, dict) or not all(
            isinstance(request.get(k), t) for k, t in keys.items()):
        return None
    return request


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------- the client

def client(socket_path: Path, connection_file: str, args: list[str]) -> int:
    """Ask the zygote for a kernel (``args``: the kernel's other options,
    such as nbclient's ``--HistoryManager.hist_file=:memory:``); stand in
    for it until it ends."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(socket_path))
        conn.sendall((json.dumps({"cwd": os.getcwd(), "env": dict(os.environ),
                                  "connection_file": connection_file, "args": args})
                      + "\n").encode())
        lines = conn.makefile("r")
        pid = lines.readline().strip()  # the kernel's pid: it runs
    except OSError as e:
        pid, why = "", f"{type(e).__name__}: {e.strerror or e}"
    else:
        why = "it closed the connection"
    if not pid.isdigit():
        print(f"kernel_zygote: no kernel from the zygote at {socket_path} ({why}); "
              "execute the chapters with scripts/execute_chapters.py --no-zygote",
              file=sys.stderr)
        return 1

    def forward(sig, _frame):
        try:
            conn.sendall(f"{sig}\n".encode())
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        line = lines.readline()
        if not line:  # the zygote went away
            return 1
        if line.startswith("exit "):
            return int(line.split()[1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--serve", type=Path, help="be the zygote, listening on this socket")
    ap.add_argument("--socket", type=Path, help="the zygote's socket (a kernel's client)")
    ap.add_argument("-f", dest="connection_file", help="the kernel's connection file")
    args, kernel_args = ap.parse_known_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.socket is None or args.connection_file is None:
        ap.error("a kernel needs --socket (the zygote's) and -f (its connection file); "
                 "the zygote needs --serve")
    return client(args.socket, args.connection_file, kernel_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
