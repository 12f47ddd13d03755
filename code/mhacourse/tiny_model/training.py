"""Training and evaluating the tiny models on :mod:`mhacourse.tasks`: a fixed
held-out set, accuracy per part of the task, and AdamW with warm-up and
cosine decay.
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from .. import tasks
from .._validate import check_bool, check_nonneg_int, check_real, check_seed
from ..cost import n_params
from ._checks import check_evaluate, check_loss_fn, check_train
from .analysis import (  # noqa: F401 (HELDOUT_*: the held-out set's, named here too)
    HELDOUT_N,
    HELDOUT_SEED,
    STATISTICS,
    _roles_core,
    _statistics_core,
    heldout,
)
from .model import TinyConfig, TinyTransformer, _forward_core, check_tiny_head_mask

DATA_SEED_OFFSET = 10_000  # batches: Generator().manual_seed(10_000 + data_seed),
#     a stream apart from HELDOUT_SEED's


@torch.no_grad()
def evaluate(model: TinyTransformer, data=None, batch: int = 256,
             head_mask=None) -> dict:
    """Accuracy of the arg-max prediction on scored positions: overall and per
    part (``"previous"``, ``"lookup"``). ``data`` defaults to :func:`heldout`;
    ``head_mask`` (n_layers, h), 1 keep, 0 remove: the ablated model's
    accuracy (:meth:`TinyTransformer.forward`)."""
    check_evaluate(model, data, batch)
    head_mask = check_tiny_head_mask(model.cfg, head_mask)
    x, y, kind = heldout() if data is None else data
    model.eval()
    logits = torch.cat([model(x[i:i + batch], head_mask=head_mask)
                        for i in range(0, len(x), batch)])
    overall, previous, lookup = _accuracy_core(logits, y, kind).tolist()
    return {"accuracy": overall, "previous": previous, "lookup": lookup}


def _read_out_core(x, logits, attention):
    """What the page reports while it trains, for ``x`` (N, L) and the
    model's ``logits`` (N, L, V) and ``attention`` (one (N, h, L, L) per
    layer): accuracy ``(overall, previous, lookup)`` (3,)
    (:func:`_accuracy_core`), every head's task statistics (n_layers, h, 5)
    (:func:`~mhacourse.tiny_model.analysis._statistics_core`), and each
    head's role: the index of its largest statistic (n_layers, h) and
    whether it reaches 0.5 (:func:`~mhacourse.tiny_model.analysis.head_roles`).
    No checks."""
    y, kind = tasks._targets_core(x)  # (N, L), (N, L)
    stats = torch.stack([_statistics_core(x, kind, A) for A in attention])  # (n, h, 5)
    role, named = _roles_core(stats)  # (n, h), (n, h)
    return _accuracy_core(logits, y, kind), stats, role, named


def _accuracy_core(logits, y, kind) -> torch.Tensor:
    """Accuracy of the arg-max prediction: ``(overall, previous, lookup)``,
    over scored positions, and over each part of the task. No checks.

    Shapes: ``logits`` (N, L, V), ``y``, ``kind`` (N, L) -> (3,).
    """
    correct = (logits.argmax(-1) == y).float()  # (N, L)
    parts = torch.stack([kind != tasks.NOT_SCORED, kind == tasks.PREVIOUS,
                         kind == tasks.LOOKUP]).float()  # (3, N, L)
    return (parts * correct).sum((1, 2)) / parts.sum((1, 2))  # (3,)


def loss_fn(logits, y, kind):
    """Cross-entropy on scored positions. Shapes: logits (B, L, V), y (B, L).
    Checked :func:`_loss_core`."""
    check_loss_fn(logits, y, kind)
    return _loss_core(logits, y, kind)


def _loss_core(logits, y, kind):
    """:func:`loss_fn` with no checks: the mean cross-entropy over positions
    with ``kind != NOT_SCORED``, written with a weight per position rather
    than by selecting them, so a traced graph has fixed shapes (the
    in-browser training step exports it). Shapes: logits (B, L, V), y (B, L)."""
    ce = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")  # (B, L)
    scored = (kind != tasks.NOT_SCORED).to(ce.dtype)  # (B, L)
    return (ce * scored).sum() / scored.sum()


def _loss_rows(logits, y, kind):
    """:func:`_loss_core` with the logits as rows ``(B·L, V)``: the same
    cross-entropy, its log-softmax along the last (contiguous) axis, so that
    the exported step has no transposes of a (B, V, L) layout, there and
    back in the gradient, and with the gradient written out
    (:class:`_RowsCrossEntropy`) (``web_train.FUSED``). Equal up to float
    rounding (``test_web_train``). Shapes: logits (B, L, V), y (B, L) -> ()."""
    scored = (kind != tasks.NOT_SCORED).flatten().to(logits.dtype)  # (B*L,)
    return _RowsCrossEntropy.apply(logits.flatten(0, 1), y.flatten(),  # (B*L, V), (B*L,)
                                   scored / scored.sum())


class _RowsCrossEntropy(torch.autograd.Function):
    """``sum_r w_r · (-log softmax(z_r)[y_r])`` for rows ``z`` (R, V),
    targets ``y`` (R,) and weights ``w`` (R,), with its gradient as one
    formula: ``dz_r = g · w_r · (softmax(z_r) - onehot(y_r))``.

    autograd's own gradient of ``log_softmax`` is ``exp`` of its output, a
    row sum and products, each a pass over (R, V): in onnxruntime-web the
    ``Exp`` alone takes longer than the one-operation ``Softmax`` used here
    (``web_train.FUSED``). The weights get no gradient (they come from the
    data)."""

    @staticmethod
    def forward(z, y, w):
        log_p = torch.log_softmax(z, dim=-1)  # (R, V)
        return -(log_p.gather(-1, y[:, None])[:, 0] * w).sum()  # ()

    @staticmethod
    def setup_context(ctx, inputs, output):
        z, y, w = inputs
        ctx.save_for_backward(z, y, w)

    @staticmethod
    def backward(ctx, g):
        z, y, w = ctx.saved_tensors
        c = (g * w)[:, None]  # (R, 1)
        dz = (torch.softmax(z, dim=-1) * c).scatter_add(-1, y[:, None], -c)  # (R, V)
        return dz, None, None


def _lr_factor(s: torch.Tensor, steps: torch.Tensor, warmup) -> torch.Tensor:
    """The learning rate of step ``s`` (0, 1, ...) of ``steps``, as a fraction
    of the peak: linear warm-up over ``warm = min(warmup, steps // 4 + 1)``
    steps, then a cosine from 1 down to 0 at the last step; ``warmup = 0``:
    no warm-up, the cosine from the first step.

    Shapes: ``s``, ``steps`` () float tensors, ``warmup`` a whole number or a
    () float tensor -> (). No Python branch, so the exported training step
    computes it too, with ``warmup`` an input (:mod:`.step`).
    A part of the traced step: no checks (``train`` checks its input).
    """
    warm = torch.clamp(torch.floor(steps / 4) + 1, max=warmup)  # ()
    rising = (s + 1) / warm
    falling = 0.5 * (1 + torch.cos(torch.pi * (s - warm)
                                   / torch.clamp(steps - warm, min=1)))
    return torch.where(s < warm, rising, falling)


def _role_names(role, named) -> list[list[str]]:
    """:func:`_read_out_core`'s ``role`` and ``named`` (n_layers, h) as
    :func:`~mhacourse.tiny_model.analysis.head_roles` names them."""
    return [[STATISTICS[i] if ok else "mixed" for i, ok in zip(r, n)]
            for r, n in zip(role.tolist(), named.tolist())]


@torch.no_grad()
def _record(model, step: int, losses: list, data) -> dict:
    """One entry of ``train``'s history: held-out accuracy, per part, the
    mean loss of the steps since the last entry, and the heads' roles."""
    x = data[0]
    logits, attention = _forward_core(x, model.weights(), model.cfg.h)
    accuracy, _, role, named = _read_out_core(x, logits, attention)
    overall, previous, lookup = accuracy.tolist()
    return {"step": step, "accuracy": overall, "previous": previous,
            "lookup": lookup, "loss": sum(losses) / len(losses),
            "roles": _role_names(role, named)}


def train(cfg: TinyConfig, steps: int, seed: int = 0, data_seed: int = 0,
          eval_every: int = 0, identical_heads: bool = False,
          task: tasks.TaskConfig = tasks.TaskConfig(), log_every: int = 0,
          eval_data=None, clip: float | None = 1.0) -> tuple[TinyTransformer, dict]:
    """Train a fresh ``TinyTransformer(cfg, seed, identical_heads)`` for
    ``steps`` AdamW steps on batches from ``tasks.sample`` (generator
    ``Generator().manual_seed(10_000 + data_seed)``: the page's batches are
    ``data_seed=0``'s), with a linear warm-up then cosine decay to 0, and the
    gradients clipped to global norm ``clip`` (1 by default; ``None``: not
    clipped). A page run of (h, d_k, seed) is
    ``train(TinyConfig(h=h, d_k=d_k), steps, seed=seed)``; with the page's
    "clip" unticked, ``clip=None``.

    Returns ``(model, metrics)``: the model (float32, eval mode) and its
    held-out accuracy (overall and per part), final training loss (mean of the
    last 5 % of steps), parameter count, wall-clock and CPU seconds. With
    ``eval_every`` > 0, ``metrics["history"]`` lists, every ``eval_every``
    steps, ``{step, accuracy, previous, lookup, loss, roles}``: the held-out
    (or ``eval_data``) accuracies, the mean loss since the last entry, and
    each head's role (:func:`_role_names`).
    Deterministic on the CPU for a given torch version and thread count.
    """
    check_train(cfg, steps, seed, task, log_every, eval_data)
    check_seed("data_seed", data_seed)
    check_nonneg_int("eval_every", eval_every)
    check_bool("identical_heads", identical_heads)
    if clip is not None:
        clip = check_real("clip", clip, low=0.0, low_open=True, high=1e6,
                          what="a bound on the gradients' global norm, or None "
                               "(no clipping)")
    model = TinyTransformer(cfg, seed=seed, identical_heads=identical_heads)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr,
                            weight_decay=cfg.weight_decay, betas=(0.9, 0.98))

    def lr_at(s):  # linear warm-up, then cosine to 0
        return float(_lr_factor(torch.tensor(s, dtype=torch.float64),
                               torch.tensor(steps, dtype=torch.float64), cfg.warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    g = torch.Generator().manual_seed(DATA_SEED_OFFSET + data_seed)
    data = heldout(task) if eval_data is None else eval_data
    t0, c0 = time.perf_counter(), time.process_time()
    losses, history = [], []
    model.train()
    for s in range(steps):
        x, y, kind = tasks.sample(cfg.batch, task, generator=g)
        loss = loss_fn(model(x), y, kind)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if log_every and (s + 1) % log_every == 0:
            print(f"  step {s + 1:5d}  loss {sum(losses[-log_every:]) / log_every:.3f}",
                  flush=True)
        if eval_every and (s + 1) % eval_every == 0:
            history.append(_record(model, s + 1, losses[-eval_every:], data))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.eval()
    metrics = evaluate(model, data)
    tail = losses[-max(1, steps // 20):]
    metrics.update(train_loss=sum(tail) / len(tail), params=n_params(model),
                   steps=steps, seed=seed, data_seed=data_seed,
                   train_seconds=round(seconds, 2), cpu_seconds=round(cpu, 2))
    if eval_every:
        metrics["history"] = history
    return model, metrics
