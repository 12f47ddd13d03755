"""What the tiny models' heads do: each head's mean attention to the
positions the task cares about (previous token, induction, ...), the level of
a head with no preference, and a name for each head's role.

Not :func:`mhacourse.head_analysis.attention_statistics`, which measures the
real model's heads on English sentences.
"""
from __future__ import annotations

import torch

from .. import tasks
from ..masks import causal_mask
from ._checks import (
    check_attention_on,
    check_head_roles,
    check_head_scores,
    check_heldout,
    check_scores_defined,
    check_statistics_inputs,
    check_uniform_statistics,
)
from .model import TinyTransformer

STATISTICS = ("previous", "induction", "duplicate", "self", "first")
HELDOUT_SEED = 20240  # the held-out set: tasks.sample(HELDOUT_N, seed=HELDOUT_SEED)
HELDOUT_N = 1024  # sequences; 1024 * (L - 1) = 15 360 scored positions


def heldout(task: tasks.TaskConfig = tasks.TaskConfig(), n: int = HELDOUT_N):
    """The fixed held-out set ``(x, y, kind)`` the accuracies and head
    statistics are measured on; training never draws it (training batches
    come from a generator seeded differently)."""
    check_heldout(task, n)
    return tasks.sample(n, task, seed=HELDOUT_SEED)


def task_attention_statistics(x: torch.Tensor, kind: torch.Tensor,
                         attention: list[torch.Tensor]) -> list[list[dict]]:
    """Average attention of every head to the positions the task cares about.

    Shapes: ``x``, ``kind`` (N, L) from :func:`tasks.sample`; ``attention``
    one (N, h, L, L) tensor per layer. For each layer and head, the mean of:

    * ``"previous"``: weight from ``t`` to ``t - 1``, over ``t >= 1``, leaving
      out lookups whose answer sits at ``t - 1`` (``j + 1 == t - 1``);
    * ``"induction"``: weight from ``t`` to ``j + 1``, where ``j`` is the most
      recent earlier occurrence of ``x_t``, over lookups with
      ``j + 1 <= t - 2`` (so it never counts a previous-token head);
    * ``"duplicate"``: total weight from ``t`` to every earlier ``j`` with
      ``x_j == x_t``, over lookups;
    * ``"self"``: weight from ``t`` to ``t``, over ``t >= 1``;
    * ``"first"``: weight from ``t`` to position 0, over ``t >= 2``.

    Returns ``scores[layer][head] = {name: value}``, the values of
    :func:`_statistics_core`. :func:`uniform_statistics` gives the values of a
    head that spreads its weight evenly, to compare with. A statistic with
    no positions to average over in ``x`` (0/0) raises rather than
    returning NaN.
    """
    check_statistics_inputs(x, kind, attention)
    out = []
    for A in attention:
        table = _statistics_core(x, kind, A)  # (h, 5)
        out.append([dict(zip(STATISTICS, map(float, row))) for row in table])
    return check_scores_defined(out)


