"""Input checks of :mod:`mhacourse.circuits`: each public function calls
one of these first, and a bad input gets one clear line
(:class:`~mhacourse.InputError`)."""
from __future__ import annotations

import torch

from .. import tasks
from .._validate import (
    InputError,
    check_bool,
    check_head_index,
    check_nonneg_int,
    check_positive_int,
    check_real,
    check_seed,
    check_tensor,
    describe,
)
from ..tiny_model.model import TinyWeights, check_tiny_ids, check_tiny_model

KIND_WORDS = {"q": "Q", "k": "K", "v": "V"}
MAX_BASELINE_WORK = 2**20  # composition_max_baseline: random entries per factor, in all


def weights64(model) -> TinyWeights:
    """``model``'s weights as float64 copies, once its values are checked:
    a diverged model (NaN or infinite weights) has no circuits to read."""
    state = {k: v.detach().to(torch.float64) for k, v in model.named_parameters()}
    bad = [k for k, v in state.items() if not torch.isfinite(v).all()]
    if bad:
        raise InputError(f"the model's weights are not finite ({bad[0]}"
                         f"{' and others' if len(bad) > 1 else ''}): a diverged "
                         "run has no circuits to read; train it again (a lower "
                         "learning rate, or warm-up on).")
    return TinyWeights.from_state(state)


def check_model(model) -> TinyWeights:
    check_tiny_model(model)
    return weights64(model)


def check_head(model, layer, head, fold_ln=True) -> TinyWeights:
    """A tiny model, a block index ``layer`` and a head index ``head``."""
    w = check_model(model)
    n = model.cfg.n_layers
    layer = check_nonneg_int("layer", layer)
    if layer >= n:
        raise InputError(f"layer = {layer} is not a block of this model: its "
                         f"{n} block{'s' if n > 1 else ''} count from 0 to {n - 1}.")
    check_head_index("head", head, model.cfg.h)
    check_bool("fold_ln", fold_ln)
    return w


def check_two_layers(model) -> TinyWeights:
    w = check_model(model)
    if model.cfg.n_layers < 2:
        raise InputError(f"composition needs a second layer to read the first; "
                         f"this model has n_layers = {model.cfg.n_layers}.")
    return w


def check_kind(kind) -> str:
    if kind not in KIND_WORDS:
        raise InputError(f"kind must be 'q', 'k' or 'v' (Q-, K- or "
                         f"V-composition); got {describe(kind)}.")
    return kind


def check_matrix(name: str, M, square: bool = False) -> None:
    check_tensor(name, M, ndim=2, legend="(m, n)")
    if not M.dtype.is_floating_point:
        raise InputError(f"{name} must hold real numbers (a float tensor); got "
                         f"{describe(M)}.")
    if not torch.isfinite(M).all():
        raise InputError(f"{name} has NaN or infinite entries.")
    if square and M.shape[0] != M.shape[1]:
        raise InputError(f"{name} must be square; got shape {tuple(M.shape)}.")
    if M.numel() == 0:
        raise InputError(f"{name} is empty; got shape {tuple(M.shape)}.")


def check_pair(W_A, W_B) -> None:
    check_matrix("W_A", W_A)
    check_matrix("W_B", W_B)
    if W_A.shape[1] != W_B.shape[0]:
        raise InputError(f"W_A W_B needs W_A's columns = W_B's rows; got "
                         f"{tuple(W_A.shape)} and {tuple(W_B.shape)}.")
    if not (W_A.abs().max() > 0 and W_B.abs().max() > 0):
        raise InputError("a zero matrix has no direction: the composition score "
                         "0 / 0 is undefined (is that head switched off?).")


def check_spectrum(sv, tol) -> None:
    check_tensor("sv", sv, ndim=1, legend="(n,)")
    if sv.numel() == 0 or not torch.isfinite(sv).all() or (sv < 0).any():
        raise InputError("sv must be singular values: a non-empty 1-D tensor of "
                         "finite numbers >= 0 (singular_values(M) gives them).")
    check_real("tol", tol, low=0.0, low_open=True, high=1.0, high_open=True,
               what="a fraction of the largest singular value, 0 < tol < 1")


def check_scores(S, offset) -> None:
    check_matrix("S", S, square=True)
    L = S.shape[0]
    if not isinstance(offset, int) or isinstance(offset, bool) or not -L < offset <= 0:
        raise InputError(f"offset must be a whole number from {-(L - 1)} to 0 "
                         f"(key = query + offset, at or before the query); got "
                         f"{describe(offset)}.")


def check_baseline(d_model, d_k, kind, samples) -> str:
    check_positive_int("d_model", d_model, 1024)
    check_positive_int("d_k", d_k, d_model)
    check_positive_int("samples", samples, 64)
    return check_kind(kind)


def check_max_baseline(d_model, d_k, kind, h, draws, seed) -> tuple[str, int]:
    """:func:`~mhacourse.circuits.composition_max_baseline`'s inputs; bounded
    so that it answers in about a second. Returns ``kind`` and ``seed`` as
    an int."""
    check_positive_int("d_model", d_model, 256, "the page's largest d_model")
    check_positive_int("d_k", d_k, d_model)
    check_positive_int("h", h, 16, "the page's largest h")
    check_positive_int("draws", draws, 256)
    seed = check_seed("seed", seed)
    if not isinstance(kind, str):
        raise InputError(f"kind must be one of 'q', 'k', 'v'; got {describe(kind)}.")
    work = int(draws) * int(h) * int(d_model) * int(d_k)
    if work > MAX_BASELINE_WORK:
        raise InputError(f"draws x h x d_model x d_k = {work:,} is more than "
                         f"{MAX_BASELINE_WORK:,} (about a second of work): use "
                         f"fewer draws, at most {max(1, MAX_BASELINE_WORK // work * draws)}.")
    return check_kind(kind), seed


def check_repeated(n, L, seed) -> None:
    check_positive_int("n", n, 4096)
    check_positive_int("L", L, 2 * (len(tasks.VOCAB) - 1))
    if L % 2 or L < 4:
        raise InputError(f"L must be even and at least 4 (a sequence and its "
                         f"repeat); got {L}.")
    check_seed("seed", seed)


def check_ids(model, ids) -> None:
    check_tiny_ids(model.cfg, ids, True)
    L = ids.shape[1]
    if L % 2 or L < 4 or not torch.equal(ids[:, :L // 2], ids[:, L // 2:]):
        raise InputError("ids must be sequences whose second half repeats the "
                         "first (repeated_sequences() draws them).")
