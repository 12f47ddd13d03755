"""Checkers for the exercises: they say *what* is wrong, not just "incorrect".

Each ``check_*`` runs the learner's function on fixed inputs, compares it with
the package's answer and with the usual mistakes, and returns a
:class:`Verdict` whose message names the mistake. Pure computation: no
plotting, no widgets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .attention import scaled_dot_product_attention, softmax
from .heads import split_heads


@dataclass
class Verdict:
    ok: bool
    message: str

    def __repr__(self) -> str:  # shown as a cell's result
        return ("✅ " if self.ok else "❌ ") + self.message

    def __bool__(self) -> bool:
        return self.ok


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=float)


def _close(a, b, tol=1e-6) -> bool:
    a, b = _np(a), _np(b)
    return a.shape == b.shape and bool(np.allclose(a, b, atol=tol, rtol=tol))


def _call(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # the learner's bug, reported in one line
        return None, Verdict(False, f"your function raised {type(e).__name__}: {e}")


def check_attention(fn, as_numpy: bool = False) -> Verdict:
    """Check ``fn(Q, K, V) -> (output, weights)`` implements
    ``softmax(Q K^T / sqrt(d_k)) V``.

    Recognises: wrong return value, wrong shapes, softmax over the wrong axis,
    a missing or wrong scale (d_k instead of sqrt(d_k)), transposed weights.
    """
    g = torch.Generator().manual_seed(0)
    L, S, d_k, d_v = 3, 5, 16, 4  # all different, so shape mistakes show
    Q = 2 * torch.randn(L, d_k, generator=g, dtype=torch.float64)
    K = 2 * torch.randn(S, d_k, generator=g, dtype=torch.float64)
    V = torch.randn(S, d_v, generator=g, dtype=torch.float64)
    args = (Q.numpy(), K.numpy(), V.numpy()) if as_numpy else (Q, K, V)
    got, err = _call(fn, *args)
    if err:
        return err
    if not (isinstance(got, tuple) and len(got) == 2):
        return Verdict(False, "return a pair (output, weights), as "
                              "nn.MultiheadAttention does.")
    out, w = (_np(t) for t in got)
    want_out, want_w = scaled_dot_product_attention(Q, K, V)
    raw = Q @ K.T
    if w.shape == (S, L):
        return Verdict(False, f"weights have shape {w.shape}; expected (L, S) = "
                              f"{(L, S)}: one row per query. Did you compute K Q^T?")
    if w.shape != (L, S):
        return Verdict(False, f"weights have shape {w.shape}; expected (L, S) = {(L, S)}.")
    if _close(w, torch.softmax(raw / math.sqrt(d_k), dim=0)):
        return Verdict(False, "softmax ran over the query axis (dim=0): each "
                              "query's row must sum to 1, so take it over the "
                              "keys, the last axis (dim=-1).")
    if _close(w, softmax(raw)):
        return Verdict(False, "you forgot to divide the scores by sqrt(d_k) "
                              f"(= {math.sqrt(d_k):g} here) before the softmax.")
    if _close(w, softmax(raw / d_k)):
        return Verdict(False, f"you divided by d_k = {d_k}; divide by its square "
                              f"root, sqrt(d_k) = {math.sqrt(d_k):g}.")
    if not np.allclose(w.sum(-1), 1):
        return Verdict(False, "the rows of your weights do not sum to 1: apply "
                              "softmax to the scores.")
    if not _close(w, want_w):
        return Verdict(False, "the weights differ from softmax(Q K^T / sqrt(d_k)) "
                              f"by up to {np.abs(w - _np(want_w)).max():.3g}.")
    if out.shape != (L, d_v):
        return Verdict(False, f"output has shape {out.shape}; expected (L, d_v) = "
                              f"{(L, d_v)}: multiply the weights by V.")
    if not _close(out, want_out):
        return Verdict(False, "the weights are right but the output is not "
                              "weights @ V.")
    return Verdict(True, "correct: weights and output match softmax(Q K^T / "
                         "sqrt(d_k)) V.")


def check_split_heads(fn) -> Verdict:
    """Check ``fn(x, h)`` turns (B, L, d_model) into (B, h, L, d_k) the right way.

    Recognises the classic bug ``x.reshape(B, h, L, d_k)``, which runs without
    error but mixes different tokens into one head.
    """
    B, L, h, d_k = 2, 3, 4, 5
    x = torch.arange(B * L * h * d_k, dtype=torch.float64).reshape(B, L, h * d_k)
    got, err = _call(fn, x, h)
    if err:
        return err
    got = _np(got)
    want = _np(split_heads(x, h))
    if got.shape == (B, L, h, d_k):
        return Verdict(False, f"shape {got.shape} is (B, L, h, d_k): now move the "
                              "head axis forward with .transpose(1, 2).")
    if got.shape != want.shape:
        return Verdict(False, f"shape {got.shape}; expected (B, h, L, d_k) = {want.shape}.")
    if np.array_equal(got, _np(x.reshape(B, h, L, d_k))):
        return Verdict(False, "reshaping straight to (B, h, L, d_k) puts pieces of "
                              "different tokens into one head (the shape is right, "
                              "the numbers are not). Reshape to (B, L, h, d_k), "
                              "then transpose(1, 2).")
    if not np.array_equal(got, want):
        return Verdict(False, "right shape, wrong numbers: head i must hold "
                              "columns i*d_k:(i+1)*d_k of every token.")
    return Verdict(True, "correct: head i holds columns i*d_k:(i+1)*d_k of every token.")


def check_param_count(answer: int, d_model: int, h: int, bias: bool = True) -> Verdict:
    """Check a learner's parameter count for one multi-head attention layer."""
    want = 4 * d_model * d_model + (4 * d_model if bias else 0)
    if answer == want:
        return Verdict(True, f"correct: 4·d_model² {'+ 4·d_model ' if bias else ''}"
                             f"= {want:,}, whatever h is.")
    if answer == 4 * d_model * d_model and bias:
        return Verdict(False, "you left out the 4 bias vectors of d_model each.")
    if answer == 3 * d_model * d_model + (3 * d_model if bias else 0):
        return Verdict(False, "you left out W_O (d_model × d_model) and its bias.")
    d_k = d_model // h
    if answer in (4 * d_model * d_k, 4 * d_model * d_k + 4 * d_k):
        return Verdict(False, "that is one head's share: there are h heads, and "
                              "together their W_Q^i make one d_model × d_model matrix.")
    return Verdict(False, f"not {answer:,}: count W_Q, W_K, W_V, W_O "
                          "(d_model × d_model each) and their biases.")
