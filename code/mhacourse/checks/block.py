"""Chapters 10 and 12's checkers: the transformer block and beyond."""
from __future__ import annotations

import numpy as np
import torch

from .._validate import check_positive_int
from ..block import TransformerBlock, layer_norm
from ..masks import causal_mask
from ._verdict import Verdict, _as_array, _call, _close, _number, _verdicts

# ---------------------------------------------------------------------------
# Chapters 10 (the transformer block) and 11 (beyond): LayerNorm, pre-LN
# ordering, causal masks, key/value cache sizes.

def _layer_norm_variants(x, gamma, beta, eps):
    """The correct LayerNorm and the usual mistakes, keyed by diagnosis."""
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    norm = (x - mean) / torch.sqrt(var + eps)
    return {
        "unbiased": gamma * (x - mean) / torch.sqrt(
            x.var(-1, keepdim=True, unbiased=True) + eps) + beta,
        "eps_outside": gamma * (x - mean) / (var.sqrt() + eps) + beta,
        "default_eps": gamma * (x - mean) / torch.sqrt(var + 1e-5) + beta,
        "no_affine": norm,
        "swapped_affine": beta * norm + gamma,
        "rms": gamma * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) + beta,
        "axis_0": gamma * (x - x.mean(0, keepdim=True)) / torch.sqrt(
            x.var(0, keepdim=True, unbiased=False) + eps) + beta,
        "axis_1": gamma * (x - x.mean(1, keepdim=True)) / torch.sqrt(
            x.var(1, keepdim=True, unbiased=False) + eps) + beta,
    }


@_verdicts
def check_layer_norm(fn) -> Verdict:
    """Check ``fn(x, gamma, beta, eps) -> tensor`` is LayerNorm over the last
    axis: ``gamma * (x - mean) / sqrt(var + eps) + beta``, biased variance.

    Recognises: the unbiased variance, eps outside the square root or ignored,
    a missing eps (NaN on a constant token), no gamma/beta or swapped,
    normalising over the wrong axis, and RMSNorm (no mean subtracted).
    """

    g = torch.Generator().manual_seed(0)
    B, L, d = 2, 3, 6
    x = 3 * torch.randn(B, L, d, generator=g, dtype=torch.float64) + 1.5
    x[0, 1] = 2.0  # a constant token: variance 0, only eps keeps it finite
    x[1, 2] *= 0.05  # a token of small variance: eps matters
    gamma = 1 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64)
    beta = torch.randn(d, generator=g, dtype=torch.float64)
    eps = 1e-2  # large on purpose, so mistakes with eps show
    got, err = _call(fn, x.clone(), gamma, beta, eps)
    if err is not None:  # a Verdict is falsy
        return err
    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"return a tensor; got {type(got).__name__}.")
    got_np = _as_array(got)
    if got_np.shape != tuple(x.shape):
        return Verdict(False, f"output has shape {got_np.shape}; LayerNorm keeps "
                              f"the input's shape {tuple(x.shape)}.")
    if not np.isfinite(got_np).all():
        return Verdict(False, "NaN or inf for a token whose features are all equal "
                              "(variance 0): add eps inside the square root, "
                              "sqrt(var + eps).")
    if _close(got, layer_norm(x, gamma, beta, eps)):
        return Verdict(True, "correct: gamma * (x - mean) / sqrt(var + eps) + beta "
                             "over the last axis, with the biased variance, as "
                             "nn.LayerNorm.")
    v = _layer_norm_variants(x, gamma, beta, eps)
    messages = {
        "unbiased": "you used the unbiased variance (dividing by d_model - 1); "
                    "LayerNorm divides by d_model: x.var(-1, unbiased=False).",
        "eps_outside": "eps must go inside the square root: sqrt(var + eps), "
                       "not sqrt(var) + eps.",
        "default_eps": "you ignored the eps argument (used 1e-5): use the eps "
                       "you were given.",
        "no_affine": "the normalisation is right; now scale by gamma and shift "
                     "by beta.",
        "swapped_affine": "gamma and beta are swapped: gamma multiplies, beta "
                          "is added.",
        "rms": "you did not subtract the mean: that is RMSNorm (Zhang & "
               "Sennrich 2019, used by Llama), not LayerNorm.",
        "axis_0": "you normalised over the batch axis (dim 0); LayerNorm "
                  "normalises each token over its features, the last axis.",
        "axis_1": "you normalised over the tokens (dim 1); LayerNorm "
                  "normalises each token over its features, the last axis.",
    }
    for key, want in v.items():
        if _close(got, want):
            return Verdict(False, messages[key])
    diff = np.abs(got_np - _as_array(layer_norm(x, gamma, beta, eps))).max()
    return Verdict(False, "not LayerNorm: compute mean and biased variance over "
                          "the last axis, then gamma * (x - mean) / sqrt(var + eps)"
                          f" + beta (largest difference {diff:.3g}).")


