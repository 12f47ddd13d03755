"""Cross-attention and the decoder layer of the 2017 transformer.

In **cross-attention** the queries come from one sequence and the keys and
values from another: in a translation model, the decoder's ``L`` target
tokens ask, the encoder's ``S`` source tokens (its output, the *memory*)
answer. It is the same multi-head attention, called with different
arguments::

    CrossAttention(Y, M) = MultiHead(query=Y, key=M, value=M)
    Q = Y W_Q  (B, L, d_model)      K = M W_K, V = M W_V  (B, S, d_model)
    weights (B, h, L, S): one row per target token, one column per source token

The decoder layer (Vaswani et al. 2017, section 3.1) has three sub-layers,
each with a residual connection and a LayerNorm (post-LN, as in the paper;
``norm_first`` gives the pre-LN ordering)::

    y = LN1(y + MultiHead(y, y, y, causal mask))      masked self-attention
    y = LN2(y + MultiHead(y, M, M))                   cross-attention
    y = LN3(y + FFN(y))

Maps to ``nn.TransformerDecoderLayer`` (``self_attn``, ``multihead_attn``,
``linear1``, ``linear2``, ``norm1..3``); see :func:`decoder_weights_from_torch`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._validate_analysis import check_decoder_torch_layer
from ._validate_newer import check_cross_attention, check_decoder_layer
from .block import feed_forward, layer_norm
from .multihead import MHAWeights, from_torch, multi_head_attention


def cross_attention(y, memory, w: MHAWeights, h: int,
                    memory_key_padding_mask=None):
    """Multi-head attention with queries from ``y`` and keys and values from
    ``memory``: ``MultiHead(query=y, key=memory, value=memory)``.

    Shapes: ``y`` (B, L, d_model), ``memory`` (B, S, d_model),
    ``memory_key_padding_mask`` (B, S), True = padding.
    Returns ``(output (B, L, d_model), weights (B, h, L, S))``.
    """
    check_cross_attention(y, memory, w, h, memory_key_padding_mask)
    return multi_head_attention(y, memory, memory, w, h,
                                key_padding_mask=memory_key_padding_mask)


@dataclass
class DecoderLayerWeights:
    """One decoder layer's weights in the course's layout (``x @ W``).

    ``self_attn``, ``cross_attn``: :class:`~mhacourse.multihead.MHAWeights`;
    ``W_1`` (d_model, d_ff), ``W_2`` (d_ff, d_model); ``gamma_k``, ``beta_k``
    (d_model,) for the LayerNorms k = 1, 2, 3.
    """

    self_attn: MHAWeights
    cross_attn: MHAWeights
    W_1: torch.Tensor
    b_1: torch.Tensor
    W_2: torch.Tensor
    b_2: torch.Tensor
    gammas: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    betas: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    norm_first: bool = False
    activation: str = "relu"
    eps: float = 1e-5


def decoder_weights_from_torch(layer: nn.TransformerDecoderLayer
                               ) -> DecoderLayerWeights:
    """Read an ``nn.TransformerDecoderLayer(batch_first=True)``'s weights."""
    check_decoder_torch_layer(layer)
    act = layer.activation
    name = "gelu" if act is F.gelu or isinstance(act, nn.GELU) else "relu"
    norms = (layer.norm1, layer.norm2, layer.norm3)
    with torch.no_grad():
        return DecoderLayerWeights(
            self_attn=from_torch(layer.self_attn),
            cross_attn=from_torch(layer.multihead_attn),
            W_1=layer.linear1.weight.T.clone(), b_1=layer.linear1.bias.clone(),
            W_2=layer.linear2.weight.T.clone(), b_2=layer.linear2.bias.clone(),
            gammas=tuple(n.weight.clone() for n in norms),
            betas=tuple(n.bias.clone() for n in norms),
            norm_first=layer.norm_first, activation=name, eps=layer.norm1.eps,
        )


def decoder_layer(y, memory, p: DecoderLayerWeights, h: int, tgt_mask=None,
                  memory_key_padding_mask=None, return_weights: bool = False):
    """Masked self-attention, cross-attention, feed-forward; each sub-layer
    with a residual and a LayerNorm (post-LN, or pre-LN if ``p.norm_first``).

    Shapes: ``y`` (B, L, d_model) the target so far, ``memory`` (B, S,
    d_model) the encoder's output, ``tgt_mask`` (L, L) True = blocked
    (usually :func:`~mhacourse.masks.causal_mask`).
    Returns (B, L, d_model); with ``return_weights=True`` also the
    self-attention (B, h, L, L) and cross-attention (B, h, L, S) weights.
    """
    check_decoder_layer(y, memory, p, h, return_weights, tgt_mask,
                        memory_key_padding_mask)

    def ln(k, x):
        return layer_norm(x, p.gammas[k], p.betas[k], p.eps)

    def ffn(x):
        return feed_forward(x, p.W_1, p.b_1, p.W_2, p.b_2, p.activation)

    if p.norm_first:
        z = ln(0, y)
        a, A_self = multi_head_attention(z, z, z, p.self_attn, h, attn_mask=tgt_mask)
        y = y + a
        c, A_cross = cross_attention(ln(1, y), memory, p.cross_attn, h,
                                     memory_key_padding_mask)
        y = y + c
        y = y + ffn(ln(2, y))
    else:
        a, A_self = multi_head_attention(y, y, y, p.self_attn, h, attn_mask=tgt_mask)
        y = ln(0, y + a)  # Add & Norm
        c, A_cross = cross_attention(y, memory, p.cross_attn, h,
                                     memory_key_padding_mask)
        y = ln(1, y + c)  # Add & Norm
        y = ln(2, y + ffn(y))  # Add & Norm
    return (y, A_self, A_cross) if return_weights else y
