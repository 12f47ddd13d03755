"""Chapter 11's predictions ("predict, then run"), graded from a run's own
read-outs.

The questions, the read-out each is graded from and the grading rule live in
one data file, ``mhacourse/data/questions.json`` (:func:`questions`). The
page grades them with ``assets/site/explorer/lab/grade.js``; this module
grades the same predictions from a Python run, with the same rules, on the
same *record* of the run::

    record = {
      "settings": {"h", "d_k", "seed", "steps", "layers", "warmup", "identical"},
      "step": steps done so far,
      "rule_lookup": the previous-word rule's lookup accuracy (held-out),
      "history": [{"step", "lookup", "roles": [[name per head] per layer]}, ...],
      "final": None, or at the finished model {"step", "stats": (layers, h, 5)
               task statistics, "composition": {"q", "k", "v"} or None,
               "baseline": {"q", "k", "v"} or None},
      "ablations": [{"step", "off": [[layer, head], ...] (from 1), "lookup"}],
    }

:func:`run_record` makes it from ``tm.train``'s model and metrics. A
question whose read-out is not ready (the run has not got there) *waits*; it
is never graded on part of a run. An answer that depends on the seed is
graded against this run, and says so.

To add a question: an entry in ``questions.json`` (its ``readout``, a
``rule`` of kind ``"band"`` or ``"equal"``, ``answers``, ``requires``,
``explain`` and the ``section`` that teaches it, in the bank's ``chapter``
or, given a ``chapter`` of its own, on that page; optionally
``explain_plateau``, the explanation shown instead for a run that never left
the plateau, and ``waiting``, the line while its read-out is not ready).
A new read-out is written twice, in :func:`_readout` here and ``readout`` in ``lab/grade.js``;
``tests/test_lab.py`` checks that both grade every answer of the bank alike
on real runs.
"""
from __future__ import annotations

import json
import math
import numbers
from functools import lru_cache
from pathlib import Path

import torch

from .._validate import InputError, InputTypeError, check_bool, describe
from ..circuits import read_circuits
from ..tasks import baselines
from ..tiny_model import evaluate, head_roles, head_scores, heldout
from ..tiny_model._checks import MAX_TRAIN_STEPS
from ..tiny_model.analysis import STATISTICS
from ..tiny_model.model import TinyTransformer

BANK = Path(__file__).resolve().parents[1] / "data" / "questions.json"
SETTINGS = ("h", "d_k", "seed", "steps", "layers", "warmup", "identical")
KINDS = ("q", "k", "v")
#: The longest history (and list of ablations) a record may hold: tm.train's
#: longest run read at every step, and its end. grade() takes well under a
#: second on it (benchmarks/bench_bounds.py).
MAX_READOUTS = MAX_TRAIN_STEPS + 1


@lru_cache(maxsize=1)
def _bank() -> str:
    return BANK.read_text(encoding="utf-8")


def questions() -> dict:
    """The question bank (a fresh copy of ``questions.json``): its
    ``constants``, ``readouts`` and ``questions`` (each with ``id``, ``ask``,
    ``readout``, ``rule``, ``answers``, ``requires``, ``seed_dependent``,
    ``explain``, ``section`` and, where the section is on another page than
    the bank's ``chapter``, that ``chapter``)."""
    return json.loads(_bank())


# --- input checks ------------------------------------------------------

def _check_real(where: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise InputError(f"{where} must be a finite number; got {describe(v)}.")
    return float(v)


def _check_share(where: str, v, what: str = "an accuracy") -> float:
    v = _check_real(where, v)
    if not 0 <= v <= 1:
        raise InputError(f"{where} must be {what} from 0 to 1; got {v}.")
    return v


def _check_whole(where: str, v, low: int = 0) -> int:
    """A whole number from ``low`` up to 2**53 - 1, as JSON and the page's
    JavaScript read one (20.0 is 20; a larger number is not exact there)."""
    ok = (not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v)
          and v == int(v) and low <= v <= 2**53 - 1)
    if not ok:
        raise InputError(f"{where} must be a whole number >= {low}; got {describe(v)}.")
    return int(v)


def _check_dict(where: str, v, keys=()) -> dict:
    if not isinstance(v, dict):
        raise InputTypeError(f"{where} must be a dict; got {describe(v)}.")
    missing = [k for k in keys if k not in v]
    if missing:
        raise InputError(f"{where} lacks {missing}: make it with run_record(model, metrics).")
    return v


def _check_list(where: str, v) -> list:
    if not isinstance(v, (list, tuple)):
        raise InputTypeError(f"{where} must be a list; got {describe(v)}.")
    return list(v)


