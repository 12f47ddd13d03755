"""Checkers for the exercises of chapters 12-15 (masks in batches,
positions, cross-attention, the key/value cache). Like
:mod:`mhacourse.checks`, each runs the learner's function on fixed inputs,
compares it with the package's answer and the usual mistakes, and returns a
:class:`~mhacourse.checks.Verdict` that names the mistake. Pure computation.
"""
from __future__ import annotations

import math

import torch

from .batching import batch_mask
from .checks import Verdict
from .positions import rotary, sinusoidal_positions


def _run(fn, *args):
    """``(result, None)``, or ``(None, Verdict)`` if the learner's code raised."""
    try:
        return fn(*args), None
    except Exception as e:  # the learner's bug, reported in one line
        return None, Verdict(False, f"your function raised {type(e).__name__}: {e}")


def _as_bool_mask(got, B: int, L: int):
    """The learner's mask as (B, L, L) bool, or a Verdict saying why not."""
    if not isinstance(got, torch.Tensor):
        return None, Verdict(False, f"return a torch.Tensor; got {type(got).__name__}.")
    if got.dtype != torch.bool:
        return None, Verdict(False, f"return a boolean mask (True = blocked); got "
                                    f"dtype {got.dtype}.")
    if tuple(got.shape) == (B, 1, L, L):
        got = got[:, 0]
    if tuple(got.shape) != (B, L, L):
        return None, Verdict(False, f"the mask has shape {tuple(got.shape)}; expected "
                                    f"(B, 1, L, L) = {(B, 1, L, L)}: one (L, L) "
                                    "mask per sentence, broadcast over heads.")
    return got, None


def check_batch_mask(fn) -> Verdict:
    """Check ``fn(lengths, L, causal) -> mask`` (B, 1, L, L), True = blocked:
    padding keys blocked, and with ``causal=True`` every later key too.

    Recognises: the opposite convention (True = allowed), padding applied to
    the queries (rows) instead of the keys (columns), an off-by-one length,
    a causal mask that blocks the past instead of the future, and a causal
    mask that forgets the padding (or the reverse).
    """
    lengths, L = torch.tensor([3, 5, 2]), 5
    B = len(lengths)
    for causal in (False, True):
        got, err = _run(fn, lengths.clone(), L, causal)
        if err is not None:
            return err
        got, err = _as_bool_mask(got, B, L)
        if err is not None:
            return err
        want = batch_mask(lengths, L, causal)[:, 0]  # (B, L, L)
        if torch.equal(got, want):
            continue
        i = torch.arange(L)[:, None]
        j = torch.arange(L)[None, :]
        pad_k = (j[None] >= lengths[:, None, None]).expand(B, L, L)  # keys
        pad_q = (i[None] >= lengths[:, None, None]).expand(B, L, L)  # queries
        fut = (j > i)[None].expand(B, L, L)  # later keys
        none = torch.zeros(B, L, L, dtype=torch.bool)
        what = "causal + padding" if causal else "padding"
        if torch.equal(got, ~want):
            return Verdict(False, f"{what}: your mask is inverted. In this course, "
                                  "as in nn.MultiheadAttention, True means "
                                  "blocked (F.scaled_dot_product_attention uses "
                                  "the opposite).")
        if torch.equal(got, pad_q | (fut if causal else none)):
            return Verdict(False, f"{what}: you blocked padded *queries* (rows); "
                                  "block padded *keys* (columns, the last axis), "
                                  "so no real token reads the padding.")
        for shift, word in ((1, "blocks one real token too many"),
                            (-1, "lets the first padding key through")):
            off = (j[None] >= (lengths - shift)[:, None, None]).expand(B, L, L)
            if torch.equal(got, off | (fut if causal else none)):
                return Verdict(False, f"{what}: off by one: your mask {word} "
                                      "(key j is padding when j >= n_b).")
        if causal and torch.equal(got, pad_k | (j < i)[None].expand(B, L, L)):
            return Verdict(False, "causal + padding: you blocked the past (j < i); "
                                  "block the future, keys j > i.")
        if causal and torch.equal(got, fut):
            return Verdict(False, "causal + padding: the causal part is right but "
                                  "the padding is missing: combine them with |.")
        if causal and torch.equal(got, pad_k):
            return Verdict(False, "causal + padding: the padding part is right but "
                                  "the causal part is missing (keys j > i).")
        if not causal and torch.equal(got, pad_k | fut):
            return Verdict(False, "with causal=False the mask must not block later "
                                  "keys: only the padding.")
        wrong = int((got != want).sum())
        return Verdict(False, f"{what}: {wrong} entries differ from the expected "
                              f"mask for lengths {lengths.tolist()}, L = {L}.")
    return Verdict(True, "correct: padding keys blocked in every sentence, and "
                         "with causal=True every later key as well.")
