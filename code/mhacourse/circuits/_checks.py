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
from ..heads import head_name
from ..tiny_model.model import TinyWeights, check_tiny_ids, check_tiny_model
from .core import BASELINE_HEADS

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


def check_heads_write(model, w: TinyWeights, layers, heads=None) -> None:
    """Every head of the blocks ``layers`` (``heads``: those heads only)
    writes something: its ``W_V`` columns and ``W_O`` rows are not all zero
    (else its OV circuit is 0 and every score that divides by its norm is
    0 / 0); a head of block 1 also reads (``W_Q``, ``W_K``)."""
    h, d_k = model.cfg.h, model.cfg.d_k
    for layer in layers:
        a = w.blocks[layer].attn
        for i in (range(h) if heads is None else heads):
            cols = slice(i * d_k, (i + 1) * d_k)
            parts = {"W_V columns": a.W_V[:, cols], "W_O rows": a.W_O[cols]}
            if layer == 1:  # what block 1 reads block 0's writing with
                parts |= {"W_Q columns": a.W_Q[:, cols], "W_K columns": a.W_K[:, cols]}
            zero = [k for k, t in parts.items() if not bool((t != 0).any())]
            if zero:
                raise InputError(
                    f"head {head_name(layer, i)} has all-zero {zero[0]}: it writes "
                    "(or reads) nothing, so its copying and composition scores "
                    "are 0 / 0. Read a trained model, or leave that head's "
                    "weights as trained (switch a head off with head_mask).")


def check_copying(model, layer, head) -> TinyWeights:
    """A head whose full OV circuit can be read: it writes something."""
    w = check_head(model, layer, head)
    check_heads_write(model, w, [layer], [head])
    return w


def check_circuit_nonzero(M, layer: int, head: int) -> None:
    """Refuse a full OV circuit that is all zero (an embedding or an
    unembedding of zeros): its copying score would be 0 / 0."""
    if not bool((M != 0).any()):
        raise InputError(f"head {head_name(layer, head)}'s full OV circuit W_E W_OV "
                         "W_U is all zero (are W_E or W_U zero?): its copying "
                         "score is 0 / 0. Read a trained model.")


def check_readouts_finite(names, values) -> None:
    """Refuse read-outs that came out NaN or infinite (weights so large or so
    small that a norm overflows or vanishes), naming the first."""
    for name, v in zip(names, values):
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise InputError(f"the read-out {name} of this model is not finite: its "
                             "weights are too large or too small for float64 "
                             "norms (or a head writes nothing). Read a trained "
                             "model.")


def check_two_layers(model) -> TinyWeights:
    """A model of exactly two blocks, every head of which writes: the
    read-outs compare block 0 with block 1, and a third block would be left
    out silently."""
    w = check_model(model)
    n = model.cfg.n_layers
    if n != 2:
        why = ("needs a second layer to read the first" if n < 2 else
               "compares block 0 with block 1, and would silently leave out "
               f"blocks 2..{n - 1}")
        raise InputError(f"composition {why}; this model has n_layers = {n}. "
                         "Use a two-layer model (TinyConfig(n_layers=2)); "
                         "qk_matrix, ov_matrix and prefix_matching_scores read "
                         "any block.")
    check_heads_write(model, w, range(2))
    return w


def check_noise(noise, d_model: int, d_k: int, samples: int):
    """``noise``: ``None`` (the pool of
    :func:`~mhacourse.tiny_model.step.noise_pool`) or a pool like it: a 1-D
    float tensor of finite standard normals whose length is a power of 2
    and covers one factor of ``samples`` random heads without reuse."""
    if noise is None:
        return None
    need = samples * d_model * d_k
    fix = "pass noise=None (the course's pool, tiny_model.step.noise_pool())"
    check_tensor("noise", noise, ndim=1, legend="(P,)",
                 numpy_hint="torch.from_numpy(noise).float()")
    P = noise.shape[0]
    if P & (P - 1) or P < need:
        raise InputError(f"noise must hold a power of 2 of numbers, at least "
                         f"samples x d_model x d_k = {need:,} (one random factor "
                         f"without repeats); got {P:,}: {fix}.")
    if not bool(torch.isfinite(noise).all()):
        raise InputError(f"noise holds NaN or inf: the baseline would be NaN; {fix}.")
    sd = float(noise.double().std())
    if not 0.5 < sd < 2:
        raise InputError(f"noise must be standard normal numbers (spread about 1); "
                         f"its standard deviation is {sd:.3g}: {fix}.")
    return noise


def check_composition(model, kind, fold_ln) -> TinyWeights:
    """:func:`~mhacourse.circuits.composition_scores`' input: a two-layer
    model, a kind, a flag, and sizes that answer in about a second (told
    before the weights are read)."""
    check_tiny_model(model)
    check_kind(kind)
    check_bool("fold_ln", fold_ln)
    check_product_work(
        f"composition_scores at h = {model.cfg.h}, d_model = {model.cfg.d_model}",
        model.cfg.h**2, model.cfg.d_model,
        "read_circuits(model) gives the same comp_q, comp_k and comp_v from "
        "d_k x d_k matrices, in a fraction of the time")
    return check_two_layers(model)


def check_read_circuits(model, noise) -> TinyWeights:
    w = check_two_layers(model)
    check_noise(noise, model.cfg.d_model, model.cfg.d_k, BASELINE_HEADS)
    return w


def check_kind(kind) -> str:
    if not isinstance(kind, str) or kind not in KIND_WORDS:
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


#: The most multiply-adds the explicit (d_model, d_model) products of
#: :func:`~mhacourse.circuits.composition_scores` and
#: :func:`~mhacourse.circuits.composition_baseline` may take: about a
#: second on one core (one product of two (d, d) matrices is d³).
MAX_PRODUCT_WORK = 2**32


def check_product_work(what: str, pairs: int, d_model: int, fewer: str) -> None:
    """Refuse ``pairs`` products of (d_model, d_model) matrices that would
    take more than about a second, saying what answers faster."""
    work = pairs * d_model**3
    if work > MAX_PRODUCT_WORK:
        raise InputError(
            f"{what} multiplies {pairs:,} pairs of ({d_model}, {d_model}) matrices "
            f"({work:.2g} multiply-adds, over the {MAX_PRODUCT_WORK:.2g} that "
            f"answer in about a second on one core): {fewer}.")


def check_baseline_time(d_model: int, d_k: int, samples: int) -> None:
    check_product_work(
        f"composition_baseline(d_model={d_model}, samples={samples})",
        samples * samples, d_model,
        "use fewer samples (samples=2 or 4), or read the baseline from "
        "read_circuits(model)['comp_baseline'], which works from d_k x d_k "
        "matrices")


def check_baseline(d_model, d_k, kind, samples, noise=None) -> str:
    check_positive_int("d_model", d_model, 1024)
    check_positive_int("d_k", d_k, d_model)
    check_positive_int("samples", samples, 64)
    kind = check_kind(kind)
    check_baseline_time(d_model, d_k, samples)
    check_noise(noise, d_model, d_k, samples)
    return kind


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
    if int(h) * int(d_k) > int(d_model):  # the h^2 pairs' cost grows with d_k^2
        raise InputError(f"h x d_k = {int(h) * int(d_k)} is more than d_model = "
                         f"{d_model}: a model's heads share its width (d_model = "
                         "h x d_k in the course's models).")
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
