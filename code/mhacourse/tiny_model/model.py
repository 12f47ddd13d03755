"""A tiny causal transformer, trained on :mod:`mhacourse.tasks`, whose heads
the attention explorer shows.

Built from the course's own parts::

    X_0     = W_E[ids] + W_pos[:L]                    (B, L, d_model)
    X_l     = TransformerBlock_l(X_{l-1}, causal mask)  l = 1..n_layers (pre-LN)
    logits  = LayerNorm(X_n) W_U                        (B, L, vocab_size)

Each block's attention is :class:`mhacourse.MultiHeadAttention`, so its
per-head weights (B, h, L, L) are the ones the chapters derive. Everything
runs on the CPU in seconds; sizes are chosen for ``torch.set_num_threads(1)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .. import tasks
from .._validate_tiny import check_tiny_config, check_tiny_ids, check_tiny_init
from ..block import TransformerBlock, layer_norm_core
from ..masks import causal_core


@dataclass(frozen=True)
class TinyConfig:
    """Sizes of the tiny model and how it is trained.

    ``d_model = h * d_k``; the explorer varies ``h`` and ``d_k``.
    PyTorch names: ``h`` ↔ ``num_heads``, ``d_model`` ↔ ``embed_dim``,
    ``d_k`` ↔ ``head_dim``, ``d_ff`` ↔ ``dim_feedforward``.
    """

    h: int = 4  # heads per layer
    d_k: int = 8  # width of one head; d_model = h * d_k
    n_layers: int = 2  # an induction head needs a previous-token head below it
    ff_mult: int = 1  # d_ff = ff_mult * d_model (4 in the 2017 paper); the
    #     task needs little but attention, and files stay small
    vocab_size: int = len(tasks.VOCAB)  # the task's word list, [UNK] = 0
    max_len: int = tasks.TaskConfig.L  # learned positions; the task's L
    # training
    lr: float | None = None  # AdamW peak rate; None: 1e-2 * sqrt(32 / d_model),
    #     tuned on this task (at d_model 256, 1e-2 never learns the lookup)
    warmup: int = 100  # warm-up steps
    batch: int = 32  # sequences per step
    weight_decay: float = 0.0  # none: the models are tiny and data is unlimited

    def __post_init__(self) -> None:
        check_tiny_config(self)

    @property
    def d_model(self) -> int:
        return self.h * self.d_k

    @property
    def d_ff(self) -> int:
        return self.ff_mult * self.d_model

    @property
    def peak_lr(self) -> float:
        return 1e-2 * (32 / self.d_model) ** 0.5 if self.lr is None else self.lr


class TinyTransformer(nn.Module):
    """Token embedding + learned positions, ``n_layers`` pre-LN
    :class:`~mhacourse.TransformerBlock` s with a causal mask, final LayerNorm,
    unembedding ``W_U``. Initialisation is fixed by ``seed``."""

    def __init__(self, cfg: TinyConfig, seed: int = 0):
        check_tiny_init(cfg, seed)
        super().__init__()
        self.cfg = cfg
        d, V = cfg.d_model, cfg.vocab_size
        g = torch.Generator().manual_seed(seed)
        self.W_E = nn.Parameter(torch.randn(V, d, generator=g))  # (V, d_model)
        self.W_pos = nn.Parameter(torch.randn(cfg.max_len, d, generator=g))  # (L, d)
        self.blocks = nn.ModuleList(
            TransformerBlock(d, cfg.h, cfg.d_ff, pre_ln=True, activation="gelu",
                             seed=seed * 100 + 2 * (i + 1))
            for i in range(cfg.n_layers)
        )
        self.gamma_f = nn.Parameter(torch.ones(d))  # final LayerNorm
        self.beta_f = nn.Parameter(torch.zeros(d))
        self.W_U = nn.Parameter(torch.randn(d, V, generator=g) / d**0.5)  # (d, V)

    def forward(self, ids: torch.Tensor, return_attention: bool = False):
        """Shapes: ``ids`` (B, L) long -> logits (B, L, vocab_size).

        With ``return_attention=True`` returns ``(logits, [A_1, ..., A_n])``,
        one (B, h, L, L) tensor per layer, rows summing to 1, zero above the
        diagonal (the causal mask).
        """
        check_tiny_ids(self.cfg, ids, return_attention)
        logits, attention = self.core(ids)
        return (logits, attention) if return_attention else logits

    def core(self, ids: torch.Tensor, return_inputs: bool = False):
        """:meth:`forward` with no input checks, for ``torch.onnx.export``
        (the in-browser explorer runs the exported graph).

        Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab_size),
        [A_1, ..., A_n])``, each ``A_l`` (B, h, L, L). With
        ``return_inputs=True`` also ``[Z_1, ..., Z_n]``, what each layer's
        attention reads (B, L, d_model): ``LayerNorm(x)`` in these pre-LN
        blocks. The blocks run :meth:`TransformerBlock.core`, so hooks on the
        attention modules are not called; use these inputs instead.
        """
        L = ids.shape[1]
        x = self.W_E[ids] + self.W_pos[:L]  # (B, L, d_model)
        mask = causal_core(L, L, device=ids.device)  # (L, L), True = blocked
        attention, inputs = [], []
        for block in self.blocks:
            if return_inputs:
                z = layer_norm_core(x, block.gamma_1, block.beta_1, block.eps)
                inputs.append(z if block.pre_ln else x)  # (B, L, d_model)
            x, A = block.core(x, mask)  # A: (B, h, L, L)
            attention.append(A)
        x = layer_norm_core(x, self.gamma_f, self.beta_f)  # (B, L, d_model)
        logits = x @ self.W_U  # (B, L, V)
        return (logits, attention, inputs) if return_inputs else (logits, attention)

