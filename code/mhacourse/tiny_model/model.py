"""A tiny causal transformer, trained on :mod:`mhacourse.tasks`, whose heads
the attention explorer shows.

Built from the course's own parts::

    X_0     = W_E[ids] + W_pos[:L]                    (B, L, d_model)
    X_l     = TransformerBlock_l(X_{l-1}, causal mask)  l = 1..n_layers (pre-LN)
    logits  = LayerNorm(X_n) W_U                        (B, L, vocab_size)

Each block's attention is :class:`mhacourse.MultiHeadAttention`, so its
per-head weights (B, h, L, L) are the ones the chapters derive. Everything
runs on the CPU in seconds; sizes are chosen for ``torch.set_num_threads(1)``.

The initial weights are :func:`_init_core`'s, read from one pool of normals
(:func:`noise_pool`): the in-browser trainer's init graph computes the same
function, so a page run of (h, d_k, seed) starts from
``TinyTransformer(TinyConfig(h=h, d_k=d_k), seed)``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import torch
from torch import nn

from .. import tasks
from .._validate import (
    InputError,
    InputTypeError,
    check_bool,
    check_finite,
    check_id_tensor,
    check_nonneg_int,
    check_positive_int,
    check_real,
    check_seed,
    check_size,
    check_tensor,
    describe,
)
from ..block import BLOCK_PARAMS, BlockWeights, TransformerBlock, _block_core, _layer_norm_core
from ..heads import _split_heads_core
from ..masks import _causal_core
from ..multihead import MHAWeights

PRE_LN = True  # GPT-2's ordering: x + MultiHead(LN(x)). Xiong et al. 2020
#     show pre-LN does not diverge without warm-up; at this course's learning
#     rate these models still need it (TinyConfig(warmup=0) learns less)
ACTIVATION = "gelu"  # the FFN's, as GPT-2


def default_peak_lr(d_model: int) -> float:
    """AdamW's peak rate for width ``d_model``: ``1e-2 * sqrt(32 / d_model)``,
    tuned on the task (at d_model 256, 1e-2 never learns the lookup). Checks
    its input, then runs :func:`_default_peak_lr`."""
    check_positive_int("d_model", d_model, 10**6)
    return _default_peak_lr(d_model)


def _default_peak_lr(d_model):
    """:func:`default_peak_lr` for a number or a tensor (a part of the traced
    step): no checks."""
    return 1e-2 * (32 / d_model) ** 0.5


# --- input checks: a TinyConfig, a TinyTransformer and their ids (the
# rest of tiny_model's rules: tiny_model/_checks.py) --------------------

def check_tiny_model(model, name: str = "model") -> None:
    """``model`` is a :class:`TinyTransformer` whose ``cfg`` describes its
    weights: as many blocks as ``n_layers``, ``h`` heads in each, every
    parameter of the shape ``cfg`` gives it. A relabelled config (an h 4,
    d_k 8 model told it is h 8, d_k 4) would read heads that do not exist."""
    if not isinstance(model, TinyTransformer):
        raise InputTypeError(f"{name} must be a tiny_model.TinyTransformer (made "
                             f"with TinyTransformer(cfg) or tiny_model.load); got "
                             f"{describe(model)}.")
    cfg = model.cfg
    fix = ("build the model from its config (TinyTransformer(cfg)) or load it "
           "(tiny_model.load), and do not change model.cfg afterwards")
    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"{name}.cfg must be a TinyConfig; got "
                             f"{describe(cfg)}: {fix}.")
    blocks = getattr(model, "blocks", ())
    if len(blocks) != cfg.n_layers:
        raise InputError(f"{name}.cfg says n_layers = {cfg.n_layers}, but the model "
                         f"has {len(blocks)} block(s): {fix}.")
    heads = [b.attn.h for b in blocks]
    if any(n != cfg.h for n in heads):
        raise InputError(f"{name}.cfg says h = {cfg.h} heads (d_k = {cfg.d_k}), but "
                         f"its blocks split d_model into {heads[0]} heads: {fix}.")
    want = param_shapes(cfg.d_model, cfg)
    for k, p in model.named_parameters():
        if tuple(p.shape) != want.get(k):
            raise InputError(f"{name}.cfg (h = {cfg.h}, d_k = {cfg.d_k}) gives {k} "
                             f"the shape {want.get(k)}, but the weight has "
                             f"{tuple(p.shape)}: {fix}.")


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
    warmup: int = 100  # warm-up steps; 0: none (the page's warm-up knob, off)
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
        return _default_peak_lr(self.d_model) if self.lr is None else self.lr


class TinyTransformer(nn.Module):
    """Token embedding + learned positions, ``n_layers`` pre-LN
    :class:`~mhacourse.TransformerBlock` s with a causal mask, final LayerNorm,
    unembedding ``W_U``.

    The initial weights are :func:`_init_core`'s for ``seed``, the ones the
    in-browser trainer starts from. With ``identical_heads=True`` every head
    of a layer starts as a copy of head 0 (``W_Q``, ``W_K``, ``W_V`` columns,
    their biases, and ``W_O`` rows).
    """

    def __init__(self, cfg: TinyConfig, seed: int = 0, identical_heads: bool = False):
        check_tiny_init(cfg, seed)
        check_bool("identical_heads", identical_heads)
        super().__init__()
        self.cfg = cfg
        d, V = cfg.d_model, cfg.vocab_size
        # registered in param_names order; the values are _init_core's, below
        self.W_E = nn.Parameter(torch.empty(V, d))  # (V, d_model)
        self.W_pos = nn.Parameter(torch.empty(cfg.max_len, d))  # (L, d_model)
        self.gamma_f = nn.Parameter(torch.empty(d))  # final LayerNorm
        self.beta_f = nn.Parameter(torch.empty(d))
        self.W_U = nn.Parameter(torch.empty(d, V))  # (d_model, V)
        self.blocks = nn.ModuleList(
            TransformerBlock(d, cfg.h, cfg.d_ff, pre_ln=PRE_LN, activation=ACTIVATION,
                             seed=0)
            for _ in range(cfg.n_layers)
        )
        start = _init_core(noise_pool(), torch.zeros(d), torch.tensor(seed),
                          torch.zeros(cfg.h), torch.tensor(float(identical_heads)),
                          cfg)
        self.load_state_dict(dict(zip(_param_names(cfg.n_layers), start, strict=True)))

    def forward(self, ids: torch.Tensor, return_attention: bool = False,
                head_mask=None):
        """Shapes: ``ids`` (B, L) long -> logits (B, L, vocab_size).

        With ``return_attention=True`` returns ``(logits, [A_1, ..., A_n])``,
        one (B, h, L, L) tensor per layer, rows summing to 1, zero above the
        diagonal (the causal mask). ``head_mask`` (n_layers, h), 1 = keep,
        0 = remove: scales each head's output before ``W_O`` (chapter 4's
        ablation).
        """
        check_tiny_model(self)
        check_tiny_ids(self.cfg, ids, return_attention)
        head_mask = check_tiny_head_mask(self.cfg, head_mask)
        logits, attention = _forward_core(ids, self.weights(), self.cfg.h,
                                         head_mask=head_mask)
        return (logits, attention) if return_attention else logits

    def forward_heads(self, ids: torch.Tensor, head_mask=None, head_values=None):
        """A forward that can replace any head's output, and returns every
        head's output: the protocol :mod:`mhacourse.interventions` runs on.

        ``head_mask`` (n_layers, h) or (n_layers, B, h), numbers in [0, 1]:
        head ``i`` of layer ``l`` writes ``head m + value (1 - m)`` with
        ``m = head_mask[l, (b,) i]`` and ``value = head_values[l, (b,) i]``
        (zero without ``head_values``), before ``W_O``. ``head_values``
        (n_layers, B or 1, h, L, d_k) needs a ``head_mask``.

        Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab_size), heads
        (n_layers, B, h, L, d_k))``; ``heads`` are what each head computed in
        this run before ``W_O`` and before any replacement (a replaced head's
        own output, not its replacement), as ``head_values`` takes them.
        """
        check_tiny_model(self)
        check_tiny_ids(self.cfg, ids, False)
        head_mask, head_values = check_head_values(self.cfg, ids, head_mask,
                                                   head_values)
        w = self.weights()
        if head_values is not None:
            head_values = head_values.to(w.W_E.dtype)
        logits, _, concats = _forward_core(ids, w, self.cfg.h, head_mask=head_mask,
                                          head_values=head_values,
                                          return_concat=True)
        # each concat (B, L, d_model) -> (B, h, L, d_k); stacked over layers
        heads = torch.stack([_split_heads_core(c, self.cfg.h) for c in concats])
        return logits, heads  # (B, L, V), (n_layers, B, h, L, d_k)

    def weights(self) -> TinyWeights:
        """The parameters as one :class:`TinyWeights` (the same tensors)."""
        return TinyWeights.from_state(dict(self.named_parameters()))

    def core(self, ids: torch.Tensor, return_inputs: bool = False):
        """:meth:`forward` with no input checks: :func:`_forward_core` on this
        model's weights, for ``torch.onnx.export`` (the in-browser explorer
        runs the exported graph).

        Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab_size),
        [A_1, ..., A_n])``, each ``A_l`` (B, h, L, L). With
        ``return_inputs=True`` also ``[Z_1, ..., Z_n]``, what each layer's
        attention reads (B, L, d_model): ``LayerNorm(x)`` in these pre-LN
        blocks. The blocks run :func:`~mhacourse.block._block_core`, so hooks
        on the attention modules are not called; use these inputs instead.
        """
        return _forward_core(ids, self.weights(), self.cfg.h, return_inputs)


def check_tiny_head_mask(cfg: TinyConfig, head_mask):
    """``head_mask`` as a float (n_layers, h) tensor of numbers in [0, 1], or
    None; else one :class:`~mhacourse.InputError`."""
    if head_mask is None:
        return None
    want = (cfg.n_layers, cfg.h)
    if not isinstance(head_mask, torch.Tensor) or head_mask.is_complex() \
            or tuple(head_mask.shape) != want:
        raise InputError(f"head_mask must be a tensor of shape (n_layers, h) = "
                         f"{want}, 1 = keep the head, 0 = remove it; got "
                         f"{describe(head_mask)}.")
    m = head_mask.float()
    if not bool(((m >= 0) & (m <= 1)).all()):  # NaN fails too
        raise InputError("head_mask entries must be numbers from 0 (remove the "
                         "head) to 1 (keep it); got values outside, or NaN.")
    return m


def check_head_values(cfg: TinyConfig, ids, head_mask, head_values):
    """:meth:`TinyTransformer.forward_heads`' ``head_mask`` as float
    (n_layers, h) or (n_layers, B, h) in [0, 1] and ``head_values`` as
    finite floats (n_layers, B or 1, h, L, d_k), or None; else one
    :class:`~mhacourse.InputError`. ``ids`` is already checked."""
    B, L = ids.shape
    shapes = [(cfg.n_layers, cfg.h), (cfg.n_layers, B, cfg.h)]
    if head_mask is not None:
        if not isinstance(head_mask, torch.Tensor) or head_mask.is_complex() \
                or tuple(head_mask.shape) not in shapes:
            raise InputError(f"head_mask must be a tensor of shape (n_layers, h) = "
                             f"{shapes[0]} or (n_layers, B, h) = {shapes[1]}, 1 = "
                             f"keep the head, 0 = replace it; got "
                             f"{describe(head_mask)}.")
        head_mask = head_mask.float()
        if not bool(((head_mask >= 0) & (head_mask <= 1)).all()):  # NaN fails
            raise InputError("head_mask entries must be numbers from 0 (replace "
                             "the head) to 1 (keep it); got values outside, or NaN.")
    if head_values is None:
        return head_mask, None
    if head_mask is None:
        raise InputError("head_values without head_mask replaces nothing: pass "
                         "head_mask with 0 where a head's output is replaced.")
    want = f"(n_layers, B or 1, h, L, d_k) = ({cfg.n_layers}, {B} or 1, {cfg.h}, " \
           f"{L}, {cfg.d_k})"
    check_tensor("head_values", head_values, ndim=5, legend=want)
    n, b, h, l_, d = head_values.shape
    if (n, h, l_, d) != (cfg.n_layers, cfg.h, L, cfg.d_k) or b not in (1, B):
        raise InputError(f"head_values must have shape {want}; got "
                         f"{tuple(head_values.shape)}.")
    check_finite("head_values", head_values, option=False)
    return head_mask, head_values


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


def _forward_core(ids: torch.Tensor, w: TinyWeights, h, return_inputs: bool = False,
                 *, head_mask=None, head_values=None, layer_on=None,
                 return_concat: bool = False):
    """The tiny model's forward pass, a function of its weights (no checks)::

        X_0 = W_E[ids] + W_pos[:L]
        X_l = X_{l-1} + on_l (block_l(X_{l-1}, causal mask) - X_{l-1})
        logits = LayerNorm(X_n) W_U

    ``layer_on`` (n_layers,) holds ``on_l``: 1 runs block l, 0 skips it
    exactly (its weights then get zero gradients); ``None``: every block
    runs. ``head_mask`` (n_layers, h) or (n_layers, B, h), or ``None``:
    scales each head's output before ``W_O``
    (:func:`~mhacourse.multihead._mha_core`'s ``head_mask``, chapter 4's
    ablation); ``head_values`` (n_layers, B or 1, h, L, d_k) is put where
    the mask removes a head (``head m + value (1 - m)``: mean and resample
    ablation, activation patching, :mod:`mhacourse.interventions`). ``h``
    may be a symbolic size: the in-browser training step traces this once
    for every (h, d_k) (:mod:`mhacourse.tiny_model.step`).
    Shapes: ``ids`` (B, L) -> ``(logits (B, L, V), [A_1, ..., A_n])``, each
    ``A_l`` (B, h, L, L); with ``return_inputs=True`` also what each layer's
    attention reads (:meth:`TinyTransformer.core`); with
    ``return_concat=True`` then also each layer's heads, merged and never
    replaced (B, L, d_model).
    """
    L = ids.shape[1]
    x = w.W_E[ids] + w.W_pos[:L]  # (B, L, d_model)
    mask = _causal_core(L, L, device=ids.device)  # (L, L), True = blocked
    attention, inputs, concats = [], [], []
    for l, b in enumerate(w.blocks):
        if return_inputs:
            inputs.append(_layer_norm_core(x, b.gamma_1, b.beta_1))  # (B, L, d_model)
        m = None if head_mask is None else head_mask[l]  # (h,) or (B, h)
        v = None if head_values is None else head_values[l]  # (B or 1, h, L, d_k)
        y, A, concat = _block_core(x, b, h, mask, PRE_LN, ACTIVATION, head_mask=m,
                                  head_values=v, return_concat=True)
        # y (B, L, d_model), A (B, h, L, L), concat (B, L, d_model)
        x = y if layer_on is None else x + layer_on[l] * (y - x)
        attention.append(A)
        concats.append(concat)
    x = _layer_norm_core(x, w.gamma_f, w.beta_f)  # (B, L, d_model)
    logits = x @ w.W_U  # (B, L, V)
    out = (logits, attention) + ((inputs,) if return_inputs else ())
    return out + ((concats,) if return_concat else ())


# ------------------------------------------------------------ initial weights

POOL_SIZE = 2**18  # standard normals drawn once (float16: 512 KB for the page)
POOL_SEED = 0
TOP_PARAMS = ("W_E", "W_pos", "gamma_f", "beta_f", "W_U")  # outside the blocks


def noise_pool(size: int = POOL_SIZE, seed: int = POOL_SEED) -> torch.Tensor:
    """``size`` standard normals from ``torch.Generator().manual_seed(seed)``,
    rounded to float16 (the page loads them as float16). Shapes: (size,).
    Drawn once per process; each call returns a copy."""
    size = check_positive_int("size", size, 2**24, "memory")
    if size & (size - 1):
        raise InputError(f"size must be a power of 2 (_init_core wraps its reads "
                         f"around the pool with odd strides); got {size}.")
    return _noise_pool(size, check_seed("seed", seed)).clone()  # 1 MB: a copy


@functools.cache
def _noise_pool(size: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=g).to(torch.float16).float()


def param_names(n_layers: int = 2) -> list[str]:
    """The parameters' names in ``state_dict`` order: the order of the
    exported graphs' weight inputs and outputs, and of :func:`_init_core`'s
    noise. A block's names follow every earlier name, so the names of a
    1-layer model sit at the same places as in the 2-layer list."""
    n_layers = check_nonneg_int("n_layers", n_layers, 1000)
    return list(_param_names(n_layers))


@functools.cache
def _param_names(n_layers: int) -> tuple[str, ...]:
    attn = [f.name for f in fields(MHAWeights)]
    return (*TOP_PARAMS, *(f"blocks.{i}.{name}" for i in range(n_layers)
                           for name in (*BLOCK_PARAMS, *(f"attn.{a}" for a in attn))))


def param_shapes(d_model, cfg: TinyConfig = TinyConfig()) -> dict:
    """Each parameter's shape for width ``d_model`` (a number or a symbolic
    size), in :func:`param_names` order."""
    _check_param_shapes(d_model, cfg)
    d, f, V = d_model, cfg.ff_mult * d_model, cfg.vocab_size
    shapes = {}
    for name in _param_names(cfg.n_layers):
        last = name.rsplit(".", 1)[-1]
        shapes[name] = {"W_E": (V, d), "W_pos": (cfg.max_len, d), "W_U": (d, V),
                        "W_1": (d, f), "b_1": (f,), "W_2": (f, d)}.get(
            last, (d, d) if last.startswith("W_") else (d,))
    return shapes


def _check_param_shapes(d_model, cfg) -> None:
    if not isinstance(d_model, torch.SymInt):  # a symbolic size when traced
        check_positive_int("d_model", d_model, 10**6)
        if not isinstance(cfg, TinyConfig):
            raise InputError(f"cfg must be a TinyConfig; got {describe(cfg)}.")


def _same_heads_core(t: torch.Tensor, h, dim: int) -> torch.Tensor:
    """``t`` with every head's slice along ``dim`` (``h`` slices of ``d_k``)
    replaced by head 0's. Shapes: ``t`` (d_model, d_model) or (d_model,),
    unchanged."""
    t = t.movedim(dim, -1)  # (..., d_model)
    parts = t.unflatten(-1, (h, -1))  # (..., h, d_k)
    same = parts[..., :1, :].expand(parts.shape).flatten(-2)  # (..., d_model)
    return same.movedim(-1, dim)


HEAD_AXES = {"W_Q": 1, "W_K": 1, "W_V": 1, "W_O": 0}  # the axis that holds
#     the heads: columns, or W_O's rows (the biases start at 0, alike already)


def _init_core(noise: torch.Tensor, width: torch.Tensor, seed: torch.Tensor,
              heads: torch.Tensor | None = None, identical: torch.Tensor | None = None,
              cfg: TinyConfig = TinyConfig()):
    """The initial weights of ``TinyTransformer(cfg, seed)`` and of the page:
    ``W_E``, ``W_pos`` ~ N(0, 1); ``W_Q, W_K, W_V, W_O``, ``W_1``, ``W_U`` ~
    N(0, 1/d_model); ``W_2`` ~ N(0, 1/d_ff); biases and LayerNorm shifts 0,
    gains 1.

    The normals are read from ``noise`` (a (P,) pool, P a power of 2, from
    :func:`noise_pool`): parameter ``k`` of :func:`param_names` reads entries
    ``(start_k + stride_k * i) mod P``, with an odd stride of its own, so no
    two tensors read the same run of the pool; ``seed`` (() int64) moves
    every start. ``k`` is the name's place in the list, the same for 1 and 2
    layers, so a 1-layer model starts as the 2-layer one without layer 2.
    With ``identical`` (() float) 1, every head of a layer is a copy of head 0
    (:data:`HEAD_AXES`; ``heads`` (h,) gives h); 0 or ``None``: not.
    Shapes: ``width`` (d_model,), any values -> a tuple of tensors in
    :func:`param_names` order.
    """
    d = width.shape[0]
    P = noise.shape[0]
    out = []
    for k, (name, shape) in enumerate(param_shapes(d, cfg).items()):
        last = name.rsplit(".", 1)[-1]
        if last.startswith(("b_", "beta")):
            out.append(torch.zeros(shape))
            continue
        if last.startswith("gamma"):
            out.append(torch.ones(shape))
            continue
        n = shape[0] * shape[1]
        start = 7919 * k + 104729 * seed  # () int64
        index = (start + (2 * k + 1) * torch.arange(n)) % P  # (n,)
        z = noise[index].reshape(shape)  # N(0, 1)
        fan_in = shape[0]
        z = z if last in ("W_E", "W_pos") else z / fan_in**0.5
        if identical is not None and ".attn." in name and last in HEAD_AXES:
            z = torch.where(identical > 0.5,
                            _same_heads_core(z, heads.shape[0], HEAD_AXES[last]), z)
        out.append(z)
    return tuple(out)