def _check_length(where: str, v) -> None:
    if isinstance(v, (list, tuple)) and len(v) > MAX_READOUTS:
        raise InputError(f"{where} holds {len(v):,} read-outs; a run has at most "
                         f"{MAX_READOUTS:,} (tm.train's longest, read at every step).")


def _check_roles(where: str, roles, layers: int, h: int) -> None:
    roles = _check_list(where, roles)
    names = (*STATISTICS, "mixed")
    if len(roles) < layers or any(not isinstance(r, (list, tuple)) or len(r) != h
                                  or any(n not in names for n in r) for r in roles[:layers]):
        raise InputError(f"{where} must be {layers} lists of {h} role names "
                         f"({', '.join(names)}); got {describe(roles)}.")


def check_record(record) -> dict:
    """A run's record (module docstring), checked and as plain numbers
    (a whole number as an ``int``: 20.0 is 20, as in JSON and the page),
    or one InputError saying which field is wrong."""
    r = _check_dict("record", record, ("settings", "step", "rule_lookup", "history"))
    s = _check_dict("record['settings']", r["settings"], SETTINGS)
    settings = {k: _check_whole(f"settings[{k!r}]", s[k], 0 if k == "seed" else 1)
                for k in ("h", "d_k", "seed", "steps", "layers")}
    for k in ("warmup", "identical"):
        settings[k] = check_bool(f"settings[{k!r}]", s[k])
    h, layers = settings["h"], settings["layers"]
    step_done = _check_whole("record['step']", r["step"])
    if step_done > settings["steps"]:
        raise InputError(f"record['step'] is {step_done}, past the run's "
                         f"{settings['steps']} steps (settings['steps']).")
    out = {"settings": settings, "step": step_done,
           "rule_lookup": _check_share("record['rule_lookup']", r["rule_lookup"]),
           "history": [], "final": None, "ablations": []}
    last = -1
    _check_length("record['history']", r["history"])
    _check_length("record['ablations']", r.get("ablations", []))
    for i, e in enumerate(_check_list("record['history']", r["history"])):
        e = _check_dict(f"history[{i}]", e, ("step", "lookup", "roles"))
        step = _check_whole(f"history[{i}]['step']", e["step"])
        if step <= last:
            raise InputError(f"history must be in step order; history[{i}] is at "
                             f"step {step}, after step {last}.")
        last = step
        _check_roles(f"history[{i}]['roles']", e["roles"], layers, h)
        out["history"].append({"step": step, "roles": [list(row) for row in e["roles"]],
                               "lookup": _check_share(f"history[{i}]['lookup']", e["lookup"])})
    if r.get("final") is not None:
        f = _check_dict("record['final']", r["final"], ("step", "stats"))
        stats = _check_list("final['stats']", f["stats"])
        if len(stats) < layers or any(len(_check_list("final['stats'][l]", row)) != h or any(
                len(_check_list("a head's stats", st)) != len(STATISTICS) for st in row)
                for row in stats[:layers]):
            raise InputError(f"final['stats'] must be ({layers}, {h}, {len(STATISTICS)}) "
                             "numbers (layers, heads, statistics).")
        out["final"] = {"step": _check_whole("final['step']", f["step"]),
                        "stats": [[[_check_real("final['stats']", v) for v in st] for st in row]
                                  for row in stats[:layers]],
                        "composition": None, "baseline": None}
        for key in ("composition", "baseline"):
            if f.get(key) is not None:
                d = _check_dict(f"final[{key!r}]", f[key], KINDS)
                # a composition score is a ratio of norms, from 0 to 1
                out["final"][key] = {k: _check_share(f"final[{key!r}][{k!r}]", d[k],
                                                     "a composition score")
                                     for k in KINDS}
    for i, a in enumerate(_check_list("record['ablations']", r.get("ablations", []))):
        a = _check_dict(f"ablations[{i}]", a, ("step", "off", "lookup"))
        off = []
        for pair in _check_list(f"ablations[{i}]['off']", a["off"]):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise InputError(f"ablations[{i}]['off'] must list [layer, head] pairs "
                                 f"(from 1); got {describe(pair)}.")
            layer = _check_whole(f"ablations[{i}]['off'] layer", pair[0], 1)
            head = _check_whole(f"ablations[{i}]['off'] head", pair[1], 1)
            if layer > layers or head > h:
                raise InputError(f"ablations[{i}]['off'] switches off layer {layer} head "
                                 f"{head}; the run has {layers} layer(s) of {h} heads "
                                 "(counted from 1).")
            off.append([layer, head])
        out["ablations"].append({"step": _check_whole(f"ablations[{i}]['step']", a["step"]),
                                 "off": off,
                                 "lookup": _check_share(f"ablations[{i}]['lookup']", a["lookup"])})
    return out


