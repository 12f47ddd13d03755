"""The real causal LM's records: its sizes and its weights, in the
course's layout (``x @ W``). Plain records, read by :mod:`.model` and
checked by :mod:`._checks`."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..multihead import MHAWeights


@dataclass(frozen=True)
class LMConfig:
    """The sizes of a Llama-architecture model (SmolLM2-135M's by default)."""

    n_layers: int = 30
    d_model: int = 576
    h: int = 9
    h_kv: int = 3
    d_ff: int = 1536
    vocab: int = 49152
    rope_base: float = 100000.0
    eps: float = 1e-5

    @property
    def d_k(self) -> int:
        return self.d_model // self.h


@dataclass
class LMLayer:
    """One block's weights in the course's layout (``x @ W``)."""

    attn: MHAWeights  # W_Q (d_model, h d_k), W_K, W_V (d_model, h_kv d_k), W_O
    g_1: torch.Tensor  # (d_model,) RMSNorm gain before attention
    g_2: torch.Tensor  # (d_model,) RMSNorm gain before the feed-forward layer
    W_gate: torch.Tensor  # (d_model, d_ff)
    W_up: torch.Tensor  # (d_model, d_ff)
    W_down: torch.Tensor  # (d_ff, d_model)


@dataclass
class LMWeights:
    E: torch.Tensor  # (vocab, d_model), also the unembedding (tied)
    layers: list[LMLayer]
    g_f: torch.Tensor  # (d_model,) final RMSNorm gain
