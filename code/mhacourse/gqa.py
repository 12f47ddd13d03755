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

Shapes (row vectors, ``x @ W`` as in the rest of the package):
``W_Q`` (d_model, h*d_k), ``W_K``, ``W_V`` (d_model, h_kv*d_k),
``W_O`` (h*d_k, d_model), with ``d_k = d_model // h``. Only ``W_K`` and
``W_V`` shrink, and with them what a decoder must keep per token: its
key/value cache, ``2 * n_layers * h_kv * d_k`` numbers per token.

PyTorch: ``F.scaled_dot_product_attention(..., enable_gqa=True)`` accepts keys
and values with ``h_kv`` heads; Hugging Face configs call ``h_kv``
``num_key_value_heads``.
"""
from __future__ import annotations

import torch

from ._validate import (
    InputError,
    check_finite,
    check_heads,
    check_mask,
    check_positive_int,
    check_same_dtype,
    check_tensor,
)
from .attention import scaled_dot_product_attention
from .heads import merge_heads, split_heads
from .multihead import MAX_D_MODEL, check_batch_first, check_dtype


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


def _check_weight(name: str, W, want: tuple[int, int], meaning: str) -> None:
    check_tensor(name, W, ndim=2, legend=meaning)
    if tuple(W.shape) != want:
        raise InputError(
            f"{name} must have shape {meaning} = {want}; got {tuple(W.shape)}."
        )


def _group_mask(mask, B: int, h: int, h_kv: int, L: int, S: int):
    """Reshape a mask for (B, h, L, S) scores to the grouped (B, h_kv, g, L, S)."""
    mask = check_mask("mask", mask)
    if mask.ndim == 2 and tuple(mask.shape) == (L, S):
        return mask  # (L, S): broadcasts over every leading axis
    if mask.ndim == 4 and mask.shape[0] in (1, B) and mask.shape[1] in (1, h):
        m = mask.expand(B, h, L, S) if mask.shape[-2:] == (L, S) else mask
        if tuple(m.shape) == (B, h, L, S):
            return m.reshape(B, h_kv, h // h_kv, L, S)  # (B, h_kv, g, L, S)
    raise InputError(
        f"mask must have shape (L, S) = ({L}, {S}) or (B or 1, h or 1, L, S) "
        f"= ({B}, {h}, {L}, {S}), True = blocked; got {tuple(mask.shape)}."
    )


def _check_gqa(query, key, value, W_Q, W_K, W_V, W_O, h, h_kv):
    """Check :func:`grouped_query_attention`'s input; return (g, d_model, d_k)."""
    g = check_kv_heads(h, h_kv)
    _check_weight("W_Q", W_Q, (W_Q.shape[0], W_Q.shape[0])
                  if isinstance(W_Q, torch.Tensor) and W_Q.ndim == 2 else (),
                  "(d_model, h*d_k)")
    d_model = W_Q.shape[0]
    d_k = check_heads(d_model, h)
    _check_weight("W_K", W_K, (d_model, h_kv * d_k), "(d_model, h_kv*d_k)")
    _check_weight("W_V", W_V, (d_model, h_kv * d_k), "(d_model, h_kv*d_k)")
    _check_weight("W_O", W_O, (d_model, d_model), "(h*d_k, d_model)")
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t, ndim=(2, 3), legend="(B, tokens, d_model)")
    if len({query.ndim, key.ndim, value.ndim}) > 1:
        raise InputError(
            "query, key and value must all be batched (B, tokens, d_model) or "
            f"all unbatched (tokens, d_model); got shapes {tuple(query.shape)}, "
            f"{tuple(key.shape)}, {tuple(value.shape)}.")
    if query.ndim == 2:
        return g, d_model, d_k  # checked again with the batch axis added
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.shape[-1] != d_model:
            raise InputError(f"{name} must end in d_model = {d_model} (the "
                             f"weights' size); got shape {tuple(t.shape)}.")
        if 0 in t.shape:
            raise InputError(f"{name} is empty (shape {tuple(t.shape)}): "
                             "attention needs at least one sequence and token.")
    check_batch_first(query, key, value)
    check_same_dtype(query=query, key=key, value=value, W_Q=W_Q, W_K=W_K,
                     W_V=W_V, W_O=W_O)
    for name, t in (("query", query), ("key", key), ("value", value),
                    ("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        check_finite(name, t, option=False)
    return g, d_model, d_k


def grouped_query_attention(query, key, value, W_Q, W_K, W_V, W_O,
                            h: int, h_kv: int, mask=None):
    """``Concat(head_1..head_h) W_O`` with ``head_i`` using key/value head
    ``i // (h / h_kv)``; no biases.

    Shapes: ``query`` (B, L, d_model), ``key``/``value`` (B, S, d_model)
    (or (L, d_model) and (S, d_model) without the batch axis);
    ``W_Q`` (d_model, d_model), ``W_K``/``W_V`` (d_model, h_kv*d_k),
    ``W_O`` (d_model, d_model); ``mask`` (L, S) or (B, h, L, S), bool with
    ``True`` = blocked, or float added to the scores.
    Returns ``(output (B, L, d_model), weights (B, h, L, S))``, rows of the
    weights summing to 1. ``h_kv = h`` gives :func:`multi_head_attention`'s
    numbers; ``h_kv = 1`` is multi-query attention.
    """
    g, _, d_k = _check_gqa(query, key, value, W_Q, W_K, W_V, W_O, h, h_kv)
    if query.ndim == 2:  # one sequence
        if mask is not None:
            mask = check_mask("mask", mask)
        m = mask if mask is None or mask.ndim == 2 else mask[None]
        out, A = grouped_query_attention(query[None], key[None], value[None],
                                         W_Q, W_K, W_V, W_O, h, h_kv, m)
        return out[0], A[0]
    B, L, _ = query.shape
    S = key.shape[1]
    Q = split_heads(query @ W_Q, h)  # (B, h, L, d_k)
    K = split_heads(key @ W_K, h_kv)  # (B, h_kv, S, d_k): the cached keys
    V = split_heads(value @ W_V, h_kv)  # (B, h_kv, S, d_k): the cached values
    # group the query heads: heads i*g .. i*g+g-1 share key/value head i
    Q = Q.reshape(B, h_kv, g, L, d_k)  # (B, h_kv, g, L, d_k)
    K, V = K[:, :, None], V[:, :, None]  # (B, h_kv, 1, S, d_k): broadcast, no copy
    if mask is not None:
        mask = _group_mask(mask, B, h, h_kv, L, S)
    heads, A = scaled_dot_product_attention(Q, K, V, mask)  # (B, h_kv, g, L, d_k)
    heads = heads.reshape(B, h, L, d_k)  # (B, h, L, d_k)
    out = merge_heads(heads) @ W_O  # (B, L, d_model)
    return out, A.reshape(B, h, L, S)  # (B, h, L, S)


def random_gqa_weights(d_model: int, h: int, h_kv: int, seed: int | None = 0,
                       dtype: torch.dtype = torch.float32):
    """Random ``(W_Q, W_K, W_V, W_O)`` for :func:`grouped_query_attention`,
    entries ~ N(0, 1/d_model). Shapes: (d_model, d_model),
    (d_model, h_kv*d_k) twice, (d_model, d_model)."""
    d_k = check_heads(d_model, h)
    check_positive_int("d_model", d_model, MAX_D_MODEL,
                       "memory: d_model x d_model matrices")
    check_kv_heads(h, h_kv)
    check_dtype("dtype", dtype)
    gen = None if seed is None else torch.Generator().manual_seed(seed)

    def mat(cols):
        return torch.randn(d_model, cols, generator=gen, dtype=dtype) / d_model**0.5

    return mat(d_model), mat(h_kv * d_k), mat(h_kv * d_k), mat(d_model)


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
