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

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._errors import BLOCK_PARAMS as _BLOCK_PARAMS
from ._errors import check_eps
from ._validate import (
    InputError,
    InputTypeError,
    check_all_finite,
    check_finite,
    check_heads,
    check_positive_int,
    check_tensor,
    describe,
    unbatched_padding_mask,
)
from .layer import MultiHeadAttention
from .masks import combine_masks
from .multihead import (
    MAX_D_MODEL,
    MHAWeights,
    _check_inputs,
    _mha_core,
    from_torch,
    to_torch,
)

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}
#: The block's weights besides the attention's, in the course's layout
#: (``x @ W_1``); written once, in ``mhacourse._errors``, for the NumPy twin too.
BLOCK_PARAMS = _BLOCK_PARAMS


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last axis
    (biased variance, as ``nn.LayerNorm``). Shapes: (..., d_model)."""
    _check_params(x, gamma=gamma, beta=beta)
    check_eps(eps)
    return _layer_norm_core(x, gamma, beta, eps)


def _layer_norm_core(x, gamma, beta, eps: float = 1e-5):
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last axis, the
    LayerNorm chapter 10 derives, with no input checks (:func:`layer_norm`
    checks, then calls this; :func:`_block_core` calls it)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def _layer_norm_fused(x, gamma, beta, eps: float = 1e-5):
    """:func:`_layer_norm_core`'s equation as one operation,
    ``F.layer_norm`` (ONNX ``LayerNormalization``), for the exported
    training graphs (``web_train.FUSED``). Equal to :func:`_layer_norm_core`
    up to float rounding (``test_web_train``). Shapes: x (..., d_model),
    gamma and beta (d_model,) -> (..., d_model)."""
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps)  # (..., d_model)


def feed_forward(x, W_1, b_1, W_2, b_2, activation: str = "relu"):
    """``act(x W_1 + b_1) W_2 + b_2``: (..., d_model) -> (..., d_ff) -> (..., d_model)."""
    check_activation(activation)
    _check_params(x, W_1=W_1)
    for name, t in (("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
        check_tensor(name, t, min_ndim=1)
        check_finite(name, t, option=False)
    d_model, d_ff = W_1.shape if W_1.ndim == 2 else (None, None)
    want = {"W_1": (d_model, d_ff), "b_1": (d_ff,), "W_2": (d_ff, d_model),
            "b_2": (d_model,)}
    for name, t in (("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
        if tuple(t.shape) != want[name] or t.dtype != x.dtype:
            raise InputError(
                f"{name} must be a {str(x.dtype).replace('torch.', '')} tensor of "
                f"shape {want[name]} (W_1 is (d_model, d_ff)); got "
                f"{describe(t)}.")
    return _feed_forward_core(x, W_1, b_1, W_2, b_2, activation)


def _feed_forward_core(x, W_1, b_1, W_2, b_2, activation: str = "relu"):
    """``act(x W_1 + b_1) W_2 + b_2``, the feed-forward network chapter 10
    derives, with no input checks (:func:`feed_forward` checks, then calls
    this). Shapes: (..., d_model) -> (..., d_ff) -> (..., d_model)."""
    return ACTIVATIONS[activation](x @ W_1 + b_1) @ W_2 + b_2


def _feed_forward_fused(x, W_1, b_1, W_2, b_2, activation: str = "relu"):
    """:func:`_feed_forward_core` for the exported training step
    (``web_train.STEP_FUSED``): the same network, its GELU written as
    :class:`_GeluKeepingCdf`, so that the gradient reuses the forward's
    ``erf`` rather than computing it again. Equal to
    :func:`_feed_forward_core` up to float rounding (``test_web_train``).
    Shapes: (..., d_model) -> (..., d_ff) -> (..., d_model)."""
    z = x @ W_1 + b_1  # (..., d_ff)
    a = _GeluKeepingCdf.apply(z)[0] if activation == "gelu" else ACTIVATIONS[activation](z)
    return a @ W_2 + b_2


class _GeluKeepingCdf(torch.autograd.Function):
    """The exact GELU, ``gelu(z) = z · Φ(z)`` with the normal CDF
    ``Φ(z) = (1 + erf(z / √2)) / 2``, returned with ``Φ(z)`` (no gradient),
    and its derivative ``Φ(z) + z · φ(z)``, ``φ(z) = exp(-z² / 2) / √(2π)``,
    from the kept ``Φ``. autograd's gradient of ``F.gelu`` computes
    ``erf`` a second time, and onnxruntime-web's ``Erf`` is one of a
    training step's slowest elementwise kernels (about 120 µs on
    (32, 16, 64) in Node). Shapes: z (...) -> (...), (...)."""

    @staticmethod
    def forward(z):
        cdf = 0.5 * (1 + torch.erf(z * 0.7071067811865476))  # Φ(z)
        return z * cdf, cdf

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, g, _g_cdf):
        z, cdf = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z) * 0.3989422804014327  # φ(z) = exp(-z²/2) / √(2π)
        return g * (cdf + z * pdf)


@dataclass
class BlockWeights:
    """Everything one block learns: the attention's :class:`MHAWeights` and
    the names of :data:`BLOCK_PARAMS` (``W_1`` (d_model, d_ff), ``b_1``
    (d_ff,), ``W_2`` (d_ff, d_model), ``b_2`` and the LayerNorm gains and
    shifts (d_model,)). The one weights type of every block the package runs."""

    attn: MHAWeights
    W_1: torch.Tensor
    b_1: torch.Tensor
    W_2: torch.Tensor
    b_2: torch.Tensor
    gamma_1: torch.Tensor
    beta_1: torch.Tensor
    gamma_2: torch.Tensor
    beta_2: torch.Tensor


def _block_core(x, w: BlockWeights, h, mask=None, pre_ln: bool = False,
               activation: str = "relu", eps: float = 1e-5, *,
               h_kv=None, cache=None, head_mask=None, head_values=None,
               return_concat: bool = False):
    """One transformer block, the formula chapter 10 derives, with no input
    checks (:class:`TransformerBlock` checks, then calls this)::

        post-LN:  x = LN_1(x + MultiHead(x));  x = LN_2(x + FFN(x))
        pre-LN:   x = x + MultiHead(LN_1(x));  x = x + FFN(LN_2(x))

    Every block of the package runs it: :class:`TransformerBlock`, BERT
    (:func:`mhacourse.bert._layer_core`), the causal LM with its key/value
    cache (:mod:`mhacourse.kv_cache`) and the tiny models. ``h_kv``,
    ``cache``, ``head_mask`` and ``head_values`` go to
    :func:`~mhacourse.multihead._mha_core`.
    ``h`` may be a symbolic size (a traced graph then serves every h).
    ``mask``: one (B or 1, h or 1, L, S) or (L, S) mask (bool ``True`` =
    blocked). Shapes: ``x`` (B, L, d_model) -> ``(x (B, L, d_model),
    weights (B, h, L, S))``, and the heads' ``concat`` (B, L, d_model) with
    ``return_concat=True``.
    """
    def attn(t):  # (B, L, d_model), (B, h, L, S), (B, L, d_model)
        return _mha_core(t, t, t, w.attn, h, mask, h_kv=h_kv, cache=cache,
                        head_mask=head_mask, head_values=head_values)

    def ffn(t):
        return _feed_forward_core(t, w.W_1, w.b_1, w.W_2, w.b_2, activation)

    if pre_ln:
        a, A, concat = attn(_layer_norm_core(x, w.gamma_1, w.beta_1, eps))
        x = x + a  # residual around attention
        x = x + ffn(_layer_norm_core(x, w.gamma_2, w.beta_2, eps))  # around the FFN
    else:
        a, A, concat = attn(x)
        x = _layer_norm_core(x + a, w.gamma_1, w.beta_1, eps)  # Add & Norm
        x = _layer_norm_core(x + ffn(x), w.gamma_2, w.beta_2, eps)  # Add & Norm
    return (x, A, concat) if return_concat else (x, A)


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
        check_positive_int("d_model", d_model, MAX_D_MODEL,
                           "memory: the weights grow as d_model^2")
        d_ff = 4 * d_model if d_ff is None else check_positive_int(
            "d_ff", d_ff, 8 * MAX_D_MODEL, "memory: W_1 and W_2 are d_model x d_ff")
        check_activation(activation)
        check_eps(eps)
        if not isinstance(pre_ln, (bool, np.bool_)):
            raise InputTypeError(f"pre_ln must be True or False; got "
                                 f"{describe(pre_ln)}.")
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
        ``return_weights=True`` also the attention weights (B, h, L, L).
        Bad input raises :class:`~mhacourse.InputError`."""
        check_eps(self.eps)  # set after construction (block.eps = -1)?
        d_model = self.gamma_1.shape[0]
        check_tensor("x", x, ndim=(2, 3), legend="(B, L, d_model)")
        if x.shape[-1] != d_model:
            raise InputError(f"x must end in d_model = {d_model} (the block's "
                             f"width); got shape {tuple(x.shape)}.")
        if x.dtype != self.gamma_1.dtype:
            raise InputError(
                f"x is {str(x.dtype).replace('torch.', '')} but the block's "
                f"weights are {str(self.gamma_1.dtype).replace('torch.', '')}: "
                f"convert one (x.to(torch.{str(self.gamma_1.dtype)[6:]}) or "
                "block.to(x.dtype)).")
        check_finite("x", x, option=False)
        if x.ndim == 2:  # unbatched (L, d_model), as nn.TransformerEncoderLayer
            kpm = (None if key_padding_mask is None
                   else unbatched_padding_mask(key_padding_mask))
            y, A = self.forward(x[None], attn_mask, kpm, return_weights=True)
            return (y[0], A[0]) if return_weights else y[0]
        w = self.weights()
        _check_inputs(x, x, x, w.attn, self.attn.h)
        check_all_finite(**{name: getattr(w, name) for name in BLOCK_PARAMS})
        B, L, _ = x.shape
        mask = combine_masks(attn_mask, key_padding_mask, B, self.attn.h, L, L)
        x, A = _block_core(x, w, self.attn.h, mask, self.pre_ln, self.activation,
                          self.eps)
        return (x, A) if return_weights else x

    def weights(self) -> BlockWeights:
        """This block's parameters as one :class:`BlockWeights`."""
        return BlockWeights(self.attn.weights(),
                            **{name: getattr(self, name) for name in BLOCK_PARAMS})

    def core(self, x, mask=None):
        """:meth:`forward` with no input checks: :func:`_block_core` on this
        block's weights (for ``torch.onnx.export``).

        ``mask``: one (B or 1, h or 1, L, L) mask (bool ``True`` = blocked).
        Shapes: ``x`` (B, L, d_model) -> ``(x (B, L, d_model),
        weights (B, h, L, L))``.
        """
        return _block_core(x, self.weights(), self.attn.h, mask, self.pre_ln,
                          self.activation, self.eps)

    def copy_weights_(self, attn: MHAWeights, **params) -> "TransformerBlock":
        """Copy trained weights into this block, in place; returns the block.

        ``attn``: the attention's ``W_Q, W_K, W_V, W_O`` (d_model, d_model) and
        biases; ``params``: every name of :data:`BLOCK_PARAMS` (``W_1`` (d_model,
        d_ff), ``W_2`` (d_ff, d_model), biases and LayerNorm gains), course layout.
        """
        if not isinstance(attn, MHAWeights):
            raise InputTypeError(f"attn must be an MHAWeights; got {describe(attn)}.")
        if set(params) != set(BLOCK_PARAMS):
            raise InputError(f"give exactly the weights {list(BLOCK_PARAMS)}; got "
                             f"{sorted(params)}.")
        with torch.no_grad():
            for name, t in vars(attn).items():
                if t is not None:
                    getattr(self.attn, name).copy_(t)
            for name in BLOCK_PARAMS:
                getattr(self, name).copy_(params[name])
        return self

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """Copy an ``nn.TransformerEncoderLayer(batch_first=True)``'s weights."""
        act = layer.activation
        name = "gelu" if act is F.gelu or isinstance(act, nn.GELU) else "relu"
        d_model = layer.linear1.in_features
        block = cls(d_model, layer.self_attn.num_heads, layer.linear1.out_features,
                    pre_ln=layer.norm_first, activation=name, eps=layer.norm1.eps,
                    ).to(layer.linear1.weight.dtype)
        # nn.Linear stores W transposed (it computes x @ weight.T)
        return block.copy_weights_(
            from_torch(layer.self_attn),
            W_1=layer.linear1.weight.T, b_1=layer.linear1.bias,
            W_2=layer.linear2.weight.T, b_2=layer.linear2.bias,
            gamma_1=layer.norm1.weight, beta_1=layer.norm1.bias,
            gamma_2=layer.norm2.weight, beta_2=layer.norm2.bias)

    def to_torch(self) -> nn.TransformerEncoderLayer:
        """An ``nn.TransformerEncoderLayer(batch_first=True, dropout=0)`` in eval
        mode holding this block's weights (the inverse of :meth:`from_torch`)."""
        d_model, d_ff = self.W_1.shape
        layer = nn.TransformerEncoderLayer(
            d_model, self.attn.h, d_ff, dropout=0.0, activation=self.activation,
            layer_norm_eps=self.eps, batch_first=True, norm_first=self.pre_ln,
            dtype=self.W_1.dtype)
        with torch.no_grad():
            layer.self_attn.load_state_dict(
                to_torch(self.attn.weights(), self.attn.h).state_dict())
            layer.linear1.weight.copy_(self.W_1.T)  # nn.Linear computes x @ weight.T
            layer.linear1.bias.copy_(self.b_1)
            layer.linear2.weight.copy_(self.W_2.T)
            layer.linear2.bias.copy_(self.b_2)
            for norm, g_, b_ in ((layer.norm1, self.gamma_1, self.beta_1),
                                 (layer.norm2, self.gamma_2, self.beta_2)):
                norm.weight.copy_(g_)
                norm.bias.copy_(b_)
        return layer.eval()


def check_activation(activation) -> None:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise InputError(f"activation must be one of {sorted(ACTIVATIONS)}; "
                         f"got {activation!r}.")


def _check_params(x, **params) -> None:
    check_tensor("x", x, min_ndim=1, legend="(..., d_model)")
    check_finite("x", x, option=False)
    for name, t in params.items():
        check_tensor(name, t, min_ndim=1)
        if t.shape[0] != x.shape[-1]:
            raise InputError(
                f"{name} must have {x.shape[-1]} rows, one per feature of x "
                f"(x's last axis); got x {tuple(x.shape)} and {name} "
                f"{tuple(t.shape)}.")
        if t.dtype != x.dtype:
            raise InputError(
                f"x is {str(x.dtype).replace('torch.', '')} but {name} is "
                f"{str(t.dtype).replace('torch.', '')}: convert one to the "
                "other's dtype.")
        check_finite(name, t, option=False)
