"""The bounds the package promises on untrusted input, measured (issue 48,
finding 8): each function that refuses input past a bound promises to
answer within it in a given time, on ONE thread, CPU time.

    python benchmarks/bench_bounds.py     # prints each figure; writes results/bounds.json

- ``circuits.composition_max_baseline`` at its work limit
  (draws x h x d_model x d_k = 2**20, h x d_k <= d_model), the slowest of
  a grid of shapes: promised "about a second".
- ``tiny_model.load`` refusing a file whose config (with a digest that
  matches) states a model of nearly 50M parameters over a small model's
  weights: refused from the shapes, before anything is built (it built the
  model first, 7.7 s, before); promised well under a second.
- ``checks.predictions.grade`` on a record of ``MAX_READOUTS`` read-outs
  (tm.train's longest run read at every step): promised well under a
  second (200,000 read-outs took 17 s before; now refused in one line).
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as bench  # noqa: E402  (benchmarks/common.py)
from mhacourse import InputError  # noqa: E402
from mhacourse import circuits as C  # noqa: E402
from mhacourse import tiny_model as tm  # noqa: E402
from mhacourse.checks import predictions as P  # noqa: E402
from mhacourse.tiny_model.files import _digest  # noqa: E402
from mhacourse.tiny_model.model import param_shapes  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "bounds.json"


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def baseline_at_limit() -> dict:
    grid = [(256, 16, 16, 16), (256, 256, 1, 16), (256, 64, 4, 16), (256, 128, 2, 16),
            (64, 4, 16, 256), (128, 8, 16, 64), (64, 16, 4, 256), (256, 32, 8, 16)]
    times = {f"d_model {d} d_k {k} h {h} draws {n}":
             round(min(cpu(lambda: C.composition_max_baseline(d, k, "q", h, n))
                       for _ in range(2)), 3) for d, k, h, n in grid}
    worst = max(times, key=times.get)
    return {"promise_s": 1.0, "worst": worst, "worst_cpu_s": times[worst], "grid": times}


def params(h: int, d_k: int) -> int:
    """A TinyConfig's parameter count, from its shapes (nothing built)."""
    return sum(math.prod(s) for s in param_shapes(h * d_k, tm.TinyConfig(h=1, d_k=8)).values())


def load_lying_config() -> dict:
    small = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=8))
    with tempfile.TemporaryDirectory() as d:
        path = tm.save(small, Path(d) / "a.safetensors")
        with safe_open(str(path), "pt") as f:
            meta, tensors = dict(f.metadata()), {k: f.get_tensor(k) for k in f.keys()}
        cfg = json.loads(meta["config"])
        best = max(((h, k) for h in (8, 16, 32) for k in range(8, 257, 8)
                    if params(h, k) <= 50_000_000), key=lambda hk: params(*hk))
        cfg.update(h=best[0], d_k=best[1])
        meta["config"] = json.dumps(cfg)
        meta["digest"] = _digest(meta, tensors)
        save_file(tensors, str(Path(d) / "lie.safetensors"), metadata=meta)
        t = time.process_time()
        try:
            tm.load(Path(d) / "lie.safetensors")
            refused = False
        except InputError:
            refused = True
        took = time.process_time() - t
    return {"promise_s": 1.0, "config": f"h {best[0]} d_k {best[1]}",
            "params": params(*best),
            "refused": refused, "cpu_s": round(took, 3)}


def grade_longest() -> dict:
    n = P.MAX_READOUTS
    roles = [["mixed"] * 4, ["mixed"] * 4]
    record = {"settings": {"h": 4, "d_k": 16, "seed": 0, "steps": n, "layers": 2,
                           "warmup": True, "identical": False},
              "step": n, "rule_lookup": 0.3, "final": None, "ablations": [],
              "history": [{"step": i + 1, "lookup": 0.2, "roles": roles} for i in range(n)]}
    every = {q["id"]: next(iter(q["answers"])) for q in P.questions()["questions"]}
    took = min(cpu(lambda: P.grade(every, record)) for _ in range(2))
    over = dict(record, history=record["history"] * 10)
    try:
        P.grade(every, over)
        refused = False
    except InputError:
        refused = True
    return {"promise_s": 1.0, "readouts": n, "cpu_s": round(took, 3),
            "ten_times_more_refused": refused}


def main() -> None:
    torch.set_num_threads(1)
    start = bench.load_avg()
    out = {"machine": dict(bench.machine_info()), "load_start": start,
           "composition_max_baseline": baseline_at_limit(),
           "load_lying_config": load_lying_config(),
           "grade_longest_record": grade_longest()}
    out["load_end"] = bench.load_avg()
    b, f, g = (out[k] for k in ("composition_max_baseline", "load_lying_config",
                                "grade_longest_record"))
    print(f"composition_max_baseline at its limit: worst {b['worst_cpu_s']:.2f} CPU-s "
          f"({b['worst']}); promised about {b['promise_s']:.0f} s")
    print(f"tm.load of a lying {f['config']} config ({f['params']:,} parameters): "
          f"refused={f['refused']} in {f['cpu_s']:.3f} CPU-s")
    print(f"grade on {g['readouts']:,} read-outs: {g['cpu_s']:.2f} CPU-s; ten times "
          f"more refused={g['ten_times_more_refused']}")
    print(bench.load_line(1, start, "cpu"))
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
