"""The trainable layer: :class:`MultiHeadAttention`, an ``nn.Module`` with
``torch.nn.MultiheadAttention``'s call signature, built from the functions of
:mod:`mhacourse.multihead` (chapter 7 trains it; chapter 10 stacks it into a
block)."""
from __future__ import annotations

from dataclasses import fields

import torch
from torch import nn

from ._validate import check_heads, check_positive_int
from .multihead import (
    MAX_D_MODEL,
    MHAWeights,
    multi_head_attention,
    multi_head_attention_fast,
    random_weights,
)


class MultiHeadAttention(nn.Module):
    """A trainable layer with ``nn.MultiheadAttention``'s call signature
    (``batch_first=True``), built from the functions above.

    ``d_model`` ↔ ``embed_dim``, ``h`` ↔ ``num_heads``. Parameters keep the
    course's names and layout (``x @ W_Q``).
    """

    def __init__(self, d_model: int, h: int, bias: bool = True, seed: int | None = None):
        super().__init__()
        self.d_k = check_heads(d_model, h)
        check_positive_int("d_model", d_model, MAX_D_MODEL,
                           "memory: four d_model x d_model matrices")
        self.d_model, self.h = d_model, h
        w = random_weights(d_model, h, bias=bias, seed=seed)
        for f in fields(w):
            t = getattr(w, f.name)
            if f.name.startswith("b") and t is not None:
                t = torch.zeros_like(t)
            setattr(self, f.name, None if t is None else nn.Parameter(t))

    def weights(self) -> MHAWeights:
        return MHAWeights(**{f.name: getattr(self, f.name) for f in fields(MHAWeights)})

    def forward(self, query, key=None, value=None, key_padding_mask=None,
                need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True):
        """Self-attention when ``key``/``value`` are omitted.

        Returns ``(output, weights)``; ``weights`` is (B, L, S) averaged over
        heads, (B, h, L, S) with ``average_attn_weights=False``, or ``None``
        with ``need_weights=False`` (then the fused kernel runs).
        """
        key = query if key is None else key
        value = key if value is None else value
        if not need_weights:
            return multi_head_attention_fast(
                query, key, value, self.weights(), self.h, attn_mask=attn_mask,
                key_padding_mask=key_padding_mask)
        out, A = multi_head_attention(query, key, value, self.weights(), self.h,
                                      attn_mask=attn_mask,
                                      key_padding_mask=key_padding_mask)
        return out, (A.mean(dim=-3) if average_attn_weights else A)
