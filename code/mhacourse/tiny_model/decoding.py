"""A tiny model decoded token by token with a key/value cache: its weights
as a :class:`~mhacourse.kv_cache.CausalLM` (chapter 16). The cache is a
layer of the course; the tiny model is built on top of it, so the
conversion lives here, beside the model, and :mod:`mhacourse.kv_cache`
knows no model built from it.
"""
from __future__ import annotations

from dataclasses import fields

from ..block import BLOCK_PARAMS
from ..kv_cache import CausalLM
from ..multihead import MHAWeights
from .model import check_tiny_model


def from_tiny_model(model) -> CausalLM:
    """The weights of a :class:`mhacourse.tiny_model.TinyTransformer` (MHA,
    with biases) as a :class:`~mhacourse.kv_cache.CausalLM`, to decode it
    with caches (:func:`~mhacourse.kv_cache.forward_cached`)."""
    check_tiny_model(model)
    layers = []
    for blk in model.blocks:
        a = blk.attn
        layers.append({f.name: getattr(a, f.name).detach()
                       for f in fields(MHAWeights)}
                      | {k: getattr(blk, k).detach() for k in BLOCK_PARAMS})
    blk = model.blocks[0]
    return CausalLM(E_tok=model.W_E.detach(), E_pos=model.W_pos.detach(),
                    layers=layers, gamma_f=model.gamma_f.detach(),
                    beta_f=model.beta_f.detach(), W_U=model.W_U.detach(),
                    h=model.cfg.h, h_kv=model.cfg.h, activation=blk.activation,
                    eps=blk.eps)
