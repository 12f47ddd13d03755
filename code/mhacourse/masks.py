"""Masks: which keys a query may not look at.

Convention (the same as ``torch.nn.MultiheadAttention``): in a boolean mask
**``True`` means blocked**. ``F.scaled_dot_product_attention`` uses the opposite
(``True`` = allowed); :func:`to_sdpa_mask` converts.

A float mask is added to the scores: ``0`` keeps a key, ``-inf`` (or a value
at or below ``-1e4``) blocks it, other values are score biases. Integer masks
and float masks of only 0 and 1 are refused (:func:`mhacourse._validate.check_mask`):
added to the scores they would push the keys they mean to block *up* by 1.
"""
from __future__ import annotations

import torch

from ._errors import (
    MAX_MASK_ENTRIES,  # noqa: F401 - named here too
    check_lengths,
    check_mask_shapes,
    check_mask_size,
)
from ._validate import (
    check_device,
    check_mask,
    check_no_blocked_rows,
    check_positive_int,
)

__all__ = ["causal_mask", "padding_mask", "to_sdpa_mask",
           "check_no_blocked_rows", "combine_masks"]


def causal_mask(L: int, S: int | None = None, device=None) -> torch.Tensor:
    """Block every key later than its query: ``mask[i, j] = j > i``.

    Shapes: returns ``(L, S)`` bool, ``True`` = blocked; ``S`` defaults to ``L``.
    """
    L = check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
    check_mask_size(L, S)
    return _causal_core(L, S, check_device("device", device))


def _causal_core(L, S, device=None) -> torch.Tensor:
    """:func:`causal_mask` without input checks, for a traced (exported)
    model whose ``L`` is a symbolic size. Shapes: returns (L, S) bool."""
    i = torch.arange(L, device=device)[:, None]  # (L, 1)
    j = torch.arange(S, device=device)[None, :]  # (1, S)
    return j > i  # (L, S)


def padding_mask(lengths, S: int, device=None) -> torch.Tensor:
    """Block the padding after each sequence's real tokens.

    ``lengths[b]`` real tokens, then padding up to ``S``.
    Shapes: ``lengths`` (B,) -> ``(B, S)`` bool, ``True`` = padded (blocked);
    this is ``nn.MultiheadAttention``'s ``key_padding_mask``.
    """
    S = check_positive_int("S (key length)", S)
    device = check_device("device", device)
    lengths = torch.tensor(check_lengths(lengths, S), device=device)  # (B,)
    return torch.arange(S, device=device)[None, :] >= lengths[:, None]  # (B, S)


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert a course mask (``True`` = blocked) to
    ``F.scaled_dot_product_attention``'s (``True`` = allowed).

    Float masks are additive in both and pass through unchanged.
    """
    check_mask("mask", mask)
    return ~mask if mask.dtype == torch.bool else mask


def _as_additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask (``True`` = blocked) as ``0`` / ``-inf`` to add to scores.
    A part of the traced cores: no checks (:func:`check_mask` runs before)."""
    if mask.dtype != torch.bool:
        return mask.to(dtype)
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(mask, float("-inf"))


def check_mask_sizes(B, h, L, S) -> None:
    for name, n in (("B", B), ("h", h), ("L", L), ("S", S)):
        check_positive_int(name, n)
    check_mask_size(L, S)


def combine_masks(
    attn_mask, key_padding_mask, B: int, h: int, L: int, S: int,
) -> torch.Tensor | None:
    """Merge ``attn_mask`` and ``key_padding_mask`` into one (B, h or 1, L, S)
    mask (bool ``True`` = blocked, or float additive), as
    ``nn.MultiheadAttention`` does.

    ``attn_mask``: (L, S) or (B*h, L, S). ``key_padding_mask``: (B, S).
    Integer masks, 0/1 float masks and rows with every key blocked raise
    :class:`~mhacourse.InputError`.
    """
    check_mask_sizes(B, h, L, S)
    mask = None
    if attn_mask is not None:
        attn_mask = check_mask("attn_mask", attn_mask)
        check_mask_shapes(attn_mask.shape, None, B, h, L, S)
        if tuple(attn_mask.shape) == (L, S):
            mask = attn_mask[None, None]  # (1, 1, L, S)
        else:
            mask = attn_mask.reshape(B, h, L, S)  # (B, h, L, S)
    if key_padding_mask is not None:
        key_padding_mask = check_mask("key_padding_mask", key_padding_mask)
        check_mask_shapes(None, key_padding_mask.shape, B, h, L, S)
        pad = key_padding_mask[:, None, None, :]  # (B, 1, 1, S)
        if mask is None:
            mask = pad
        elif mask.dtype == torch.bool and pad.dtype == torch.bool:
            mask = mask | pad
        else:
            dtype = mask.dtype if mask.dtype != torch.bool else pad.dtype
            mask = _as_additive(mask, dtype) + _as_additive(pad, dtype)
    if mask is not None:
        check_no_blocked_rows(mask.expand(-1, -1, L, S))
    return mask
