"""Chapter 11's predictions (mhacourse.checks.predictions): the question
bank is whole, and each question is graded from the run's own read-outs,
waits while they are not ready, and refuses bad input in one line."""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pytest

import mhacourse as mc
from mhacourse import book_runs
from mhacourse import tiny_model as tm
from mhacourse.catalogue import assets_dir
from mhacourse.checks import predictions as P

RUNS = assets_dir() / "runs"
CHAPTER = assets_dir().parent / "chapters" / "11_how_heads_form.md"


def slug(title: str) -> str:
    """The id Sphinx gives a heading ("The one-layer control" ->
    "the-one-layer-control")."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@pytest.fixture(scope="module")
def records():
    """Records of committed runs: main (two layers) and identical (from
    their weights and histories), and one_layer (history only: no final)."""
    out = {}
    for name, same in (("main", False), ("identical", True)):
        run = json.loads((RUNS / f"{name}.json").read_text())
        model = tm.load(RUNS / f"{name}.safetensors")
        metrics = {"steps": run["train"]["steps"], "seed": run["train"]["seed"],
                   "history": run["history"]}
        out[name] = P.run_record(model, metrics, identical_heads=same)
    one = json.loads((RUNS / "one_layer.json").read_text())
    out["one_layer"] = {
        "settings": {"h": 4, "d_k": 16, "seed": 0, "steps": one["train"]["steps"],
                     "layers": 1, "warmup": True, "identical": False},
        "step": one["train"]["steps"], "rule_lookup": out["main"]["rule_lookup"],
        "history": [{"step": e["step"], "lookup": e["lookup"], "roles": e["roles"]}
                    for e in one["history"]],
        "final": None, "ablations": []}
    return out


def by_id(grades):
    return {g["id"]: g for g in grades}


def test_the_bank_is_whole():
    bank = P.questions()
    ids = [q["id"] for q in bank["questions"]]
    assert len(ids) == len(set(ids)) >= 7
    def sections(page: str) -> set[str]:       # the headings of a page of the book
        md = CHAPTER.parent / Path(page).with_suffix(".md").name
        return {slug(m) for m in re.findall(r"^#+ (.+)$", md.read_text(), re.M)}

    assert bank["chapter"] == f"chapters/{CHAPTER.stem}.html"
    for q in bank["questions"]:
        assert q["readout"] in bank["readouts"], q["id"]
        assert q["section"] in sections(q.get("chapter", bank["chapter"])), q["id"]
        rule = q["rule"]
        if rule["kind"] == "band":  # every band and "none" is an answer, bands tile
            outcomes = [b["answer"] for b in rule["bands"]] + [rule["none"]] * (
                rule["none"] is not None)
            assert set(outcomes) == set(q["answers"]), q["id"]
            for a, b in zip(rule["bands"], rule["bands"][1:]):
                assert a["hi"] == b["lo"], q["id"]
            assert rule["bands"][0]["lo"] == 0 and rule["bands"][-1]["hi"] is None
        assert q["explain"] and q["ask"].endswith("?")
    assert P.questions() is not P.questions()  # a fresh copy each time


def phase_step(history, rule, margin=0.10):
    """Chapter 11's rule, written again here: the first step with lookup
    more than `margin` above the rule's."""
    return next((e["step"] for e in history if e["lookup"] > rule + margin), None)


