"""Train the runs chapter 11 reads, and write them under assets/runs/.

    OMP_NUM_THREADS=1 PYTHONPATH=code python scripts/record_runs.py   # ~3-5 CPU min

Every run is ``tiny_model.train(cfg, steps, seed=..., eval_every=20)``, the
run the page's trainer makes for the same settings (data_seed 0: the page's
batches). Each writes ``assets/runs/<name>.json``: the settings, the final
held-out accuracy, and the history (every 20 steps: held-out accuracy
overall and per part, the mean training loss since the last entry, each
head's role). The main run's entries also hold the circuit read-outs of
:func:`mhacourse.circuits.read_circuits` at that step, and the runs the
chapter reads circuits from are saved as ``<name>.safetensors``
(``tiny_model.save``, float16). ``assets/runs/index.json`` lists them with
their cost (CPU seconds, one thread).

The training loop is not changed: the circuit read-outs ride on ``train``'s
own history hook (``training._record``), wrapped for the main run only.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from mhacourse import circuits as C
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import training

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "runs"
EVAL_EVERY = 20
STEPS = 800  # the page's steps at d_model 64 (catalogue.steps_for(64))

#: name -> (TinyConfig arguments, train arguments, keep the weights, circuits
#: every EVAL_EVERY steps)
RUNS = {
    "main": (dict(h=4, d_k=16), dict(steps=STEPS, seed=0), True, True),
    "seed1": (dict(h=4, d_k=16), dict(steps=STEPS, seed=1), True, False),
    "seed2": (dict(h=4, d_k=16), dict(steps=STEPS, seed=2), True, False),
    "one_layer": (dict(h=4, d_k=16, n_layers=1), dict(steps=2 * STEPS, seed=0), False,
                  False),
    "no_warmup": (dict(h=4, d_k=16, warmup=0), dict(steps=STEPS, seed=0), False, False),
    "no_warmup_seed1": (dict(h=4, d_k=16, warmup=0), dict(steps=STEPS, seed=1), False,
                        False),
    "no_warmup_seed2": (dict(h=4, d_k=16, warmup=0), dict(steps=STEPS, seed=2), False,
                        False),
    "identical": (dict(h=4, d_k=16), dict(steps=STEPS, seed=0, identical_heads=True),
                  True, False),
}


def rounded(x, digits: int = 5):
    """Tensors and floats as lists of rounded floats (small JSON)."""
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, list):
        return [rounded(v, digits) for v in x]
    return round(float(x), digits) if isinstance(x, float) else x


def with_circuits(record):
    """``train``'s history hook, also reading the circuits of the model at
    that step (no effect on the training: the read-out runs under no_grad
    on a copy of the weights)."""
    def hook(model, step, losses, data):
        entry = record(model, step, losses, data)
        entry["circuits"] = {k: rounded(v) for k, v in C.read_circuits(model).items()}
        return entry
    return hook


def record(name: str, cfg_args: dict, train_args: dict, keep: bool, circuits: bool) -> dict:
    cfg = tm.TinyConfig(**cfg_args)
    plain = training._record
    if circuits:
        training._record = with_circuits(plain)
    try:
        model, metrics = tm.train(cfg, eval_every=EVAL_EVERY, **train_args)
    finally:
        training._record = plain
    history = metrics.pop("history")
    for entry in history:
        for k in ("accuracy", "previous", "lookup", "loss"):
            entry[k] = round(entry[k], 5)
    out = {"name": name, "config": asdict(cfg), "train": train_args,
           "eval_every": EVAL_EVERY, "final": rounded(metrics),
           "torch": torch.__version__, "history": history}
    if circuits:
        out["circuits_at_init"] = {
            k: rounded(v) for k, v in C.read_circuits(
                tm.TinyTransformer(cfg, train_args["seed"])).items()}
    (OUT / f"{name}.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")
    if keep:
        tm.save(model, OUT / f"{name}.safetensors", extra={"run": name, **train_args})
    return {"name": name, "config": cfg_args, "train": train_args,
            "cpu_seconds": metrics["cpu_seconds"], "weights": keep,
            "accuracy": rounded(metrics["accuracy"], 4)}


def main(names: list[str]) -> int:
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"runs": {}}
    t0 = time.process_time()
    for name in names or RUNS:
        row = record(name, *RUNS[name])
        index["runs"][name] = row
        print(f"{name:>16}: accuracy {row['accuracy']:.3f}, {row['cpu_seconds']:.1f} CPU s",
              flush=True)
    index["about"] = ("Runs of tiny_model.train recorded by scripts/record_runs.py "
                      "for chapter 11; cpu_seconds on one thread.")
    index["torch"] = torch.__version__
    index_path.write_text(json.dumps(index, indent=1) + "\n")
    print(f"total {time.process_time() - t0:.0f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
