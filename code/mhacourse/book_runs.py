"""The book's own runs, for the page to set a reader's run beside: the
runs chapter 11 recorded (``assets/runs``), the trained grid's recorded
histories (``assets/models/metrics.json``) and the spread of chapter 8's
sweep (``assets/models/heads_sweep.json``) per size.

``make book`` writes :func:`book_runs` and the question bank of
:mod:`mhacourse.checks.predictions` into the explorer's data
(:func:`write_lab_data`); the page's ``lab/compare.js`` reads them.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import tasks
from ._validate import check_writable
from .catalogue import assets_dir, steps_for
from .checks.predictions import BANK, phase_step, questions
from .tiny_model.analysis import heldout
from .tiny_model.model import TinyConfig, default_peak_lr

PARTS = ("accuracy", "previous", "lookup", "loss")


def _entry(name, source, cfg: dict, train: dict, history, rule, margin) -> dict:
    """One run of the table: its settings, whether the page's trainer makes
    the same run (default learning rate, batch, warm-up length, steps for
    its width, data seed 0), its history and its phase change."""
    default = TinyConfig()
    c = {**{k: getattr(default, k) for k in ("n_layers", "warmup", "batch", "lr")}, **cfg}
    d = c["h"] * c["d_k"]
    lr_default = c["lr"] is None or abs(c["lr"] - default_peak_lr(d)) <= 5e-5  # 4 decimals
    page = (lr_default and c["batch"] == default.batch and c["warmup"] in (0, default.warmup)
            and train["steps"] == steps_for(d) and train.get("data_seed", 0) == 0)
    steps = [e["step"] for e in history]
    return {
        "name": name, "source": source, "h": c["h"], "d_k": c["d_k"], "seed": train["seed"],
        "steps": train["steps"], "layers": c["n_layers"], "warmup": c["warmup"] > 0,
        "identical": bool(train.get("identical_heads", False)), "page_run": page,
        "every": steps[1] - steps[0] if len(steps) > 1 else train["steps"],
        "history": [{k: round(float(e[k]), 4) for k in ("step", *PARTS)} for e in history],
        "phase_step": phase_step(history, rule, margin),
    }


def book_runs() -> dict:
    """The table the page compares a run with: ``{"rule_lookup",
    "phase_margin", "runs": [...], "sweep": {...}}``. Each run: ``name``,
    ``source``, ``h``, ``d_k``, ``seed``, ``steps``, ``layers``,
    ``warmup``, ``identical``, ``page_run`` (the page's trainer makes
    the same run), ``every`` (steps between read-outs), ``history``
    (``step``, ``accuracy``, ``previous``, ``lookup``, ``loss``) and
    ``phase_step`` (or None). The sweep: chapter 8's final accuracies per
    size (``summary``) and per seed (``runs``), with its steps and seeds."""
    root = assets_dir()
    rule = float(tasks.baselines(*heldout())["previous word"]["lookup"])
    margin = questions()["constants"]["phase_margin"]
    runs = []
    index = json.loads((root / "runs" / "index.json").read_text())["runs"]
    for name in index:
        run = json.loads((root / "runs" / f"{name}.json").read_text())
        runs.append(_entry(name, f"assets/runs/{name}.json", run["config"], run["train"],
                           run["history"], rule, margin))
    for m in json.loads((root / "models" / "metrics.json").read_text())["models"]:
        if m["trained"] and m.get("history"):
            cfg = {"h": m["h"], "d_k": m["d_k"], "n_layers": m["n_layers"], "lr": m.get("lr")}
            runs.append(_entry(m["name"], "assets/models/metrics.json", cfg,
                               {"steps": m["steps"], "seed": m["seed"],
                                "data_seed": m.get("data_seed", 0)},
                               m["history"], rule, margin))
    sweep = json.loads((root / "models" / "heads_sweep.json").read_text())
    return {
        "about": "The book's runs (mhacourse.book_runs), for the page's lab/compare.js.",
        "rule_lookup": round(rule, 6), "phase_margin": margin, "runs": runs,
        "sweep": {"source": "assets/models/heads_sweep.json", "d_model": sweep["d_model"],
                  "steps": sweep["steps"], "seeds": sweep["seeds"],
                  "summary": sweep["summary"],
                  "runs": [{k: r[k] for k in ("h", "d_k", "seed", "accuracy", "previous",
                                              "lookup")} for r in sweep["runs"]]},
    }


def write_lab_data(out) -> dict:
    """Write ``lab/questions.json`` (the question bank) and
    ``lab/book_runs.json`` (:func:`book_runs`) into the explorer's data
    folder ``out``; returns their names and sizes."""
    out = check_writable("out", out, folder=True)
    lab = Path(out) / "lab"
    lab.mkdir(parents=True, exist_ok=True)
    files = {"questions.json": BANK.read_text(encoding="utf-8"),
             "book_runs.json": json.dumps(book_runs(), separators=(",", ":"))}
    for name, text in files.items():
        (lab / name).write_text(text, encoding="utf-8")
    return {name: len(text.encode()) for name, text in files.items()}
