"""Masks in real batches: padding, causal + padding, dropout on the weights.

Sentences in a batch have different lengths. They are padded to one length
``S`` and a mask blocks the padding keys (``True`` = blocked, as in
``nn.MultiheadAttention``'s ``key_padding_mask``)::

    M_pad[b, i, j]    = j >= n_b          (key j is padding in sentence b)
    M_causal[i, j]    = j > i             (key j comes after query i)
    M[b, i, j]        = M_pad[b, i, j] or M_causal[i, j]

Dropout on the attention weights (Vaswani et al. 2017, section 5.4, applies
dropout in every sub-layer; ``nn.MultiheadAttention(dropout=p)`` applies it
to the weights) sits between the softmax and the product with ``V``::

    A_drop = A * m / (1 - p),   m_ij ~ Bernoulli(1 - p)    (training only)
    out    = A_drop V

so ``E[A_drop] = A``: each weight is kept with probability ``1 - p`` and
scaled up to make up for the others. A row of ``A_drop`` no longer sums to 1
(only its expectation does). In evaluation nothing is dropped.
"""
from __future__ import annotations

import math

import torch

from ._validate import (
    FLOAT_DTYPES,
    InputError,
    InputTypeError,
    check_bool,
    check_finite,
    check_generator,
    check_positive_int,
    check_real,
    check_same_dtype,
    check_tensor,
    describe,
)
from .attention import _attention_core, check_attention_inputs
from .masks import causal_mask, padding_mask

# --- input checks: the rules of this module's public functions -----------

def check_pad_batch(sequences, pad_value, allow_nonfinite) -> None:
    if isinstance(sequences, torch.Tensor) or not isinstance(sequences, (list, tuple)):
        raise InputTypeError(
            f"sequences must be a list of (tokens, d) tensors; got "
            f"{describe(sequences)}. A tensor (B, L, d) is already a batch; "
            "for one sequence pass [x].")
    if not sequences:
        raise InputError("pad_batch needs at least one sequence; got none "
                         "(sequences = []).")
    check_bool("allow_nonfinite", allow_nonfinite)
    for i, x in enumerate(sequences):
        check_tensor(f"sequences[{i}]", x)
        if x.ndim != 2 or x.shape[0] == 0:
            raise InputError(
                f"every sequence must be a (tokens, d) tensor with at least one "
                f"token; sequences[{i}] has shape {tuple(x.shape)}.")
    widths = sorted({x.shape[1] for x in sequences})
    if len(widths) != 1:
        raise InputError(f"every sequence must have the same width d; got widths "
                         f"{widths} (sequences[i].shape[1]).")
    check_same_dtype(**{f"sequences[{i}]": x for i, x in enumerate(sequences)})
    for i, x in enumerate(sequences):
        check_finite(f"sequences[{i}]", x, allow_nonfinite)
    v = check_real("pad_value", pad_value, allow_nonfinite=allow_nonfinite)
    top = min(torch.finfo(sequences[0].dtype).max, 2.0**62)
    if math.isfinite(v) and abs(v) > top:
        raise InputError(f"pad_value = {pad_value!r} does not fit the sequences' dtype "
                         f"{sequences[0].dtype} (at most {top:.3g} in size); use 0.0.")


def check_batch_mask(causal) -> None:
    check_bool("causal", causal)


def check_dropout(p, training, generator, Q=None) -> None:
    p = check_real("dropout probability p", p, low=0.0, high=1.0, high_open=True,
                   what="a number in [0, 1) (p = 1 would drop every weight)")
    check_bool("training", training)
    check_generator("generator", generator)
    if training and isinstance(Q, torch.Tensor) and Q.dtype in FLOAT_DTYPES:
        check_dropout_scale(p, Q.dtype)  # the weights are at most 1


def check_dropout_scale(p, dtype, peak: float = 1.0) -> None:
    """The kept weights are divided by ``1 - p``: refuse a ``p`` so close to 1
    that they overflow the dtype (float16: 1 / (1 - p) > 65504)."""
    if p and peak * (1.0 / (1.0 - p)) > torch.finfo(dtype).max:
        raise InputError(f"dropout probability p = {p!r} scales the kept weights by "
                         f"1 / (1 - p) = {1 / (1 - p):.3g}, past {dtype}'s largest "
                         "number (they would become inf); use a smaller p or float32.")


