"""Train the tiny models of the attention explorer, and the "how many heads?"
sweep. Seeded and reproducible; one CPU thread.

    python scripts/train_tiny_models.py           # explorer grid -> assets/models/
    python scripts/train_tiny_models.py --sweep   # accuracy vs h at d_model 64
    python scripts/train_tiny_models.py --quick   # a few steps of each (tests)
    python scripts/train_tiny_models.py --cells 1x64 16x4   # only these cells,
                                          # merged into the existing metrics.json

The grid is h in {1, 2, 4, 8} x d_k in {8, 16, 32} (d_model = h * d_k), plus
the cells that complete the explorer's "same budget" row at d_model = 64
(h = 1 with d_k = 64 and h = 16 with d_k = 4; h = 2, 4, 8 are grid cells).
For each cell it writes a trained model ``h{h}_dk{d_k}.safetensors`` (float16
weights) and the same size untrained, ``h{h}_dk{d_k}_init.safetensors``
(stored as its seed and a fingerprint: see ``tiny_model.save``), and
``metrics.json``: held-out accuracy (overall and per part of the task),
parameter count, training time, what every head attends to
(``tiny_model.head_scores``) and each trained model's ``history`` (held-out
accuracy per part, loss and head roles every :data:`HISTORY_EVERY` steps:
``tiny_model.train(eval_every=...)``). Accuracies are measured on the files
as saved. Every model is ``tiny_model.train(cfg, steps, seed=0)``: the
weights the in-browser trainer starts from (``step._init_core``) and its
batches (``data_seed=0``), so a page run of the same size is the same run.

``--sweep`` trains d_model = 64 with h = 1, 2, 4, ..., 64 (d_k = 64 / h, down
to 1) for several seeds, with the same steps for every h, and writes
``heads_sweep.json``; sweep models are not saved.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from mhacourse import catalogue, tasks
from mhacourse import tiny_model as tm

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "models"

# The cells, names and seed are mhacourse.catalogue's: the grid, plus the
# cells of the explorer's "same budget" row (d_model = 64 cut into h = 1, 2,
# 4, 8, 16 heads) that are not in the grid.
GRID_H, GRID_D_K = catalogue.GRID_H, catalogue.GRID_DK
BUDGET_CELLS = tuple(c for c in catalogue.budget_cells()
                     if c not in catalogue.grid_cells())
SEED = catalogue.SEED  # the grid's one seed (initialisation and training batches)
# Steps per d_model: small models need more steps and cost less per step;
# chosen so the grid takes about 5 minutes on one core.
GRID_STEPS = catalogue.STEPS_BY_D_MODEL

# d_model 64, not 32: at 32, seed 0 forms an induction head for h = 1..8 but
# seed 1 never does (h = 1..8 at 1200 steps, h = 4 at 2000), so seeds, not
# heads, decide; at 64 seeds 0 and 1 both form one by step 500 (h = 4).
SWEEP_D_MODEL = 64
SWEEP_STEPS = GRID_STEPS[SWEEP_D_MODEL]  # same for every h: equal budgets; and
#   seed 0 of h = 2, 4, 8 is then the grid's model (before float16 rounding)
SWEEP_SEEDS = (0, 1)
HISTORY_EVERY = 50  # steps between the grid's history entries


def round_floats(obj, nd: int = 4):
    """Round every float in a nested dict/list (shorter JSON)."""
    if isinstance(obj, float):
        return round(obj, nd)
    if isinstance(obj, dict):
        return {k: round_floats(v, nd) for k, v in obj.items()}
    if isinstance(obj, list):
        return [round_floats(v, nd) for v in obj]
    return obj


def describe(model, path: Path, data) -> dict:
    """Held-out accuracy and head statistics of the model saved at ``path``."""
    scores = tm.head_scores(model, data)
    return {
        "file": path.name,
        "file_bytes": path.stat().st_size,
        **tm.evaluate(model, data),
        "head_scores": scores,
        "head_roles": tm.head_roles(scores),
    }


def run_grid(out: Path, quick: bool, cells=None) -> dict:
    """Train the cells ``[(h, d_k), ...]``; default: the grid and
    :data:`BUDGET_CELLS` (a small grid with ``quick``)."""
    if cells is None:
        cells = ([(h, 8) for h in (1, 2)] if quick else
                 catalogue.grid_cells() + list(BUDGET_CELLS))
    data = tm.heldout()
    models, t_start, c_start = [], time.perf_counter(), time.process_time()
    for h, d_k in cells:
        cfg = tm.TinyConfig(h=h, d_k=d_k)
        steps = 20 if quick else GRID_STEPS[cfg.d_model]
        print(f"h = {h}, d_k = {d_k}, d_model = {cfg.d_model}: "
              f"{steps} steps ...", flush=True)
        common = {"h": h, "d_k": d_k, "d_model": cfg.d_model,
                  "n_layers": cfg.n_layers, "seed": SEED, "data_seed": 0}

        init = tm.TinyTransformer(cfg, seed=SEED)
        path = tm.save(init, out / f"{tm.model_name(h, d_k, False)}.safetensors",
                       init_seed=SEED)
        models.append({"name": tm.model_name(h, d_k, False), "trained": False,
                       **common, "params": tm.n_params(init), "steps": 0,
                       **describe(tm.load(path), path, data)})

        model, m = tm.train(cfg, steps, seed=SEED,
                            eval_every=min(HISTORY_EVERY, steps), eval_data=data)
        path = tm.save(model, out / f"{tm.model_name(h, d_k)}.safetensors",
                       extra={"steps": steps, "seed": SEED})
        entry = {"name": tm.model_name(h, d_k), "trained": True, **common,
                 "params": m["params"], "steps": steps,
                 "lr": cfg.peak_lr, "train_loss": m["train_loss"],
                 "train_seconds": m["train_seconds"],
                 "cpu_seconds": m["cpu_seconds"],
                 "accuracy_float32": m["accuracy"],
                 **describe(tm.load(path), path, data), "history": m["history"]}
        models.append(entry)
        print(f"  accuracy {entry['accuracy']:.3f} (previous "
              f"{entry['previous']:.3f}, lookup {entry['lookup']:.3f}; "
              f"untrained {models[-2]['accuracy']:.3f}), "
              f"{m['train_seconds']:.1f} s, roles {entry['head_roles']}",
              flush=True)
    return {
        "about": "Tiny causal transformers (mhacourse.tiny_model) on the "
                 "'lookup, else previous word' task (mhacourse.tasks). "
                 "Accuracies: arg-max on the scored positions of the held-out "
                 "set, measured on the saved files.",
        "task": asdict(tasks.TaskConfig()),
        "vocab_size": len(tasks.VOCAB),
        "heldout": {"seed": tm.HELDOUT_SEED, "sequences": tm.HELDOUT_N},
        "baselines": tasks.baselines(*data),
        "uniform_head_scores": tm.uniform_statistics(data),
        "grid_seconds": time.perf_counter() - t_start,
        "grid_cpu_seconds": time.process_time() - c_start,
        "quick": quick,
        "models": models,
    }


def run_sweep(out: Path, quick: bool, seeds) -> dict:
    d_model, steps = (8, 20) if quick else (SWEEP_D_MODEL, SWEEP_STEPS)
    hs = [h for h in (2 ** i for i in range(12)) if h <= d_model]
    data = tm.heldout()
    rows, t_start, c_start = [], time.perf_counter(), time.process_time()
    for h in hs:
        for seed in seeds:
            cfg = tm.TinyConfig(h=h, d_k=d_model // h)
            model, m = tm.train(cfg, steps, seed=seed, eval_data=data)
            roles = tm.head_roles(tm.head_scores(model, data))
            rows.append({"h": h, "d_k": cfg.d_k, "seed": seed, **m,
                         "head_roles": roles})
            print(f"h = {h:2d}, d_k = {cfg.d_k:2d}, seed {seed}: accuracy "
                  f"{m['accuracy']:.3f} (previous {m['previous']:.3f}, lookup "
                  f"{m['lookup']:.3f}), {m['train_seconds']:.1f} s", flush=True)
    summary = []
    for h in hs:
        r = [row for row in rows if row["h"] == h]
        summary.append({
            "h": h, "d_k": d_model // h,
            **{f"{k}_mean": statistics.mean(x[k] for x in r)
               for k in ("accuracy", "previous", "lookup")},
            "accuracy_min": min(x["accuracy"] for x in r),
            "accuracy_max": max(x["accuracy"] for x in r),
            "params": r[0]["params"],
        })
    print(f"\nd_model = {d_model}, {steps} steps, seeds {list(seeds)}")
    print(" h  d_k  accuracy (min-max)   previous  lookup")
    for s in summary:
        print(f"{s['h']:2d}  {s['d_k']:3d}  {s['accuracy_mean']:.3f} "
              f"({s['accuracy_min']:.3f}-{s['accuracy_max']:.3f})   "
              f"{s['previous_mean']:.3f}     {s['lookup_mean']:.3f}")
    return {
        "about": "Held-out accuracy vs number of heads h at fixed d_model "
                 "(d_k = d_model / h), same steps and seeds for every h. "
                 "Float32 models, not saved.",
        "d_model": d_model, "steps": steps, "seeds": list(seeds),
        "task": asdict(tasks.TaskConfig()),
        "baselines": tasks.baselines(*data),
        "sweep_seconds": time.perf_counter() - t_start,
        "sweep_cpu_seconds": time.process_time() - c_start,
        "quick": quick,
        "summary": summary,
        "runs": rows,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", action="store_true",
                   help="accuracy vs h at fixed d_model instead of the grid")
    p.add_argument("--quick", action="store_true",
                   help="a few steps and a small grid, for tests")
    p.add_argument("--out", type=Path, default=OUT, help=f"default {OUT}")
    p.add_argument("--seeds", type=int, default=len(SWEEP_SEEDS),
                   help="number of seeds for --sweep (0, 1, ...)")
    p.add_argument("--cells", nargs="+", metavar="HxD_K",
                   help="train only these cells (e.g. 1x64 16x4) and merge them "
                        "into the existing metrics.json")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        result = run_sweep(args.out, args.quick, range(args.seeds))
        file = "heads_sweep.json"
    elif args.cells:
        cells = [tuple(int(n) for n in c.lower().split("x")) for c in args.cells]
        file = "metrics.json"
        result = json.loads((args.out / file).read_text())
        new = run_grid(args.out, args.quick, cells)["models"]
        names = {m["name"] for m in new}
        result["models"] = [m for m in result["models"]
                            if m["name"] not in names] + new
    else:
        result, file = run_grid(args.out, args.quick), "metrics.json"
    args_used = sys.argv[1:] if argv is None else argv
    result["environment"] = {
        "torch": torch.__version__, "threads": 1,
        "python": platform.python_version(),
        "command": " ".join(["train_tiny_models.py", *args_used])}
    (args.out / file).write_text(json.dumps(round_floats(result), indent=1) + "\n")
    print(f"wrote {args.out / file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
