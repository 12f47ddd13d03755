"""Chapter 1's checker: one attention head."""
from __future__ import annotations

import math

import numpy as np
import torch

from ..attention import scaled_dot_product_attention, softmax
from ._verdict import Verdict, _as_array, _call, _close, _verdicts


@_verdicts
def check_attention(fn) -> Verdict:
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
    got, err = _call(fn, Q, K, V)
    if err is not None:
        return err
    if not (isinstance(got, tuple) and len(got) == 2):
        return Verdict(False, "return a pair (output, weights), as "
                              "nn.MultiheadAttention does.")
    out, w = (_as_array(t) for t in got)
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
                              f"by up to {np.abs(w - _as_array(want_w)).max():.3g}.")
    if out.shape != (L, d_v):
        return Verdict(False, f"output has shape {out.shape}; expected (L, d_v) = "
                              f"{(L, d_v)}: multiply the weights by V.")
    if not _close(out, want_out):
        return Verdict(False, "the weights are right but the output is not "
                              "weights @ V.")
    return Verdict(True, "correct: weights and output match softmax(Q K^T / "
                         "sqrt(d_k)) V.")