def _statistics_core(x: torch.Tensor, kind: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """The numbers of :func:`task_attention_statistics` for one layer, as one
    tensor (no checks; the in-browser training step exports it).

    Shapes: ``x``, ``kind`` (N, L); ``A`` (N, h, L, L) -> (h, 5), columns in
    the order of :data:`STATISTICS`.
    """
    N, L = x.shape
    t = torch.arange(L)[:, None]  # (L, 1) queries
    s = torch.arange(L)[None, :]  # (1, L) keys
    match = (x[:, :, None] == x[:, None, :]) & (s < t)  # (N, L, L): x_s == x_t
    last = torch.where(match, s, -1).amax(-1)  # (N, L): most recent j, or -1
    after = (last + 1).clamp(min=0)  # (N, L): j + 1
    lookup = kind == tasks.LOOKUP  # (N, L)
    t_ = torch.arange(L)[None, :]  # (1, L)
    sets = {  # (N, L) bool: which queries each statistic averages over
        "previous": (t_ >= 1) & ~(lookup & (after == t_ - 1)),
        "induction": lookup & (after <= t_ - 2),
        "duplicate": lookup,
        "self": (t_ >= 1).expand(N, L),
        "first": (t_ >= 2).expand(N, L),
    }
    keys = {  # (N, L, L) weights of the keys each statistic sums
        "previous": (s == t - 1).expand(N, L, L),
        "induction": s == after[..., None],
        "duplicate": match,
        "self": (s == t).expand(N, L, L),
        "first": (s == 0).expand(N, L, L),
    }
    columns = []
    for name in STATISTICS:
        weight = (A * keys[name][:, None].to(A.dtype)).sum(-1)  # (N, h, L)
        over = sets[name][:, None].to(A.dtype)  # (N, 1, L)
        columns.append((weight * over).sum((0, 2)) / over.sum())  # (h,)
    return torch.stack(columns, dim=-1)  # (h, 5)


def _roles_core(table: torch.Tensor, threshold: float = 0.5):
    """:func:`head_roles` as tensors: for (..., 5) statistics, the index of
    the largest in :data:`STATISTICS` and whether it reaches ``threshold``."""
    best, index = table.max(dim=-1)  # (...,), (...,)
    return index, best >= threshold


def uniform_statistics(data=None) -> dict:
    """:func:`task_attention_statistics` of a head that gives each of the ``t + 1``
    visible positions weight ``1 / (t + 1)``: the level "no preference"."""
    check_uniform_statistics(data)
    x, _, kind = heldout() if data is None else data
    L = x.shape[1]
    A = (~causal_mask(L)).float()  # (L, L)
    A = (A / A.sum(-1, keepdim=True)).expand(len(x), 1, L, L)  # (N, 1, L, L)
    return task_attention_statistics(x, kind, [A])[0][0]


@torch.no_grad()
def head_scores(model: TinyTransformer, data=None, head_mask=None) -> list[list[dict]]:
    """:func:`task_attention_statistics` of ``model``'s heads on ``data`` (default:
    the held-out set): ``scores[layer][head] = {name: value}``. With
    ``head_mask`` (n_layers, h; 1 keep, 0 remove), the heads of the ablated
    model: a head removed in layer 1 changes what layer 2 reads."""
    check_head_scores(model, data)
    x, _, kind = heldout() if data is None else data
    _, attention = model(x, return_attention=True,
                         head_mask=head_mask)  # n_layers x (N, h, L, L)
    return task_attention_statistics(x, kind, attention)


def head_roles(scores: list[list[dict]], threshold: float = 0.5) -> list[list[str]]:
    """Name each head by its largest statistic from :func:`head_scores` if
    that is at least ``threshold`` (over 3 times the uniform level of every
    statistic), else ``"mixed"``."""
    check_head_roles(scores, threshold)
    out = []
    for layer in scores:
        table = torch.tensor([[s[name] for name in STATISTICS] for s in layer])  # (h, 5)
        index, named = _roles_core(table, threshold)
        out.append([STATISTICS[i] if ok else "mixed"
                    for i, ok in zip(index.tolist(), named.tolist())])
    return out


@torch.no_grad()
def attention_on(model: TinyTransformer,
                 sentence) -> tuple[list[str], list[torch.Tensor]]:
    """Run ``model`` on an English sentence (a string, or a list of tokens).

    Returns ``(tokens, attention)``: the tokens as the model saw them (words
    not in the vocabulary shown as ``[UNK]``), and one (h, L, L) tensor per
    layer. Sentences longer than ``max_len`` tokens raise
    :class:`~mhacourse.InputError` (a ``ValueError``).
    """
    words = check_attention_on(model, sentence)
    ids = tasks.word_ids(words)
    tokens = tasks.decode(ids)
    model.eval()
    _, attention = model(torch.tensor([ids]), return_attention=True)
    return tokens, [A[0] for A in attention]  # n_layers x (h, L, L)