def check_attention_dropout(weights, p, training, generator, allow_nonfinite) -> None:
    check_tensor("weights", weights, min_ndim=2, legend="(..., L, S)")
    check_dropout(p, training, generator)
    check_bool("allow_nonfinite", allow_nonfinite)
    check_finite("weights", weights, allow_nonfinite)
    if training and weights.numel() and not allow_nonfinite:
        check_dropout_scale(p, weights.dtype, float(weights.detach().abs().max()))


def pad_batch(sequences, pad_value: float = 0.0, allow_nonfinite: bool = False):
    """Stack sequences of different lengths into one padded batch.

    Shapes: ``sequences`` a list of B tensors (n_b, d) -> ``(padded (B, S, d),
    lengths (B,))`` with ``S = max n_b``; rows ``n_b..S-1`` of sentence ``b``
    hold ``pad_value``. Every sequence must be a float tensor of one dtype,
    without NaN or inf unless ``allow_nonfinite=True``.
    """
    check_pad_batch(sequences, pad_value, allow_nonfinite)
    widths = {x.shape[1] for x in sequences}
    lengths = torch.tensor([x.shape[0] for x in sequences])  # (B,)
    S, d = int(lengths.max()), widths.pop()
    padded = torch.full((len(sequences), S, d), pad_value,
                        dtype=sequences[0].dtype)  # (B, S, d)
    for b, x in enumerate(sequences):
        padded[b, : x.shape[0]] = x
    return padded, lengths


def batch_mask(lengths, L: int, causal: bool = False) -> torch.Tensor:
    """One mask for a padded batch of self-attention: padding keys blocked,
    and with ``causal=True`` also every key after its query.

    ``M[b, 0, i, j] = (j >= lengths[b]) or (causal and j > i)``.
    Shapes: ``lengths`` (B,) -> (B, 1, L, L) bool, ``True`` = blocked; the
    axis of length 1 broadcasts over the heads. Padded *queries* (rows
    ``i >= lengths[b]``) still see the real keys, so no row is fully
    blocked; their outputs are meaningless and are ignored downstream.
    """
    check_positive_int("L (sequence length)", L)
    check_batch_mask(causal)
    pad = padding_mask(lengths, L)[:, None, None, :]  # (B, 1, 1, L)
    if not causal:
        return pad.expand(-1, 1, L, L)  # (B, 1, L, L)
    return pad | causal_mask(L)[None, None]  # (B, 1, L, L)


def attention_dropout(weights: torch.Tensor, p: float, training: bool = True,
                      generator: torch.Generator | None = None,
                      allow_nonfinite: bool = False) -> torch.Tensor:
    """Inverted dropout on attention weights: ``A * m / (1 - p)`` with
    ``m ~ Bernoulli(1 - p)`` in training, ``A`` unchanged in evaluation.

    Shapes: ``weights`` (..., L, S) -> the same shape. ``E[result] = weights``,
    but a row of the result sums to 1 only on average. NaN or inf in
    ``weights`` is refused unless ``allow_nonfinite=True``.
    """
    check_attention_dropout(weights, p, training, generator, allow_nonfinite)
    if not training or p == 0.0:
        return weights
    keep = torch.empty_like(weights).bernoulli_(1.0 - p, generator=generator)
    return weights * keep / (1.0 - p)  # (..., L, S)


def attention_with_dropout(Q, K, V, mask=None, p: float = 0.0,
                           training: bool = True,
                           generator: torch.Generator | None = None):
    """``attention_dropout(softmax(Q K^T / sqrt(d_k) + mask), p) V``.

    Shapes as :func:`~mhacourse.attention.scaled_dot_product_attention`:
    ``Q`` (..., L, d_k), ``K`` (..., S, d_k), ``V`` (..., S, d_v).
    Returns ``(output (..., L, d_v), weights after dropout (..., L, S))``,
    which is what ``nn.MultiheadAttention(dropout=p)`` returns in training.
    """
    check_dropout(p, training, generator, Q)
    mask = check_attention_inputs(Q, K, V, mask)
    return _attention_core(Q, K, V, mask, dropout=lambda A: attention_dropout(
        A, p, training, generator))  # (..., L, d_v), (..., L, S)
