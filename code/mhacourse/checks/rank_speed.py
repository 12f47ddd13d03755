"""Chapters 8 and 9's checkers: how many heads, and making it fast."""
from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .._validate import check_positive_int
from ..attention import scaled_dot_product_attention
from ..heads import score_rank_bound
from ..multihead import MHAWeights, random_weights
from ._verdict import Verdict, _as_array, _BadOutput, _call, _close, _number, _verdicts

# --- chapter 8: how many heads? ------------------------------------------------

#: (L, d_model, h) cases for :func:`check_score_rank`; chosen so that every
#: formula it recognises gives a different list of answers.
_SCORE_RANK_CASES = ((16, 64, 64), (16, 64, 2), (512, 768, 12), (6, 32, 4),
                     (100, 64, 8))


@_verdicts
def check_score_rank(fn) -> Verdict:
    """Check ``fn(L, d_model, h) -> int``: the largest rank of ONE head's
    (L, L) score matrix, ``min(L, d_model // h)``.

    Recognises: ``min(L, d_model)`` (the model's width instead of the head's),
    ``d_k`` without the cap L, ``L`` without the cap d_k, ``d_model``, all
    heads' ranks added up ``h * min(L, d_k)``, ``min(L, h)`` and ``h``
    (the number of heads in place of the width of one).
    """
    want = [score_rank_bound(*c) for c in _SCORE_RANK_CASES]
    got = []
    for L, d_model, h in _SCORE_RANK_CASES:
        value, err = _call(fn, L, d_model, h)
        if err is not None:
            return Verdict(False, err.message + f" (for L = {L}, d_model = "
                                                f"{d_model}, h = {h})")
        if value is None:
            return Verdict(False, "your function returned None: did you forget "
                                  "`return`?")
        try:
            got.append(float(_number(value, "one number (a rank)", "return")))
        except _BadOutput as e:
            return Verdict(False, f"{e} (for L = {L}, d_model = {d_model}, "
                                  f"h = {h})")
    formulas = [
        (lambda L, d, h: min(L, d),
         "min(L, d_model) is the bound for a single head as wide as the model. "
         "With h heads, head i's queries and keys have only d_k = d_model / h "
         "columns, and Q_i K_i^T cannot have a larger rank than that: use "
         "min(L, d_model // h)."),
        (lambda L, d, h: d // h,
         "right width, but the score matrix is L x L: its rank is at most L as "
         "well. With L = 16 tokens and d_k = 32 the rank is at most 16: use "
         "min(L, d_model // h)."),
        (lambda L, d, h: L,
         "L is only one of the two caps: Q_i is (L, d_k), so the rank of "
         "Q_i K_i^T is also at most d_k = d_model // h (1 for h = d_model)."),
        (lambda L, d, h: d,
         "d_model is neither cap: one head's scores are Q_i K_i^T with Q_i and "
         "K_i of shape (L, d_k): the rank is at most min(L, d_model // h)."),
        (lambda L, d, h: h * min(L, d // h),
         "that adds up all h heads; the question is about ONE head's score "
         "matrix: min(L, d_model // h)."),
        (lambda L, d, h: min(L, h),
         "h is the number of heads, not the width of one. Each head's queries "
         "have d_k = d_model // h columns: min(L, d_model // h)."),
        (lambda L, d, h: h,
         "h is the number of heads, not a rank. The rank of one head's scores "
         "is capped by its width d_k = d_model // h and by L."),
    ]
    if all(abs(g - w) < 1e-9 for g, w in zip(got, want)):
        return Verdict(True, "correct: min(L, d_model // h). For d_model = 64 "
                             "and h = 64, every head's 16 x 16 score matrix has "
                             "rank at most 1.")
    for formula, msg in formulas:
        if all(abs(g - formula(*c)) < 1e-9 for g, c in zip(got, _SCORE_RANK_CASES)):
            return Verdict(False, msg)
    bad = next((c, g, w) for c, g, w in zip(_SCORE_RANK_CASES, got, want)
               if abs(g - w) >= 1e-9)
    (L, d, h), g, w = bad
    return Verdict(False, f"for L = {L}, d_model = {d}, h = {h} you return "
                          f"{g:g}; the largest rank is {w} (d_k = {d // h}).")


# --- Chapter 9: making it fast (batched heads, weights' memory, online softmax)


def _ch09_batched_variants(X, w, h: int) -> dict:
    """Multi-head attention with the heads as a batch axis, and its usual
    mistakes, as ``name -> output (B, L, d_model)``. ``X`` (B, L, d_model),
    ``w`` without biases."""
    B, L, d_model = X.shape
    d_k = d_model // h

    def split(M, how="right"):             # (B, L, d_model) -> (B, h, L, d_k)
        if how == "no_transpose":          # cuts the flat (L*d_model) memory
            return M.reshape(B, h, L, d_k)
        if how == "interleaved":           # head i gets columns i, i+h, ...
            return M.reshape(B, L, d_k, h).permute(0, 3, 1, 2)
        return M.reshape(B, L, h, d_k).transpose(1, 2)

    def merge(H, how="right"):             # (B, h, L, d_k) -> (B, L, d_model)
        if how == "no_transpose":
            return H.reshape(B, L, d_model)
        if how == "interleaved":
            return H.permute(0, 2, 3, 1).reshape(B, L, d_model)
        return H.transpose(1, 2).reshape(B, L, d_model)

    def run(split_how="right", merge_how="right", scale=math.sqrt(d_k),
            dim=-1, W_O=True):
        Q, K, V = (split(X @ W, split_how) for W in (w.W_Q, w.W_K, w.W_V))
        A = torch.softmax(Q @ K.transpose(-2, -1) / scale, dim=dim)  # (B,h,L,L)
        concat = merge(A @ V, merge_how)   # (B, L, d_model)
        return concat @ w.W_O if W_O else concat

    return {
        "right": run(),
        "split_no_transpose": run(split_how="no_transpose"),
        "merge_no_transpose": run(merge_how="no_transpose"),
        "both_no_transpose": run("no_transpose", "no_transpose"),
        "interleaved": run("interleaved", "interleaved"),
        "sqrt_d_model": run(scale=math.sqrt(d_model)),
        "softmax_queries": run(dim=-2),
        "no_W_O": run(W_O=False),
    }


@_verdicts
def check_batched_heads(fn) -> Verdict:
    """Check ``fn(X, w, h) -> output`` computes multi-head attention with the
    heads as a batch axis: ``X`` (B, L, d_model), ``w`` an
    :class:`~mhacourse.multihead.MHAWeights` **without biases**; ``output``
    (B, L, d_model), or a pair ``(output, weights)``.

    Recognises: a missing transpose when splitting (``view(B, h, L, d_k)``
    straight from (B, L, d_model)), when merging, or in both; heads that take
    every h-th column; scaling by sqrt(d_model); softmax over the queries;
    a missing W_O; the heads not merged back.
    """

    B, L, d_model, h = 2, 5, 12, 3         # all different, so mix-ups show
    d_k = d_model // h
    r = random_weights(d_model, h, bias=False, seed=9, dtype=torch.float64)
    w = MHAWeights(*(2 * t for t in (r.W_Q, r.W_K, r.W_V)), r.W_O)  # peakier
    X = torch.randn(B, L, d_model, generator=torch.Generator().manual_seed(4),
                    dtype=torch.float64)
    got, err = _call(fn, X, w, h)
    if err is not None:
        return err
    if isinstance(got, tuple):
        if not got:
            return Verdict(False, "return the output (B, L, d_model).")
        got = got[0]
    out = _as_array(got)
    ref = {k: _as_array(v) for k, v in _ch09_batched_variants(X, w, h).items()}
    if out.shape == (B, h, L, d_k):
        return Verdict(False, f"shape {out.shape} is (B, h, L, d_k): the heads "
                              "are not merged back. Transpose to (B, L, h, d_k), "
                              "reshape to (B, L, d_model), then apply W_O.")
    if out.shape != (B, L, d_model):
        return Verdict(False, f"output has shape {out.shape}; expected "
                              f"(B, L, d_model) = {(B, L, d_model)}.")
    if _close(out, ref["right"]):
        return Verdict(True, "correct: split with view(B, L, h, d_k) then "
                             "transpose(1, 2), one batched product for all "
                             "heads, transpose back before merging, then W_O.")
    mistakes = {
        "split_no_transpose":
            "you reshaped (B, L, d_model) straight to (B, h, L, d_k): that "
            "cuts the flat memory into h chunks, so a 'head' holds pieces of "
            "several tokens. View as (B, L, h, d_k) first, then "
            ".transpose(1, 2).",
        "merge_no_transpose":
            "the split is right, but merging reshaped (B, h, L, d_k) straight "
            "to (B, L, d_model), which mixes tokens: .transpose(1, 2) back to "
            "(B, L, h, d_k) first, then reshape.",
        "both_no_transpose":
            "no transpose when splitting nor when merging. The two mistakes "
            "undo each other's shapes, not their harm: each 'head' mixes "
            "tokens. Split with view(B, L, h, d_k).transpose(1, 2) and merge "
            "with transpose(1, 2).reshape(B, L, d_model).",
        "interleaved":
            "your head i takes columns i, i+h, i+2h, ... (a view as "
            "(B, L, d_k, h)); head i owns the contiguous block "
            "i*d_k:(i+1)*d_k, as in nn.MultiheadAttention: view as "
            "(B, L, h, d_k).",
        "sqrt_d_model":
            f"you divided the scores by sqrt(d_model) = {math.sqrt(d_model):g}; "
            f"each head divides by sqrt(d_k) = {math.sqrt(d_k):g}, the width "
            "of its own queries.",
        "softmax_queries":
            "the softmax ran over the queries (dim=-2); each query's weights "
            "over the keys must sum to 1: dim=-1.",
        "no_W_O":
            "everything is right up to the concatenation; multiply it by W_O.",
    }
    for name, message in mistakes.items():
        if _close(out, ref[name]):
            return Verdict(False, message)
    return Verdict(False, "not multi-head attention: largest difference "
                          f"{np.abs(out - ref['right']).max():.3g}. Check the "
                          "split, the scale 1/sqrt(d_k), the softmax axis and "
                          "the merge.")


@_verdicts
def check_weights_memory(answer, B: int, h: int, L: int,
                         bytes_per_number: int = 4) -> Verdict:
    """Check ``answer``: the bytes of one (B, h, L, L) tensor of attention
    weights (self-attention, S = L), ``B*h*L*L*bytes_per_number``.

    Recognises: numbers counted instead of bytes, bits instead of bytes,
    h, B or one factor L left out, the answer given in MiB, MB, GiB or GB.
    """
    for name, v in (("B", B), ("h", h), ("L", L),
                    ("bytes_per_number", bytes_per_number)):
        check_positive_int(name, v)
    a = float(_number(answer, "a number of bytes"))
    n = B * h * L * L
    want = n * bytes_per_number
    if a == want:
        return Verdict(True, f"correct: B·h·L²·{bytes_per_number} = {want:,} "
                             f"bytes ({want / 2**20:,.1f} MiB).")
    mistakes = [
        (n, f"that is the number of weights; each takes {bytes_per_number} "
            "bytes: multiply by it."),
        (8 * want, "that is in bits; a byte is 8 bits."),
        (B * L * L * bytes_per_number,
         "you left out h: every head has its own (L, L) weights."),
        (h * L * L * bytes_per_number,
         "you left out B: every sequence of the batch has its own weights."),
        (B * h * L * bytes_per_number,
         "one factor L is missing: each head has L × L weights (a query "
         "row for every token, a key column for every token)."),
    ]
    for value, message in mistakes:
        if a == value:
            return Verdict(False, message)
    for unit, size in (("MiB", 2**20), ("MB", 1e6), ("GiB", 2**30), ("GB", 1e9)):
        if abs(a - want / size) <= 1e-6 * want / size:
            return Verdict(False, f"right size, but in {unit}; give bytes "
                                  f"(multiply by {size:,.0f}).")
    return Verdict(False, f"expected B·h·L²·bytes = {B}·{h}·{L}²·"
                          f"{bytes_per_number}; you gave {a:,.0f}.")


def _ch09_blockwise(Q, K, V, block: int, rescale_acc=True, rescale_sum=True,
                    scale=True, drop_tail=False, per_block=False):
    """Attention over keys in blocks of ``block`` with a running max, a
    running sum and a running output (online softmax), and its usual
    mistakes. Q (L, d_k), K (S, d_k), V (S, d_v) -> (L, d_v)."""
    L, S = Q.shape[0], K.shape[0]
    c = 1 / math.sqrt(Q.shape[-1]) if scale else 1.0
    stop = S - S % block if drop_tail else S
    m = torch.full((L, 1), -math.inf, dtype=Q.dtype)       # running max
    total = torch.zeros(L, 1, dtype=Q.dtype)              # running sum
    acc = torch.zeros(L, V.shape[-1], dtype=Q.dtype)      # running output
    outs = []
    for j in range(0, stop, block):
        s = Q @ K[j:j + block].T * c                      # (L, block)
        if per_block:
            outs.append(torch.softmax(s, -1) @ V[j:j + block])
            continue
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)                          # (L, block)
        fix = torch.exp(m - m_new)                        # (L, 1)
        total = (fix if rescale_sum else 1.0) * total + p.sum(-1, keepdim=True)
        acc = (fix if rescale_acc else 1.0) * acc + p @ V[j:j + block]
        m = m_new
    if per_block:
        return torch.stack(outs).mean(0)
    return acc / total


