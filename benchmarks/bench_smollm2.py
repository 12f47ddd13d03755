"""How fast and how large is SmolLM2-135M through the course's code, from
where a learner sits?

    python benchmarks/bench_smollm2.py [--chapter] [--write]

1. **First load on a fresh machine**: the GGUF file read and dequantized
   into an empty cache folder (a temporary one: the build's cache is left
   alone), in a fresh process, wall time and peak memory.
2. **Load from the cache** (what chapter 17 does after the build), in a
   fresh process.
3. **A forward pass** of 4 x 81 tokens and of 1 x 64 tokens on ONE thread,
   median of 5 after one warm-up.
4. With ``--chapter``: chapter 17 executed as a learner's kernel runs it,
   on one core (``scripts/chapter_budget.py``): seconds and peak MB
   (targets <= 60 s, <= 1.5 GB).

Prints the figures with the load average; ``--write`` also writes them to
``benchmarks/results/smollm2.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
t = time.perf_counter()
import torch
torch.set_num_threads(1)
from mhacourse import real_lm
lm = real_lm.load_smollm2(cache=sys.argv[1] if sys.argv[1] != "-" else None)
load_s = time.perf_counter() - t
out = {"load_s": load_s, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if sys.argv[2] == "forward":
    g = torch.Generator().manual_seed(0)
    for B, L in ((4, 81), (1, 64)):
        ids = torch.randint(17, lm.cfg.vocab, (B, L), generator=g)
        lm.forward(ids)  # warm-up
        times = []
        for _ in range(5):
            t = time.perf_counter()
            lm.forward(ids)
            times.append(time.perf_counter() - t)
        out[f"forward_{B}x{L}_s"] = sorted(times)[2]
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(cache: str, what: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, cache, what], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chapter", action="store_true", help="also time chapter 17")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    res = {"machine": platform.processor() or platform.machine(),
           "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        first = child(tmp, "load")
        res["first_load_s"], res["first_load_peak_mb"] = first["load_s"], first["peak_mb"]
        res["cache_mb"] = sum(p.stat().st_size for p in Path(tmp).rglob("*")) / 2**20
    cached = child("-", "forward")
    res.update(cached_load_s=cached["load_s"], peak_mb=cached["peak_mb"],
               **{k: v for k, v in cached.items() if k.startswith("forward")})
    if args.chapter:
        out = subprocess.run([sys.executable, "scripts/chapter_budget.py",
                              "chapters/17_induction_in_a_real_lm.md"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        secs, mb = out.stdout.strip().splitlines()[-1].split()[1:3]
        res.update(chapter_s=float(secs), chapter_peak_mb=float(mb))
    res["load_after"] = os.getloadavg()[0]
    for k, v in res.items():
        print(f"{k:22s} {v:.2f}" if isinstance(v, float) else f"{k:22s} {v}")
    if args.write:
        (ROOT / "benchmarks" / "results" / "smollm2.json").write_text(
            json.dumps({k: round(v, 3) if isinstance(v, float) else v
                        for k, v in res.items()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
