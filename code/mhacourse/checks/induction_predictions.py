"""Chapter 17's predictions ("predict, then run"), graded from the reader's
own run of SmolLM2-135M.

The questions, their read-outs and grading rules live in one data file,
``mhacourse/data/questions_induction.json`` (:func:`questions`), in the
format of chapter 11's bank (:mod:`mhacourse.checks.predictions`: a rule
of kind ``"band"``, ``answers``, ``explain`` and the ``section`` that
teaches it). The chapter's run fills a *record* of read-outs::

    record = {"copy_gap": nats, "top_layer": 1..30, "top5_lost": share,
              "random5_lost": share, "denoise5": fraction}

(:func:`induction_record` makes it from the chapter's numbers). A question
whose read-out the record lacks *waits*; it is never graded on a guess.
"""
from __future__ import annotations

import json
import math
import numbers
from functools import lru_cache
from pathlib import Path

from .._validate import InputError, InputTypeError, describe
from .predictions import _grade_bands

BANK = Path(__file__).resolve().parents[1] / "data" / "questions_induction.json"


@lru_cache(maxsize=1)
def _bank() -> str:
    return BANK.read_text(encoding="utf-8")


def questions() -> dict:
    """The bank (a fresh copy): its ``readouts`` and ``questions``."""
    return json.loads(_bank())


def check_induction_predictions(predictions) -> dict:
    """``predictions`` as {question id: answer}, every id and answer in the bank."""
    if not isinstance(predictions, dict) or not predictions:
        raise InputTypeError("predictions must be a non-empty dict {question id: answer}; "
                             f"got {describe(predictions)}.")
    bank = {q["id"]: q for q in questions()["questions"]}
    for qid, answer in predictions.items():
        if qid not in bank:
            raise InputError(f"no question {describe(qid)}; the bank's are {sorted(bank)}.")
        if answer not in bank[qid]["answers"]:
            raise InputError(f"{qid}: {describe(answer)} is not an answer; choose one of "
                             f"{sorted(bank[qid]['answers'])}.")
    return predictions


def check_induction_record(record) -> dict:
    """``record`` as {read-out: finite number}, names from the bank's read-outs,
    ``top_layer`` a whole number >= 1."""
    readouts = questions()["readouts"]
    if not isinstance(record, dict):
        raise InputTypeError(f"record must be a dict {{read-out: number}}; got "
                             f"{describe(record)}.")
    for name, value in record.items():
        if name not in readouts:
            raise InputError(f"record: no read-out {describe(name)}; the bank's are "
                             f"{sorted(readouts)}.")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(value) or abs(value) > 1e6:
            raise InputError(f"record[{name!r}] must be a finite number; got "
                             f"{describe(value)}.")
    if "top_layer" in record and (record["top_layer"] != int(record["top_layer"])
                                  or record["top_layer"] < 1):
        raise InputError(f"record['top_layer'] is a layer counted from 1; got "
                         f"{describe(record['top_layer'])}.")
    return record


def check_run_numbers(**numbers_given) -> None:
    """Each value a finite real number (a float, an int or a 0-d tensor)."""
    for name, v in numbers_given.items():
        if getattr(v, "ndim", 0) == 0 and hasattr(v, "item"):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise InputError(f"{name} must be a finite number; got {describe(v)}.")


def induction_record(first, second, top_layer, top5_off, random5_off, denoise5) -> dict:
    """The record of a run from the chapter's numbers: the mean loss on the
    first and the second copy (nats), the strongest induction head's layer
    (from 1), the second copy's loss with the top 5 and with 5 random heads
    off, and the top 5's denoising fraction."""
    check_run_numbers(first=first, second=second, top5_off=top5_off,
                      random5_off=random5_off, denoise5=denoise5)
    gap = float(first) - float(second)
    if gap <= 1e-6:
        raise InputError(f"the first copy's loss ({describe(first)}) must be above the "
                         f"second's ({describe(second)}) to measure a share of the gap.")
    return check_induction_record({
        "copy_gap": gap, "top_layer": top_layer,
        "top5_lost": (float(top5_off) - float(second)) / gap,
        "random5_lost": (float(random5_off) - float(second)) / gap,
        "denoise5": float(denoise5)})


def grade_induction(predictions, record) -> list[dict]:
    """Grade ``predictions`` against a run's ``record``: one dict per
    prediction, in the bank's order, with ``id``, ``status`` ("right",
    "wrong" or "waiting"), ``prediction``, ``answer`` (the run's),
    ``value``, ``line`` (one sentence), ``explain`` and ``link``."""
    predictions = check_induction_predictions(predictions)
    record = check_induction_record(record)
    return _grade_bands(questions(), predictions, record, lambda q, r: r[q["readout"]],
                        lambda q, value: (f"{value:.2f}" if q["rule"].get("unit") != "layer"
                                          else f"{value:.0f}"))
