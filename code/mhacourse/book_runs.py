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
from ._errors import InputError, InputFileError, one_line
from ._validate import check_path, check_writable
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


def check_root(root):
    """``root``: ``None`` (the package's assets folder) or a folder holding
    ``runs/index.json`` and ``models/`` as the assets folder does."""
    if root is None:
        return assets_dir()
    root = check_path("root", root)
    if not root.is_dir():
        raise InputFileError(f"root {root} is not a folder; give the assets folder "
                             "(or None for the package's).")
    return root


def _asset(root: Path, rel: str, keys=()) -> dict:
    """An asset file's JSON object, or one InputError naming the file."""
    try:
        data = json.loads((root / rel).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"asset file {rel} is missing under {root}; restore it "
                             f"(git checkout -- assets/{rel}).") from None
    except (OSError, ValueError) as e:
        raise InputError(f"asset file {rel} cannot be read ({one_line(e)[:120]}); "
                         f"restore it (git checkout -- assets/{rel}).") from None
    if not isinstance(data, dict) or not set(keys) <= set(data):
        raise InputError(f"asset file {rel} is not the object it should be (it needs "
                         f"{sorted(keys)}); restore it (git checkout -- assets/{rel}).")
    return data


def _read(rel: str, what: str, make):
    """``make()``, with a broken entry of an asset file (a missing key, a
    wrong type, a history the phase rule refuses) as one InputError."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, IndexError, AttributeError,
            InputError) as e:
        raise InputError(f"asset file {rel}: {what} is broken ({type(e).__name__}: "
                         f"{one_line(e)[:120]}); restore it (git checkout -- "
                         f"assets/{rel}).") from None


def book_runs(root=None) -> dict:
    """The table the page compares a run with: ``{"rule_lookup",
    "phase_margin", "runs": [...], "sweep": {...}}``. Each run: ``name``,
    ``source``, ``h``, ``d_k``, ``seed``, ``steps``, ``layers``,
    ``warmup``, ``identical``, ``page_run`` (the page's trainer makes
    the same run), ``every`` (steps between read-outs), ``history``
    (``step``, ``accuracy``, ``previous``, ``lookup``, ``loss``) and
    ``phase_step`` (or None). The sweep: chapter 8's final accuracies per
    size (``summary``) and per seed (``runs``), with its steps and seeds.
    ``root``: the assets folder (``None``: the package's); a missing or
    broken file in it is one :class:`~mhacourse.InputError` naming it."""
    root = check_root(root)
    rule = float(tasks.baselines(*heldout())["previous word"]["lookup"])
    margin = questions()["constants"]["phase_margin"]
    runs = []
    index = _asset(root, "runs/index.json", ("runs",))["runs"]
    for name in _read("runs/index.json", "its list of runs", lambda: [str(n) for n in index]):
        rel = f"runs/{name}.json"
        if not name.replace("_", "").isalnum():
            raise InputError(f"asset file runs/index.json names a run {name!r}: not a "
                             "plain file name; restore it.")
        run = _asset(root, rel, ("config", "train", "history"))
        runs.append(_read(rel, "the run", lambda: _entry(
            name, f"assets/{rel}", run["config"], run["train"], run["history"], rule,
            margin)))
    rel = "models/metrics.json"
    for i, m in enumerate(_asset(root, rel, ("models",))["models"]):
        if _read(rel, f"model {i}", lambda: m["trained"] and m.get("history")):
            runs.append(_read(rel, f"model {i}", lambda: _entry(
                m["name"], "assets/models/metrics.json",
                {"h": m["h"], "d_k": m["d_k"], "n_layers": m["n_layers"], "lr": m.get("lr")},
                {"steps": m["steps"], "seed": m["seed"], "data_seed": m.get("data_seed", 0)},
                m["history"], rule, margin)))
    rel = "models/heads_sweep.json"
    sweep = _asset(root, rel, ("d_model", "steps", "seeds", "summary", "runs"))
    return {
        "about": "The book's runs (mhacourse.book_runs), for the page's lab/compare.js.",
        "rule_lookup": round(rule, 6), "phase_margin": margin, "runs": runs,
        "sweep": {"source": "assets/models/heads_sweep.json", "d_model": sweep["d_model"],
                  "steps": sweep["steps"], "seeds": sweep["seeds"],
                  "summary": sweep["summary"],
                  "runs": _read(rel, "its runs", lambda: [
                      {k: r[k] for k in ("h", "d_k", "seed", "accuracy", "previous",
                                         "lookup")} for r in sweep["runs"]])},
    }


def write_lab_data(out) -> dict:
    """Write ``lab/questions.json`` (the question bank) and
    ``lab/book_runs.json`` (:func:`book_runs`) into the explorer's data
    folder ``out``, and ``lab/lab.js``, both as one classic script
    (``window.mhaLabData = {questions, book_runs}``) that the trainer's
    pages load before the page's modules, as they load the manifest: a
    link's predictions are restored as soon as the page's code runs, not
    once a fetch has come back (its answer waited for every deferred script
    of the page to run first). Returns their names and sizes."""
    out = check_writable("out", out, folder=True)
    lab = Path(out) / "lab"
    lab.mkdir(parents=True, exist_ok=True)
    bank, runs = BANK.read_text(encoding="utf-8"), book_runs()
    both = json.dumps({"questions": json.loads(bank), "book_runs": runs}, separators=(",", ":"))
    script = ("// Written by mhacourse.book_runs.write_lab_data: the lab's question bank "
              f"and the book's runs.\nwindow.mhaLabData = {both};\n")
    files = {"questions.json": bank, "book_runs.json": json.dumps(runs, separators=(",", ":")),
             "lab.js": script}
    for name, text in files.items():
        (lab / name).write_text(text, encoding="utf-8")
    return {name: len(text.encode()) for name, text in files.items()}
