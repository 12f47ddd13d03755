"""Induction heads in a real causal LM, found with the detectors the tiny
model uses (:func:`~mhacourse.tiny_model.analysis._statistics_core`, one
definition) and switched off.

The test (Olsson et al. 2022, "In-context Learning and Induction Heads"):
a sequence of ``half`` random tokens, then the same tokens again. A model
cannot predict the first copy (the tokens are random), but a model with
induction heads predicts the second copy almost perfectly: at token ``t``
of the second copy, an induction head attends to ``t - half + 1``, the
token that followed ``t``'s earlier occurrence, and copies it.

Every function takes a :class:`~.model.CausalLM` (SmolLM2-135M, or a small
random one in the tests) and returns per-sequence numbers, so that a claim
can be stated with its spread over sequences, not from one.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import tasks
from .._validate import InputError, InputTypeError, check_positive_int, check_seed, describe
from ..circuits.core import _repeated_tokens_core
from ..heads import head_name
from ..tiny_model.analysis import STATISTICS, _statistics_core
from . import _checks
from .model import _forward_core

#: Where the tiny model's statistics table keeps the two detectors used here.
PREVIOUS, INDUCTION = STATISTICS.index("previous"), STATISTICS.index("induction")


# ------------------------------------------------------------------ checks

def check_repeated_args(model, n, half, seed) -> None:
    _checks.check_model(model)
    check_positive_int("n (sequences)", n, 64, "memory: every head's weights are kept")
    check_positive_int("half (tokens in each copy)", half, _checks.MAX_LEN // 2)
    if half < 3:
        raise InputError(f"half = {half}: each copy needs at least 3 tokens, so that "
                         "the token after an earlier occurrence is not the previous one.")
    check_seed("seed", seed)


def check_repeated_ids(model, ids) -> int:
    """``ids`` (n, 2 half) whose second half repeats the first; returns ``half``."""
    _checks.check_ids(model, ids)
    L = ids.shape[1]
    if L % 2 or L < 6 or not torch.equal(ids[:, : L // 2], ids[:, L // 2:]):
        raise InputError(f"ids must be sequences whose second half repeats the first "
                         f"(length even, >= 6; got length {L}): make them with "
                         "repeated_tokens(model, ...).")
    return L // 2


def check_heads(model, heads) -> list[tuple[int, int]]:
    """``heads`` as a list of distinct ``(layer, head)`` pairs of ``model``."""
    _checks.check_model(model)
    n, h = model.cfg.n_layers, model.cfg.h
    if not isinstance(heads, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(
                isinstance(i, int) and not isinstance(i, bool) for i in p) for p in heads):
        raise InputTypeError(f"heads must be a list of (layer, head) pairs of whole "
                             f"numbers (from 0); got {describe(heads)}.")
    bad = [p for p in heads if not (0 <= p[0] < n and 0 <= p[1] < h)]
    if bad:
        raise InputError(f"heads {bad[:3]} do not exist: this model has layers 0..{n - 1} "
                         f"and heads 0..{h - 1} (named L1H1..{head_name(n - 1, h - 1)}).")
    pairs = [tuple(p) for p in heads]
    if len(set(pairs)) != len(pairs):
        raise InputError("heads lists a (layer, head) pair twice: give each head once.")
    return pairs


def check_scores(scores, k) -> None:
    """``scores`` a finite (n_layers, h) float tensor; ``k`` in 1..its size."""
    if not isinstance(scores, torch.Tensor) or scores.ndim != 2 or not scores.numel() \
            or not scores.is_floating_point() or not bool(torch.isfinite(scores).all()):
        raise InputError(f"scores must be a finite (n_layers, h) float tensor; got "
                         f"{describe(scores)}.")
    check_positive_int("k", k, scores.numel(), "the number of heads")


# ------------------------------------------------------------ the functions

def repeated_tokens(model, n: int = 4, half: int = 40, seed: int = 0) -> torch.Tensor:
    """``n`` sequences of ``half`` distinct random tokens, each followed by
    itself, drawn by the tiny model's sampler
    (:func:`~mhacourse.circuits.core._repeated_tokens_core`) over the
    model's ordinary tokens (its special tokens, such as
    ``<|im_start|>``, left out). Shapes: -> (n, 2 half) int64."""
    check_repeated_args(model, n, half, seed)
    low = _first_ordinary(model)  # ids below it are special tokens
    ids = _repeated_tokens_core(n, 2 * half, seed, model.cfg.vocab - low + 1)  # 1..
    return ids + (low - 1)  # (n, 2 half), ids in low..vocab-1


def _first_ordinary(model) -> int:
    if model.tokenizer is None:
        return 1
    return 1 + max(model.tokenizer.get_added_tokens_decoder(), default=0)


def token_losses(model, ids: torch.Tensor, head_mask=None) -> torch.Tensor:
    """Cross-entropy of each next token: ``loss[b, t] = -log p(ids[b, t+1] |
    ids[b, :t+1])``. ``head_mask`` (n_layers, h): 0 switches a head off.
    Shapes: ``ids`` (n, L) -> (n, L - 1)."""
    _checks.check_ids(model, ids)
    head_mask = _checks.check_head_mask(model, ids, head_mask)
    with torch.no_grad():
        logits, _, _ = _forward_core(ids, model.w, model.cfg, head_mask=head_mask)
    n, L, V = logits.shape
    flat = logits[:, :-1].reshape(n * (L - 1), V)  # (n (L-1), V): one row a token
    return F.cross_entropy(flat, ids[:, 1:].reshape(-1).long(),
                           reduction="none").reshape(n, L - 1)  # (n, L - 1)


def copy_losses(model, ids: torch.Tensor, head_mask=None) -> torch.Tensor:
    """Mean next-token loss on each copy, per sequence: column 0 over the
    first copy's tokens 2..half (token 1 has no context), column 1 over the
    second copy's tokens 2..half (its first token is not predictable
    either). Shapes: ``ids`` (n, 2 half) -> (n, 2)."""
    half = check_repeated_ids(model, ids)
    loss = token_losses(model, ids, head_mask)  # (n, L - 1): predicts ids[:, 1:]
    first = loss[:, 1: half - 1]  # predicts tokens 2..half-1 of copy 1 (0-based)
    second = loss[:, half + 1:]  # predicts tokens 1..half-1 of copy 2
    return torch.stack([first.mean(1), second.mean(1)], dim=1)  # (n, 2)


def head_scores(model, ids: torch.Tensor) -> torch.Tensor:
    """Previous-token and induction scores of every head on each sequence,
    with the tiny model's detectors (:func:`_statistics_core` on the task's
    labels, :func:`mhacourse.tasks._targets_core`): ``[..., 0]`` the mean
    weight from ``t`` to ``t - 1``; ``[..., 1]`` the mean weight from each
    token of the second copy to the token after its earlier occurrence.
    Shapes: ``ids`` (n, 2 half) -> (n, n_layers, h, 2)."""
    check_repeated_ids(model, ids)
    with torch.no_grad():
        _, attention, _ = _forward_core(ids, model.w, model.cfg)  # (n, h, L, L) each
    _, kind = tasks._targets_core(ids)  # (n, L): second copy = lookups
    out = torch.empty(ids.shape[0], model.cfg.n_layers, model.cfg.h, 2)
    for b in range(ids.shape[0]):  # one sequence at a time: its own score
        for l, A in enumerate(attention):
            table = _statistics_core(ids[b: b + 1], kind[b: b + 1], A[b: b + 1])  # (h, 5)
            out[b, l] = table[:, [PREVIOUS, INDUCTION]]
    return out  # (n, n_layers, h, 2)


def top_heads(scores: torch.Tensor, k: int) -> list[tuple[int, int]]:
    """The ``k`` heads with the highest score, best first, as (layer, head).
    Shapes: ``scores`` (n_layers, h)."""
    check_scores(scores, k)
    h = scores.shape[1]
    order = scores.flatten().argsort(descending=True)[:k]  # (k,)
    return [(int(i) // h, int(i) % h) for i in order]


def random_heads(model, k: int, seed: int = 0, exclude=()) -> list[tuple[int, int]]:
    """``k`` distinct heads drawn at random (seeded), none in ``exclude``."""
    _checks.check_model(model)
    exclude = set(check_heads(model, exclude))
    pool = [(l, i) for l in range(model.cfg.n_layers) for i in range(model.cfg.h)
            if (l, i) not in exclude]
    check_positive_int("k", k, len(pool), "the heads left to draw from")
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    return [pool[int(j)] for j in torch.randperm(len(pool), generator=g)[:k]]


def without(model, heads) -> torch.Tensor:
    """A head mask (n_layers, h) of ones with ``heads`` set to 0: pass it
    as ``head_mask`` to switch those heads off (zero ablation)."""
    pairs = check_heads(model, heads)
    mask = torch.ones(model.cfg.n_layers, model.cfg.h)
    for l, i in pairs:
        mask[l, i] = 0.0
    return mask  # (n_layers, h)


def kv_group(model, head: int) -> int:
    """The key/value head that query head ``head`` reads: ``head // (h / h_kv)``
    (chapter 12)."""
    _checks.check_model(model)
    check_heads(model, [(0, head)])
    return head // (model.cfg.h // model.cfg.h_kv)
