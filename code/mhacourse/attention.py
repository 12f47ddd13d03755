"""One attention head: scaled dot-product attention.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V        (Vaswani et al. 2017, eq. 1)

Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k), ``V`` (..., S, d_v), where ``L``
is the number of queries and ``S`` the number of keys (``S = L`` in
self-attention), and ``...`` are any leading axes such as ``(B, h)``.
"""
from __future__ import annotations

import math

import torch

from .masks import as_additive, check_no_blocked_rows


def attention_scores(Q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """``Q K^T / sqrt(d_k)``: how well each query matches each key.

    Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k) -> (..., L, S).
    """
    d_k = Q.shape[-1]
    return Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., L, S)


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the **key** axis (the last): each query's row sums to 1.

    ``softmax(s)_j = exp(s_j - max s) / sum_k exp(s_k - max s)``
    (subtracting the max changes nothing mathematically and avoids overflow).
    """
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # (..., L, S)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)  # (..., L, S)


def _check_qkv(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> None:
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(
                f"{name} must be a torch.Tensor; got {type(t).__name__}. "
                "For NumPy arrays use mhacourse.reference_np."
            )
        if t.ndim < 2:
            raise ValueError(
                f"{name} needs at least 2 axes (tokens, features); "
                f"got shape {tuple(t.shape)}."
            )
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q and K must have the same last axis d_k to take dot products; "
            f"got Q {tuple(Q.shape)} and K {tuple(K.shape)}."
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have one row per key (same S); "
            f"got K {tuple(K.shape)} and V {tuple(V.shape)}."
        )
    try:
        torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"Q, K and V must have the same leading axes (such as (B, h)), or "
            f"axes that broadcast; got Q {tuple(Q.shape)}, K {tuple(K.shape)} "
            f"and V {tuple(V.shape)}."
        ) from None
    if 0 in Q.shape[-2:] or 0 in K.shape[-2:]:
        raise ValueError(
            f"attention needs at least one query and one key; "
            f"got Q {tuple(Q.shape)} and K {tuple(K.shape)} (an empty sentence?)."
        )


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> torch.Tensor:
    """Return ``mask`` expanded to the scores' shape (..., L, S), or raise."""
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a torch.Tensor; got {type(mask).__name__}.")
    L, S = scores_shape[-2:]
    try:
        if mask.ndim < 2:
            raise RuntimeError
        torch.broadcast_shapes(mask.shape, scores_shape)
        return mask.expand(scores_shape)
    except RuntimeError:
        raise ValueError(
            f"mask must end in (L, S) = ({L}, {S}) (one entry per query and "
            f"key, True = blocked) and broadcast to the scores' shape "
            f"{tuple(scores_shape)}; got shape {tuple(mask.shape)}."
        ) from None


def scaled_dot_product_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d_k) + mask) V``, returning ``(output, weights)``.

    Shapes: ``Q`` (..., L, d_k), ``K`` (..., S, d_k), ``V`` (..., S, d_v),
    ``mask`` broadcastable to (..., L, S): bool with ``True`` = blocked (as in
    ``nn.MultiheadAttention``), or float added to the scores.
    Returns ``output`` (..., L, d_v) and ``weights`` (..., L, S), rows summing to 1.

    A mask that blocks every key of a query raises ``ValueError``: the result
    would be NaN.
    """
    _check_qkv(Q, K, V)
    if mask is not None:
        lead = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2])  # (...)
        scores_shape = torch.Size((*lead, Q.shape[-2], K.shape[-2]))  # (..., L, S)
        mask = _check_mask(mask, scores_shape)  # (..., L, S)
        check_no_blocked_rows(mask)
    return attention_core(Q, K, V, mask)


def attention_core(Q, K, V, mask=None):
    """The computation of :func:`scaled_dot_product_attention`, with no input
    checks: ``softmax(Q K^T / sqrt(d_k) + mask) V``.

    The public functions validate their input, then call this. It has no
    Python branch on tensor values, so ``torch.onnx.export`` can trace it
    (the in-browser explorer runs the exported graph). Call it only with
    inputs that have been checked.
    Shapes as in :func:`scaled_dot_product_attention`.
    """
    scores = attention_scores(Q, K)  # (..., L, S)
    if mask is not None:
        scores = scores + as_additive(mask, scores.dtype)  # (..., L, S)
    weights = softmax(scores)  # (..., L, S)
    return weights @ V, weights  # (..., L, d_v), (..., L, S)
