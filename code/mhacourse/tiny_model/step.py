"""One training step of a tiny model, as a pure function of tensors.

:func:`~mhacourse.tiny_model.training.train` trains with ``torch.optim``;
this module writes the same step as one function of the parameters and the
optimiser's state, so that it can be traced once and exported (the reader's
browser then trains with the package's model and PyTorch's own gradients,
:mod:`mhacourse.web_train`)::

    loss, g  = grad_and_value(loss_fn(_forward_core(x; theta)))     torch.func
    g       *= min(1, clip / (||g|| + 1e-6))    (clip > 0; 0: off)   global norm
    lr       = peak_lr(d_model) * _lr_factor(s, steps, warmup)       warm-up, cosine
    m        = m + (1 - beta_1) (g - m)                             AdamW
    v        = beta_2 v + (1 - beta_2) g^2
    theta    = theta (1 - lr wd) - lr/(1 - beta_1^t) m / (sqrt(v/(1 - beta_2^t)) + eps)

with ``t = s + 1``, exactly the update of ``torch.optim.AdamW`` and
``clip_grad_norm_`` as :func:`train` calls them. The norm and the update
run once, on every tensor flattened into one vector (:func:`_flat`), then
cut back into the parameters' shapes (:func:`_unflat`): each line above is
then one operation of the exported graph, not one per tensor (37 of them:
902 operations after onnxruntime's optimisation instead of 1,321). AdamW's
moments ``m`` and ``v`` stay flat between steps (the step takes and gives
one vector each): the page then passes 2 tensors a step for them, not 74,
and the graph neither joins nor cuts them.
Nothing here has a Python branch on a size: ``h`` is read from the length
of a marker tensor and ``d_model`` from the weights, so one traced graph
serves every (h, d_k).
:func:`_train_step_core` is the traced step; :func:`train_step` checks its
input, then calls it.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import replace

import torch
from torch.func import grad_and_value

from .. import tasks
from .._validate import InputError, InputTypeError, check_real, describe
from .analysis import STATISTICS  # noqa: F401 (the order of the stats columns)
from .model import (  # noqa: F401 (the initial weights: step._init_core, as the page's)
    POOL_SEED,
    POOL_SIZE,
    TinyConfig,
    TinyWeights,
    _default_peak_lr,
    _forward_core,
    _init_core,
    noise_pool,
    param_names,
    param_shapes,
)
from .training import _loss_core, _lr_factor, _read_out_core

BETAS = (0.9, 0.98)  # AdamW's, as train() sets them (0.98: Vaswani et al. 2017)
ADAM_EPS = 1e-8  # torch.optim.AdamW's default
CLIP = 1.0  # global gradient-norm bound, as train()'s default (0 here: no clipping)
CONFIG = TinyConfig()  # everything but h and d_k: layers, warm-up, batch, decay
MAX_STEPS = 10**6  # train()'s bound on a run's length
PER_BLOCK = len(param_names(1)) - len(param_names(0))  # tensors per block


def _weights(params) -> TinyWeights:
    """``params`` in :func:`param_names` order (any number of layers) as
    :class:`TinyWeights`."""
    n_layers = (len(params) - len(param_names(0))) // PER_BLOCK
    return TinyWeights.from_state(dict(zip(param_names(n_layers), params)))


def _adamw_core(p, g, m, v, t, lr, weight_decay: float = CONFIG.weight_decay):
    """One AdamW update of one tensor, as ``torch.optim.AdamW`` computes it.

    ``t`` is the step count after this step (1, 2, ...), a () tensor; ``lr``
    a () tensor. Shapes: ``p``, ``g``, ``m``, ``v`` alike -> ``(p, m, v)``.
    """
    beta_1, beta_2 = BETAS
    p = p * (1 - lr * weight_decay)  # decoupled weight decay
    m = m + (1 - beta_1) * (g - m)  # torch's exp_avg.lerp_(g, 1 - beta_1)
    v = beta_2 * v + (1 - beta_2) * g * g
    step_size = lr / (1 - beta_1**t)
    denom = v.sqrt() / (1 - beta_2**t).sqrt() + ADAM_EPS
    return p - step_size * (m / denom), m, v


def _train_step_core(params, m, v, s, steps, x, heads, warmup=CONFIG.warmup,
                    layer_on=None, clip=CLIP):
    """One step of :func:`~mhacourse.tiny_model.training.train`, no checks
    (the page runs this, exported; :func:`train_step` checks, then calls it).

    ``params``: a tuple of tensors in :func:`param_names` order; ``m``,
    ``v``: AdamW's first and second moments, each one vector ``(N,)`` in
    :func:`_flat`'s order (N the number of weights; zeros to start); ``s`` () float, this
    step's index (0, 1, ...); ``steps`` () float, the run's length (for the
    schedule); ``x`` (B, L) int64 word ids from :func:`tasks.sample`
    (targets and parts come from :func:`tasks.targets`); ``heads`` (h,), any
    values: only its length is read, as h; ``warmup`` () float, warm-up
    steps (100 on, 0 off); ``layer_on`` (n_layers,) 1 or 0 per block, or
    ``None`` (:func:`~mhacourse.tiny_model.model._forward_core`); ``clip``
    a number or () float, the bound on the gradients' global norm (1 as
    :func:`train` by default; 0: no clipping, ``train(..., clip=None)``).

    Returns ``(loss, params, m, v, grads, norm)``: the loss () before the
    update, the updated weights (a tuple, as ``params``) and moments (each
    ``(N,)``), the gradients before clipping (a tuple) and their global
    norm ().
    """
    h = heads.shape[0]
    y, kind = tasks._targets_core(x)  # (B, L), (B, L)

    def loss_of(theta):
        logits, _ = _forward_core(x, _weights(theta), h, layer_on=layer_on)  # (B, L, V)
        return _loss_core(logits, y, kind)

    grads, loss = grad_and_value(loss_of)(tuple(params))
    g = _flat(grads)  # (N,): every gradient, one after another
    norm = g.square().sum().sqrt()  # ()
    clip = torch.as_tensor(clip, dtype=norm.dtype)  # ()
    scale = torch.clamp(clip / (norm + 1e-6), max=1.0)  # clip_grad_norm_
    scale = torch.where(clip > 0, scale, torch.ones_like(scale))  # 0: no clipping
    d_model = torch.ones_like(params[0][0]).sum()  # () float: W_E's width
    lr = _default_peak_lr(d_model) * _lr_factor(s, steps, warmup)  # ()
    p, m, v = _adamw_core(_flat(params), g * scale, m, v, s + 1, lr)  # 3 x (N,)
    return loss, _unflat(p, params), m, v, grads, norm


def _flat(tensors) -> torch.Tensor:
    """The tensors flattened and joined, in order: ``(N,)``, N the sum of
    their sizes (AdamW and the norm then run once, not once per tensor).
    A vector is joined as it is: no reshape in the graph."""
    return torch.cat([t.reshape(-1) if t.ndim > 1 else t for t in tensors])  # (N,)


def _unflat(flat: torch.Tensor, like) -> tuple:
    """:func:`_flat` undone: ``flat`` (N,) cut into tensors of the shapes of
    ``like``'s, in order."""
    parts = flat.split([t.numel() for t in like])  # each (numel,)
    return tuple(part.reshape(t.shape) if t.ndim > 1 else part  # t's shape
                 for part, t in zip(parts, like, strict=True))


