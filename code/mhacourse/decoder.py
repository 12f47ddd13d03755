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

from ._validate import (
    InputError,
    InputTypeError,
    check_bool,
    check_finite,
    check_heads,
    check_mask,
    check_real,
    check_same_dtype,
    check_tensor,
    describe,
)
from .block import feed_forward, layer_norm
from .multihead import MHAWeights, from_torch, multi_head_attention

# --- input checks: the rules of this module's public functions -----------

def check_y_memory(y, memory) -> None:
    check_tensor("y", y, ndim=(2, 3), legend="(B, L, d_model)")
    check_tensor("memory", memory, ndim=(2, 3), legend="(B, S, d_model)")
    if y.ndim != memory.ndim:
        raise InputError(f"y and memory must both be batched (B, tokens, d_model) "
                         f"or both unbatched; got shapes {tuple(y.shape)} and "
                         f"{tuple(memory.shape)}.")
    if y.shape[-1] != memory.shape[-1]:
        raise InputError(f"y and memory must have the same width d_model; got "
                         f"y {tuple(y.shape)} and memory {tuple(memory.shape)}.")
    if y.ndim == 3 and y.shape[0] != memory.shape[0]:
        raise InputError(f"y and memory must share B (one memory per target); got "
                         f"y {tuple(y.shape)} and memory {tuple(memory.shape)}.")
    if 0 in y.shape or 0 in memory.shape:
        raise InputError(f"y and memory need at least one token each; got shapes "
                         f"{tuple(y.shape)} and {tuple(memory.shape)}.")
    check_same_dtype(y=y, memory=memory)
    check_finite("y", y, option=False)
    check_finite("memory", memory, option=False)


def check_memory_mask(y, memory, mask) -> None:
    """``memory_key_padding_mask``: (B, S) for batched input, (S,) unbatched."""
    if mask is None:
        return
    check_mask("memory_key_padding_mask", mask)
    want = tuple(memory.shape[:-1])
    if tuple(mask.shape) != want:
        raise InputError(f"memory_key_padding_mask must have shape "
                         f"{'(B, S)' if memory.ndim == 3 else '(S,)'} = {want}, True = "
                         f"padding; got {tuple(mask.shape)}.")


def check_tgt_mask(y, tgt_mask) -> None:
    if tgt_mask is None:
        return
    check_mask("tgt_mask", tgt_mask)
    L = y.shape[-2]
    if tgt_mask.ndim < 2 or tuple(tgt_mask.shape[-2:]) != (L, L):
        raise InputError(f"tgt_mask must end in (L, L) = ({L}, {L}), True = blocked "
                         f"(mc.causal_mask(L)); got shape {tuple(tgt_mask.shape)}.")


def check_cross_attention(y, memory, w, h, memory_key_padding_mask=None) -> None:
    check_y_memory(y, memory)
    check_memory_mask(y, memory, memory_key_padding_mask)
    if not isinstance(w, MHAWeights):
        raise InputTypeError(f"w must be an MHAWeights (mc.random_weights or "
                             f"mc.from_torch); got {describe(w)}.")
    check_heads(y.shape[-1], h)


def check_decoder_layer(y, memory, p, h, return_weights, tgt_mask=None,
                        memory_key_padding_mask=None) -> None:
    if not isinstance(p, DecoderLayerWeights):
        raise InputTypeError(f"p must be a DecoderLayerWeights (from "
                             f"decoder_weights_from_torch); got {describe(p)}.")
    check_y_memory(y, memory)
    check_tgt_mask(y, tgt_mask)
    check_memory_mask(y, memory, memory_key_padding_mask)
    d = y.shape[-1]
    check_heads(d, h)
    check_bool("return_weights", return_weights)
    check_bool("p.norm_first", p.norm_first)
    if p.activation not in ("relu", "gelu"):
        raise InputError(f"p.activation must be 'relu' or 'gelu'; got "
                         f"{describe(p.activation)}.")
    check_real("p.eps", p.eps, low=0.0, low_open=True)
    for k in ("gammas", "betas"):
        v = getattr(p, k)
        if not isinstance(v, (tuple, list)) or len(v) != 3:
            raise InputError(f"p.{k} must be 3 tensors (d_model,), one per "
                             f"LayerNorm; got {describe(v)}.")
        for i, t in enumerate(v):
            check_tensor(f"p.{k}[{i}]", t, ndim=1, legend="(d_model,)")
            if t.shape[0] != d:
                raise InputError(f"p.{k}[{i}] must have shape (d_model,) = ({d},); "
                                 f"got {tuple(t.shape)}.")
    check_tensor("p.W_1", p.W_1, ndim=2, legend="(d_model, d_ff)")
    if p.W_1.shape[0] != d:
        raise InputError(f"p.W_1 must have shape (d_model, d_ff) with d_model = {d} "
                         f"(y's width); got {tuple(p.W_1.shape)}.")
    check_same_dtype(y=y, W_1=p.W_1, gamma_1=p.gammas[0])


def check_decoder_torch_layer(layer) -> None:
    if not isinstance(layer, nn.TransformerDecoderLayer):
        raise InputTypeError(f"layer must be an nn.TransformerDecoderLayer; got "
                             f"{describe(layer)}.")
    if layer.linear1.bias is None or layer.norm1.bias is None:
        raise InputError("layer was made with bias=False; the course's decoder_layer "
                         "has biases: make the layer with bias=True.")
    act = layer.activation
    ok = act is F.relu or isinstance(act, nn.ReLU) or act is F.gelu or (
        isinstance(act, nn.GELU) and act.approximate == "none")
    if not ok:
        raise InputError(f"layer.activation must be relu or gelu (exact) for the "
                         f"course's decoder_layer; got {describe(act)}.")


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
