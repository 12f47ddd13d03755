"""Chapter 4's checkers: statistics of a head's attention."""
from __future__ import annotations

import math

import numpy as np
import torch

from ._verdict import Verdict, _as_array, _BadOutput, _call, _close, _verdicts

# --- Chapter 4: statistics of a head's attention ------------------------------

def _ch04_attention(h: int = 3, L: int = 7) -> torch.Tensor:
    """Fixed (h, L, L) attention weights, rows summing to 1, with no symmetry
    (so the diagonal, the sub- and the super-diagonal all differ)."""
    g = torch.Generator().manual_seed(4)
    scores = 2.0 * torch.randn(h, L, L, generator=g, dtype=torch.float64)
    return torch.softmax(scores, dim=-1)  # (h, L, L)


def _learner_array(fn, arg, wanted: str):
    """Run a learner's ``fn(arg)`` and return ``(array, None)``, or
    ``(None, Verdict)`` when it raised, returned None or returned no array
    (``wanted`` says what it should return)."""
    got, err = _call(fn, arg)
    if err is not None:  # a Verdict is falsy when not ok: test for None
        return None, err
    if got is None:
        return None, Verdict(False, "your function returned None: did you forget "
                                    "`return`?")
    try:
        return _as_array(got), None
    except _BadOutput as e:
        return None, Verdict(False, f"return {wanted}; got {type(got).__name__}: "
                                    f"{e}")


@_verdicts
def check_previous_token_score(fn) -> Verdict:
    """Check ``fn(A) -> (h,)``: each head's mean attention to the previous
    token, ``mean over q = 1..L-1 of A[i, q, q-1]``, for ``A`` (h, L, L).

    Recognises: the diagonal (attention to itself) or the super-diagonal (the
    next token) instead of the sub-diagonal; dividing by L instead of L - 1;
    a wrap-around (``torch.roll``) that gives query 0 the last key as its
    "previous" token; per-query values not averaged; an average over keys
    (``A.mean(-1)``, always 1/L) or over queries for every key
    (``A.mean(-2)``); an average over the heads as well.
    """
    h, L = 3, 7
    A = _ch04_attention(h, L)
    g, err = _learner_array(fn, A.clone(), f"a tensor of {h} numbers, one per head")
    if err is not None:
        return err
    sub = torch.diagonal(A, offset=-1, dim1=-2, dim2=-1)  # (h, L-1): A[q, q-1]
    want = sub.mean(-1)  # (h,)
    if g.shape == (h, L - 1) and _close(g, sub):
        return Verdict(False, f"these are the {L - 1} per-query weights A[q, q-1] "
                              "of each head; now average them over the queries "
                              "(.mean(-1)) to get one number per head.")
    if g.shape == (h, L) and _close(g, A.mean(-1)):
        return Verdict(False, f"you averaged each row over the keys: a row sums "
                              f"to 1, so that is 1/L = {1 / L:.3f} for every query "
                              "whatever the head does. Take A[q, q-1] from each "
                              "row, then average over the queries.")
    if g.shape == (h, L) and _close(g, A.mean(-2)):
        return Verdict(False, "you averaged every key's column over the queries: "
                              "that is how much attention each key receives. "
                              "Take the sub-diagonal A[q, q-1] first.")
    if g.shape == (L - 1,) and _close(g, sub.mean(0)):
        return Verdict(False, "you averaged over the heads: keep one number per "
                              "head and average over the queries instead.")
    if g.size == 1 and _close(g.reshape(()), want.mean()):
        return Verdict(False, f"one number for all heads; return {h}, one per "
                              "head (average over the queries only).")
    if g.shape != (h,):
        return Verdict(False, f"shape {g.shape}; expected ({h},): one number per "
                              "head.")
    mistakes = [
        (torch.diagonal(A, 0, -2, -1).mean(-1),
         "that is the main diagonal, A[q, q]: attention to the token itself. "
         "The previous token is one step below it: "
         "torch.diagonal(A, offset=-1, dim1=-2, dim2=-1)."),
        (torch.diagonal(A, 1, -2, -1).mean(-1),
         "that is the diagonal above the main one, A[q, q+1]: attention to the "
         "NEXT token (or the transposed matrix). Rows are queries, so take "
         "offset=-1."),
        (sub.sum(-1) / L,
         f"right weights, wrong count: only the {L - 1} queries q = 1..L-1 have a "
         f"previous token, so divide by L - 1 = {L - 1}, not L = {L}."),
        (torch.stack([A[:, q, (q - 1) % L] for q in range(L)], -1).mean(-1),
         "query 0 has no previous token, but your index wrapped around (as "
         "torch.roll does) to the last key. Average over q = 1..L-1 only."),
    ]
    for value, msg in mistakes:
        if _close(g, value):
            return Verdict(False, msg)
    if _close(g, want):
        return Verdict(True, "correct: mean over q = 1..L-1 of A[q, q-1], one "
                             "number per head: "
                             + ", ".join(f"{x:.3f}" for x in want.tolist()) + ".")
    return Verdict(False, "not the mean of A[q, q-1] over the queries q = 1..L-1; "
                          f"expected {[round(x, 3) for x in want.tolist()]}, got "
                          f"{[round(float(x), 3) for x in g.ravel()]}.")


