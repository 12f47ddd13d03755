"""Masks: which keys a query may not look at.

Convention (the same as ``torch.nn.MultiheadAttention``): in a boolean mask
**``True`` means blocked**. ``F.scaled_dot_product_attention`` uses the opposite
(``True`` = allowed); :func:`to_sdpa_mask` converts.

A float mask is added to the scores: ``0`` keeps a key, ``-inf`` blocks it.
"""
from __future__ import annotations

import torch

from ._validate import check_positive_int


def causal_mask(L: int, S: int | None = None, device=None) -> torch.Tensor:
    """Block every key later than its query: ``mask[i, j] = j > i``.

    Shapes: returns ``(L, S)`` bool, ``True`` = blocked; ``S`` defaults to ``L``.
    """
    check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
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
    check_positive_int("S (key length)", S)
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.ndim != 1:
        raise ValueError(
            f"lengths must be a 1-D list of sequence lengths; "
            f"got shape {tuple(lengths.shape)}."
        )
    bad = [int(n) for n in lengths if not 1 <= int(n) <= S]
    if bad:
        raise ValueError(
            f"every length must be between 1 and S = {S}; got {bad}. "
            "A length of 0 would leave a sequence with no key to attend to."
        )
    return torch.arange(S, device=device)[None, :] >= lengths[:, None]  # (B, S)


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert a course mask (``True`` = blocked) to
    ``F.scaled_dot_product_attention``'s (``True`` = allowed).

    Float masks are additive in both and pass through unchanged.
    """
    return ~mask if mask.dtype == torch.bool else mask


def as_additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask (``True`` = blocked) as ``0`` / ``-inf`` to add to scores."""
    if mask.dtype != torch.bool:
        return mask.to(dtype)
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(mask, float("-inf"))


def check_no_blocked_rows(mask: torch.Tensor) -> None:
    """Refuse a mask that blocks every key of some query.

    Such a row has softmax(all -inf) = 0/0 = NaN. The course raises instead of
    returning NaN (PyTorch's own kernels return NaN or zeros depending on the
    path). Shapes: ``mask`` (..., L, S), bool (``True`` = blocked) or additive.
    """
    blocked = mask if mask.dtype == torch.bool else torch.isneginf(mask)
    full = blocked.all(dim=-1)  # (..., L)
    if bool(full.any()):
        where = [tuple(int(i) for i in ix) for ix in full.nonzero()[:3]]
        raise ValueError(
            f"the mask blocks every key for query position(s) (index ..., query) "
            f"{where}{' ...' if int(full.sum()) > 3 else ''}: softmax over "
            "nothing is 0/0 = NaN. Let each query see at least one key, for "
            "example itself, or drop fully padded rows before attention."
        )