def test_main_run_grades_its_own_read_outs(records):
    r = records["main"]
    step = phase_step(r["history"], r["rule_lookup"])
    assert step is not None
    band = next(b for b in P.questions()["questions"][0]["rule"]["bands"]
                if b["lo"] <= step and (b["hi"] is None or step < b["hi"]))["answer"]
    wrong = "never"
    g = by_id(P.grade({"phase_step": band}, r))["phase_step"]
    assert (g["status"], g["answer"], g["value"]) == ("right", band, step)
    assert f"step {step}" in g["line"] and "seed 0" in g["line"]
    assert g["link"].endswith("#the-curves-and-the-baselines-they-must-beat")
    assert by_id(P.grade({"phase_step": wrong}, r))["phase_step"]["status"] == "wrong"
    g = by_id(P.grade({"previous_layer": "layer 1", "induction_layer": "layer 1",
                       "composition": "k", "layer1_off": "above_80"}, r))
    assert g["previous_layer"]["status"] == "right"  # roles [[previous]*4, [induction]*4]
    assert (g["induction_layer"]["status"], g["induction_layer"]["answer"]) == (
        "wrong", "layer 2")
    assert g["composition"]["status"] == "right"
    off = g["layer1_off"]
    assert off["status"] == "wrong" and off["value"] < 0.5  # the chapter: it collapses
    assert g["layer1_off"]["answer"] in ("near_chance", "around_rule")
    # a question about another kind of run is not graded
    g = by_id(P.grade({"one_layer": "no", "identical_start": "yes"}, r))
    assert {x["status"] for x in g.values()} == {"not_applicable"}


def test_identical_start_and_one_layer(records):
    g = by_id(P.grade({"identical_start": "yes"}, records["identical"]))["identical_start"]
    assert g["status"] == "right" and "Graded against" not in g["line"]
    # taught on chapter 11's companion page: the link goes there, not to the bank's chapter
    assert g["link"] == "chapters/11b_seeds_and_settings.html#seeds-and-what-a-head-index-means"
    assert by_id(P.grade({"identical_start": "no"}, records["identical"]))[
        "identical_start"]["status"] == "wrong"
    one = records["one_layer"]
    g = by_id(P.grade({"one_layer": "no", "phase_step": "never"}, one))
    assert g["one_layer"]["status"] == "right" and g["one_layer"]["answer"] == "no"
    assert g["phase_step"]["status"] == "right"
    assert "no phase change in 1600 steps" in g["phase_step"]["line"]
    assert by_id(P.grade({"one_layer": "yes"}, one))["one_layer"]["status"] == "wrong"
    # layer questions are about two layers
    assert by_id(P.grade({"previous_layer": "layer 1"}, one))["previous_layer"][
        "status"] == "not_applicable"


def test_a_partial_run_waits(records):
    r = copy.deepcopy(records["main"])
    step = phase_step(r["history"], r["rule_lookup"])
    r["step"] = step - 20  # before the phase change: nothing about the end yet
    r["history"] = [e for e in r["history"] if e["step"] <= r["step"]]
    every = {q["id"]: next(iter(q["answers"])) for q in P.questions()["questions"]}
    g = by_id(P.grade(every, r))
    for qid in ("phase_step", "previous_layer", "induction_layer", "layer1_off",
                "composition"):
        assert g[qid]["status"] == "waiting", qid
        assert g[qid]["answer"] is None and g[qid]["value"] is None
    # paused after the phase change: the step is known, the rest waits
    r = copy.deepcopy(records["main"])
    r["step"] = step + 40
    r["history"] = [e for e in r["history"] if e["step"] <= r["step"]]
    g = by_id(P.grade(every, r))
    assert g["phase_step"]["status"] in ("right", "wrong")
    assert g["previous_layer"]["status"] == "waiting"
    # an ablation read on an earlier model is stale
    r = copy.deepcopy(records["main"])
    r["ablations"][0]["step"] = 400
    assert by_id(P.grade({"layer1_off": "near_chance"}, r))["layer1_off"]["status"] == "waiting"


BAD = [
    ({"nope": "yes"}, None, "no question"),
    ({"one_layer": "maybe"}, None, "not an answer"),
    ("phase_step", None, "predictions must be a dict"),
    ({}, 3, "record must be a dict"),
    ({}, {"settings": {}}, "lacks"),
]


