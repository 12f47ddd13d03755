"""The transformer block: multi-head attention + residual + LayerNorm + feed-forward.

Post-LN (Vaswani et al. 2017; BERT), as drawn in the course's source documents::

    x = LayerNorm(x + MultiHead(x))
    x = LayerNorm(x + FFN(x))

Pre-LN (GPT-2, and Llama with RMSNorm in place of LayerNorm)::

    x = x + MultiHead(LayerNorm(x))
    x = x + FFN(LayerNorm(x))

``FFN(x) = act(x W_1 + b_1) W_2 + b_2``, with W_1 (d_model, d_ff).
PyTorch: ``nn.TransformerEncoderLayer(d_model, nhead=h, dim_feedforward=d_ff,
norm_first=pre_ln, batch_first=True, dropout=0)``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import check_heads, check_positive_int
from .multihead import MultiHeadAttention, from_torch, mha_core

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last axis
    (biased variance, as ``nn.LayerNorm``). Shapes: (..., d_model)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def feed_forward(x, W_1, b_1, W_2, b_2, activation: str = "relu"):
    """``act(x W_1 + b_1) W_2 + b_2``: (..., d_model) -> (..., d_ff) -> (..., d_model)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; "
                         f"got {activation!r}.")
    return ACTIVATIONS[activation](x @ W_1 + b_1) @ W_2 + b_2


class TransformerBlock(nn.Module):
    """One encoder block. ``pre_ln=False`` (default) is post-LN as in the 2017
    paper and BERT; ``pre_ln=True`` is GPT-2's ordering.

    Maps to ``nn.TransformerEncoderLayer`` (``norm_first`` ↔ ``pre_ln``,
    ``nhead`` ↔ ``h``, ``dim_feedforward`` ↔ ``d_ff``); see :meth:`from_torch`.
    """

    def __init__(self, d_model: int, h: int, d_ff: int | None = None,
                 pre_ln: bool = False, activation: str = "relu",
                 eps: float = 1e-5, seed: int | None = None):
        super().__init__()
        check_heads(d_model, h)
        d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; "
                             f"got {activation!r}.")
        self.pre_ln, self.activation, self.eps = pre_ln, activation, eps
        self.attn = MultiHeadAttention(d_model, h, seed=seed)
        g = None if seed is None else torch.Generator().manual_seed(seed + 1)
        self.W_1 = nn.Parameter(torch.randn(d_model, d_ff, generator=g) / d_model**0.5)
        self.b_1 = nn.Parameter(torch.zeros(d_ff))
        self.W_2 = nn.Parameter(torch.randn(d_ff, d_model, generator=g) / d_ff**0.5)
        self.b_2 = nn.Parameter(torch.zeros(d_model))
        self.gamma_1 = nn.Parameter(torch.ones(d_model))
        self.beta_1 = nn.Parameter(torch.zeros(d_model))
        self.gamma_2 = nn.Parameter(torch.ones(d_model))
        self.beta_2 = nn.Parameter(torch.zeros(d_model))

    def ln1(self, x):
        return layer_norm(x, self.gamma_1, self.beta_1, self.eps)

    def ln2(self, x):
        return layer_norm(x, self.gamma_2, self.beta_2, self.eps)

    def ffn(self, x):
        return feed_forward(x, self.W_1, self.b_1, self.W_2, self.b_2, self.activation)

    def forward(self, x, attn_mask=None, key_padding_mask=None,
                return_weights: bool = False):
        """Shapes: ``x`` (B, L, d_model) -> (B, L, d_model); with
        ``return_weights=True`` also the attention weights (B, h, L, L)."""
        if self.pre_ln:
            z = self.ln1(x)
            a, A = self.attn(z, z, z, key_padding_mask, attn_mask=attn_mask,
                             average_attn_weights=False)
            x = x + a  # residual around attention
            x = x + self.ffn(self.ln2(x))  # residual around the FFN
        else:
            a, A = self.attn(x, x, x, key_padding_mask, attn_mask=attn_mask,
                             average_attn_weights=False)
            x = self.ln1(x + a)  # Add & Norm
            x = self.ln2(x + self.ffn(x))  # Add & Norm
        return (x, A) if return_weights else x

    def core(self, x, mask=None):
        """:meth:`forward` with no input checks (the attention runs
        :func:`~mhacourse.multihead.mha_core`), for ``torch.onnx.export``.

        ``mask``: one (B or 1, h or 1, L, L) mask (bool ``True`` = blocked).
        Shapes: ``x`` (B, L, d_model) -> ``(x (B, L, d_model),
        weights (B, h, L, L))``.
        """
        w, h = self.attn.weights(), self.attn.h
        if self.pre_ln:
            z = self.ln1(x)
            a, A, _ = mha_core(z, z, z, w, h, mask)
            x = x + a  # residual around attention
            x = x + self.ffn(self.ln2(x))  # residual around the FFN
        else:
            a, A, _ = mha_core(x, x, x, w, h, mask)
            x = self.ln1(x + a)  # Add & Norm
            x = self.ln2(x + self.ffn(x))  # Add & Norm
        return x, A

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """Copy an ``nn.TransformerEncoderLayer(batch_first=True)``'s weights."""
        act = layer.activation
        name = "gelu" if act is F.gelu or isinstance(act, nn.GELU) else "relu"
        d_model = layer.linear1.in_features
        block = cls(d_model, layer.self_attn.num_heads, layer.linear1.out_features,
                    pre_ln=layer.norm_first, activation=name, eps=layer.norm1.eps,
                    ).to(layer.linear1.weight.dtype)
        w = from_torch(layer.self_attn)
        with torch.no_grad():
            for name_, t in vars(w).items():
                if t is not None:
                    getattr(block.attn, name_).copy_(t)
            block.W_1.copy_(layer.linear1.weight.T)
            block.b_1.copy_(layer.linear1.bias)
            block.W_2.copy_(layer.linear2.weight.T)
            block.b_2.copy_(layer.linear2.bias)
            block.gamma_1.copy_(layer.norm1.weight)
            block.beta_1.copy_(layer.norm1.bias)
            block.gamma_2.copy_(layer.norm2.weight)
            block.beta_2.copy_(layer.norm2.bias)
        return block
