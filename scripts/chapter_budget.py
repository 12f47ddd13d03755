"""Run chapters as a learner's kernel would, on ONE CPU core, and report each
chapter's execution time and peak memory against the budget (<= 20 s, <= 2 GB,
Binder's size).

    python scripts/chapter_budget.py                 # every chapter
    python scripts/chapter_budget.py chapters/01_one_head.md
    python scripts/chapter_budget.py --check         # exit 1 if over budget

Each chapter runs in a fresh kernel process pinned to core 0 with one thread.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S, BUDGET_MB = 20.0, 2048.0
#: Chapters with a budget of their own: chapter 17 runs a 135M-parameter
#: model (its issue sets <= 60 s on one core and <= 1.5 GB, Binder's margin).
OWN_BUDGET = {"17_induction_in_a_real_lm": (60.0, 1536.0)}

CHILD = r"""
import os, resource, sys, time
import jupytext, nbclient
nb = jupytext.read(sys.argv[1])
t = time.perf_counter()
nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                        resources={"metadata": {"path": os.path.dirname(sys.argv[1])}}).execute()
print(f"{time.perf_counter() - t:.2f} "
      f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f}")
"""


def run(path: Path) -> tuple[float, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    cmd = [sys.executable, "-c", CHILD, str(path)]
    if hasattr(os, "sched_setaffinity"):
        cmd = ["taskset", "-c", "0", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{path.name} failed:\n{out.stderr[-3000:]}")
    secs, mb = out.stdout.split()[-2:]
    return float(secs), float(mb)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("chapters", nargs="*")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    paths = [Path(p) for p in args.chapters] or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
    print(f"{'chapter':<28} {'seconds (1 core)':>16} {'peak MB':>9}  budget")
    over = 0
    for p in paths:
        secs, mb = run(p.resolve())
        budget_s, budget_mb = OWN_BUDGET.get(p.stem, (BUDGET_S, BUDGET_MB))
        ok = secs <= budget_s and mb <= budget_mb
        over += not ok
        print(f"{p.stem:<28} {secs:>16.1f} {mb:>9.0f}  {'ok' if ok else 'OVER'}")
    return 1 if (args.check and over) else 0


if __name__ == "__main__":
    sys.exit(main())