def check_predictions(predictions) -> dict:
    """``predictions`` ({question id: answer}) if every id and answer is the
    bank's, else one InputError naming the choices."""
    p = _check_dict("predictions", predictions)
    bank = {q["id"]: q for q in questions()["questions"]}
    for qid, answer in p.items():
        if not isinstance(qid, str) or qid not in bank:
            raise InputError(f"no question {describe(qid)}; the bank's are {sorted(bank)}.")
        if not isinstance(answer, str) or answer not in bank[qid]["answers"]:
            raise InputError(f"{describe(answer)} is not an answer to {qid!r}; pick "
                             f"one of {sorted(bank[qid]['answers'])}.")
    return p


# --- the read-outs (the same in lab/grade.js) ---------------------------

def _done(r) -> bool:
    return r["step"] >= r["settings"]["steps"]


def _last(r):
    """The run's last read-out, if the run is finished and it is at its end."""
    hist = r["history"]
    return hist[-1] if _done(r) and hist and hist[-1]["step"] == r["step"] else None


def _final(r):
    f = r.get("final")
    return f if _done(r) and f is not None and f["step"] == r["step"] else None


def check_phase_step(history, rule_lookup, margin) -> tuple[list, float, float]:
    """:func:`phase_step`'s input: ``(history, rule_lookup, margin)``,
    checked, the margin filled in from the bank when ``None``."""
    history = _check_list("history", history)
    last = -1
    for k, e in enumerate(history):
        e = _check_dict(f"history[{k}]", e)
        if "step" not in e or "lookup" not in e:
            raise InputError(f"history[{k}] must have a 'step' and a 'lookup' (a read-out of "
                             f"tm.train's metrics['history'] or of a recorded run); got "
                             f"the keys {sorted(map(str, e))}.")
        step = _check_whole(f"history[{k}]['step']", e["step"])
        if step <= last:
            raise InputError(f"history must be in step order; history[{k}] is at "
                             f"step {step}, after step {last}.")
        last = step
        _check_share(f"history[{k}]['lookup']", e["lookup"])
    rule_lookup = _check_share("rule_lookup", rule_lookup)
    if margin is None:
        margin = questions()["constants"]["phase_margin"]
    margin = _check_real("margin", margin)
    if not 0 <= margin < 1:
        raise InputError(f"margin must be from 0 to less than 1 (an accuracy gap); got {margin}.")
    return history, rule_lookup, margin


def phase_step(history, rule_lookup, margin=None):
    """The phase change: the first read-out step whose held-out lookup
    accuracy is more than ``margin`` above the previous-word rule's,
    ``lookup > rule_lookup + margin``; ``None`` if no read-out gets there.

    One rule for the whole course: chapter 11 and its seeds page mark runs
    with it, the page's trainer marks the reader's run with it (the margin
    travels in the explorer's data) and the predictions are graded with it.
    ``margin``: by default the bank's ``phase_margin`` (0.10).

    ``history``: read-outs in step order, each a dict with ``"step"`` and
    ``"lookup"`` (``tm.train``'s ``metrics["history"]``, or a recorded run's);
    ``rule_lookup`` the previous-word rule's lookup accuracy on the same
    held-out set. Returns a step (int) or ``None``.
    """
    history, rule_lookup, margin = check_phase_step(history, rule_lookup, margin)
    return _phase_step_core(history, rule_lookup, margin)


def _phase_step_core(history, rule_lookup: float, margin: float):
    """:func:`phase_step` with no checks (a record :func:`check_record` has
    checked, the bank's margin)."""
    return next((e["step"] for e in history if e["lookup"] > rule_lookup + margin), None)


def _phase_step(r, c):
    step = _phase_step_core(r["history"], r["rule_lookup"], c["phase_margin"])
    return (True, step) if step is not None else (_done(r), None)


def _layers_named(r, c, role):
    e = _last(r)
    if e is None:
        return False, None
    has = [any(n == role for n in row) for row in e["roles"][:r["settings"]["layers"]]]
    has += [False] * (2 - len(has))
    return True, {(True, False): "layer 1", (False, True): "layer 2",
                  (True, True): "both", (False, False): "neither"}[(has[0], has[1])]