@_verdicts
def check_pre_ln_block(fn) -> Verdict:
    """Check ``fn(x, attn, ffn, norm1, norm2)`` is a pre-LN block::

        x = x + attn(norm1(x))
        x = x + ffn(norm2(x))

    ``attn``, ``ffn``, ``norm1``, ``norm2`` are functions (B, L, d_model) ->
    (B, L, d_model). Recognises: post-LN order, a missing residual, the
    residual taken from the normalised x, swapped norms, an FFN that skips
    norm2, the parallel form, and an extra LayerNorm at the end.
    """

    d_model = 8  # seeded block: the learner's global random state is left alone
    blk = TransformerBlock(d_model, 2, 16, pre_ln=True, seed=0).double()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # different norms, so swapping them shows
        for p in (blk.gamma_1, blk.gamma_2):
            p.copy_(1 + 0.5 * torch.randn(d_model, generator=g, dtype=torch.float64))
        for p in (blk.beta_1, blk.beta_2, blk.attn.b_O, blk.b_2):
            p.copy_(torch.randn(p.shape[0], generator=g, dtype=torch.float64))
    x = 4 * torch.randn(2, 5, d_model, generator=g, dtype=torch.float64) + 2

    def attn(z):
        return blk.attn(z, z, z)[0]

    n1, n2, ffn = blk.ln1, blk.ln2, blk.ffn
    with torch.no_grad():
        got, err = _call(fn, x.clone(), attn, ffn, n1, n2)
        if err is not None:  # a Verdict is falsy
            return err
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(x.shape):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return Verdict(False, f"return a tensor of the input's shape "
                                  f"{tuple(x.shape)}; got {shape}.")
        x1 = x + attn(n1(x))
        want = x1 + ffn(n2(x1))
        if _close(got, want):
            return Verdict(True, "correct: x + attn(norm1(x)), then + ffn(norm2(x)); "
                                 "the residual stream itself is never normalised.")
        y = n1(x + attn(x))
        a = attn(n1(x))
        z = n1(x)
        z1 = z + attn(z)
        wrong = [
            (n2(y + ffn(y)), "that is post-LN (the 2017 order: LayerNorm after "
                             "each residual addition). Pre-LN normalises the "
                             "sublayer's input: x + attn(norm1(x))."),
            (ffn(n2(attn(n1(x)))), "both residual connections are missing: add "
                                   "each sublayer's output to its input, x + ..."),
            (a + ffn(n2(a)), "the residual around attention is missing: "
                             "x = x + attn(norm1(x))."),
            (ffn(n2(x1)), "the residual around the feed-forward is missing: "
                          "x = x + ffn(norm2(x))."),
            (z1 + ffn(n2(z1)), "you added the sublayer to the *normalised* x; the "
                               "residual must carry the raw x: x + attn(norm1(x))."),
            (n2(z1) + ffn(n2(z1)), "you replaced the residual stream by its "
                                   "normalised version; keep x itself: "
                                   "x + sublayer(norm(x))."),
            (x + attn(n2(x)) + ffn(n1(x + attn(n2(x)))),
             "norm1 and norm2 are swapped: norm1 goes before attention, norm2 "
             "before the feed-forward (they have different gamma and beta)."),
            (x1 + ffn(n1(x1)), "you used norm1 twice: the feed-forward reads "
                               "norm2(x), with its own gamma and beta."),
            (x1 + ffn(x1), "the feed-forward must read norm2(x), not x."),
            (x + attn(n1(x)) + ffn(n2(x)), "that is the parallel block (attention "
                                           "and feed-forward both read the same "
                                           "x); here the feed-forward reads the "
                                           "output of the attention step."),
            (n2(want), "drop the final LayerNorm: in a pre-LN model one LayerNorm "
                       "follows the whole stack, not each block."),
        ]
        for cand, msg in wrong:
            if _close(got, cand):
                return Verdict(False, msg)
        diff = np.abs(_as_array(got) - _as_array(want)).max()
    return Verdict(False, "not a pre-LN block: x = x + attn(norm1(x)), then "
                          f"x = x + ffn(norm2(x)) (largest difference {diff:.3g}).")


