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

import numpy as np
import torch

from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_mask,
    check_no_blocked_rows,
    check_positive_int,
    describe,
)

__all__ = ["causal_mask", "padding_mask", "to_sdpa_mask", "as_additive",
           "check_no_blocked_rows", "causal_core", "combine_masks"]

#: Most entries (L * S) a mask may have: 10**8 bools are 100 MB.
MAX_MASK_ENTRIES = 10**8


def _check_size(L: int, S: int, names: tuple[str, str] = ("L", "S")) -> None:
    if L * S > MAX_MASK_ENTRIES:
        raise InputError(
            f"{names[0]} = {L} and {names[1]} = {S} make a ({L}, {S}) mask of "
            f"{L * S:,} entries, more than the {MAX_MASK_ENTRIES:,} allowed "
            "(memory: each is a byte, and the attention weights would need 4 "
            "bytes each). Use shorter sequences.")


def causal_mask(L: int, S: int | None = None, device=None) -> torch.Tensor:
    """Block every key later than its query: ``mask[i, j] = j > i``.

    Shapes: returns ``(L, S)`` bool, ``True`` = blocked; ``S`` defaults to ``L``.
    """
    L = check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
    _check_size(L, S)
    return causal_core(L, S, device)


def causal_core(L, S, device=None) -> torch.Tensor:
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
    lengths = _as_lengths(lengths)
    _check_size(len(lengths), S, ("B = len(lengths)", "S"))
    bad = [n for n in lengths if not 1 <= n <= S]
    if bad:
        raise InputError(
            f"every length must be between 1 and S = {S}; got {bad}. "
            "A length of 0 would leave a sequence with no key to attend to."
        )
    lengths = torch.tensor(lengths, device=device)  # (B,)
    return torch.arange(S, device=device)[None, :] >= lengths[:, None]  # (B, S)


def _as_lengths(lengths) -> list[int]:
    """``lengths`` (a list, tuple, 1-D array or tensor of whole numbers) as a
    list of ints, or raise :class:`~mhacourse.InputError`."""
    if isinstance(lengths, (torch.Tensor, np.ndarray)):
        if lengths.ndim != 1:
            raise InputError(
                f"lengths must be a 1-D list of sequence lengths; "
                f"got shape {tuple(lengths.shape)}.")
        lengths = lengths.tolist()
    if not isinstance(lengths, (list, tuple)):
        raise InputTypeError(
            f"lengths must be a list of sequence lengths, one per sequence "
            f"(such as [5, 3]); got {describe(lengths)}.")
    if not lengths:
        raise InputError("lengths is empty: give one length per sequence.")
    out = []
    for i, n in enumerate(lengths):
        if isinstance(n, float) and n.is_integer():
            n = int(n)  # 3.0 is a length of 3
        out.append(as_int(f"lengths[{i}]", n))
    return out


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert a course mask (``True`` = blocked) to
    ``F.scaled_dot_product_attention``'s (``True`` = allowed).

    Float masks are additive in both and pass through unchanged.
    """
    check_mask("mask", mask)
    return ~mask if mask.dtype == torch.bool else mask


def as_additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask (``True`` = blocked) as ``0`` / ``-inf`` to add to scores."""
    if mask.dtype != torch.bool:
        return mask.to(dtype)
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(mask, float("-inf"))


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
    mask = None
    if attn_mask is not None:
        attn_mask = check_mask("attn_mask", attn_mask)
        if tuple(attn_mask.shape) == (L, S):
            mask = attn_mask[None, None]  # (1, 1, L, S)
        elif tuple(attn_mask.shape) == (B * h, L, S):
            mask = attn_mask.reshape(B, h, L, S)  # (B, h, L, S)
        else:
            raise InputError(
                f"attn_mask must have shape (L, S) = ({L}, {S}) or "
                f"(B*h, L, S) = ({B * h}, {L}, {S}); got {tuple(attn_mask.shape)}."
            )
    if key_padding_mask is not None:
        key_padding_mask = check_mask("key_padding_mask", key_padding_mask)
        if tuple(key_padding_mask.shape) != (B, S):
            hint = (" It looks transposed: pass key_padding_mask.T."
                    if tuple(key_padding_mask.shape) == (S, B) else "")
            raise InputError(
                f"key_padding_mask must have shape (B, S) = ({B}, {S}), "
                f"True = padded; got {tuple(key_padding_mask.shape)}.{hint}"
            )
        pad = key_padding_mask[:, None, None, :]  # (B, 1, 1, S)
        if mask is None:
            mask = pad
        elif mask.dtype == torch.bool and pad.dtype == torch.bool:
            mask = mask | pad
        else:
            dtype = mask.dtype if mask.dtype != torch.bool else pad.dtype
            mask = as_additive(mask, dtype) + as_additive(pad, dtype)
    if mask is not None:
        check_no_blocked_rows(mask.expand(-1, -1, L, S))
    return mask
