"""Chapter 17's predictions, graded from a run's record
(mhacourse.checks.induction_predictions): every answer of every band is
reachable, a missing read-out waits, and bad predictions or records get
one line."""
import pytest

import mhacourse as mc
from mhacourse.checks import induction_predictions as ip

#: A run like chapter 17's (first copy 14.3 nats, second 2.6, top head in
#: layer 19, the top 5 off 11.1, 5 random off 3.2, denoising 0.0).
RUN = ip.induction_record(14.3, 2.6, 19, 11.1, 3.2, -0.04)


def test_the_record_holds_the_shares_of_the_gap():
    assert RUN["copy_gap"] == pytest.approx(11.7)
    assert RUN["top5_lost"] == pytest.approx((11.1 - 2.6) / 11.7)
    assert RUN["random5_lost"] == pytest.approx((3.2 - 2.6) / 11.7)


def test_each_question_grades_right_and_wrong():
    said = {"copy_gap": "over_10", "top_layer": "middle", "top5_lost": "half_three_quarters",
            "random5_lost": "under_quarter", "denoise5": "over_three_quarters"}
    grades = {g["id"]: g for g in ip.grade_induction(said, RUN)}
    assert [grades[q]["status"] for q in said] == ["right", "right", "right", "right", "wrong"]
    assert grades["denoise5"]["answer"] == "under_quarter"  # a negative share is under a quarter
    assert grades["top_layer"]["line"].startswith("Right: you said blocks 11-20; this run: 19")
    page = "chapters/17_induction_in_a_real_lm.html#"
    assert all(g["link"].startswith(page) for g in grades.values())


def test_every_band_answer_is_reachable():
    for q in ip.questions()["questions"]:
        for band in q["rule"]["bands"]:
            value = band["lo"] if band["lo"] > -1e8 else -0.5
            record = {q["readout"]: value}
            (g,) = ip.grade_induction({q["id"]: band["answer"]}, record)
            assert g["status"] == "right", (q["id"], band)


def test_a_read_out_the_record_lacks_waits():
    (g,) = ip.grade_induction({"denoise5": "under_quarter"}, {"copy_gap": 3.0})
    assert g["status"] == "waiting" and g["answer"] is None


@pytest.mark.parametrize("call", [
    lambda: ip.grade_induction({"copy_gap": "huge"}, RUN),
    lambda: ip.grade_induction({"no such": "over_10"}, RUN),
    lambda: ip.grade_induction({}, RUN),
    lambda: ip.grade_induction({"copy_gap": "over_10"}, {"copy_gap": float("nan")}),
    lambda: ip.grade_induction({"copy_gap": "over_10"}, {"loss": 1.0}),
    lambda: ip.grade_induction({"top_layer": "first"}, {"top_layer": 2.5}),
    lambda: ip.induction_record(2.0, 3.0, 19, 11.1, 3.2, 0.0),   # no gap
    lambda: ip.induction_record(14.3, 2.6, 19, float("inf"), 3.2, 0.0),
], ids=["answer", "question", "empty", "NaN", "read-out", "layer 2.5", "no gap", "inf"])
def test_bad_input_gets_one_line(call):
    with pytest.raises(mc.InputError) as e:
        call()
    assert "\n" not in str(e.value)
