"""Run a command on a busy machine: start N CPU-bound busy loops, run the
command beside them, stop the loops, and exit with the command's status.

    python scripts/busy.py 2 -- bash .ci/run
    python scripts/busy.py 2 -- .venv/bin/python -m pytest tests/test_train_live.py

A test that passes on a quiet machine and fails here assumes a timing (a
fixed sleep, a timeout too short for a loaded CPU), not a fault of the
product (issue 49). The loops are plain processes spinning on arithmetic, so
they take whole cores as another user's build would. The machine's load
average before, during (at the end) and after is printed, so that a time
taken here can be told apart from a quiet one.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time


def _spin(stop) -> None:
    """Take one core until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1_103_515_245 + 12_345) % 2_147_483_648


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("loops", type=int, help="how many busy loops (e.g. 2)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if not 0 <= args.loops <= 64:
        parser.error(f"loops must be 0..64; got {args.loops}")
    stop = mp.Event()
    loops = [mp.Process(target=_spin, args=(stop,), daemon=True)
             for _ in range(args.loops)]
    print(f"busy: {args.loops} loops; load before: {_load()}", flush=True)
    for p in loops:
        p.start()
    start = time.monotonic()
    try:
        code = subprocess.call(command)
    finally:
        during = _load()
        stop.set()
        for p in loops:
            p.join(5)
            if p.is_alive():
                p.kill()
    print(f"busy: the command took {time.monotonic() - start:.0f} s beside "
          f"{args.loops} loops and exited {code}; load at its end: {during}",
          flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