def _readout(name: str, record: dict, constants: dict):
    """``(ready, value)`` of the read-out ``name`` of :func:`questions` on a
    checked ``record``; not ready: ``(False, None)``."""
    r = record
    if name == "phase_step":
        return _phase_step(r, constants)
    if name == "leaves_plateau":
        ready, step = _phase_step(r, constants)
        return ready, (None if not ready else "no" if step is None else "yes")
    if name == "previous_layers":
        return _layers_named(r, constants, "previous")
    if name == "induction_layers":
        return _layers_named(r, constants, "induction")
    if name == "layer1_off_lookup":
        h = r["settings"]["h"]
        want = {(1, i) for i in range(1, h + 1)}
        hits = [a["lookup"] for a in r.get("ablations", []) if _done(r)
                and a["step"] == r["step"] and set(map(tuple, a["off"])) == want]
        return (True, hits[-1]) if hits else (False, None)
    if name == "rising_composition":
        f = _final(r)
        if f is None or f.get("composition") is None or f.get("baseline") is None:
            return False, None
        ratio = {k: f["composition"][k] / f["baseline"][k] for k in KINDS
                 if f["baseline"][k] > 0 and f["composition"][k] > f["baseline"][k]}
        return True, max(ratio, key=lambda k: (ratio[k], -KINDS.index(k))) if ratio else "none"
    if name == "heads_identical":
        f = _final(r)
        if f is None:
            return False, None
        spread = max(abs(a - b) for row in f["stats"][:r["settings"]["layers"]]
                     for st in row for a, b in zip(st, row[0]))
        return True, "yes" if spread <= constants["identical_tolerance"] else "no"
    raise InputError(f"no read-out {describe(name)}; the bank's are "
                     f"{sorted(questions()['readouts'])}.")


def _answer(rule, value):
    if rule["kind"] == "equal":
        return value
    if value is None:
        return rule["none"]
    for band in rule["bands"]:
        if value >= band["lo"] and (band["hi"] is None or value < band["hi"]):
            return band["answer"]
    return rule["none"]



def _grade_bands(bank: dict, predictions: dict, record: dict, value_of, shown) -> list[dict]:
    """The grading loop of the band-format banks (chapter 17's and page
    11c's, checked first by their callers): one dict per prediction, in the
    bank's order; ``value_of(q, record)`` reads question ``q``'s number from
    the record and ``shown(q, value)`` writes it in the line."""
    out = []
    for q in bank["questions"]:
        if q["id"] not in predictions:
            continue
        said = predictions[q["id"]]
        base = {"id": q["id"], "prediction": said, "explain": q["explain"],
                "link": f"{bank['chapter']}#{q['section']}", "answer": None, "value": None}
        if q["readout"] not in record:
            out.append({**base, "status": "waiting",
                        "line": "Waiting for the run: its read-out is not in the record."})
            continue
        value = value_of(q, record)
        answer = _answer(q["rule"], value)
        ok = answer == said
        out.append({**base, "status": "right" if ok else "wrong", "answer": answer,
                    "value": value,
                    "line": (f"{'Right' if ok else 'Not this time'}: you said "
                             f"{q['answers'][said]}; this run: {shown(q, value)} "
                             f"({q['answers'][answer]}).")})
    return out

def _applies(q, s):
    need = q["requires"]
    for k, v in need.items():
        if k == "h_min":
            if s["h"] < v:
                return f"it needs at least {v} heads; this run has h = {s['h']}"
        elif s[k] != v:
            return f"it is about runs with {k} = {json.dumps(v)}; this run has {json.dumps(s[k])}"
    return None


def _observed(q, answer, value, step) -> str:
    """What the run showed, in words (the same in lab/grade.js)."""
    label = q["answers"][answer]
    if value is None:
        return f"no phase change in {step} steps"
    unit = q["rule"].get("unit")
    if unit == "step":
        return f"step {value} ({label})"
    if unit == "share":
        return f"{math.floor(1000 * value + 0.5) / 10:.1f} % ({label})"  # as JS
    return label


def _grade_one(q, prediction, r, constants, chapter):
    page = q.get("chapter", chapter)      # the question's own page, else the bank's
    base = {"id": q["id"], "prediction": prediction, "link": f"{page}#{q['section']}",
            "explain": q["explain"], "answer": None, "value": None}
    why = _applies(q, r["settings"])
    if why:
        return {**base, "status": "not_applicable",
                "line": f"Not graded on this run: {why}."}
    ready, value = _readout(q["readout"], r, constants)
    if not ready:
        return {**base, "status": "waiting", "line": q.get(
            "waiting", "Waiting for the run: its read-out is not ready yet.")}
    if "explain_plateau" in q and _readout("phase_step", r, constants) == (True, None):
        base["explain"] = q["explain_plateau"]  # what this run showed: no phase change
    answer = _answer(q["rule"], value)
    ok = answer == prediction
    seed = (f" Graded against this run (seed {r['settings']['seed']}): another seed "
            "or size may differ." if q["seed_dependent"] else "")
    return {**base, "status": "right" if ok else "wrong", "answer": answer, "value": value,
            "line": (f"{'Right' if ok else 'Not this time'}: you said "
                     f"{q['answers'][prediction]}; this run: "
                     f"{_observed(q, answer, value, r['step'])}.{seed}")}


