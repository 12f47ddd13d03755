"""Chapter 11's checkers: a head's QK matrix, Elhage et al.'s composition
score, and Olsson et al.'s prefix-matching score."""
from __future__ import annotations

import numpy as np
import torch

from ._verdict import Verdict, _as_array, _call, _close, _number, _verdicts
from .head_patterns import _learner_array


def _ch11_weights(d_model: int = 6, h: int = 3):
    """Fixed (d_model, d_model) ``W_Q``, ``W_K`` with no symmetry."""
    g = torch.Generator().manual_seed(11)
    return (torch.randn(d_model, d_model, generator=g, dtype=torch.float64),
            torch.randn(d_model, d_model, generator=g, dtype=torch.float64))


@_verdicts
def check_qk_matrix(fn) -> Verdict:
    """Check ``fn(W_Q, W_K, i, h) -> W_Q^i W_K^iᵀ`` (d_model, d_model), with
    ``W^i`` the columns ``i*d_k:(i+1)*d_k``.

    Recognises: the transpose (``W_K^i W_Q^iᵀ``), rows instead of columns,
    the whole layer's ``W_Q W_Kᵀ`` (every head summed), the wrong head (off
    by one), the scale ``1/sqrt(d_k)`` put in, and ``W_Q^iᵀ W_K^i`` (d_k, d_k).
    """
    W_Q, W_K = _ch11_weights()
    d, h, i = W_Q.shape[0], 3, 1
    d_k = d // h
    got, err = _call(fn, W_Q.clone(), W_K.clone(), i, h)
    if err is not None:
        return err
    got = _as_array(got)

    def qk(Q, K, j, rows=False):
        s = slice(j * d_k, (j + 1) * d_k)
        return (Q[s].T @ K[s]) if rows else (Q[:, s] @ K[:, s].T)

    want = qk(W_Q, W_K, i)
    if got.shape == (d_k, d_k):
        return Verdict(False, f"shape ({d_k}, {d_k}): that is W_Q^iᵀ W_K^i. The QK "
                              "matrix compares two tokens of width d_model: "
                              "W_Q^i W_K^iᵀ, (d_model, d_k) @ (d_k, d_model).")
    if got.shape != (d, d):
        return Verdict(False, f"shape {got.shape}; expected (d_model, d_model) = "
                              f"({d}, {d}).")
    mistakes = [
        (want.T, "that is W_K^i W_Q^iᵀ, the transpose: rows must index the query "
                 "token's features, so W_Q^i comes first."),
        (qk(W_Q, W_K, i, rows=True), "you took rows i*d_k:(i+1)*d_k; a head's "
                                     "projection is a block of COLUMNS: W[:, i*d_k:(i+1)*d_k]."),
        (W_Q @ W_K.T, "that is W_Q W_Kᵀ for the whole layer: the sum of every "
                      "head's QK matrix. Take head i's columns first."),
        (want / d_k**0.5, "the QK matrix has no 1/sqrt(d_k): the scale belongs "
                          "to the scores, score = x_q W_QK x_kᵀ / sqrt(d_k)."),
    ]
    for j in (i - 1, i + 1):
        mistakes.append((qk(W_Q, W_K, j), f"that is head {j}'s QK matrix: heads "
                                          f"count from 0, head {i} is columns "
                                          f"{i * d_k}:{(i + 1) * d_k}."))
    for value, msg in mistakes:
        if _close(got, value):
            return Verdict(False, msg)
    if _close(got, want):
        rank = int(np.linalg.matrix_rank(got))
        return Verdict(True, f"correct: W_Q^i W_K^iᵀ, a {d}x{d} matrix of rank "
                             f"{rank} = d_k.")
    return Verdict(False, "not W_Q^i W_K^iᵀ with W^i = W[:, i*d_k:(i+1)*d_k]; "
                          f"largest difference {np.abs(got - _as_array(want)).max():.3g}.")


