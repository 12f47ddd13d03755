"""How long one full circuit read-out takes in Python, on ONE thread.

    python benchmarks/bench_circuits.py     # writes results/circuits.json

A read-out is :func:`mhacourse.circuits.core._circuits_core` on a model's weights:
Q/K/V-composition between every pair of layer-1 and layer-2 heads, their
random baseline, each head's positional band, copying proxy and
prefix-matching score, from the heads' low-rank factors; then the roles the
page also shows (:func:`~mhacourse.tiny_model.step._evaluate_with`'s
statistics on the held-out set are *not* part of it: they come with the
accuracy). Issue 31's target: <= 50 ms at h 16, d_k 16. For comparison, the
readable form (one explicit (d_model, d_model) product per quantity,
float64, with eigenvalues for the copying score) on the same weights.
Median of interleaved rounds (``common.time_interleaved``), CPU time.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as bench  # noqa: E402  (benchmarks/common.py)
from mhacourse import circuits as C  # noqa: E402
from mhacourse import tiny_model as tm  # noqa: E402
from mhacourse.tiny_model import step as st  # noqa: E402

SIZES = ((16, 16), (4, 16), (1, 64))  # (h, d_k); issue 31's target at (16, 16)
TARGET_MS = 50.0


def readable(model) -> None:
    """Every read-out with the explicit, checked functions (float64)."""
    h = model.cfg.h
    for kind in C.KINDS:
        C.composition_scores(model, kind)
        C.composition_baseline(model.cfg.d_model, model.cfg.d_k, kind)
    for layer in range(model.cfg.n_layers):
        for i in range(h):
            C.band_score(C.positional_scores(model, layer, i))
            C.copying_proxy(model, layer, i)
    C.prefix_matching_scores(model)


def main() -> int:
    bench.set_threads(1)
    info = dict(bench.machine_info())
    noise = st.noise_pool()
    rows = []
    t0 = time.perf_counter()
    for h, d_k in SIZES:
        model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=0)
        params = tuple(p.detach() for p in model.state_dict().values())
        heads = torch.zeros(h)

        def core():
            with torch.no_grad():
                return C.core._circuits_core(params, heads, noise)

        timings = bench.time_interleaved(
            {"_circuits_core (float32)": core, "readable functions (float64)":
             lambda: readable(model)}, cell_budget_s=3.0, min_reps=5, max_reps=15)
        fast, slow = timings["_circuits_core (float32)"], timings["readable functions (float64)"]
        rows.append({"h": h, "d_k": d_k, "d_model": h * d_k,
                     "circuits_core_ms": round(1000 * fast.median, 2),
                     "readable_ms": round(1000 * slow.median, 1),
                     "rounds": fast.n})
        print(f"h {h:>2} d_k {d_k:>2}: _circuits_core {1000 * fast.median:6.1f} ms, "
              f"readable functions {1000 * slow.median:7.1f} ms ({fast.n} rounds)",
              flush=True)
    result = {
        "about": "One full circuit read-out (mhacourse.circuits.core._circuits_core) on "
                 "ONE thread, median CPU ms; the readable float64 functions for "
                 "comparison.",
        "target": f"<= {TARGET_MS:g} ms at h 16, d_k 16 (issue 31)",
        "machine": info, "threads": 1, "clock": bench.clock_note(bench.default_clock()),
        "load average (1/5/15 min) at end": bench.load_avg(),
        "seconds": round(time.perf_counter() - t0, 1), "rows": rows,
    }
    out = Path(__file__).resolve().parent / "results" / "circuits.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
