"""Training and evaluating the tiny models on :mod:`mhacourse.tasks`: a fixed
held-out set, accuracy per part of the task, and AdamW with warm-up and
cosine decay.
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from .. import tasks
from ..cost import n_params
from ._checks import check_evaluate, check_heldout, check_loss_fn, check_train
from .model import TinyConfig, TinyTransformer

HELDOUT_SEED = 20240  # the held-out set: tasks.sample(HELDOUT_N, seed=HELDOUT_SEED)
HELDOUT_N = 1024  # sequences; 1024 * (L - 1) = 15 360 scored positions


def heldout(task: tasks.TaskConfig = tasks.TaskConfig(), n: int = HELDOUT_N):
    """The fixed held-out set ``(x, y, kind)``; training never draws it
    (training batches come from a generator seeded differently)."""
    check_heldout(task, n)
    return tasks.sample(n, task, seed=HELDOUT_SEED)


@torch.no_grad()
def evaluate(model: TinyTransformer, data=None, batch: int = 256) -> dict:
    """Accuracy of the arg-max prediction on scored positions: overall and per
    part (``"previous"``, ``"lookup"``). ``data`` defaults to :func:`heldout`."""
    check_evaluate(model, data, batch)
    x, y, kind = heldout() if data is None else data
    model.eval()
    logits = torch.cat([model(x[i:i + batch]) for i in range(0, len(x), batch)])
    overall, previous, lookup = accuracy_core(logits, y, kind).tolist()
    return {"accuracy": overall, "previous": previous, "lookup": lookup}


def accuracy_core(logits, y, kind) -> torch.Tensor:
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
    Checked :func:`loss_core`."""
    check_loss_fn(logits, y, kind)
    return loss_core(logits, y, kind)


def loss_core(logits, y, kind):
    """:func:`loss_fn` with no checks: the mean cross-entropy over positions
    with ``kind != NOT_SCORED``, written with a weight per position rather
    than by selecting them, so a traced graph has fixed shapes (the
    in-browser training step exports it). Shapes: logits (B, L, V), y (B, L)."""
    ce = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")  # (B, L)
    scored = (kind != tasks.NOT_SCORED).to(ce.dtype)  # (B, L)
    return (ce * scored).sum() / scored.sum()


def lr_factor(s: torch.Tensor, steps: torch.Tensor, warmup: int) -> torch.Tensor:
    """The learning rate of step ``s`` (0, 1, ...) of ``steps``, as a fraction
    of the peak: linear warm-up over ``warm = min(warmup, steps // 4 + 1)``
    steps, then a cosine from 1 down to 0 at the last step.

    Shapes: ``s``, ``steps`` () float tensors -> (). No Python branch, so the
    exported training step computes it too (:mod:`.step`).
    """
    warm = torch.clamp(torch.floor(steps / 4) + 1, max=warmup)  # ()
    rising = (s + 1) / warm
    falling = 0.5 * (1 + torch.cos(torch.pi * (s - warm)
                                   / torch.clamp(steps - warm, min=1)))
    return torch.where(s < warm, rising, falling)


def train(cfg: TinyConfig, steps: int, seed: int = 0,
          task: tasks.TaskConfig = tasks.TaskConfig(), log_every: int = 0,
          eval_data=None) -> tuple[TinyTransformer, dict]:
    """Train a fresh ``TinyTransformer(cfg, seed)`` for ``steps`` AdamW steps
    on batches from ``tasks.sample`` (generator seeded by ``seed``), with a
    linear warm-up then cosine decay to 0.

    Returns ``(model, metrics)``: the model (float32, eval mode) and its
    held-out accuracy (overall and per part), final training loss (mean of the
    last 5 % of steps), parameter count, wall-clock and CPU seconds.
    Deterministic on the CPU for a given torch version and thread count.
    """
    check_train(cfg, steps, seed, task, log_every, eval_data)
    model = TinyTransformer(cfg, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr,
                            weight_decay=cfg.weight_decay, betas=(0.9, 0.98))

    def lr_at(s):  # linear warm-up, then cosine to 0
        return float(lr_factor(torch.tensor(s, dtype=torch.float64),
                               torch.tensor(steps, dtype=torch.float64), cfg.warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    g = torch.Generator().manual_seed(10_000 + seed)  # not HELDOUT_SEED's stream
    t0, c0 = time.perf_counter(), time.process_time()
    losses = []
    model.train()
    for s in range(steps):
        x, y, kind = tasks.sample(cfg.batch, task, generator=g)
        loss = loss_fn(model(x), y, kind)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if log_every and (s + 1) % log_every == 0:
            print(f"  step {s + 1:5d}  loss {sum(losses[-log_every:]) / log_every:.3f}",
                  flush=True)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.eval()
    metrics = evaluate(model, heldout(task) if eval_data is None else eval_data)
    tail = losses[-max(1, steps // 20):]
    metrics.update(train_loss=sum(tail) / len(tail), params=n_params(model),
                   steps=steps, seed=seed, train_seconds=round(seconds, 2),
                   cpu_seconds=round(cpu, 2))
    return model, metrics

