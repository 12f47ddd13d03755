"""Every circuit read-out of a tiny model in one traceable function,
:func:`_circuits_core`, computed from the heads' low-rank factors.

A head's QK and OV matrices are (d_model, d_model) but have rank at most
``d_k``: ``W_QK^i = W_Q^i W_K^iᵀ``, ``W_OV^i = W_V^i W_O^i``. Every score
here is a trace or a Frobenius norm of products of such matrices, so it can
be computed from ``d_k x d_k`` Gram matrices (``W_V^iᵀ W_V^i``, ...) and
``d_k x d_k`` cross products (``W_O^i W_K^j``) without ever forming a
(d_model, d_model) product per pair of heads. The readable forms, one
explicit product per quantity, are in :mod:`.matrices` and
:mod:`.composition`; the tests check that both give the same numbers.

No Python branch on a size and no SVD or eigen-decomposition: the page
exports this function once (ONNX opset 18) for every ``h`` and ``d_k``.

**LayerNorm.** The tiny models are pre-LN: a head reads
``LN(x) = gamma * (x - mean) / sigma + beta``. Everything here folds the
centring and the gain into the matrix that reads it,
``W -> P diag(gamma) W`` with ``P = I - 11ᵀ / d_model`` (:func:`_fold_ln_core`),
and drops the per-token ``1 / sigma`` (a positive number per token: it
rescales a token's scores, not their direction) and the shifts ``beta`` and
biases. An approximation: a reading of the weights, not of the activations.
"""
from __future__ import annotations

import torch

from .. import tasks
from ..attention import _scores_core, _softmax_core
from ..block import _block_core, _layer_norm_core
from ..heads import _split_heads_core
from ..masks import _as_additive, _causal_core
from ..multihead import _project
from ..tiny_model import step as st
from ..tiny_model.analysis import _roles_core, _statistics_core, heldout
from ..tiny_model.model import ACTIVATION, PRE_LN, TinyWeights

KINDS = ("q", "k", "v")  # Q-, K- and V-composition, the order of comp_baseline
BASELINE_HEADS = 8  # random heads per layer for the baseline: 8 x 8 pairs
REPEAT_N = 8  # repeated random sequences for the prefix-matching score
REPEAT_SEED = 31  # their generator's seed
PROBE_N = 24  # held-out sequences the quick role read-out averages over: the
#     first 24 of tiny_model.heldout() (its roles agree with the 1,024's on
#     every head of the committed models; chapter 11 and the tests check)