def grade(predictions, record) -> list[dict]:
    """Grade ``predictions`` ({question id: answer}, :func:`questions`)
    against a run's ``record`` (:func:`run_record`). One dict per
    prediction, in the bank's order: ``id``, ``status`` ("right", "wrong",
    "waiting" or "not_applicable"), ``prediction``, ``answer`` (the run's),
    ``value`` (its read-out), ``line`` (one sentence), ``explain`` and
    ``link`` (the chapter section that teaches it)."""
    predictions = check_predictions(predictions)
    r = check_record(record)
    bank = questions()
    return [_grade_one(q, predictions[q["id"]], r, bank["constants"], bank["chapter"])
            for q in bank["questions"] if q["id"] in predictions]


# --- a Python run's record ----------------------------------------------

def _check_run(model, metrics, identical_heads) -> None:
    if not isinstance(model, TinyTransformer):
        raise InputTypeError(f"model must be tm.train's model; got {describe(model)}.")
    m = _check_dict("metrics", metrics, ("steps", "seed", "history"))
    check_bool("identical_heads", identical_heads)
    history = _check_list("metrics['history']", m["history"])
    if not history:
        raise InputError("metrics['history'] is empty: train with eval_every=20 "
                         "(tm.train(cfg, steps, eval_every=20)).")
    for i, e in enumerate(history):
        if not isinstance(e, dict) or not {"step", "lookup", "roles"} <= set(e):
            raise InputError(f"metrics['history'][{i}] must be a dict with 'step', "
                             "'lookup' and 'roles', as tm.train(cfg, steps, "
                             f"eval_every=20) writes; got {describe(e)}.")


@torch.no_grad()
def run_record(model, metrics, identical_heads: bool = False) -> dict:
    """The record (module docstring) of a finished ``tm.train`` run:
    ``model, metrics = tm.train(cfg, steps, seed=seed, eval_every=20)``.
    ``identical_heads``: what was passed to ``train``. Reads the finished
    model's head statistics, its composition (two layers) and its accuracy
    with layer 1 switched off."""
    _check_run(model, metrics, identical_heads)
    cfg = model.cfg
    steps = _check_whole("metrics['steps']", metrics["steps"], 1)
    data = heldout()
    history = [{"step": e["step"], "lookup": e["lookup"], "roles": e["roles"]}
               for e in metrics["history"]]
    settings = {"h": cfg.h, "d_k": cfg.d_k, "seed": metrics["seed"], "steps": steps,
                "layers": cfg.n_layers, "warmup": cfg.warmup > 0,
                "identical": identical_heads}
    scores = head_scores(model, data)
    stats = [[[s[k] for k in STATISTICS] for s in layer] for layer in scores]
    if not history or history[-1]["step"] != steps:  # read the end too
        history.append({"step": steps, "lookup": evaluate(model, data)["lookup"],
                        "roles": head_roles(scores)})
    final = {"step": steps, "stats": stats, "composition": None, "baseline": None}
    ablations = []
    if cfg.n_layers == 2:
        c = read_circuits(model)
        # the mean over the h x h pairs, like with like against one random pair
        final["composition"] = {k: float(c[f"comp_{k}"].mean()) for k in KINDS}
        final["baseline"] = dict(zip(KINDS, map(float, c["comp_baseline"])))
        mask = torch.ones(2, cfg.h)
        mask[0] = 0
        ablations.append({"step": steps, "off": [[1, i + 1] for i in range(cfg.h)],
                          "lookup": evaluate(model, data, head_mask=mask)["lookup"]})
    rule = float(baselines(*data)["previous word"]["lookup"])
    return check_record({"settings": settings, "step": steps, "rule_lookup": rule,
                         "history": history, "final": final, "ablations": ablations})


def grade_run(predictions, model, metrics, identical_heads: bool = False) -> list[dict]:
    """:func:`grade` of ``predictions`` on a finished ``tm.train`` run
    (:func:`run_record`)."""
    check_predictions(predictions)
    return grade(predictions, run_record(model, metrics, identical_heads))


__all__ = ["questions", "check_record", "check_predictions", "grade",
           "run_record", "grade_run"]
