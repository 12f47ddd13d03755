"""One training step of a tiny model, as a pure function of tensors.

:func:`~mhacourse.tiny_model.training.train` trains with ``torch.optim``;
this module writes the same step as one function of the parameters and the
optimiser's state, so that it can be traced once and exported (the reader's
browser then trains with the package's model and PyTorch's own gradients,
:mod:`mhacourse.web_train`)::

    loss, g  = grad_and_value(loss_fn(forward_core(x; theta)))     torch.func
    g       *= min(1, clip / (||g|| + 1e-6))                        global norm
    lr       = peak_lr(d_model) * lr_factor(s, steps, warmup)       warm-up, cosine
    m        = m + (1 - beta_1) (g - m)                             AdamW
    v        = beta_2 v + (1 - beta_2) g^2
    theta    = theta (1 - lr wd) - lr/(1 - beta_1^t) m / (sqrt(v/(1 - beta_2^t)) + eps)

with ``t = s + 1``, exactly the update of ``torch.optim.AdamW`` and
``clip_grad_norm_`` as :func:`train` calls them. Nothing here has a Python
branch on a size: ``h`` is read from the length of a marker tensor and
``d_model`` from the weights, so one traced graph serves every (h, d_k).
"""
from __future__ import annotations

import functools

import torch
from torch.func import grad_and_value

from .. import tasks
from .analysis import STATISTICS, roles_core, statistics_core  # noqa: F401 (the order of the stats columns)
from .model import TinyConfig, TinyTransformer, TinyWeights, default_peak_lr, forward_core
from .training import accuracy_core, loss_core, lr_factor

BETAS = (0.9, 0.98)  # AdamW's, as train() sets them (0.98: Vaswani et al. 2017)
ADAM_EPS = 1e-8  # torch.optim.AdamW's default
CLIP = 1.0  # global gradient-norm bound, as train()
CONFIG = TinyConfig()  # everything but h and d_k: layers, warm-up, batch, decay


@functools.cache
def param_names(cfg: TinyConfig = CONFIG) -> list[str]:
    """The parameters' names in ``state_dict`` order: the order of the
    exported graphs' weight inputs and outputs."""
    return list(TinyTransformer(TinyConfig(h=1, d_k=1, n_layers=cfg.n_layers))
                .state_dict())


def _weights(params) -> TinyWeights:
    return TinyWeights.from_state(dict(zip(param_names(), params)))


def adamw_core(p, g, m, v, t, lr, weight_decay: float = CONFIG.weight_decay):
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


def train_step(params, m, v, s, steps, x, heads):
    """One step of :func:`~mhacourse.tiny_model.training.train`.

    ``params``, ``m``, ``v``: tuples of tensors in :func:`param_names` order
    (AdamW's first and second moments start at zero); ``s`` () float, this
    step's index (0, 1, ...); ``steps`` () float, the run's length (for the
    schedule); ``x`` (B, L) int64 word ids from :func:`tasks.sample`
    (targets and parts come from :func:`tasks.targets`); ``heads`` (h,), any
    values: only its length is read, as h.

    Returns ``(loss, params, m, v, grads, norm)``: the loss () before the
    update, the updated tensors, the gradients before clipping and their
    global norm ().
    """
    h = heads.shape[0]
    y, kind = tasks.targets_core(x)  # (B, L), (B, L)

    def loss_of(theta):
        logits, _ = forward_core(x, _weights(theta), h)  # (B, L, V)
        return loss_core(logits, y, kind)

    grads, loss = grad_and_value(loss_of)(tuple(params))
    norm = torch.stack([g.square().sum() for g in grads]).sum().sqrt()  # ()
    scale = torch.clamp(CLIP / (norm + 1e-6), max=1.0)  # clip_grad_norm_
    d_model = torch.ones_like(params[0][0]).sum()  # () float: W_E's width
    lr = default_peak_lr(d_model) * lr_factor(s, steps, CONFIG.warmup)  # ()
    out = [adamw_core(p, g * scale, m_, v_, s + 1, lr)
           for p, g, m_, v_ in zip(params, grads, m, v)]
    return (loss, tuple(o[0] for o in out), tuple(o[1] for o in out),
            tuple(o[2] for o in out), grads, norm)


def forward_with(params, ids, heads):
    """The model of ``params`` on ``ids`` (B, L): ``(logits (B, L, V),
    [A_1, ..., A_n])``, each (B, h, L, L); ``heads`` as in :func:`train_step`."""
    return forward_core(ids, _weights(params), heads.shape[0])


def evaluate_with(params, x, heads):
    """What the page reports while it trains, for held-out ``x`` (N, L):
    accuracy ``(overall, previous, lookup)`` (3,) (:func:`accuracy_core`),
    every head's task statistics (n_layers, h, 5)
    (:func:`~mhacourse.tiny_model.analysis.statistics_core`), and each head's
    role: the index of its largest statistic and whether it reaches 0.5
    (:func:`~mhacourse.tiny_model.analysis.head_roles`)."""
    y, kind = tasks.targets_core(x)
    logits, attention = forward_with(params, x, heads)
    stats = torch.stack([statistics_core(x, kind, A) for A in attention])  # (n, h, 5)
    role, named = roles_core(stats)  # (n, h), (n, h)
    return accuracy_core(logits, y, kind), stats, role, named


# ------------------------------------------------------------ initial weights

POOL_SIZE = 2**18  # standard normals drawn once (float16: 512 KB for the page)
POOL_SEED = 0


def noise_pool(size: int = POOL_SIZE, seed: int = POOL_SEED) -> torch.Tensor:
    """``size`` standard normals from ``torch.Generator().manual_seed(seed)``,
    rounded to float16 (the page loads them as float16). Shapes: (size,)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=g).to(torch.float16).float()


def param_shapes(d_model, cfg: TinyConfig = CONFIG) -> dict:
    """Each parameter's shape for width ``d_model`` (a number or a symbolic
    size), in :func:`param_names` order."""
    d, f, V = d_model, cfg.ff_mult * d_model, cfg.vocab_size
    shapes = {}
    for name in param_names(cfg):
        last = name.rsplit(".", 1)[-1]
        shapes[name] = {"W_E": (V, d), "W_pos": (cfg.max_len, d), "W_U": (d, V),
                        "W_1": (d, f), "b_1": (f,), "W_2": (f, d)}.get(
            last, (d, d) if last.startswith("W_") else (d,))
    return shapes


def init_core(noise: torch.Tensor, width: torch.Tensor, seed: torch.Tensor):
    """The page's initial weights, with :class:`TinyTransformer`'s rule:
    ``W_E``, ``W_pos`` ~ N(0, 1); ``W_Q, W_K, W_V, W_O``, ``W_1``, ``W_U`` ~
    N(0, 1/d_model); ``W_2`` ~ N(0, 1/d_ff); biases and LayerNorm shifts 0,
    gains 1.

    The normals are read from ``noise`` (a (P,) pool, P a power of 2, from
    :func:`noise_pool`): parameter ``k`` reads entries
    ``(start_k + stride_k * i) mod P``, with an odd stride of its own, so no
    two tensors read the same run of the pool; ``seed`` (() int64) moves
    every start. Shapes: ``width`` (d_model,), any values -> a tuple of
    tensors in :func:`param_names` order.
    """
    d = width.shape[0]
    P = noise.shape[0]
    out = []
    for k, (name, shape) in enumerate(param_shapes(d).items()):
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
        out.append(z if last in ("W_E", "W_pos") else z / fan_in**0.5)
    return tuple(out)
