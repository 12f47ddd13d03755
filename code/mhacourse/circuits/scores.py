"""Scores that relate heads: composition between layers (Elhage et al.
2021) and the prefix-matching test of induction heads (Olsson et al. 2022);
and :func:`read_circuits`, every read-out of a model at once.
"""
from __future__ import annotations

import torch

from ..tiny_model import step as st
from . import _checks as _c
from .core import (
    BASELINE_HEADS,
    KINDS,
    REPEAT_N,
    REPEAT_SEED,
    _circuits_core,
    _head_factors_core,
    _prefix_core,
    _qkv_composition_core,
    _random_factors_core,
    _repeated_tokens_core,
)

READOUTS = ("comp_q", "comp_k", "comp_v", "comp_baseline", "prev_band", "copying",
            "prefix", "probe_stats", "probe_role",
            "probe_named")  # _circuits_core's outputs, in order
GRAPH_READOUTS = tuple(k for k in READOUTS if k != "comp_baseline")  # _readouts_core's


def composition_score(W_A: torch.Tensor, W_B: torch.Tensor) -> float:
    """``||W_A W_B||_F / (||W_A||_F ||W_B||_F)``, Elhage et al.'s measure of
    how much of what the writer ``W_A`` writes the reader ``W_B`` keeps:
    between 0 and 1 (submultiplicativity of the Frobenius norm). Row
    vectors, as :func:`composition_scores` pairs them: the writer first (a
    layer-1 head's ``W_OV``), then what reads it (a layer-2 head's ``W_QK``
    for Q, ``W_QKᵀ`` for K, ``W_OV`` for V). Shapes: (m, n), (n, p)."""
    _c.check_pair(W_A, W_B)
    A, B = W_A.to(torch.float64), W_B.to(torch.float64)
    A, B = A / A.abs().max(), B / B.abs().max()  # the score has no scale:
    #     this keeps entries of 1e200 or 1e-200 from overflowing or vanishing
    fro = torch.linalg.matrix_norm
    return float(fro(A @ B) / (fro(A) * fro(B)))


def _pair(kind, ov_i, qk_j, ov_j):
    """The two matrices of one composition, in the row-vector convention:
    the earlier head's ``W_OV^i`` first, then what the later head reads it
    with. The paper (column vectors, its matrices ours transposed) writes
    Q: ``W_QK^jᵀ W_OV^i``, K: ``W_QK^j W_OV^i``, V: ``W_OV^j W_OV^i``;
    transposing each product gives the same norms."""
    return ov_i, {"q": qk_j, "k": qk_j.T, "v": ov_j}[kind]


def composition_scores(model, kind: str, fold_ln: bool = True) -> torch.Tensor:
    """Q-, K- or V-composition (``kind`` "q", "k", "v") of every head ``i``
    of block 0 with every head ``j`` of block 1::

        Q: ||W_OV^i W_QK^j||   K: ||W_OV^i W_QK^jᵀ||   V: ||W_OV^i W_OV^j||

    each divided by the two matrices' Frobenius norms
    (:func:`composition_score`). K-composition is how an induction head's
    keys read a previous-token head's output. LayerNorm folded by default
    (:mod:`.matrices`). Compare with :func:`composition_baseline`.
    Shapes: -> (h, h) float64, [i, j].
    """
    w = _c.check_composition(model, kind, fold_ln)
    h = model.cfg.h
    _, _, V1, O1 = _head_factors_core(w, 0, h, fold_ln)  # as ov_matrix reads them
    Q2, K2, V2, O2 = _head_factors_core(w, 1, h, fold_ln)  # and qk_matrix
    ov1 = [V1[i] @ O1[i] for i in range(h)]  # (d_model, d_model) each: W_OV^i
    qk2 = [Q2[j] @ K2[j].T for j in range(h)]  # W_QK^j
    ov2 = [V2[j] @ O2[j] for j in range(h)]  # W_OV^j
    return torch.tensor([[composition_score(*_pair(kind, ov1[i], qk2[j], ov2[j]))
                          for j in range(h)] for i in range(h)], dtype=torch.float64)


