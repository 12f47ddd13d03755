"""Grouped-query attention: fewer key/value heads than query heads.

``h`` query heads share ``h_kv`` key/value heads, ``g = h / h_kv`` query heads
per group; query head ``i`` reads key/value head ``i // g``::

    head_i = Attention(X W_Q^i, X W_K^(i//g), X W_V^(i//g))      i = 1..h
    GQA(X) = Concat(head_1, ..., head_h) W_O

- ``h_kv = h``: ordinary multi-head attention (Vaswani et al. 2017);
- ``h_kv = 1``: multi-query attention, one shared key/value head
  (Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need");
- in between: grouped-query attention (Ainslie et al. 2023, "GQA: Training
  Generalized Multi-Query Transformer Models from Multi-Head Checkpoints").

Shapes (row vectors, ``x @ W`` as in the rest of the package), held in an
:class:`~mhacourse.MHAWeights` ``w``: ``W_Q`` (d_model, h*d_k), ``W_K``,
``W_V`` (d_model, h_kv*d_k), ``W_O`` (h*d_k, d_model), with
``d_k = d_model // h``. :func:`grouped_query_attention` takes
:func:`~mhacourse.multi_head_attention`'s arguments, plus ``h_kv`` after ``h``. Only ``W_K`` and
``W_V`` shrink, and with them what a decoder must keep per token: its
key/value cache, ``2 * n_layers * h_kv * d_k`` numbers per token.

PyTorch: ``F.scaled_dot_product_attention(..., enable_gqa=True)`` accepts keys
and values with ``h_kv`` heads; Hugging Face configs call ``h_kv``
``num_key_value_heads``.
"""
from __future__ import annotations

import torch

from ._validate import InputError, check_heads, check_positive_int, check_seed, check_tensor
from .masks import combine_masks
from .multihead import (
    MAX_D_MODEL,
    MHAWeights,
    _check_inputs,
    _mha_core,
    _unbatched,
    check_dtype,
)


def check_kv_heads(h: int, h_kv: int) -> int:
    """Check ``h_kv`` key/value heads can be shared evenly by ``h`` query
    heads; return the group size ``g = h // h_kv``."""
    h = check_positive_int("h (query heads)", h)
    h_kv = check_positive_int("h_kv (key/value heads)", h_kv)
    if h % h_kv != 0:
        allowed = ", ".join(str(n) for n in range(1, h + 1) if h % n == 0)
        raise InputError(
            f"h_kv = {h_kv} key/value heads cannot be shared evenly by h = {h} "
            f"query heads (h / h_kv = {h / h_kv:.3g} is not a whole number). "
            f"h_kv must divide h; allowed for h = {h}: {allowed}."
        )
    return h // h_kv


@_unbatched
def grouped_query_attention(
    query, key, value, w: MHAWeights, h: int, h_kv: int, *,
    attn_mask=None, key_padding_mask=None, return_concat: bool = False,
    allow_nonfinite: bool = False,
):
    """``Concat(head_1..head_h) W_O`` with ``head_i`` using key/value head
    ``i // (h / h_kv)``.

    :func:`mhacourse.multihead.multi_head_attention`'s signature, with
    ``h_kv`` (key/value heads) after ``h``; ``w`` holds narrower ``W_K``,
    ``W_V``, (d_model, h_kv*d_k) (:func:`random_gqa_weights`).
    Shapes: ``query`` (B, L, d_model), ``key``/``value`` (B, S, d_model)
    (or (L, d_model) and (S, d_model) without the batch axis);
    ``attn_mask`` (L, S) or (B*h, L, S), bool with ``True`` = blocked, or
    float added to the scores; ``key_padding_mask`` (B, S), ``True`` = padded.
    Returns ``(output (B, L, d_model), weights (B, h, L, S))``, rows of the
    weights summing to 1 (and ``concat`` (B, L, d_model) with
    ``return_concat=True``). ``h_kv = h`` gives :func:`multi_head_attention`'s
    numbers; ``h_kv = 1`` is multi-query attention.
    """
    check_kv_heads(h, h_kv)
    _check_inputs(query, key, value, w, h, allow_nonfinite, h_kv)
    B, L, _ = query.shape
    S = key.shape[1]
    mask = combine_masks(attn_mask, key_padding_mask, B, h, L, S)  # or None
    out, A, concat = _mha_core(query, key, value, w, h, mask, h_kv=h_kv)
    return (out, A, concat) if return_concat else (out, A)


def random_gqa_weights(d_model: int, h: int, h_kv: int, seed: int | None = 0,
                       dtype: torch.dtype = torch.float32) -> MHAWeights:
    """Random weights for :func:`grouped_query_attention`, no biases, entries
    ~ N(0, 1/d_model): an :class:`~mhacourse.MHAWeights` with ``W_Q``
    (d_model, d_model), ``W_K``, ``W_V`` (d_model, h_kv*d_k), ``W_O``
    (d_model, d_model)."""
    d_k = check_heads(d_model, h)
    check_positive_int("d_model", d_model, MAX_D_MODEL,
                       "memory: d_model x d_model matrices")
    check_kv_heads(h, h_kv)
    check_dtype("dtype", dtype)
    gen = None if seed is None else torch.Generator().manual_seed(
        check_seed("seed", seed))

    def mat(cols):
        return torch.randn(d_model, cols, generator=gen, dtype=dtype) / d_model**0.5

    return MHAWeights(mat(d_model), mat(h_kv * d_k), mat(h_kv * d_k), mat(d_model))


def kv_cache_per_token(n_layers: int, h_kv: int, d_k: int,
                       bytes_per_number: int = 2) -> int:
    """Bytes a decoder keeps per token of context: one key and one value
    vector of ``d_k`` numbers per key/value head per layer,
    ``2 * n_layers * h_kv * d_k * bytes_per_number`` (2 bytes in 16-bit)."""
    for name, v in (("n_layers", n_layers), ("h_kv", h_kv), ("d_k", d_k),
                    ("bytes_per_number", bytes_per_number)):
        check_positive_int(name, v)
    return 2 * n_layers * h_kv * d_k * bytes_per_number


def mean_pool_kv(W: torch.Tensor, h: int, h_kv: int) -> torch.Tensor:
    """Turn a multi-head ``W_K`` or ``W_V`` (d_model, h*d_k) into a grouped
    one (d_model, h_kv*d_k) by averaging the heads of each group, the
    conversion of Ainslie et al. (2023) before "uptraining"."""
    g = check_kv_heads(h, h_kv)
    check_tensor("W", W, ndim=2, legend="(d_model, h*d_k)")
    d_model, cols = W.shape
    d_k = check_heads(cols, h)
    heads = W.reshape(d_model, h_kv, g, d_k)  # (d_model, h_kv, g, d_k)
    return heads.mean(dim=2).reshape(d_model, h_kv * d_k)  # (d_model, h_kv*d_k)
