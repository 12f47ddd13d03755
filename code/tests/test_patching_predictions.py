"""Page 11c's predictions, graded from a run's record
(mhacourse.checks.patching_predictions): the record is the maps' own
differences, every answer of every band is reachable, a missing read-out
waits, the bank's sections are page 11c's headings, and bad predictions or
records get one line."""
import re
from pathlib import Path

import pytest
import torch

import mhacourse as mc
from mhacourse.checks import patching_predictions as pp

#: A run like page 11c's on the main run's model (layer 1, layer 2).
RUN = pp.patching_record(successor_denoise=(0.118, 0.887),
                         occurrence_denoise=torch.tensor([0.994, 1.000]),
                         successor_noise=(0.888, 0.121),
                         occurrence_zero=(0.555, -0.191),
                         occurrence_resample=(0.598, 0.117), query_all=0.985)
CHAPTER = Path(__file__).resolve().parents[2] / "chapters" / "11c_ablation_and_patching.md"


def test_the_record_holds_the_maps_differences():
    assert RUN["successor_layer_gap"] == pytest.approx(0.887 - 0.118)
    assert RUN["occurrence_layer_gap"] == pytest.approx(0.006, abs=1e-6)
    assert RUN["occurrence_zero_minus_resample"] == pytest.approx(-0.191 - 0.117)
    assert RUN["successor_noise_l2"] == pytest.approx(0.121)
    assert RUN["query_all"] == pytest.approx(0.985)


def test_each_question_grades_right_and_wrong():
    said = {"successor_layer": "layer_2", "occurrence_layer": "about_equal",
            "zero_vs_resample": "agree", "noise_vs_denoise": "under_quarter",
            "query_all": "all"}
    grades = {g["id"]: g for g in pp.grade_patching(said, RUN)}
    assert [grades[q]["status"] for q in said] == ["right", "right", "wrong", "right",
                                                   "wrong"]
    assert grades["zero_vs_resample"]["answer"] == "zero_lower"
    assert grades["query_all"]["answer"] == "most"
    assert grades["successor_layer"]["line"].startswith(
        "Right: you said layer 2, by over 0.1; this run: 0.769")
    page = "chapters/11c_ablation_and_patching.html#"
    assert all(g["link"].startswith(page) for g in grades.values())


def test_every_band_answer_is_reachable():
    for q in pp.questions()["questions"]:
        assert set(q["answers"]) == {b["answer"] for b in q["rule"]["bands"]}, q["id"]
        for band in q["rule"]["bands"]:
            value = band["lo"] if band["lo"] > -1e8 else band["hi"] - 0.5
            (g,) = pp.grade_patching({q["id"]: band["answer"]}, {q["readout"]: value})
            assert g["status"] == "right", (q["id"], band)


def test_the_sections_are_the_pages_headings():
    headings = {re.sub(r"[^a-z0-9 -]", "", m.lower()).replace(" ", "-")
                for m in re.findall(r"^## (.+)$", CHAPTER.read_text(), re.M)}
    bank = pp.questions()
    assert {q["section"] for q in bank["questions"]} <= headings
    assert set(bank["readouts"]) == {q["readout"] for q in bank["questions"]}


def test_a_read_out_the_record_lacks_waits():
    (g,) = pp.grade_patching({"query_all": "all"}, {"successor_noise_l2": 0.1})
    assert g["status"] == "waiting" and g["answer"] is None


@pytest.mark.parametrize("call", [
    lambda: pp.grade_patching({"query_all": "everything"}, RUN),
    lambda: pp.grade_patching({"no such": "all"}, RUN),
    lambda: pp.grade_patching({}, RUN),
    lambda: pp.grade_patching({"query_all": "all"}, {"query_all": float("nan")}),
    lambda: pp.grade_patching({"query_all": "all"}, {"loss": 1.0}),
    lambda: pp.grade_patching({"query_all": "all"}, [0.9]),
    lambda: pp.patching_record((0.1,), (0.9, 1.0), (0.9, 0.1), (0.5, -0.2), (0.6, 0.1), 0.9),
    lambda: pp.patching_record((0.1, 0.9), (0.9, 1.0), (0.9, float("inf")), (0.5, -0.2),
                               (0.6, 0.1), 0.9),
    lambda: pp.patching_record((0.1, 0.9), (0.9, 1.0), (0.9, 0.1), (0.5, -0.2),
                               (0.6, 0.1), "0.9"),
], ids=["answer", "question", "empty", "NaN", "read-out", "list", "one layer", "inf",
        "text"])
def test_bad_input_gets_one_line(call):
    with pytest.raises(mc.InputError) as e:
        call()
    assert "\n" not in str(e.value)