def composition_baseline(d_model: int, d_k: int, kind: str,
                         samples: int = BASELINE_HEADS, noise=None) -> float:
    """The composition score of random heads: the mean of ``kind``'s score
    over ``samples x samples`` pairs of heads whose factors ``W_Q^i, W_K^i,
    W_V^i`` (d_model, d_k) and ``W_O^i`` (d_k, d_model) have independent
    standard normal entries (read from ``noise``, default
    :func:`~mhacourse.tiny_model.step.noise_pool`). About
    ``1 / sqrt(d_model)``: random low-rank maps barely overlap. A trained
    pair well above it composes."""
    kind = _c.check_baseline(d_model, d_k, kind, samples, noise)
    noise = st.noise_pool() if noise is None else noise
    like = torch.zeros(1, d_model, d_k, dtype=torch.float64)
    (_, _, V1, O1), (Q2, K2, V2, O2) = _random_factors_core(noise, like, samples)
    scores = [composition_score(*_pair(kind, V1[i] @ O1[i], Q2[j] @ K2[j].T,
                                       V2[j] @ O2[j]))
              for i in range(samples) for j in range(samples)]
    return sum(scores) / len(scores)


def composition_max_baseline(d_model: int, d_k: int, kind: str, h: int,
                             draws: int = 64, seed: int = 0) -> float:
    """What the *largest* of a trained model's ``h x h`` composition scores
    is read against: the mean, over ``draws`` independent draws of ``h``
    random heads per layer (factors with independent standard normal
    entries, ``torch.Generator().manual_seed(seed)``), of the largest
    ``kind`` score of the ``h x h`` pairs. :func:`composition_baseline` is
    the score of one random pair; the largest of many pairs is higher by
    chance alone. ``d_model`` at most 256, ``h`` at most 16, ``draws`` at
    most 256 and ``draws x h x d_model x d_k`` at most 2**20 (about a
    second)."""
    kind, seed = _c.check_max_baseline(d_model, d_k, kind, h, draws, seed)
    d_model, d_k, h, draws = int(d_model), int(d_k), int(h), int(draws)
    g = torch.Generator().manual_seed(seed)
    best = []
    for _ in range(draws):
        layers = []
        for _layer in range(2):  # W_Q, W_K, W_V (h, d_model, d_k); W_O (h, d_k, d_model)
            Q, K, V = (torch.randn(h, d_model, d_k, generator=g, dtype=torch.float64)
                       for _ in range(3))
            O = torch.randn(h, d_k, d_model, generator=g, dtype=torch.float64)
            layers.append((Q, K, V, O))
        scores = _qkv_composition_core(*layers)[KINDS.index(kind)]  # (h, h)
        best.append(float(scores.max()))
    return sum(best) / len(best)


def repeated_sequences(n: int = REPEAT_N, L: int = 16, seed: int = REPEAT_SEED) -> torch.Tensor:
    """``n`` sequences of ``L/2`` distinct random words, each repeated once:
    ``a b c ... a b c ...``. In the second copy, the word after a token's
    earlier occurrence is ``L/2 - 1`` places back, which an induction head
    attends to. Shapes: -> (n, L) int64."""
    _c.check_repeated(n, L, seed)
    return _repeated_tokens_core(n, L, seed)


def prefix_matching_scores(model, ids: torch.Tensor | None = None) -> torch.Tensor:
    """Olsson et al. 2022's prefix-matching score of every head: on
    repeated sequences ``ids`` (default :func:`repeated_sequences`), the
    mean attention from each token of the second copy to the token that
    followed its earlier occurrence. Induction heads score near 1; a head
    spreading its weight evenly scores about ``mean_t 1/(t+1)``. Computed
    from the model's real attention (no approximation).
    Shapes: ``ids`` (N, L) -> (n_layers, h) float64."""
    w = _c.check_model(model)
    if ids is not None:
        _c.check_ids(model, ids)
    ids = repeated_sequences() if ids is None else ids
    with torch.no_grad():
        return _prefix_core(w, model.cfg.h, ids)


def read_circuits(model, noise=None) -> dict:
    """Every read-out of :func:`~mhacourse.circuits.core._circuits_core` for
    a two-layer tiny model, in float64: ``{name: tensor}`` with the names of
    :data:`READOUTS` (``comp_baseline`` in the order of ``KINDS``)."""
    _c.check_read_circuits(model, noise)
    noise = st.noise_pool() if noise is None else noise
    params = tuple(dict(model.named_parameters())[k].detach().double()
                   for k in st.param_names())
    with torch.no_grad():
        out = _circuits_core(params, torch.zeros(model.cfg.h), noise)
    _c.check_readouts_finite(READOUTS, out)
    return dict(zip(READOUTS, out))


__all__ = ["KINDS", "READOUTS", "GRAPH_READOUTS", "composition_score", "composition_scores",
           "composition_baseline", "composition_max_baseline", "repeated_sequences",
           "prefix_matching_scores", "read_circuits"]
