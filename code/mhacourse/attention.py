"""One attention head: scaled dot-product attention.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V        (Vaswani et al. 2017, eq. 1)

Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k), ``V`` (..., S, d_v), where ``L``
is the number of queries and ``S`` the number of keys (``S = L`` in
self-attention), and ``...`` are any leading axes such as ``(B, h)``.
"""
from __future__ import annotations

import torch

from ._validate import (
    InputError,
    check_finite,
    check_mask,
    check_no_blocked_rows,
    check_same_dtype,
    check_tensor,
)
from .masks import _as_additive

NUMPY_HINT = "for NumPy arrays use mhacourse.reference_np"


def _scores_core(Q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """``Q K^T / sqrt(d_k)``: how well each query matches each key
    (chapter 1 derives it).

    Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k) -> (..., L, S).
    No input checks (:func:`attention_scores` is the checked entry point).
    """
    d_k = Q.shape[-1]
    return Q @ K.transpose(-2, -1) / d_k**0.5  # (..., L, S)


def _softmax_core(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the **key** axis (the last): each query's row sums to 1
    (chapter 1).

    ``softmax(s)_j = exp(s_j - max s) / sum_k exp(s_k - max s)``
    (subtracting the max changes nothing mathematically and avoids overflow).
    No input checks (:func:`softmax` is the checked entry point).
    """
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # (..., L, S)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)  # (..., L, S)


def _softmax_fused(scores: torch.Tensor) -> torch.Tensor:
    """:func:`_softmax_core`'s equation as one operation, ``torch.softmax``
    (ONNX ``Softmax``): the exported training graphs use it
    (``web_train.FUSED``), as onnxruntime runs one fused kernel for it where
    the four steps above are four passes, and their gradients more. Equal
    to :func:`_softmax_core` up to float rounding (``test_web_train``).
    Shapes: (..., L, S) -> (..., L, S)."""
    return torch.softmax(scores, dim=-1)  # (..., L, S)


def attention_scores(Q: torch.Tensor, K: torch.Tensor,
                     allow_nonfinite: bool = False) -> torch.Tensor:
    """Checked :func:`_scores_core`: ``Q K^T / sqrt(d_k)``.

    Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k) -> (..., L, S).
    Raises :class:`~mhacourse.InputError` on non-tensors, integer dtypes, a
    dtype mix, mismatched d_k or leading axes, and NaN/inf (unless
    ``allow_nonfinite=True``).
    """
    for name, t in (("Q", Q), ("K", K)):
        check_tensor(name, t, min_ndim=2, legend="(tokens, features)",
                     numpy_hint=NUMPY_HINT)
    check_same_dtype(Q=Q, K=K)
    _check_pair(Q, K)
    if Q.shape[-1] == 0:
        raise InputError(f"Q and K have no features (d_k = 0; Q {tuple(Q.shape)}): "
                         "the scale 1/sqrt(d_k) would be 1/0.")
    for name, t in (("Q", Q), ("K", K)):
        check_finite(name, t, allow_nonfinite)
    return _scores_core(Q, K)


def softmax(scores: torch.Tensor, allow_nonfinite: bool = False) -> torch.Tensor:
    """Checked :func:`_softmax_core`: softmax over the last (key) axis.

    ``-inf`` marks a blocked key and is allowed; NaN, ``+inf`` and a row whose
    every entry is ``-inf`` (a query with no key left: 0/0 = NaN) raise
    :class:`~mhacourse.InputError`, as in :func:`scaled_dot_product_attention`.
    ``allow_nonfinite=True`` skips the value checks: NaN then spreads, as in
    ``torch.softmax``.
    """
    check_tensor("scores", scores, min_ndim=1, legend="(..., S)",
                 numpy_hint="for NumPy use mhacourse.reference_np.softmax")
    if scores.shape[-1] == 0:
        raise InputError(f"scores has no keys (shape {tuple(scores.shape)}): "
                         "softmax needs at least one entry per row.")
    if not allow_nonfinite and scores.numel():
        s = scores.detach()
        if bool((torch.isnan(s) | torch.isposinf(s)).any()):
            raise InputError(
                "scores holds NaN or +inf: the softmax would be NaN. Only -inf "
                "(a blocked key) is allowed; to watch NaN spread on purpose, "
                "pass allow_nonfinite=True.")
        check_no_blocked_rows(torch.isneginf(s), what="scores: a row of only -inf")
    return _softmax_core(scores)


def _check_pair(Q: torch.Tensor, K: torch.Tensor) -> None:
    if Q.shape[-1] != K.shape[-1]:
        raise InputError(
            f"Q and K must have the same last axis d_k to take dot products; "
            f"got Q {tuple(Q.shape)} and K {tuple(K.shape)}."
        )
    try:
        torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    except RuntimeError:
        raise InputError(
            f"Q and K must have the same leading axes (such as (B, h)), or axes "
            f"that broadcast; got Q {tuple(Q.shape)} and K {tuple(K.shape)}."
        ) from None


def _check_qkv(Q, K, V, allow_nonfinite: bool = False) -> None:
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        check_tensor(name, t, min_ndim=2, legend="(tokens, features)",
                     numpy_hint=NUMPY_HINT)
    check_same_dtype(Q=Q, K=K, V=V)
    _check_pair(Q, K)
    if K.shape[-2] != V.shape[-2]:
        raise InputError(
            f"K and V must have one row per key (same S); "
            f"got K {tuple(K.shape)} and V {tuple(V.shape)}."
        )
    try:
        torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise InputError(
            f"Q, K and V must have the same leading axes (such as (B, h)), or "
            f"axes that broadcast; got Q {tuple(Q.shape)}, K {tuple(K.shape)} "
            f"and V {tuple(V.shape)}."
        ) from None
    if 0 in Q.shape or 0 in K.shape or 0 in V.shape:
        raise InputError(
            f"attention needs at least one query and one key (and non-empty "
            f"axes); got Q {tuple(Q.shape)}, K {tuple(K.shape)} and V "
            f"{tuple(V.shape)} (an empty sentence?)."
        )
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        check_finite(name, t, allow_nonfinite)


def _check_mask(mask, scores_shape: torch.Size) -> torch.Tensor:
    """Return ``mask`` expanded to the scores' shape (..., L, S), or raise."""
    mask = check_mask("mask", mask)
    L, S = scores_shape[-2:]
    try:
        if mask.ndim < 2:
            raise RuntimeError
        if torch.broadcast_shapes(mask.shape, scores_shape) != scores_shape:
            raise RuntimeError
        return mask.expand(scores_shape)
    except RuntimeError:
        raise InputError(
            f"mask must end in (L, S) = ({L}, {S}) (one entry per query and "
            f"key, True = blocked) and broadcast to the scores' shape "
            f"{tuple(scores_shape)}; got shape {tuple(mask.shape)}."
        ) from None


def scaled_dot_product_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    mask: torch.Tensor | None = None,
    allow_nonfinite: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d_k) + mask) V``, returning ``(output, weights)``.

    Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k), ``V`` (..., S, d_v),
    ``mask`` broadcastable to (..., L, S): bool with ``True`` = blocked (as in
    ``nn.MultiheadAttention``), or float added to the scores.
    Returns ``output`` (..., L, d_v) and ``weights`` (..., L, S), rows summing to 1.

    Bad input raises :class:`~mhacourse.InputError` (a ``ValueError``): a
    mask that blocks every key of a query (the result would be NaN), an
    integer or 0/1 float mask, NaN/inf inputs (``allow_nonfinite=True`` lets
    them spread), a dtype mix.
    """
    mask = check_attention_inputs(Q, K, V, mask, allow_nonfinite)
    return _attention_core(Q, K, V, mask)


def check_attention_inputs(Q, K, V, mask=None, allow_nonfinite: bool = False):
    """The checks of :func:`scaled_dot_product_attention`; returns ``mask``
    expanded to the scores' shape (..., L, S) (or ``None``)."""
    _check_qkv(Q, K, V, allow_nonfinite)
    if mask is not None:
        lead = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2])  # (...)
        scores_shape = torch.Size((*lead, Q.shape[-2], K.shape[-2]))  # (..., L, S)
        mask = _check_mask(mask, scores_shape)  # (..., L, S)
        check_no_blocked_rows(mask)
    return mask


def _attention_core(Q, K, V, mask=None, dropout=None):
    """``softmax(Q K^T / sqrt(d_k) + mask) V``, the formula chapter 1 derives,
    with no input checks (:func:`scaled_dot_product_attention` checks, then
    calls this). Every form of attention in the package calls it, except
    the fused fast path (PyTorch's kernel), which is tested against it.

    ``dropout``: ``None``, or a function applied to the weights before they
    meet ``V`` (:func:`mhacourse.batching.attention_with_dropout`).
    It has no Python branch on tensor values, so it traces (``torch.onnx``,
    ``make_fx``). Shapes as in :func:`scaled_dot_product_attention`.
    """
    scores = _scores_core(Q, K)  # (..., L, S)
    if mask is not None:
        scores = scores + _as_additive(mask, scores.dtype)  # (..., L, S)
    weights = _softmax_core(scores)  # (..., L, S)
    if dropout is not None:
        weights = dropout(weights)  # (..., L, S)
    return weights @ V, weights  # (..., L, d_v), (..., L, S)