@_verdicts
def check_causal_mask(fn) -> Verdict:
    """Check ``fn(L)`` returns the (L, L) causal mask, bool, ``True`` = blocked
    (``mask[i, j] = j > i``), as :func:`mhacourse.masks.causal_mask`.

    Recognises: the allowed-positions mask (True = may attend), a blocked
    diagonal, the past blocked instead of the future, 0/1 or 0/-inf numbers
    instead of booleans, and the wrong shape.
    """

    L = 5
    got, err = _call(fn, L)
    if err is not None:  # a Verdict is falsy
        return err
    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"return a torch.Tensor; got {type(got).__name__}.")
    if tuple(got.shape) != (L, L):
        return Verdict(False, f"for L = {L} the mask must have shape (L, L) = "
                              f"{(L, L)}; got {tuple(got.shape)}.")
    want = causal_mask(L)
    if got.dtype != torch.bool:
        g = got.double()
        if torch.equal(torch.isneginf(g), want) and bool((g[~want] == 0).all()):
            return Verdict(False, "that is the additive float form (0 = keep, -inf "
                                  "= block), which is right as numbers; this "
                                  "exercise asks for bool, True = blocked.")
        if torch.equal(g == 1, want) and bool(((g == 0) | (g == 1)).all()):
            return Verdict(False, "right pattern as 0/1 numbers; return booleans "
                                  "(.bool()), True = blocked.")
        return Verdict(False, f"return a bool tensor (True = blocked); got dtype "
                              f"{got.dtype}.")
    if torch.equal(got, want):
        return Verdict(True, "correct: mask[i, j] is True (blocked) exactly when "
                             "key j comes after query i.")
    if torch.equal(got, ~want):
        return Verdict(False, "inverted: you marked the *allowed* keys (that is "
                              "F.scaled_dot_product_attention's convention). Here "
                              "True means blocked: return ~your_mask.")
    if torch.equal(got, want | torch.eye(L, dtype=torch.bool)):
        return Verdict(False, "you also blocked the diagonal: a token may attend to "
                              "itself (and token 0 would have nothing left). Use "
                              "torch.triu(..., diagonal=1).")
    if torch.equal(got, want.T):
        return Verdict(False, "transposed: you blocked the earlier keys; block the "
                              "later ones, key j > query i.")
    if not bool(got.any()):
        return Verdict(False, "your mask blocks nothing: block every key j > i.")
    return Verdict(False, "wrong pattern: mask[i, j] must be True exactly when "
                          f"j > i; it differs in {int((got != want).sum())} places.")


@_verdicts
def check_kv_cache(answer, n_layers: int, h_kv: int, d_k: int, tokens: int = 1,
                   bytes_per_number: int = 2, h: int | None = None) -> Verdict:
    """Check a learner's key/value cache size in bytes:
    ``2 * n_layers * h_kv * d_k * tokens * bytes_per_number``.

    Recognises: K or V forgotten (no factor 2), layers forgotten, ``h``
    query heads used instead of ``h_kv``, numbers instead of bytes, bits.
    """
    for name, v in (("n_layers", n_layers), ("h_kv", h_kv), ("d_k", d_k),
                    ("tokens", tokens), ("bytes_per_number", bytes_per_number)):
        check_positive_int(name, v)
    if h is not None:
        check_positive_int("h", h)
    want = 2 * n_layers * h_kv * d_k * tokens * bytes_per_number
    answer = _number(answer, "a number of bytes")
    if answer == want:
        return Verdict(True, f"correct: 2 (K and V) × {n_layers} layers × {h_kv} "
                             f"key/value heads × d_k = {d_k} × {tokens:,} tokens × "
                             f"{bytes_per_number} bytes = {want:,} bytes "
                             f"({want / 2**20:,.1f} MiB).")
    mistakes = [
        (want // 2, "you counted only the keys (or only the values): the cache "
                    "holds both, a factor 2."),
        (want // n_layers, "that is one layer's cache: every layer keeps its own "
                           f"keys and values (× {n_layers})."),
        (want // bytes_per_number, "that counts numbers, not bytes: multiply by "
                                   f"{bytes_per_number} bytes per number."),
        (want * 8, "that is bits: divide by 8 for bytes."),
    ]
    if h is not None and h != h_kv:
        mistakes.insert(0, (want // h_kv * h, f"you used the {h} query heads; "
                            f"only the {h_kv} key/value heads are cached."))
    for value, msg in mistakes:
        if answer == value:
            return Verdict(False, msg)
    return Verdict(False, f"not {answer:,}: multiply 2 (K and V) × layers × "
                          "key/value heads × d_k × tokens × bytes per number.")