@_verdicts
def check_blockwise_attention(fn) -> Verdict:
    """Check ``fn(Q, K, V, block) -> output`` computes
    ``softmax(Q K^T / sqrt(d_k)) V`` by visiting the keys in blocks of
    ``block`` rows, keeping a running max, sum and output (the online softmax
    of fused kernels such as FlashAttention). Q (L, d_k), K (S, d_k),
    V (S, d_v) -> (L, d_v).

    Recognises: the running output or the running sum not rescaled when the
    max grows (or neither), a softmax per block averaged, the last partial
    block dropped, the 1/sqrt(d_k) scale forgotten, overflow when the max is
    not subtracted, and the full (L, S) score matrix built anyway.
    """
    g = torch.Generator().manual_seed(5)
    L, S, d_k, d_v, block = 3, 10, 8, 5, 4   # 10 keys: blocks of 4, 4 and 2
    Q = 2 * torch.randn(L, d_k, generator=g, dtype=torch.float64)
    # keys whose scores rise from block to block, so the running max changes
    K = torch.randn(S, d_k, generator=g, dtype=torch.float64)
    K = K * torch.linspace(0.3, 2.0, S, dtype=torch.float64)[:, None]
    V = torch.randn(S, d_v, generator=g, dtype=torch.float64)
    want = scaled_dot_product_attention(Q, K, V)[0]

    shapes = []
    try:
        class _Shapes(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if isinstance(out, torch.Tensor):
                    shapes.append(tuple(out.shape[-2:]))
                return out
        recorder = _Shapes()
    except ImportError:  # pragma: no cover - older PyTorch: skip that check
        recorder = contextlib.nullcontext()
    with recorder:
        got, err = _call(fn, Q, K, V, block)
    if err is not None:
        return err
    out = _as_array(got)
    if out.shape != (L, d_v):
        return Verdict(False, f"output has shape {out.shape}; expected "
                              f"(L, d_v) = {(L, d_v)}.")
    if np.isnan(out).any() or np.isinf(out).any():
        return Verdict(False, "the output has NaN or inf: subtract the running "
                              "max before exp, and start it at -inf.")
    if _close(out, want):
        big, err = _call(fn, 300 * Q, K, V, block)     # scores in the 1000s
        if err is None:
            b = _as_array(big)
            want_big = _as_array(scaled_dot_product_attention(300 * Q, K, V)[0])
            if not np.isfinite(b).all() or not _close(b, want_big):
                return Verdict(False, "right on ordinary scores, but large "
                                      "scores overflow exp(): subtract the "
                                      "running max m before exponentiating.")
        if (L, S) in shapes or (S, L) in shapes:
            return Verdict(False, "the numbers are right, but you built the "
                                  f"full ({L}, {S}) score matrix: visit the "
                                  f"keys in blocks of {block} and keep only a "
                                  "running max, sum and output.")
        return Verdict(True, "correct: one block of keys at a time; when the "
                             "max grows, the running sum and output are "
                             "rescaled by exp(m_old - m_new).")
    variants = [
        (dict(rescale_acc=False, rescale_sum=False),
         "when the running max grows, rescale the running sum AND the running "
         "output by exp(m_old - m_new); you rescaled neither."),
        (dict(rescale_acc=False),
         "the running sum is rescaled, but the running output is not: "
         "multiply it by exp(m_old - m_new) too when the max grows."),
        (dict(rescale_sum=False),
         "the running output is rescaled, but the running sum is not: "
         "multiply it by exp(m_old - m_new) too when the max grows."),
        (dict(per_block=True),
         "you took a softmax inside each block and averaged the blocks; the "
         "weights must be normalised over ALL keys: carry a running sum."),
        (dict(drop_tail=True),
         f"the last {S % block} keys are missing: {S} keys in blocks of "
         f"{block} leave a shorter last block; use range(0, S, block)."),
        (dict(scale=False),
         "you forgot to divide the scores by sqrt(d_k)."),
    ]
    for kwargs, message in variants:
        if _close(out, _ch09_blockwise(Q, K, V, block, **kwargs)):
            return Verdict(False, message)
    return Verdict(False, "not softmax(Q K^T / sqrt(d_k)) V: largest "
                          f"difference {np.abs(out - _as_array(want)).max():.3g}.")