@pytest.mark.parametrize("pred, record, words", BAD)
def test_bad_input_gets_one_line(records, pred, record, words):
    with pytest.raises(mc.InputError, match=words) as e:
        P.grade(pred, records["main"] if record is None else record)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("path, value, words", [
    (("history", 3, "lookup"), math.nan, "finite number"),
    (("history", 3, "step"), 0, "step order"),
    (("history", 0, "roles"), [["previous"]], "role names"),
    (("settings", "h"), 0, "whole number >= 1"),
    (("settings", "warmup"), "yes", "warmup"),
    (("final", "stats"), [[[0.1] * 5]], r"\(2, 4, 5\)"),
    (("final", "composition", "k"), math.inf, "finite number"),
    (("ablations", 0, "off"), [[1]], r"\[layer, head\]"),
    (("rule_lookup",), None, "finite number"),
])
def test_a_broken_record_gets_one_line(records, path, value, words):
    r = copy.deepcopy(records["main"])
    node = r
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(mc.InputError, match=words) as e:
        P.grade({"phase_step": "never"}, r)
    assert "\n" not in str(e.value)


def test_run_record_checks_its_input():
    with pytest.raises(mc.InputError, match="tm.train's model"):
        P.run_record("model", {})
    model = tm.TinyTransformer(tm.TinyConfig(h=1, d_k=8))
    with pytest.raises(mc.InputError, match="eval_every"):
        P.run_record(model, {"steps": 20, "seed": 0, "history": []})
    with pytest.raises(mc.InputError, match="identical_heads"):
        P.grade_run({}, model, {"steps": 20, "seed": 0, "history": [{}]}, "no")


def test_phase_step_is_the_one_rule(records):
    """phase_step: the first read-out more than the margin (the bank's by
    default) above the rule on lookup; strictly more, so a run that only
    reaches rule + margin has not left the plateau; None if never. The
    grades and the book's runs in the page's data (book_runs) use it, so
    they agree with chapter 11, which imports it too."""
    margin = P.questions()["constants"]["phase_margin"]
    hist = [{"step": 0, "lookup": 0.25}, {"step": 20, "lookup": 0.5},
            {"step": 40, "lookup": 0.75}]
    assert P.phase_step(hist, 0.25, 0.25) == 40  # 0.5 is not > 0.25 + 0.25
    assert P.phase_step(hist, 0.25, 0.2) == 20
    assert P.phase_step(hist, 0.25) == (20 if 0.5 > 0.25 + margin else 40)
    assert P.phase_step(hist, 0.7) is None
    assert P.phase_step([], 0.3) is None
    r = records["main"]
    want = next(e["step"] for e in r["history"] if e["lookup"] > r["rule_lookup"] + margin)
    assert P.phase_step(r["history"], r["rule_lookup"]) == want
    assert P._readout("phase_step", r, P.questions()["constants"]) == (True, want)
    book = {run["name"]: run for run in book_runs.book_runs()["runs"]}
    assert book["main"]["phase_step"] == want
    assert "def phase_change" not in CHAPTER.read_text(encoding="utf-8"), \
        "chapter 11 defines its own phase rule again: import phase_step"


@pytest.mark.parametrize("history, rule, margin, words", [
    ("steps", 0.3, None, "history must be a list"),
    ([{"step": 0}], 0.3, None, "a 'step' and a 'lookup'"),
    ([{"step": 0, "lookup": 1.5}], 0.3, None, "accuracy from 0 to 1"),
    ([{"step": -20, "lookup": 0.5}], 0.3, None, "whole number >= 0"),
    ([{"step": 0, "lookup": 0.5}], math.nan, None, "finite number"),
    ([{"step": 0, "lookup": 0.5}], 0.3, 1.0, "margin must be from 0"),
    ([{"step": 0, "lookup": 0.5}], 0.3, "0.1", "finite number"),
])
def test_phase_step_bad_input_gets_one_line(history, rule, margin, words):
    with pytest.raises(mc.InputError, match=words) as e:
        P.phase_step(history, rule, margin)
    assert "\n" not in str(e.value)
