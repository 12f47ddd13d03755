"""Time the book build as the README runs it, and each chapter on one core.

    python benchmarks/bench_build.py            # clean build, no-change rebuild, chapters
    python benchmarks/bench_build.py --no-clean # skip the clean build
    python benchmarks/bench_build.py --export   # also the explorer export, 1 and 2 workers
    python benchmarks/bench_build.py --fresh    # `make book` in a fresh clone, from nothing

``--fresh`` is the newcomer's build: a ``git clone`` of this checkout into a
temporary folder, no ``.venv``, empty pip, uv, npm and explorer-export
caches (each pointed at a new folder), then the README's ``make book``.
Every line the build prints is written to ``--log`` with the seconds since
the start, and the stage table `make book` ends with (scripts/stage_times.py:
when each stage started and ended) is printed again.

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
import shutil
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


def make_stage_table(lines: list[str]) -> str:
    """The stage table `make book` printed at its end (scripts/stage_times.py),
    from its heading to its total row."""
    try:
        at = next(i for i, line in enumerate(lines) if line.startswith("Stages of this build"))
        end = next(j for j in range(at, len(lines)) if lines[j].startswith("total"))
    except StopIteration:
        return "(no stage table: the build stopped before make printed it)"
    return "\n".join(lines[at:end + 1])


def fresh_build(log: Path, target: str = "book") -> int:
    """``make TARGET`` in a fresh clone with empty caches; each line of its
    output goes to ``log`` with the seconds since the start. Returns its exit
    status; prints the stage table and the load average before and after."""
    tmp = Path(tempfile.mkdtemp(prefix="mha-fresh-"))
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "PIP_CACHE_DIR": str(tmp / "pip-cache"),
           "UV_CACHE_DIR": str(tmp / "uv-cache"), "npm_config_cache": str(tmp / "npm-cache"),
           "MHACOURSE_CACHE": str(tmp / "mhacourse-cache")}
    load, t = os.getloadavg(), time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines: list[tuple[float, str]] = []
    with open(log, "w") as f, subprocess.Popen(
            ["make", target], cwd=clone, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout:
            stamp = time.perf_counter() - t
            lines.append((stamp, line.rstrip("\n")))
            f.write(f"{stamp:7.1f} {line}")
            f.flush()
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"# fresh clone `make {target}`: rc={proc.returncode}, {took:.0f} s wall, "
          f"{user + system:.0f} s CPU (user {user:.0f} + sys {system:.0f}: make and "
          "every process it waited for); "
          f"load average (1, 5, 15 min) before {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
          f"after {' '.join(f'{x:.1f}' for x in os.getloadavg())}; log: {log}\n")
    print(make_stage_table([line for _, line in lines]))
    shutil.rmtree(tmp, ignore_errors=True)
    return proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-clean", action="store_true")
    ap.add_argument("--export", action="store_true",
                    help="also time scripts/export_explorer.py with 1 and 2 workers")
    ap.add_argument("--fresh", action="store_true",
                    help="only `make book` in a fresh clone with empty caches, from nothing")
    ap.add_argument("--log", type=Path, default=Path(tempfile.gettempdir()) / "fresh-book.log",
                    help="where --fresh writes the timestamped log (default: %(default)s)")
    args = ap.parse_args()
    if args.fresh:
        raise SystemExit(fresh_build(args.log))
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