@_verdicts
def check_composition_score(fn) -> Verdict:
    """Check ``fn(W_A, W_B) -> ||W_A W_B||_F / (||W_A||_F ||W_B||_F)``, one
    number.

    Recognises: the product in the other order (``W_B W_A``), no division,
    squared norms, the spectral norm (largest singular value) instead of
    Frobenius, and one value per row or column.
    """
    g = torch.Generator().manual_seed(12)
    W_A = torch.randn(5, 5, generator=g, dtype=torch.float64)
    W_B = torch.randn(5, 5, generator=g, dtype=torch.float64) @ torch.diag(
        torch.tensor([3.0, 1, 0.5, 0.2, 0.1], dtype=torch.float64))
    got, err = _call(fn, W_A.clone(), W_B.clone())
    if err is not None:
        return err
    fro = torch.linalg.matrix_norm
    spec = lambda M: torch.linalg.matrix_norm(M, ord=2)  # noqa: E731
    if isinstance(got, (torch.Tensor, np.ndarray)) and _as_array(got).size > 1:
        return Verdict(False, f"one number, please; got an array of shape "
                              f"{tuple(got.shape)} (norm the whole matrix: "
                              "torch.linalg.matrix_norm, not per row).")
    x = _number(got, "one number", "return")
    want = float(fro(W_A @ W_B) / (fro(W_A) * fro(W_B)))
    mistakes = [
        (fro(W_B @ W_A) / (fro(W_A) * fro(W_B)),
         "that is ||W_B W_A||: the order matters. With row vectors (x W) the "
         "writer comes first: W_A writes (a layer-1 head's W_OV), W_B reads it, "
         "so the product is W_A W_B."),
        (fro(W_A @ W_B), "divide by ||W_A||_F ||W_B||_F: without it the score "
                         "grows with the size of the weights."),
        (fro(W_A @ W_B) ** 2 / (fro(W_A) ** 2 * fro(W_B) ** 2),
         "squared norms: take the square roots (torch.linalg.matrix_norm gives "
         "the Frobenius norm itself)."),
        (spec(W_A @ W_B) / (spec(W_A) * spec(W_B)),
         "that uses the spectral norm (the largest singular value); the score "
         "uses the Frobenius norm, sqrt of the sum of squares of all entries."),
    ]
    for value, msg in mistakes:
        if abs(x - float(value)) < 1e-6 * max(1.0, abs(float(value))):
            return Verdict(False, msg)
    if abs(x - want) < 1e-6:
        return Verdict(True, f"correct: {want:.4f}, between 0 and 1.")
    return Verdict(False, f"not ||W_A W_B||_F / (||W_A||_F ||W_B||_F) = "
                          f"{want:.4f}; got {x:.4g}.")


def _ch11_repeat_attention(h: int = 3, L: int = 8) -> torch.Tensor:
    """Fixed (h, L, L) causal attention weights, rows summing to 1."""
    g = torch.Generator().manual_seed(13)
    scores = 2.0 * torch.randn(h, L, L, generator=g, dtype=torch.float64)
    blocked = torch.ones(L, L, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)


@_verdicts
def check_prefix_score(fn) -> Verdict:
    """Check ``fn(A) -> (h,)``: for attention ``A`` (h, L, L) on a sequence
    whose second half repeats the first, each head's mean over the second
    half's queries ``t = L/2 .. L-1`` of ``A[i, t, t - L/2 + 1]``, the token
    after the earlier copy of ``x_t``.

    Recognises: the earlier copy itself (``t - L/2``, a duplicate-token
    head), the previous token (``t - 1``), every query instead of the second
    half, per-query values not averaged, and an average over the heads.
    """
    A = _ch11_repeat_attention()
    h, L, _ = A.shape
    half = L // 2
    g, err = _learner_array(fn, A.clone(), f"a tensor of {h} numbers, one per head")
    if err is not None:
        return err
    t = torch.arange(half, L)

    def at(offset, queries=t):
        return A[:, queries, queries - offset]  # (h, n)

    want = at(half - 1).mean(-1)
    if g.shape == (h, half) and _close(g, at(half - 1)):
        return Verdict(False, "these are the per-query weights; average them "
                              "over the queries (.mean(-1)), one number per head.")
    if g.size == 1 and _close(g.reshape(()), want.mean()):
        return Verdict(False, f"one number for all heads; return {h}, one per head.")
    if g.shape != (h,):
        return Verdict(False, f"shape {g.shape}; expected ({h},): one number per head.")
    later = torch.arange(half - 1, L)  # queries with a key half - 1 back
    mistakes = [
        (at(half).mean(-1), "that is the weight on the earlier copy of the same token "
                   "(t - L/2): a duplicate-token head. Prefix matching looks one "
                   "further, at t - L/2 + 1, the token that came NEXT last time."),
        (at(1).mean(-1), "that is the previous token, t - 1. Prefix matching looks back "
                "to the token after the earlier copy: t - L/2 + 1."),
        (at(half - 1, later).mean(-1), "you averaged over every query that has a "
                                       "key L/2 - 1 back; only the second copy "
                                       "(t >= L/2) repeats something."),
        (at(half - 2).mean(-1), "off by one: the token after the earlier copy "
                                "is t - L/2 + 1."),
    ]
    for value, msg in mistakes:
        if _close(g, value):
            return Verdict(False, msg)
    if _close(g, want):
        return Verdict(True, "correct: mean over the second copy of A[t, t - L/2 + 1]: "
                             + ", ".join(f"{x:.3f}" for x in want.tolist()) + ".")
    return Verdict(False, "not the mean of A[i, t, t - L/2 + 1] over t = L/2..L-1; "
                          f"expected {[round(x, 3) for x in want.tolist()]}.")