def _fold_ln_core(W: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """``P diag(gamma) W``: a LayerNorm's centring ``P = I - 11ᵀ/d`` and gain
    folded into the matrix ``W`` that reads its output, since
    ``LN(x) W = (x P / sigma) diag(gamma) W + beta W``.

    Shapes: ``W`` (d_model, n), ``gamma`` (d_model,) -> (d_model, n).
    """
    GW = gamma[:, None] * W  # (d_model, n): diag(gamma) W
    return GW - GW.mean(dim=0, keepdim=True)  # P (diag(gamma) W)


def _head_factors_core(w: TinyWeights, layer: int, h, fold_ln: bool = True):
    """Block ``layer``'s per-head factors ``(W_Q^i, W_K^i, W_V^i, W_O^i)``:
    columns ``i*d_k:(i+1)*d_k`` of ``W_Q, W_K, W_V`` (with the block's
    LayerNorm folded in, :func:`_fold_ln_core`, when ``fold_ln``) and rows
    ``i*d_k:(i+1)*d_k`` of ``W_O``.

    Shapes: -> three (h, d_model, d_k) and one (h, d_k, d_model). ``h`` may
    be a symbolic size.
    """
    b = w.blocks[layer]
    d_model = b.attn.W_Q.shape[0]

    def by_head(W):  # (d_model, h*d_k) -> (h, d_model, d_k)
        W = _fold_ln_core(W, b.gamma_1) if fold_ln else W
        return W.reshape(d_model, h, -1).permute(1, 0, 2)  # (h, d_model, d_k)

    W_O = b.attn.W_O.reshape(h, -1, d_model)  # (h, d_k, d_model): row blocks
    return by_head(b.attn.W_Q), by_head(b.attn.W_K), by_head(b.attn.W_V), W_O


def _gram(F: torch.Tensor) -> torch.Tensor:
    """``Fᵀ F`` per head: (h, d_model, d_k) -> (h, d_k, d_k). A part of the
    traced cores: no checks."""
    return F.transpose(-1, -2) @ F


def _composition_core(W_V1, W_O1, R2, S2) -> torch.Tensor:
    """Composition of every earlier head ``i`` (``W_OV^i = W_V^i W_O^i``)
    with every later head ``j`` whose matrix is ``M_j = R_j S_jᵀ``::

        score[i, j] = ||W_OV^i M_j||_F / (||W_OV^i||_F ||M_j||_F)

    from ``d_k x d_k`` matrices only, with ``X = W_O^i R_j``:
    ``||W_V^i X S_jᵀ||_F^2 = tr(Xᵀ (W_V^iᵀ W_V^i) X (S_jᵀ S_j))``,
    ``||W_OV^i||_F^2 = tr((W_V^iᵀ W_V^i)(W_O^i W_O^iᵀ))``,
    ``||M_j||_F^2 = tr((R_jᵀ R_j)(S_jᵀ S_j))``.

    Shapes: ``W_V1`` (h1, d, k), ``W_O1`` (h1, k, d), ``R2``, ``S2``
    (h2, d, k) -> (h1, h2).
    """
    G_V = _gram(W_V1)  # (h1, k, k)
    G_O = W_O1 @ W_O1.transpose(-1, -2)  # (h1, k, k): W_O^i W_O^iᵀ
    G_R, G_S = _gram(R2), _gram(S2)  # (h2, k, k)
    h1, k, d = W_O1.shape
    h2 = R2.shape[0]
    X = W_O1.reshape(h1 * k, d) @ R2.permute(1, 0, 2).reshape(d, h2 * k)  # (h1 k, h2 k)
    X = X.reshape(h1, k, h2, k).permute(0, 2, 1, 3)  # (h1, h2, k, k): W_O^i R_j
    GX = G_V[:, None] @ X  # (h1, h2, k, k): G_V^i W_O^i R_j
    num = (X * (GX @ G_S[None])).sum((-1, -2))  # (h1, h2): tr(Xᵀ G_V X G_S)
    ov = (G_V * G_O).sum((-1, -2))  # (h1,): tr(G_V G_O), both symmetric
    m = (G_R * G_S).sum((-1, -2))  # (h2,)
    return num.clamp(min=0).sqrt() / (ov.sqrt()[:, None] * m.sqrt()[None, :])


def _qkv_composition_core(first, second):
    """Q-, K- and V-composition (Elhage et al. 2021) of every head of one
    layer with every head of a later layer, from their factors
    (:func:`_head_factors_core`). In the row-vector convention of the course
    (``x W``; a head reads ``x``, scores ``x_q W_QK x_kᵀ``, writes
    ``x W_OV``) the later head reads the earlier head's output through::

        Q: ||W_OV^i W_QK^j||_F       K: ||W_OV^i W_QK^jᵀ||_F
        V: ||W_OV^i W_OV^j||_F       (each / the two norms)

    the paper's ``||W_QK^jᵀ W_OV^i||``, ``||W_QK^j W_OV^i||``,
    ``||W_OV^j W_OV^i||`` with its column-vector matrices (ours transposed).
    Returns three (h1, h2).
    """
    _, _, W_V1, W_O1 = first
    W_Q2, W_K2, W_V2, W_O2 = second
    return (_composition_core(W_V1, W_O1, W_Q2, W_K2),  # M = W_Q W_Kᵀ
            _composition_core(W_V1, W_O1, W_K2, W_Q2),  # M = W_K W_Qᵀ
            _composition_core(W_V1, W_O1, W_V2, W_O2.transpose(-1, -2)))  # W_V W_O


def _random_factors_core(noise: torch.Tensor, like: torch.Tensor, n_heads: int = BASELINE_HEADS):
    """Two layers of random heads from the noise pool
    (:func:`~mhacourse.tiny_model.step.noise_pool`), each factor with
    standard normal entries and the shape of ``like``'s: per layer
    ``(W_Q, W_K, W_V)`` (n, d_model, d_k) and ``W_O`` (n, d_k, d_model).

    Read as :func:`~mhacourse.tiny_model.step._init_core` reads the pool:
    factor ``f`` takes entries ``(start_f + (2f + 1) i) mod P``.
    ``like`` (h, d_model, d_k). Returns two 4-tuples.
    """
    d_model, d_k = like.shape[1], like.shape[2]
    P = noise.shape[0]
    n = n_heads * d_model * d_k
    out = []
    for f in range(8):
        index = (104729 * (f + 1) + (2 * f + 1) * torch.arange(n)) % P  # (n,)
        z = noise[index].to(like.dtype).reshape(n_heads, d_model, d_k)
        out.append(z.transpose(-1, -2) if f % 4 == 3 else z)  # W_O: (n, d_k, d)
    return tuple(out[:4]), tuple(out[4:])


def _positional_scores_core(w: TinyWeights, layer: int, h) -> torch.Tensor:
    """The scores block ``layer``'s heads give positions alone: the input
    of every position ``t`` taken as its position embedding ``W_pos[t]``
    (no token), through the block's LayerNorm::

        X = LN_1(W_pos);   S^i = (X W_Q^i + b_Q^i)(X W_K^i + b_K^i)ᵀ / sqrt(d_k)

    Exact for a sequence whose token embeddings are zero; for layer 2 it
    also leaves out what layer 1 added. Shapes: -> (h, max_len, max_len).
    """
    b = w.blocks[layer]
    X = _layer_norm_core(w.W_pos, b.gamma_1, b.beta_1)  # (L, d_model)
    L = X.shape[0]
    Q = (X @ b.attn.W_Q + b.attn.b_Q).reshape(L, h, -1).transpose(0, 1)  # (h, L, d_k)
    K = (X @ b.attn.W_K + b.attn.b_K).reshape(L, h, -1).transpose(0, 1)  # (h, L, d_k)
    d_k = Q.shape[-1]
    return Q @ K.transpose(-1, -2) / d_k**0.5  # (h, L, L)


def _band_core(S: torch.Tensor, offset: int = -1) -> torch.Tensor:
    """Mean causal-softmax weight on the band ``key = query + offset``
    over the queries that have it: for ``offset = -1``, the weight a head
    gives the previous position. Shapes: ``S`` (..., L, L) -> (...,)."""
    L = S.shape[-1]
    t = torch.arange(L)[:, None]  # (L, 1) queries
    s = torch.arange(L)[None, :]  # (1, L) keys
    A = torch.softmax(S.masked_fill(s > t, float("-inf")), dim=-1)  # (..., L, L)
    band = (s == t + offset).to(S.dtype)  # (L, L)
    return (A * band).sum((-1, -2)) / band.sum()  # (...,)


def _copying_proxy_core(w: TinyWeights, layer: int, h) -> torch.Tensor:
    """A copying score without eigenvalues, for each head of block ``layer``.

    The full OV circuit ``M = W_E W_OV^i W_U`` (V, V) (LayerNorms folded,
    the direct path only) copies when its eigenvalues are positive. Its
    eigenvalues sum to ``tr M``, and ``sum |lambda| <= sum sigma <=
    sqrt(d_k) ||M||_F`` (``M`` has rank <= d_k), so::

        proxy = tr(M) / (sqrt(d_k) ||M||_F)

    has the sign of Olsson et al.'s ``sum lambda / sum |lambda|`` and at
    most its size; it is 1 when ``M`` is a positive multiple of a rank-d_k
    orthogonal projection. With ``A = W_E W_V^i`` (V, d_k) and ``B = W_O^i
    W_U`` (d_k, V): ``tr M = tr(B A)``, ``||M||_F^2 = tr(AᵀA B Bᵀ)``.
    Shapes: -> (h,).
    """
    _, _, W_V, W_O = _head_factors_core(w, layer, h)
    W_U = _fold_ln_core(w.W_U, w.gamma_f)  # (d_model, V): the final LayerNorm
    n, d_model, d_k = W_V.shape
    V = w.W_E.shape[0]
    A = w.W_E @ W_V.permute(1, 0, 2).reshape(d_model, n * d_k)  # (V, h d_k): one product
    A = A.reshape(V, n, d_k).permute(1, 0, 2)  # (h, V, d_k): W_E W_V^i
    B = (W_O.reshape(n * d_k, d_model) @ W_U).reshape(n, d_k, V)  # (h, d_k, V): W_O^i W_U
    trace = torch.einsum("hkv,hvk->h", B, A)  # (h,)
    norm2 = (_gram(A) * (B @ B.transpose(-1, -2))).sum((-1, -2))  # (h,)
    return trace / (d_k**0.5 * norm2.sqrt())


def _repeated_tokens_core(n: int = REPEAT_N, L: int = tasks.TaskConfig.L,
                    seed: int = REPEAT_SEED,
                    vocab_size: int = len(tasks.VOCAB)) -> torch.Tensor:
    """``n`` sequences of ``L // 2`` distinct random words (never ``[UNK]``),
    each followed by itself: the test of Olsson et al. 2022 for induction
    heads. (Unchecked; :func:`~mhacourse.circuits.repeated_sequences`
    checks.) Shapes: -> (n, L) int64."""
    g = torch.Generator().manual_seed(seed)
    half = L // 2
    first = torch.stack([torch.randperm(vocab_size - 1, generator=g)[:half] + 1
                         for _ in range(n)])  # (n, L/2)
    return torch.cat([first, first], dim=1)  # (n, L)


#: The default test sequences, drawn once (a constant of the traced graph).
REPEATED = _repeated_tokens_core()


def _patterns_core(ids: torch.Tensor, w: TinyWeights, h) -> list[torch.Tensor]:
    """Every layer's attention pattern on ``ids``, as
    :func:`~mhacourse.tiny_model.model._forward_core` computes it, without
    what no pattern reads: the last block's values, output projection and
    feed-forward layer, the final LayerNorm and the unembedding (over a
    third of the work at two layers). The last block's weights are
    :func:`~mhacourse.attention._attention_core`'s, step by step. No head
    mask, every layer on.
    Shapes: ``ids`` (N, L) -> one (N, h, L, L) per layer."""
    L = ids.shape[1]
    x = w.W_E[ids] + w.W_pos[:L]  # (N, L, d_model)
    mask = _causal_core(L, L, device=ids.device)  # (L, L), True = blocked
    attention = []
    for b in w.blocks[:-1]:
        x, A = _block_core(x, b, h, mask, PRE_LN, ACTIVATION)  # (N, L, d), (N, h, L, L)
        attention.append(A)
    b = w.blocks[-1]
    t = _layer_norm_core(x, b.gamma_1, b.beta_1)  # (N, L, d_model): what it reads
    Q = _split_heads_core(_project(t, b.attn.W_Q, b.attn.b_Q), h)  # (N, h, L, d_k)
    K = _split_heads_core(_project(t, b.attn.W_K, b.attn.b_K), h)  # (N, h, L, d_k)
    scores = _scores_core(Q, K) + _as_additive(mask, Q.dtype)  # (N, h, L, L)
    return attention + [_softmax_core(scores)]


def _prefix_of_core(attention: list[torch.Tensor]) -> torch.Tensor:
    """The prefix-matching score of every head from its attention on
    repeated sequences (:func:`_repeated_tokens_core`): the mean weight from
    each token ``t`` of the second copy to ``t - L/2 + 1``.
    Shapes: one (N, h, L, L) per layer -> (n_layers, h)."""
    L = attention[0].shape[-1]
    half = L // 2
    t = torch.arange(L)[:, None]  # (L, 1) queries
    s = torch.arange(L)[None, :]  # (1, L) keys
    target = ((t >= half) & (s == t - half + 1)).float()  # (L, L)
    return torch.stack([(A * target.to(A.dtype)).sum((-1, -2)).mean(0) / target.sum()
                        for A in attention])  # (n_layers, h)


def _prefix_core(w: TinyWeights, h, ids: torch.Tensor) -> torch.Tensor:
    """Prefix-matching score (Olsson et al. 2022) of every head: on
    sequences whose second half repeats the first (:func:`_repeated_tokens_core`),
    the mean attention from each token ``t`` of the second copy to the token
    after its earlier occurrence, ``t - L/2 + 1``.
    Shapes: ``ids`` (N, L) -> (n_layers, h)."""
    return _prefix_of_core(_patterns_core(ids, w, h))


def _probe_core(n: int = PROBE_N) -> torch.Tensor:
    """The first ``n`` held-out sequences (:func:`~mhacourse.tiny_model.heldout`).
    Shapes: -> (n, L) int64."""
    return heldout()[0][:n]  # (n, L)


#: The probe: a constant of the traced graph, as :data:`REPEATED` is.
PROBE = _probe_core()


def _readouts_core(params, heads, ids=None, probe=None):
    """Every read-out of :func:`_circuits_core` that depends on the weights,
    in its order less ``comp_baseline`` (a function of ``d_model`` and
    ``d_k`` alone, :func:`_baseline_core`): the page's circuits graph, which
    reads each size's baseline from a table the build writes once.
    Arguments as :func:`_circuits_core`'s."""
    h = heads.shape[0]
    w = TinyWeights.from_state(dict(zip(st.param_names(), params)))
    if ids is None:  # built inside, so a traced graph holds it as a constant
        ids = torch.tensor(REPEATED.tolist())  # (REPEAT_N, L)
    if probe is None:
        probe = torch.tensor(PROBE.tolist())  # (PROBE_N, L)
    layers = range(len(w.blocks))
    factors = [_head_factors_core(w, layer, h) for layer in layers]
    comp_q, comp_k, comp_v = _qkv_composition_core(factors[0], factors[1])
    prev_band = torch.stack([_band_core(_positional_scores_core(w, layer, h))
                             for layer in layers])  # (n_layers, h)
    copying = torch.stack([_copying_proxy_core(w, layer, h) for layer in layers])
    n = ids.shape[0]
    attention = _patterns_core(torch.cat([ids, probe]), w, h)  # n_layers x (n + M, h, L, L)
    prefix = _prefix_of_core([A[:n] for A in attention])  # (n_layers, h)
    _, kind = tasks._targets_core(probe)  # (M, L)
    stats = torch.stack([_statistics_core(probe, kind, A[n:])
                         for A in attention])  # (n_layers, h, 5)
    role, named = _roles_core(stats)  # (n_layers, h), (n_layers, h)
    return comp_q, comp_k, comp_v, prev_band, copying, prefix, stats, role, named


def _baseline_core(noise: torch.Tensor, d_model: int, d_k: int,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The mean Q-, K- and V-composition (:data:`KINDS` order) of 8 x 8
    pairs of random Gaussian heads of width ``d_k`` in ``d_model``
    (:func:`_random_factors_core`): the level a trained pair is read
    against. Shapes: -> (3,)."""
    like = torch.zeros(1, d_model, d_k, dtype=dtype)
    first, second = _random_factors_core(noise, like)
    return torch.stack([c.mean() for c in _qkv_composition_core(first, second)])


def _circuits_core(params, heads, noise, ids=None, probe=None):
    """Every circuit read-out of a two-layer tiny model, cheaply.

    ``params``: tensors in :func:`~mhacourse.tiny_model.step.param_names`
    order; ``heads`` (h,): only its length is read, as h (as
    :func:`~mhacourse.tiny_model.step._forward_with`); ``noise`` (P,): the
    normals of :func:`~mhacourse.tiny_model.step.noise_pool` (the random
    baseline); ``ids`` (N, L) repeated sequences (default
    :data:`REPEATED`) and ``probe`` (M, L) task sequences (default
    :data:`PROBE`, the first 24 held-out ones), constants of a traced
    graph. One pass of the model (:func:`_patterns_core`) reads both.

    Returns ``(comp_q, comp_k, comp_v, comp_baseline, prev_band, copying,
    prefix, probe_stats, probe_role, probe_named)``: the Q/K/V-composition
    of layer-1 head i with layer-2 head j (h, h) [i, j]
    (:func:`_qkv_composition_core`); their means over 8 x 8 pairs of random
    Gaussian heads of the same shapes (3,) (:func:`_baseline_core`); each
    head's positional band at offset -1 (:func:`_positional_scores_core`,
    :func:`_band_core`), its copying proxy (:func:`_copying_proxy_core`) and
    its prefix-matching score (:func:`_prefix_of_core`), each (n_layers, h);
    and on the probe, each head's task statistics (n_layers, h, 5) and
    role, index and whether named (n_layers, h), as
    :func:`~mhacourse.tiny_model.head_scores` and
    :func:`~mhacourse.tiny_model.head_roles` give them on those sequences.
    LayerNorms folded as the module docstring says. The page runs
    :func:`_readouts_core` and reads the baseline from the build's table.
    """
    comp_q, comp_k, comp_v, *rest = _readouts_core(params, heads, ids, probe)
    d_model = params[0].shape[1]  # W_E (V, d_model)
    baseline = _baseline_core(noise, d_model, d_model // heads.shape[0], params[0].dtype)
    return (comp_q, comp_k, comp_v, baseline, *rest)