def _ch04_entropy_attention() -> torch.Tensor:
    """(3, L, L) weights: a one-hot previous-token head (exact zeros), a
    random head and a uniform head."""
    L = 6
    onehot = torch.zeros(L, L, dtype=torch.float64)
    onehot[0, 0] = 1.0
    onehot[torch.arange(1, L), torch.arange(L - 1)] = 1.0
    g = torch.Generator().manual_seed(5)
    rand = torch.softmax(2.0 * torch.randn(L, L, generator=g, dtype=torch.float64), -1)
    uniform = torch.full((L, L), 1.0 / L, dtype=torch.float64)
    return torch.stack([onehot, rand, uniform])  # (3, L, L)


@_verdicts
def check_row_entropy(fn) -> Verdict:
    """Check ``fn(A) -> (h, L)``: every row's entropy divided by that of
    uniform attention, ``-sum_k A[q, k] ln A[q, k] / ln L``, for ``A``
    (h, L, L). It is 0 for a one-hot row and 1 for a uniform one.

    Recognises: ``0 * log 0`` giving NaN, a missing minus sign, no
    normalisation (nats), dividing by L instead of ln L, log base 2 or 10
    in the numerator only, the entropy of the columns (over queries), and
    the mean over rows instead of one value per row.
    """
    A = _ch04_entropy_attention()
    h, L, _ = A.shape
    g, err = _learner_array(fn, A.clone(), f"a ({h}, {L}) tensor")
    if err is not None:
        return err
    H = -torch.xlogy(A, A).sum(-1)  # (h, L) in nats
    want = H / math.log(L)
    if np.isnan(g).any():
        return Verdict(False, "NaN: a weight of exactly 0 gives 0 * log(0) = 0 * "
                              "(-inf) = NaN. By convention 0 ln 0 = 0: use "
                              "torch.xlogy(A, A), or A * torch.log(A.clamp_min("
                              "1e-12)).")
    if g.shape in ((h,), (L,)) and (_close(g, want.mean(-1)) or _close(g, want.mean(0))):
        return Verdict(False, f"you averaged; return one value per row, shape "
                              f"({h}, {L}).")
    if g.shape != (h, L):
        return Verdict(False, f"shape {g.shape}; expected (h, L) = ({h}, {L}): one "
                              "value per query row.")
    Hcol = -torch.xlogy(A, A).sum(-2)  # (h, L): over the queries
    mistakes = [
        (-want, "every value is negative: entropy is MINUS the sum of p ln p "
                "(ln p <= 0, so -p ln p >= 0)."),
        (H, f"that is the entropy in nats; divide by ln L = {math.log(L):.3f}, the "
            "entropy of uniform attention over L keys, so a uniform row scores 1."),
        (H / L, f"divide by ln L = {math.log(L):.3f}, not by L = {L}: uniform "
                "attention over L keys has entropy ln L."),
        (H / math.log(2) / math.log(L),
         "log base 2 in the entropy but ln L below it: use the same base in both "
         "(the ratio does not depend on the base)."),
        (H / math.log(10) / math.log(L),
         "log base 10 in the entropy but ln L below it: use the same base in both."),
        (Hcol / math.log(L),
         "that is the entropy of each column (a key, over the queries). A row "
         "(a query's weights over the keys, summing to 1) is the distribution: "
         "sum over the last axis."),
    ]
    for value, msg in mistakes:
        if _close(g, value):
            return Verdict(False, msg)
    if _close(g, want):
        return Verdict(True, "correct: -sum_k A ln A / ln L per row; the one-hot "
                             "head scores 0, the uniform head 1.")
    return Verdict(False, "not -sum_k A[q, k] ln A[q, k] / ln L for every row; "
                          f"largest difference {np.abs(g - _as_array(want)).max():.3g}.")
