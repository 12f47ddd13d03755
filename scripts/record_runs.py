"""Train the runs chapters 10 and 11 read (and chapter 11's companion page,
11b_seeds_and_settings: the seeds, warm-up and clipping runs), and write them
under assets/runs/.

    OMP_NUM_THREADS=1 PYTHONPATH=code nice -n 10 python scripts/record_runs.py [NAME ...]
    # all runs: ~8 CPU min on one thread; names: only those runs

Every run is ``tiny_model.train(cfg, steps, seed=..., eval_every=20)``, the
run the page's trainer makes for the same settings (data_seed 0: the page's
batches). Each writes ``assets/runs/<name>.json``: the settings, the final
held-out accuracy, and the history (every 20 steps: held-out accuracy
overall and per part, the mean training loss since the last entry, each
head's role). ``assets/runs/index.json`` lists them with their cost (CPU
seconds, one thread). Some runs record more (``extras``):

- ``circuits``: each entry also holds the circuit read-outs of
  :func:`mhacourse.circuits.read_circuits` at that step;
- ``gap``: each entry also holds the model's accuracy and loss on the
  ``eval_every`` batches it was just trained on, on the next ``eval_every``
  batches (not yet seen), and on the held-out set, with the pre-update loss
  of every step since the last entry (what the logged training loss averages);
- ``norms``: ``grad_norms``, the global gradient norm of every step before
  clipping (what ``clip_grad_norm_`` returns).

The ``no_clip`` runs are ``train(..., clip=None)``: no clipping; their
``grad_norms`` are the norms AdamW receives (read by an optimizer step
pre-hook). The runs the chapter reads
circuits from are saved as ``<name>.safetensors`` (``tiny_model.save``,
float16).

The training loop is not changed: the read-outs ride on ``train``'s own
history hook (``training._record``), and the norms on the
``clip_grad_norm_`` it calls (or on an optimizer hook), all wrapped for the
run and restored after.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from mhacourse import circuits as C
from mhacourse import tasks
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import training

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "runs"
EVAL_EVERY = 20
STEPS = 800  # the page's steps at d_model 64 (catalogue.steps_for(64))
SEEDS = range(6)  # the seeds of the warm-up and clipping comparisons (chapter 11b)
BASE = dict(h=4, d_k=16)


def _run(cfg: dict, steps: int = STEPS, seed: int = 0, keep: bool = False,
         extras: tuple = (), **train_args) -> dict:
    return {"cfg": cfg, "train": dict(steps=steps, seed=seed, **train_args),
            "keep": keep, "extras": extras}


def _named(prefix: str, seed: int) -> str:
    """Seed 0 keeps the plain name."""
    return prefix if seed == 0 else f"{prefix}_seed{seed}"


#: name -> what to train and record
RUNS = {
    "main": _run(BASE, keep=True, extras=("circuits", "gap", "norms")),
    **{f"seed{s}": _run(BASE, seed=s, keep=s < 3, extras=("norms",))
       for s in SEEDS if s},
    "one_layer": _run(dict(BASE, n_layers=1), steps=2 * STEPS),
    **{_named("no_warmup", s): _run(dict(BASE, warmup=0), seed=s) for s in SEEDS},
    **{_named("no_clip", s): _run(BASE, seed=s, clip=None, extras=("norms",))
       for s in SEEDS},
    "seed4_long": _run(BASE, steps=2 * STEPS, seed=4),
    "identical": _run(BASE, keep=True, identical_heads=True),
}


def rounded(x, digits: int = 5):
    """Tensors and floats as lists of rounded floats (small JSON)."""
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, list):
        return [rounded(v, digits) for v in x]
    return round(float(x), digits) if isinstance(x, float) else x


def _scored(model, batches) -> tuple[float, float]:
    """Accuracy and loss of ``model`` on the concatenated ``batches``."""
    x = torch.cat([b[0] for b in batches])
    y, kind = tasks._targets_core(x)
    logits, _ = training._forward_core(x, model.weights(), model.cfg.h)
    return (float(training._accuracy_core(logits, y, kind)[0]),
            float(training._loss_core(logits, y, kind)))


def with_extras(record, extras, batches):
    """``train``'s history hook, also reading the circuits and the gap
    between seen and unseen batches at that step (no effect on the
    training: the read-outs run under no_grad on the current weights)."""
    @torch.no_grad()
    def hook(model, step, losses, data):
        entry = record(model, step, losses, data)
        if "circuits" in extras:
            entry["circuits"] = {k: rounded(v) for k, v in C.read_circuits(model).items()}
        if "gap" in extras:
            seen_acc, seen_loss = _scored(model, batches[step - len(losses):step])
            next_acc, next_loss = _scored(model, batches[step:step + len(losses)])
            _, next1_loss = _scored(model, batches[step:step + 1])
            held_acc, held_loss = _scored(model, [data])
            entry["gap"] = rounded({
                "seen_acc": seen_acc, "seen_loss": seen_loss,
                "next_acc": next_acc, "next_loss": next_loss,
                "next1_loss": next1_loss, "heldout_acc": held_acc,
                "heldout_loss": held_loss, "losses": list(losses)}, 6)
        return entry
    return hook


def record(name: str, run: dict) -> dict:
    cfg_args, train_args, extras = run["cfg"], run["train"], run["extras"]
    cfg = tm.TinyConfig(**cfg_args)
    clipped = train_args.get("clip", 1.0) is not None
    plain_record, plain_clip = training._record, torch.nn.utils.clip_grad_norm_
    norms = []

    def clip(parameters, max_norm, *args, **kwargs):  # clipped runs: the norm before
        norm = plain_clip(parameters, max_norm, *args, **kwargs)
        norms.append(float(norm))
        return norm

    def before_step(opt, args, kwargs):  # runs not clipped: the norm AdamW gets
        grads = [q.grad for group in opt.param_groups for q in group["params"]
                 if q.grad is not None]
        norms.append(float(torch.stack([g.square().sum() for g in grads]).sum().sqrt()))

    batches = []
    if "gap" in extras:
        g = torch.Generator().manual_seed(training.DATA_SEED_OFFSET)  # data_seed 0
        batches = [tasks.sample(cfg.batch, generator=g)
                   for _ in range(train_args["steps"] + EVAL_EVERY)]
    training._record = with_extras(plain_record, extras, batches)
    torch.nn.utils.clip_grad_norm_ = clip
    hook = None if clipped else register_optimizer_step_pre_hook(before_step)
    try:
        model, metrics = tm.train(cfg, eval_every=EVAL_EVERY, **train_args)
    finally:
        training._record, torch.nn.utils.clip_grad_norm_ = plain_record, plain_clip
        if hook is not None:
            hook.remove()
    history = metrics.pop("history")
    for entry in history:
        for k in ("accuracy", "previous", "lookup", "loss"):
            entry[k] = round(entry[k], 5)
    out = {"name": name, "config": asdict(cfg), "train": train_args,
           "eval_every": EVAL_EVERY, "clip": train_args.get("clip", 1.0),
           "final": rounded(metrics), "torch": torch.__version__, "history": history}
    if "norms" in extras:
        out["grad_norms"] = rounded(norms, 4)
    if "circuits" in extras:
        out["circuits_at_init"] = {
            k: rounded(v) for k, v in C.read_circuits(
                tm.TinyTransformer(cfg, train_args["seed"])).items()}
    (OUT / f"{name}.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")
    if run["keep"]:
        tm.save(model, OUT / f"{name}.safetensors", extra={"run": name, **train_args})
    return {"name": name, "config": cfg_args, "train": train_args,
            "clip": out["clip"], "cpu_seconds": metrics["cpu_seconds"],
            "weights": run["keep"], "accuracy": rounded(metrics["accuracy"], 4)}


def main(names: list[str]) -> int:
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"runs": {}}
    t0 = time.process_time()
    for name in names or RUNS:
        row = record(name, RUNS[name])
        index["runs"][name] = row
        print(f"{name:>16}: accuracy {row['accuracy']:.3f}, {row['cpu_seconds']:.1f} CPU s",
              flush=True)
    index["about"] = ("Runs of tiny_model.train recorded by scripts/record_runs.py "
                      "for chapters 10 and 11; cpu_seconds on one thread.")
    index["torch"] = torch.__version__
    index_path.write_text(json.dumps(index, indent=1) + "\n")
    print(f"total {time.process_time() - t0:.0f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