def train_step(params, m, v, s, steps, x, heads, warmup=CONFIG.warmup,
               layer_on=None, clip=CLIP):
    """:func:`_train_step_core`, after checking every input: one step of
    :func:`~mhacourse.tiny_model.training.train`.

    ``params``, ``m`` and ``v`` are tuples of tensors in :func:`param_names`
    order (the moments cut into the weights' shapes, in and out, where the
    core keeps them flat). ``s`` and ``steps`` may be whole numbers or () tensors (``0 <= s <
    steps``); ``heads`` (h,) with h dividing d_model; ``x`` (B, L) word ids,
    ``L`` at most ``max_len``; ``warmup`` >= 0; ``clip`` > 0, or 0 or
    ``None`` for no clipping. Bad input raises one
    :class:`~mhacourse.InputError`.
    """
    s, steps, warmup, layer_on, clip = check_train_step(params, m, v, s, steps, x,
                                                        heads, warmup, layer_on, clip)
    loss, params, m, v, grads, norm = _train_step_core(
        tuple(params), _flat(m), _flat(v), s, steps, x, heads, warmup, layer_on, clip)
    return loss, params, _unflat(m, params), _unflat(v, params), grads, norm


def _forward_with(params, ids, heads, head_mask=None, layer_on=None):
    """The model of ``params`` on ``ids`` (B, L): ``(logits (B, L, V),
    [A_1, ..., A_n])``, each (B, h, L, L); ``heads`` as in
    :func:`_train_step_core`; ``head_mask`` (n_layers, h) and ``layer_on``
    (n_layers,) as :func:`~mhacourse.tiny_model.model._forward_core`'s. No
    checks (the page's forward graph)."""
    return _forward_core(ids, _weights(params), heads.shape[0], head_mask=head_mask,
                        layer_on=layer_on)


def _evaluate_with(params, x, heads, head_mask=None, layer_on=None):
    """What the page reports while it trains, for held-out ``x`` (N, L):
    :func:`~mhacourse.tiny_model.training._read_out_core` of the model
    (``head_mask`` and ``layer_on`` as :func:`_forward_with`'s): accuracy
    (3,), statistics (n_layers, h, 5), role and named (n_layers, h). No
    checks (the page's evaluate graph)."""
    logits, attention = _forward_with(params, x, heads, head_mask, layer_on)
    return _read_out_core(x, logits, attention)


# ------------------------------------------------------------------ checks

def _tensors(name: str, values) -> list:
    if isinstance(values, torch.Tensor) or not isinstance(values, (list, tuple)):
        raise InputTypeError(f"{name} must be a tuple of tensors in param_names() "
                             f"order; got {describe(values)}.")
    return list(values)


