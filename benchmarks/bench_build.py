"""Time the book build as the README runs it, and each chapter on one core.

    python benchmarks/bench_build.py            # clean build, no-change rebuild, chapters
    python benchmarks/bench_build.py --no-clean # skip the clean build

Targets (issue "measure every speed claim"): clean build with every chapter
executed <= 180 s on this 2-core machine; a rebuild with no change <= 5 s;
slowest chapter <= 20 s on one core (scripts/chapter_budget.py).
A clean build deletes _build/ (the HTML and the execution cache).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "MHACOURSE_BUILD": "1"})
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-clean", action="store_true")
    args = ap.parse_args()
    build = [str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"]
    print(f"# book build times; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| what | seconds | target |\n|---|---|---|")
    if not args.no_clean:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
        print(f"| clean build, every chapter executed | {timed(build):.1f} | <= 180 |")
    print(f"| rebuild, nothing changed | {timed(build):.1f} | <= 5 |")
    slides = [str(BIN / "python"), "scripts/build_slides.py"]
    print(f"| slide decks | {timed(slides):.1f} | |")
    sys.stdout.flush()
    subprocess.run([str(BIN / "python"), "scripts/chapter_budget.py"], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
