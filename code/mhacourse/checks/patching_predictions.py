"""Page 11c's predictions ("predict, then run"), graded from the reader's
own run of :mod:`mhacourse.interventions` on the main run's model.

The questions, their read-outs and grading rules live in one data file,
``mhacourse/data/questions_patching.json`` (:func:`questions`), in the
format of chapter 11's and chapter 17's banks
(:mod:`mhacourse.checks.predictions`,
:mod:`mhacourse.checks.induction_predictions`: a rule of kind ``"band"``,
``answers``, ``explain`` and the ``section`` that teaches it). The page's
run fills a *record* of read-outs, every one a fraction on
:func:`~mhacourse.interventions.fraction_recovered`'s scale::

    record = {"successor_layer_gap": layer 2 - layer 1, denoised,
              "occurrence_layer_gap": the same under "occurrence",
              "occurrence_zero_minus_resample": layer 2 ablated, zero - resample,
              "successor_noise_l2": layer 2 noised, "query_all": every head denoised}

(:func:`patching_record` makes it from the page's maps). A question whose
read-out the record lacks *waits*; it is never graded on a guess.
"""
from __future__ import annotations

import json
import math
import numbers
from functools import lru_cache
from pathlib import Path

from .._validate import InputError, InputTypeError, describe
from .predictions import _grade_bands

BANK = Path(__file__).resolve().parents[1] / "data" / "questions_patching.json"


@lru_cache(maxsize=1)
def _bank() -> str:
    return BANK.read_text(encoding="utf-8")


def questions() -> dict:
    """The bank (a fresh copy): its ``readouts`` and ``questions``."""
    return json.loads(_bank())


def _finite(name: str, v) -> float:
    if getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        v = v.item()  # a 0-d tensor or array
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
            or abs(v) > 1e6:
        raise InputError(f"{name} must be a finite number; got {describe(v)}.")
    return float(v)


def check_patching_predictions(predictions) -> dict:
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


def check_patching_record(record) -> dict:
    """``record`` as {read-out: finite number}, names from the bank's read-outs."""
    readouts = questions()["readouts"]
    if not isinstance(record, dict):
        raise InputTypeError(f"record must be a dict {{read-out: number}}; got "
                             f"{describe(record)}.")
    for name, value in record.items():
        if name not in readouts:
            raise InputError(f"record: no read-out {describe(name)}; the bank's are "
                             f"{sorted(readouts)}.")
        _finite(f"record[{name!r}]", value)
    return record


def check_layer_values(**given) -> dict:
    """Each value a (layer 1, layer 2) pair of finite numbers (a list, a
    tuple or a (2,) tensor: ``patching_map(..., unit="layer")``'s), or, for
    ``query_all``, one number; returned as floats."""
    out = {}
    for name, v in given.items():
        if name == "query_all":
            out[name] = _finite(name, v)
            continue
        seq = v.tolist() if hasattr(v, "tolist") else v
        if not isinstance(seq, (list, tuple)) or len(seq) != 2:
            raise InputError(f"{name} must be one fraction per layer, (layer 1, layer 2) "
                             f"(patching_map(..., unit='layer')); got {describe(v)}.")
        out[name] = tuple(_finite(f"{name}[{i}]", x) for i, x in enumerate(seq))
    return out


def patching_record(successor_denoise, occurrence_denoise, successor_noise,
                    occurrence_zero, occurrence_resample, query_all) -> dict:
    """The record of a run from page 11c's numbers: the whole-layer maps
    (layer 1, layer 2) of denoising under "successor" and "occurrence", of
    noising under "successor", of zero and resample ablation on the
    "occurrence" pairs, and the fraction with every head denoised under
    "query"."""
    v = check_layer_values(successor_denoise=successor_denoise,
                           occurrence_denoise=occurrence_denoise,
                           successor_noise=successor_noise,
                           occurrence_zero=occurrence_zero,
                           occurrence_resample=occurrence_resample, query_all=query_all)
    return check_patching_record({
        "successor_layer_gap": v["successor_denoise"][1] - v["successor_denoise"][0],
        "occurrence_layer_gap": v["occurrence_denoise"][1] - v["occurrence_denoise"][0],
        "occurrence_zero_minus_resample": (v["occurrence_zero"][1]
                                           - v["occurrence_resample"][1]),
        "successor_noise_l2": v["successor_noise"][1], "query_all": v["query_all"]})


def grade_patching(predictions, record) -> list[dict]:
    """Grade ``predictions`` against a run's ``record``: one dict per
    prediction, in the bank's order, with ``id``, ``status`` ("right",
    "wrong" or "waiting"), ``prediction``, ``answer`` (the run's),
    ``value``, ``line`` (one sentence), ``explain`` and ``link``."""
    predictions = check_patching_predictions(predictions)
    record = check_patching_record(record)
    return _grade_bands(questions(), predictions, record,
                        lambda q, r: _finite(q["readout"], r[q["readout"]]),
                        lambda q, value: f"{value:.3f}")
