"""Incremental decoding with and without a key/value cache, on ONE thread.

    python benchmarks/bench_kv_cache.py            # writes results/kv_cache_cpu.json
    python benchmarks/bench_kv_cache.py --quick    # small sizes, results/kv_cache_cpu_quick.json

For a random decoder-only model (mhacourse.kv_cache.random_causal_lm) it
times greedy generation of n new tokens after an 8-token prompt, once with
the cache (one token per step) and once recomputing the whole sequence at
every step, for growing n, with multi-head (h_kv = h) and grouped-query
(h_kv < h) attention. It checks that both produce the same tokens, and
measures the cache's bytes per token against chapter 12's formula
(mhacourse.gqa.kv_cache_per_token). Timing as in the other benchmarks
(common.py): warm-up, interleaved rounds, medians, process CPU time on one
thread; the JSON records the machine and the load average at start and end.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as bench  # noqa: E402
from mhacourse import gqa  # noqa: E402
from mhacourse.kv_cache import forward_cached, generate, random_causal_lm  # noqa: E402

HERE = Path(__file__).resolve().parent
FULL = dict(d_model=128, h=8, n_layers=2, vocab=256, prompt=8,
            n_new=(16, 32, 64, 128, 256), h_kv=(8, 2), budget_s=3.0)
QUICK = dict(d_model=64, h=4, n_layers=2, vocab=64, prompt=8,
             n_new=(8, 16, 32), h_kv=(4, 1), budget_s=0.3)


def run(cfg: dict) -> dict:
    bench.set_threads(1)
    clock = bench.default_clock()
    info = dict(bench.machine_info())
    t_start = time.perf_counter()
    rows, memory = [], []
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, cfg["vocab"], (1, cfg["prompt"]), generator=g)
    for h_kv in cfg["h_kv"]:
        max_len = cfg["prompt"] + max(cfg["n_new"])
        model = random_causal_lm(cfg["vocab"], cfg["d_model"], cfg["h"], h_kv,
                                 cfg["n_layers"], max_len, seed=0)
        # memory: fill the caches with max_len tokens, count their bytes
        caches = model.new_caches(1, max_len)
        with torch.no_grad():
            forward_cached(model, torch.zeros(1, max_len, dtype=torch.long), caches)
        measured = sum(c.nbytes_used() for c in caches) / max_len
        formula = gqa.kv_cache_per_token(cfg["n_layers"], h_kv, model.d_k,
                                         bytes_per_number=4)
        memory.append({"h": cfg["h"], "h_kv": h_kv, "tokens": max_len,
                       "bytes_per_token_measured": measured,
                       "bytes_per_token_formula": formula})
        for n in cfg["n_new"]:
            fns = {"cache": lambda n=n: generate(model, prompt, n, use_cache=True),
                   "recompute": lambda n=n: generate(model, prompt, n,
                                                     use_cache=False)}
            same = torch.equal(fns["cache"](), fns["recompute"]())
            if not same:
                raise SystemExit(f"h_kv = {h_kv}, n = {n}: the cached and the "
                                 "recomputed generation differ")
            t = bench.time_interleaved(fns, cell_budget_s=cfg["budget_s"],
                                       min_reps=3, max_reps=9, clock=clock)
            ratio, lo, hi = bench.paired_ratio(t["recompute"], t["cache"])
            rows.append({"h_kv": h_kv, "n_new": n,
                         "cache_s": t["cache"].median,
                         "recompute_s": t["recompute"].median,
                         "speedup": ratio, "speedup_q1": lo, "speedup_q3": hi,
                         "reps": [t["cache"].n, t["recompute"].n],
                         "same_tokens": same})
            print(f"h_kv={h_kv:>2} n={n:>4}: cache {t['cache'].median * 1e3:8.1f} ms, "
                  f"recompute {t['recompute'].median * 1e3:8.1f} ms, "
                  f"speed-up {ratio:5.2f}x", flush=True)
    return {"about": __doc__.strip().splitlines()[0],
            "config": {k: list(v) if isinstance(v, tuple) else v
                       for k, v in cfg.items()},
            "machine": info, "threads": 1, "clock": bench.clock_note(clock),
            "load average (1/5/15 min) at end": bench.load_avg(),
            "seconds": time.perf_counter() - t_start,
            "rows": rows, "memory": memory}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    name = "kv_cache_cpu_quick.json" if args.quick else "kv_cache_cpu.json"
    out = args.out or HERE / "results" / name
    result = run(QUICK if args.quick else FULL)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} ({result['seconds']:.0f} s; load at start "
          f"{result['machine']['load average (1/5/15 min) at start']}, at end "
          f"{result['load average (1/5/15 min) at end']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
