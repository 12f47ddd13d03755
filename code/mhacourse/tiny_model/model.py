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

from dataclasses import dataclass, fields

import torch
from torch import nn

from .. import tasks
from .._validate import (
    InputError,
    InputTypeError,
    check_bool,
    check_id_tensor,
    check_nonneg_int,
    check_positive_int,
    check_real,
    check_seed,
    check_size,
    describe,
)
from ..block import BLOCK_PARAMS, BlockWeights, TransformerBlock, block_core, layer_norm_core
from ..masks import causal_core
from ..multihead import MHAWeights

PRE_LN = True  # GPT-2's ordering: x + MultiHead(LN(x)); trains without warm-up tricks
ACTIVATION = "gelu"  # the FFN's, as GPT-2


def default_peak_lr(d_model):
    """AdamW's peak rate for width ``d_model`` (a number or a tensor):
    ``1e-2 * sqrt(32 / d_model)``, tuned on the task (at d_model 256, 1e-2
    never learns the lookup)."""
    return 1e-2 * (32 / d_model) ** 0.5


# --- input checks: a TinyConfig, a TinyTransformer and their ids (the
# rest of tiny_model's rules: tiny_model/_checks.py) --------------------

def check_tiny_model(model, name: str = "model") -> None:
    if not isinstance(model, TinyTransformer):
        raise InputTypeError(f"{name} must be a tiny_model.TinyTransformer (made "
                             f"with TinyTransformer(cfg) or tiny_model.load); got "
                             f"{describe(model)}.")


def check_tiny_config(cfg) -> None:
    for name in ("h", "d_k", "n_layers", "ff_mult", "vocab_size", "max_len",
                 "batch"):
        check_positive_int(name, getattr(cfg, name))
    if cfg.lr is not None:
        check_real("lr", cfg.lr, low=0.0, low_open=True, high=1.0,
                   what="a learning rate > 0, or None")
    check_nonneg_int("warmup", cfg.warmup)
    check_real("weight_decay", cfg.weight_decay, low=0.0)
    d = cfg.h * cfg.d_k
    n = (2 * cfg.vocab_size + cfg.max_len) * d + cfg.n_layers * (
        4 * d * d + 2 * d * d * cfg.ff_mult)
    check_size("TinyConfig (parameters)", n)


def check_tiny_init(cfg, seed) -> None:
    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"cfg must be a TinyConfig (tiny_model.TinyConfig(h=4, "
                             f"d_k=8)); got {describe(cfg)}.")
    check_seed("seed", seed)


def check_tiny_ids(cfg, ids, return_attention) -> None:
    if not isinstance(ids, torch.Tensor):
        raise InputTypeError(f"ids must be a (B, L) torch.Tensor of word ids; got "
                             f"{describe(ids)}. Use torch.tensor([tasks.word_ids("
                             "text)]).")
    if ids.ndim != 2:
        raise InputError(f"ids must be (B, L) word ids; got shape "
                         f"{tuple(ids.shape)} (one sequence: ids[None]).")
    B, L = ids.shape
    if not 1 <= L <= cfg.max_len:
        raise InputError(f"sequence length must be 1..{cfg.max_len} (learned "
                         f"positions); got L = {L} (ids shape {tuple(ids.shape)}).")
    if B == 0:
        raise InputError("ids has no sequences (B = 0); give at least one.")
    check_id_tensor("ids", ids, cfg.vocab_size, what="word ids")
    check_bool("return_attention", return_attention)



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
        return default_peak_lr(self.d_model) if self.lr is None else self.lr


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
            TransformerBlock(d, cfg.h, cfg.d_ff, pre_ln=PRE_LN, activation=ACTIVATION,
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

    def weights(self) -> TinyWeights:
        """The parameters as one :class:`TinyWeights` (the same tensors)."""
        return TinyWeights.from_state(dict(self.named_parameters()))

    def core(self, ids: torch.Tensor, return_inputs: bool = False):
        """:meth:`forward` with no input checks: :func:`forward_core` on this
        model's weights, for ``torch.onnx.export`` (the in-browser explorer
        runs the exported graph).

        Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab_size),
        [A_1, ..., A_n])``, each ``A_l`` (B, h, L, L). With
        ``return_inputs=True`` also ``[Z_1, ..., Z_n]``, what each layer's
        attention reads (B, L, d_model): ``LayerNorm(x)`` in these pre-LN
        blocks. The blocks run :func:`~mhacourse.block.block_core`, so hooks
        on the attention modules are not called; use these inputs instead.
        """
        return forward_core(ids, self.weights(), self.cfg.h, return_inputs)


@dataclass
class TinyWeights:
    """Every parameter of a :class:`TinyTransformer`: embeddings, one
    :class:`~mhacourse.block.BlockWeights` per layer, the final LayerNorm and
    the unembedding. Names as in the model's ``state_dict``."""

    W_E: torch.Tensor  # (V, d_model)
    W_pos: torch.Tensor  # (max_len, d_model)
    blocks: list[BlockWeights]
    gamma_f: torch.Tensor  # (d_model,)
    beta_f: torch.Tensor
    W_U: torch.Tensor  # (d_model, V)

    @classmethod
    def from_state(cls, state: dict) -> "TinyWeights":
        """From a ``{name: tensor}`` dict named as the model's ``state_dict``
        (``blocks.0.attn.W_Q``, ``blocks.0.W_1``, ...)."""
        n_layers = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("blocks."))
        blocks = []
        for i in range(n_layers):
            attn = MHAWeights(**{f.name: state.get(f"blocks.{i}.attn.{f.name}")
                                 for f in fields(MHAWeights)})
            blocks.append(BlockWeights(attn, **{name: state[f"blocks.{i}.{name}"]
                                                for name in BLOCK_PARAMS}))
        return cls(state["W_E"], state["W_pos"], blocks, state["gamma_f"],
                   state["beta_f"], state["W_U"])


def forward_core(ids: torch.Tensor, w: TinyWeights, h, return_inputs: bool = False):
    """The tiny model's forward pass, a function of its weights (no checks)::

        X_0 = W_E[ids] + W_pos[:L];  X_l = block_l(X_{l-1}, causal mask);
        logits = LayerNorm(X_n) W_U

    ``h`` may be a symbolic size: the in-browser training step traces this
    once for every (h, d_k) (:mod:`mhacourse.tiny_model.step`).
    Shapes: ``ids`` (B, L) -> ``(logits (B, L, V), [A_1, ..., A_n])``, each
    ``A_l`` (B, h, L, L); with ``return_inputs=True`` also what each layer's
    attention reads (:meth:`TinyTransformer.core`).
    """
    L = ids.shape[1]
    x = w.W_E[ids] + w.W_pos[:L]  # (B, L, d_model)
    mask = causal_core(L, L, device=ids.device)  # (L, L), True = blocked
    attention, inputs = [], []
    for b in w.blocks:
        if return_inputs:
            inputs.append(layer_norm_core(x, b.gamma_1, b.beta_1))  # (B, L, d_model)
        x, A = block_core(x, b, h, mask, PRE_LN, ACTIVATION)  # A: (B, h, L, L)
        attention.append(A)
    x = layer_norm_core(x, w.gamma_f, w.beta_f)  # (B, L, d_model)
    logits = x @ w.W_U  # (B, L, V)
    return (logits, attention, inputs) if return_inputs else (logits, attention)
