"""A head as two low-rank matrices (Elhage et al. 2021, "A Mathematical
Framework for Transformer Circuits"), read from a tiny model's weights.

In the course's row-vector convention (``x W``), head ``i`` of a block
scores a query token ``x_q`` against a key token ``x_k`` and writes::

    score = x_q W_QK^i x_kᵀ / sqrt(d_k),   W_QK^i = W_Q^i W_K^iᵀ   (where it looks)
    write = (sum_k a_qk x_k) W_OV^i,       W_OV^i = W_V^i W_O^i    (what it moves)

``W_Q^i, W_K^i, W_V^i`` (d_model, d_k) are head i's columns, ``W_O^i``
(d_k, d_model) its rows of ``W_O``; both products are (d_model, d_model)
with rank at most ``d_k``. The paper writes column vectors, so its
matrices are these transposed. Every function computes in float64 and, by
default, folds the block's LayerNorm into the reading matrices
(:func:`~mhacourse.circuits.core._fold_ln_core`: centring and gain; the
per-token ``1/sigma``, the shifts and the biases left out, an
approximation). The traced page form of all of it is
:func:`~mhacourse.circuits.core._circuits_core`.
"""
from __future__ import annotations

import torch

from . import _checks as _c
from .core import (
    _band_core,
    _fold_ln_core,
    _head_factors_core,
    _positional_scores_core,
)

RANK_TOL = 1e-6  # rank: singular values above 1e-6 x the largest count


def qk_matrix(model, layer: int, head: int, fold_ln: bool = True) -> torch.Tensor:
    """Head ``head`` of block ``layer``: ``W_QK = W_Q^i W_K^iᵀ``, the
    bilinear form of its scores, ``score(x_q, x_k) = x_q W_QK x_kᵀ /
    sqrt(d_k)`` (biases left out).

    Shapes: -> (d_model, d_model) float64, rank <= d_k. ``layer`` counts
    blocks from 0 (block 0 is the text's "layer 1").
    """
    w = _c.check_head(model, layer, head, fold_ln)
    W_Q, W_K, _, _ = _head_factors_core(w, layer, model.cfg.h, fold_ln)
    return W_Q[head] @ W_K[head].T  # (d_model, d_k) @ (d_k, d_model)


def ov_matrix(model, layer: int, head: int, fold_ln: bool = True) -> torch.Tensor:
    """Head ``head`` of block ``layer``: ``W_OV = W_V^i W_O^i``; a token
    ``x`` the head attends to with weight ``a`` adds ``a x W_OV`` to the
    residual stream. Shapes: -> (d_model, d_model) float64, rank <= d_k."""
    w = _c.check_head(model, layer, head, fold_ln)
    _, _, W_V, W_O = _head_factors_core(w, layer, model.cfg.h, fold_ln)
    return W_V[head] @ W_O[head]  # (d_model, d_k) @ (d_k, d_model)


def singular_values(M: torch.Tensor) -> torch.Tensor:
    """``sigma_1 >= sigma_2 >= ... >= 0`` of ``M`` (float64): ``M = U
    diag(sigma) Vᵀ``. Shapes: (m, n) -> (min(m, n),)."""
    _c.check_matrix("M", M)
    return torch.linalg.svdvals(M.to(torch.float64))


def rank(sv: torch.Tensor, tol: float = RANK_TOL) -> int:
    """The numerical rank read from singular values ``sv``: how many
    exceed ``tol`` times the largest, ``#{k : sigma_k > tol sigma_1}``.

    A product of float64 copies of the weights has its zero singular values
    near 1e-16 sigma_1, so the default 1e-6 separates them from the real
    ones by orders of magnitude. A head's QK or OV matrix gives at most
    ``d_k``: "d_k is the rank".
    """
    _c.check_spectrum(sv, tol)
    return int((sv > tol * sv.max()).sum())


def positional_scores(model, layer: int, head: int) -> torch.Tensor:
    """The positional QK circuit of a head: its scores when every position
    ``t`` holds only its position embedding, passed through the block's
    LayerNorm, ``X = LN_1(W_pos)``::

        S[t, s] = (X_t W_Q^i + b_Q^i)(X_s W_K^i + b_K^i)ᵀ / sqrt(d_k)

    (:func:`~mhacourse.circuits.core._positional_scores_core`). An
    approximation: the tokens' embeddings are left out (and, for block 1,
    what block 0 added). Shapes: -> (max_len, max_len) float64, before the
    causal mask.
    """
    w = _c.check_head(model, layer, head)
    return _positional_scores_core(w, layer, model.cfg.h)[head]


def band_score(S: torch.Tensor, offset: int = -1) -> float:
    """How much of a causal softmax of scores ``S`` falls on the band
    ``key = query + offset``: ``mean_t softmax(S[t, :t+1])[t + offset]``
    over the queries ``t >= -offset``. For ``offset = -1`` and
    :func:`positional_scores`, the weight the head gives the previous
    position from positions alone: near 1 for a previous-token head, about
    ``mean_t 1/(t+1)`` for a head with no positional preference."""
    _c.check_scores(S, offset)
    return float(_band_core(S.to(torch.float64), offset))


def full_ov_circuit(model, layer: int, head: int) -> torch.Tensor:
    """``W_E W_OV^i W_U``: the logits a head adds for each word it attends
    to, through the direct path (the blocks after it and the residual
    stream's other terms left out; the final LayerNorm folded into ``W_U``).
    Row ``a`` is what attending to word ``a`` does to every word's logit.
    Shapes: -> (V, V) float64, rank <= d_k."""
    w = _c.check_head(model, layer, head)
    W_U = _fold_ln_core(w.W_U, w.gamma_f)  # (d_model, V)
    return w.W_E @ ov_matrix(model, layer, head) @ W_U  # (V, V)


def copying_score(model, layer: int, head: int) -> float:
    """Olsson et al. 2022's copying score (from Elhage et al. 2021): the
    eigenvalues ``lambda`` of :func:`full_ov_circuit` summarised as
    ``sum_k lambda_k / sum_k |lambda_k|`` (the sum is real: complex
    eigenvalues come in conjugate pairs). 1: every eigenvalue positive, the
    head raises the logit of the word it attends to (copying); -1: it lowers
    it. Uses an eigen-decomposition; :func:`copying_proxy` does not."""
    _c.check_copying(model, layer, head)
    M = full_ov_circuit(model, layer, head)
    _c.check_circuit_nonzero(M, layer, head)
    lam = torch.linalg.eigvals(M)  # (V,) complex
    return float(lam.real.sum() / lam.abs().sum())


def copying_proxy(model, layer: int, head: int) -> float:
    """``tr(M) / (sqrt(d_k) ||M||_F)`` for ``M`` = :func:`full_ov_circuit`:
    the sign of :func:`copying_score` and at most its size, as
    ``sum |lambda| <= sqrt(rank) ||M||_F``; no eigenvalues, so the page can
    compute it (:func:`~mhacourse.circuits.core._copying_proxy_core`)."""
    _c.check_copying(model, layer, head)
    M = full_ov_circuit(model, layer, head)
    _c.check_circuit_nonzero(M, layer, head)
    d_k = model.cfg.d_k
    return float(torch.trace(M) / (d_k**0.5 * torch.linalg.matrix_norm(M)))
