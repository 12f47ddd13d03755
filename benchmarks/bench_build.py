"""Time the book build as the README runs it, and each chapter on one core.

    python benchmarks/bench_build.py            # clean build, no-change rebuild, chapters
    python benchmarks/bench_build.py --no-clean # skip the clean build
    python benchmarks/bench_build.py --export   # also the explorer export, 1 and 2 workers

Targets (issue "measure every speed claim"): clean build with every chapter
executed <= 180 s on this 2-core machine; a rebuild with no change <= 5 s;
slowest chapter <= 20 s on one core (scripts/chapter_budget.py).
A clean build is `make clean && make book`: it deletes _build/ (the HTML and
the execution cache), _vendor/ and _generated/, so it includes `npm ci`, the
explorer's export, the slide decks and the handouts.

Each row gives wall seconds, CPU seconds (user + system of the command and
everything it started) and the load average before and after: on a machine
shared with other jobs the wall time stretches while the CPU time holds
better, and the load tells which case a row is.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str]) -> str:
    """Run ``cmd``; its row cells: wall s | CPU s | load before -> after."""
    load, cpu, t = os.getloadavg()[0], _children_cpu(), time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "MHACOURSE_BUILD": "1"})
    return (f"{time.perf_counter() - t:.1f} | {_children_cpu() - cpu:.1f} | "
            f"{load:.1f} -> {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-clean", action="store_true")
    ap.add_argument("--export", action="store_true",
                    help="also time scripts/export_explorer.py with 1 and 2 workers")
    args = ap.parse_args()
    build = [str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"]
    print(f"# book build times; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| what | wall s | CPU s | load average | target |\n|---|---|---|---|---|")
    if not args.no_clean:
        subprocess.run(["make", "clean"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"| clean `make book`, every chapter executed | {timed(['make', 'book'])} "
              "| <= 180 |", flush=True)
    print(f"| rebuild, nothing changed (jupyter-book) | {timed(build)} | <= 5 |", flush=True)
    slides = [str(BIN / "python"), "scripts/build_slides.py"]
    print(f"| slide decks | {timed(slides)} | |", flush=True)
    if args.export:
        with tempfile.TemporaryDirectory() as tmp:
            for workers in (1, 2):
                export = [str(BIN / "python"), "scripts/export_explorer.py",
                          f"{tmp}/{workers}", "--workers", str(workers)]
                print(f"| explorer export, {workers} worker{'s' * (workers > 1)} | "
                      f"{timed(export)} | |", flush=True)
    subprocess.run([str(BIN / "python"), "scripts/chapter_budget.py"], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
