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

import torch

from ._validate import check_positive_int
from .attention import attention_core, check_attention_inputs
from .masks import causal_mask, padding_mask


def pad_batch(sequences, pad_value: float = 0.0):
    """Stack sequences of different lengths into one padded batch.

    Shapes: ``sequences`` a list of B tensors (n_b, d) -> ``(padded (B, S, d),
    lengths (B,))`` with ``S = max n_b``; rows ``n_b..S-1`` of sentence ``b``
    hold ``pad_value``.
    """
    if not sequences:
        raise ValueError("pad_batch needs at least one sequence; got none.")
    bad = [tuple(x.shape) for x in sequences
           if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[0] == 0]
    if bad:
        raise ValueError(f"every sequence must be a (tokens, d) tensor with at "
                         f"least one token; got shapes {bad}.")
    widths = {x.shape[1] for x in sequences}
    if len(widths) != 1:
        raise ValueError(f"every sequence must have the same width d; got "
                         f"{sorted(widths)}.")
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
    pad = padding_mask(lengths, L)[:, None, None, :]  # (B, 1, 1, L)
    if not causal:
        return pad.expand(-1, 1, L, L)  # (B, 1, L, L)
    return pad | causal_mask(L)[None, None]  # (B, 1, L, L)


def attention_dropout(weights: torch.Tensor, p: float, training: bool = True,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Inverted dropout on attention weights: ``A * m / (1 - p)`` with
    ``m ~ Bernoulli(1 - p)`` in training, ``A`` unchanged in evaluation.

    Shapes: ``weights`` (..., L, S) -> the same shape. ``E[result] = weights``,
    but a row of the result sums to 1 only on average.
    """
    if not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability p must be a number in [0, 1); "
                         f"got {p!r}. (p = 1 would drop every weight.)")
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
    mask = check_attention_inputs(Q, K, V, mask)
    return attention_core(Q, K, V, mask, dropout=lambda A: attention_dropout(
        A, p, training, generator))  # (..., L, d_v), (..., L, S)
