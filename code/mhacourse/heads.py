"""Splitting ``d_model`` into ``h`` heads, and putting them back together.

The split is of the **projection's output** ``X W_Q`` (B, L, d_model), not of
the input embedding ``X``: every head's projection reads all d_model input
dimensions. Head ``i`` owns output columns ``i*d_k : (i+1)*d_k``.

A head's name, :func:`head_name`, counts from 1 (``L1H1``); the indices in
the code count from 0.
"""
from __future__ import annotations

import torch

from ._validate import (
    InputTypeError,
    check_heads,
    check_index,
    check_ndim,
    check_positive_int,
    describe,
)


def split_heads(x: torch.Tensor, h: int) -> torch.Tensor:
    """(B, L, d_model) -> (B, h, L, d_k), with ``d_k = d_model // h``.

    ``out[b, i, t, :] == x[b, t, i*d_k:(i+1)*d_k]``. Types and shapes are
    checked, no value checks (it also runs inside the exported MiniLM core):
    a NaN in ``x`` stays where it was.
    """
    _check_tensor(x)
    check_ndim("x", x.shape, 3, "(B, L, d_model)")
    check_heads(x.shape[-1], h)
    return _split_heads_core(x, h)


def _split_heads_core(x: torch.Tensor, h) -> torch.Tensor:
    """The computation of :func:`split_heads` (chapter 2 derives it), with no
    checks: ``h`` may be a symbolic size, so one traced graph serves every h.

    Shapes: (B, L, d_model) -> (B, h, L, d_k).
    """
    B, L, d_model = x.shape
    x = x.reshape(B, L, h, d_model // h)  # (B, L, h, d_k): cut each row into h pieces
    return x.transpose(1, 2)  # (B, h, L, d_k): heads become a batch axis


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, L, d_k) -> (B, L, h*d_k): concatenate the heads side by side.

    Inverse of :func:`split_heads`: ``Concat(head_1, ..., head_h)``. No value
    checks, as :func:`split_heads`.
    """
    _check_tensor(x)
    check_ndim("x", x.shape, 4, "(B, h, L, d_k)")
    return _merge_heads_core(x)


def _merge_heads_core(x: torch.Tensor) -> torch.Tensor:
    """The computation of :func:`merge_heads` (chapter 5), with no checks.

    Shapes: (B, h, L, d_k) -> (B, L, h*d_k).
    """
    B, h, L, d_k = x.shape
    x = x.transpose(1, 2)  # (B, L, h, d_k)
    return x.reshape(B, L, h * d_k)  # (B, L, d_model)


def _share_kv_heads(K: torch.Tensor, h) -> torch.Tensor:
    """``h_kv`` key (or value) heads shared by ``h`` query heads: head ``j``
    repeated for query heads ``j*g .. j*g+g-1``, ``g = h / h_kv`` (chapter 12).

    Shapes: (B, h_kv, S, d_k) -> (B, h, S, d_k); a view when ``h_kv = h``.
    A part of traced cores: no checks (``grouped_query_attention`` checks).
    """
    B, h_kv, S, d_k = K.shape
    K = K[:, :, None].expand(B, h_kv, h // h_kv, S, d_k)  # (B, h_kv, g, S, d_k)
    return K.reshape(B, h, S, d_k)  # (B, h, S, d_k)


def _check_tensor(x) -> None:
    # type only (no value checks): these two also run inside the exported core
    if not isinstance(x, torch.Tensor):
        raise InputTypeError(
            f"x must be a torch.Tensor; got {describe(x)}. Convert it with "
            "torch.as_tensor(x); for NumPy arrays use mhacourse.reference_np.")


def score_rank_bound(L: int, d_model: int, h: int) -> int:
    """Largest rank of one head's (L, L) score matrix ``Q_i K_i^T / sqrt(d_k)``
    when ``h`` heads share ``d_model``: ``min(L, d_k)``, ``d_k = d_model // h``
    (``Q_i`` and ``K_i`` are (L, d_k); Bhojanapalli et al. 2020)."""
    check_score_rank(L, d_model, h)
    return min(L, d_model // h)


def check_score_rank(L, d_model, h) -> None:
    check_positive_int("L", L)
    check_heads(d_model, h)


def head_name(layer, head) -> str:
    """The course's name of head ``head`` of layer ``layer``:
    ``"L{layer + 1}H{head + 1}"``.

    Names count layers and heads **from 1**, everywhere in the course (the
    chapters, the explorer, the trainer, the error messages): ``L1H1`` is
    the first layer's first head. The code's indices count **from 0**, as
    Python does: ``out.attentions[l][b, i]`` is head ``head_name(l, i)``, so
    ``head_name(0, 0) == "L1H1"`` and ``head_name(5, 11) == "L6H12"``.

    ``layer`` and ``head`` are those indices: whole numbers >= 0 (Python,
    NumPy or 0-d integer torch). A negative index, a float or a bool raises
    :class:`~mhacourse.InputError` (``InputTypeError`` for the type).
    """
    layer = check_index("layer", layer, "layer", "n_layers")
    head = check_index("head", head, "head", "h")
    return f"L{layer + 1}H{head + 1}"