def _whole(name: str, value, low: int, high: int) -> float:
    """``value`` (a number or a () tensor) as a float, if it is a whole
    number in ``low .. high``."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not (
            value.is_complex() or value.dtype == torch.bool):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be a whole number; got {describe(value)}.")
    if not math.isfinite(value) or value != int(value) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number in {low}..{high}; got "
                         f"{value!r}.")
    return float(value)


def check_train_step(params, m, v, s, steps, x, heads, warmup, layer_on, clip=CLIP):
    """The inputs of :func:`train_step`, or one InputError. Returns ``s``,
    ``steps``, ``warmup`` as () float tensors, ``layer_on`` (or None) and
    ``clip`` as a () float tensor (0: no clipping)."""
    params, m, v = (_tensors(k, t) for k, t in (("params", params), ("m", m), ("v", v)))
    n = len(params)
    if n < len(param_names(1)) or (n - len(param_names(0))) % PER_BLOCK:
        raise InputError(f"params must hold {len(param_names(1))} tensors per "
                         f"1-layer model and {PER_BLOCK} more per layer "
                         f"(param_names(n_layers)); got {n}.")
    if not len(m) == len(v) == n:
        raise InputError(f"params, m and v must have one tensor per parameter each; "
                         f"got {n}, {len(m)} and {len(v)} (a short m or v would "
                         "silently drop parameters from the update).")
    n_layers = (n - len(param_names(0))) // PER_BLOCK
    W_E = params[0]
    if not isinstance(W_E, torch.Tensor) or W_E.ndim != 2 or 0 in W_E.shape:
        raise InputError(f"params[0] must be W_E (V, d_model); got {describe(W_E)}.")
    d_model = W_E.shape[1]
    cfg = replace(CONFIG, n_layers=n_layers)
    want = param_shapes(d_model, cfg)
    for group, tensors in (("params", params), ("m", m), ("v", v)):
        for (k, shape), t in zip(want.items(), tensors):
            if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
                raise InputError(f"{group} {k} must be a float32 tensor; got "
                                 f"{describe(t)}.")
            if tuple(t.shape) != shape:
                raise InputError(f"{group} {k} must have shape {shape} (d_model = "
                                 f"{d_model}); got {tuple(t.shape)}.")
            if not bool(torch.isfinite(t).all()):
                raise InputError(f"{group} {k} holds NaN or inf: the step would "
                                 "spread it to every weight; restart from the "
                                 "initial weights.")
            if group == "v" and bool((t < 0).any()):
                raise InputError(f"v {k} holds negative values: AdamW's second "
                                 "moment is a mean of squares (>= 0); sqrt(v) "
                                 "would be NaN.")
    steps_ = _whole("steps", steps, 1, MAX_STEPS)
    s_ = _whole("s", s, 0, MAX_STEPS)
    if s_ >= steps_:
        raise InputError(f"s must be a step of the run, 0..steps - 1 = "
                         f"{int(steps_) - 1}; got s = {int(s_)} (past the end, the "
                         "cosine schedule would restart).")
    if not isinstance(heads, torch.Tensor) or heads.ndim != 1 or heads.numel() == 0 \
            or d_model % heads.shape[0]:
        raise InputError(f"heads must be a (h,) tensor with h dividing d_model = "
                         f"{d_model} (only its length is read); got "
                         f"{describe(heads)}.")
    if not isinstance(x, torch.Tensor) or x.dtype == torch.bool \
            or x.is_floating_point() or x.is_complex() or x.ndim != 2 or 0 in x.shape:
        raise InputError(f"x must be a (B, L) tensor of integer word ids "
                         f"(tasks.sample); got {describe(x)}.")
    if x.dtype != torch.long:
        raise InputError(f"x must hold word ids as int64 (torch.long), as "
                         f"tasks.sample gives them; got {describe(x)}: pass "
                         "x.long().")
    if not 2 <= x.shape[1] <= cfg.max_len:
        raise InputError(f"x must have 2..{cfg.max_len} positions (L; position 0 "
                         f"is never scored, and there are {cfg.max_len} learned "
                         f"positions); got shape {tuple(x.shape)}.")
    if int(x.min()) < 0 or int(x.max()) >= cfg.vocab_size:
        raise InputError(f"x must hold word ids in 0..{cfg.vocab_size - 1}; got "
                         f"{int(x.min())}..{int(x.max())} (a negative id would "
                         "wrap around to the last word).")
    warm = check_real("warmup", warmup, low=0.0, high=MAX_STEPS,
                      what="a number of warm-up steps (100 on, 0 off)")
    if layer_on is not None:
        if not isinstance(layer_on, torch.Tensor) or tuple(layer_on.shape) != (n_layers,) \
                or not bool(((layer_on == 0) | (layer_on == 1)).all()):
            raise InputError(f"layer_on must be a ({n_layers},) tensor of 0 (skip "
                             f"the block) and 1 (run it); got {describe(layer_on)}.")
        layer_on = layer_on.float()
    bound = 0.0 if clip is None else check_real(
        "clip", clip, low=0.0, high=1e6,
        what="a bound on the gradients' global norm (1 as train(); 0 or None: off)")
    return (torch.tensor(s_), torch.tensor(steps_), torch.tensor(warm), layer_on,
            torch.tensor(float(bound)))

