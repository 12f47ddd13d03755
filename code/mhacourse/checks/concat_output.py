"""Chapters 5 to 7's checkers: concatenation, the output projection W_O,
and the cost."""
from __future__ import annotations

import numpy as np
import torch

from ..cost import mha_flops
from ..heads import merge_heads as _merge
from ..multihead import output_projection
from ._verdict import Verdict, _as_array, _call, _close, _number, _verdicts

# ---------------------------------------------------------------------------
# Chapters 5-7: concatenation, the output projection W_O, and the cost.

@_verdicts
def check_merge_heads(fn) -> Verdict:
    """Check ``fn(x)`` turns (B, h, L, d_k) into (B, L, h*d_k) = Concat(heads).

    Recognises: the head axis not flattened, a reshape without the transpose
    (right shape, tokens mixed), heads interleaved coordinate by coordinate,
    heads in reverse order, and a result that is not the inverse of
    :func:`mhacourse.split_heads`.
    """

    for B, h, L, d_k in ((2, 3, 4, 5), (1, 4, 2, 3)):
        x = torch.arange(B * h * L * d_k, dtype=torch.float64)
        x = x.reshape(B, h, L, d_k)  # every entry different: mix-ups show
        got, err = _call(fn, x.clone())
        if err is not None:
            return err
        got = _as_array(got)
        want = _as_array(_merge(x))
        if got.shape == (B, L, h, d_k):
            return Verdict(False, f"shape {got.shape} is (B, L, h, d_k): the "
                                  "heads are side by side but not joined; "
                                  "reshape to (B, L, h*d_k).")
        if got.shape != want.shape:
            return Verdict(False, f"shape {got.shape}; expected (B, L, h*d_k) "
                                  f"= {want.shape}.")
        if np.array_equal(got, _as_array(x.reshape(B, L, h * d_k))):
            return Verdict(False, "reshaping (B, h, L, d_k) straight to (B, L, "
                                  "h*d_k) gives the right shape but puts pieces "
                                  "of different tokens in one row. Transpose "
                                  "to (B, L, h, d_k) first: .transpose(1, 2).")
        if np.array_equal(got, _as_array(x.permute(0, 2, 3, 1).reshape(B, L, -1))):
            return Verdict(False, "the heads are interleaved (column j*h + i "
                                  "holds coordinate j of head i). Concatenation "
                                  "keeps each head's d_k numbers together: "
                                  "head i fills columns i*d_k:(i+1)*d_k.")
        if np.array_equal(got, _as_array(_merge(x.flip(1)))):
            return Verdict(False, "the heads are in reverse order: head 0 must "
                                  "come first, in columns 0:d_k.")
        if not np.array_equal(got, want):
            return Verdict(False, "right shape, wrong numbers: row t must be "
                                  "head_0[t], head_1[t], ..., head_{h-1}[t] "
                                  "side by side.")
    return Verdict(True, "correct: head i fills columns i*d_k:(i+1)*d_k of "
                         "every token's row, and split_heads undoes it.")


@_verdicts
def check_remove_head(fn) -> Verdict:
    """Check ``fn(concat, W_O, b_O, h, i)`` returns the layer's output with
    head ``i`` (counted from 0) removed: head i's slice of ``concat`` set to 0
    before ``W_O``, i.e. ``concat @ W_O + b_O - head_i @ W_O^i``.

    Recognises: the wrong head (off by one), zeroing head i's columns of
    ``W_O`` or of the output instead of its rows, dropping the bias ``b_O``,
    keeping only head i, removing nothing, and changing ``concat`` in place.
    """

    g = torch.Generator().manual_seed(0)
    B, L, h, d_k = 1, 3, 4, 2
    d = h * d_k
    concat = torch.randn(B, L, d, generator=g, dtype=torch.float64)
    W_O = torch.randn(d, d, generator=g, dtype=torch.float64)
    b_O = torch.randn(d, generator=g, dtype=torch.float64)
    i = 2

    def without(heads_zeroed, W=W_O, b=b_O, c=concat):
        c = c.clone()
        for j in heads_zeroed:
            c[..., j * d_k:(j + 1) * d_k] = 0
        return output_projection(c, W, b)

    before = concat.clone()
    got, err = _call(fn, concat, W_O.clone(), b_O.clone(), h, i)
    if err is not None:
        return err
    if not torch.equal(concat, before):
        return Verdict(False, "your function changed the caller's concat in "
                              "place; work on a copy (concat.clone()).")
    if got is None:
        return Verdict(False, "your function returned None: return the output.")
    got = _as_array(got)
    want = without([i])
    if got.shape != tuple(want.shape):
        return Verdict(False, f"output shape {got.shape}; expected (B, L, "
                              f"d_model) = {tuple(want.shape)}.")
    if _close(got, want):
        return Verdict(True, "correct: zeroing head i's slice of concat removes "
                             "exactly its contribution head_i W_O^i; b_O stays.")
    if _close(got, output_projection(concat, W_O, b_O)):
        return Verdict(False, "the output did not change: zero columns "
                              "i*d_k:(i+1)*d_k of concat before W_O.")
    for j in (i - 1, i + 1):
        if _close(got, without([j])):
            return Verdict(False, f"you removed head {j}, not head {i}: heads "
                                  "count from 0 here, and head i owns columns "
                                  "i*d_k:(i+1)*d_k.")
    if _close(got, without([i], b=None)):
        return Verdict(False, "you dropped the bias b_O: it belongs to no head, "
                              "so removing a head keeps it.")
    cols = slice(i * d_k, (i + 1) * d_k)
    W_cols = W_O.clone()
    W_cols[:, cols] = 0
    if _close(got, output_projection(concat, W_cols, b_O)) or _close(
            got, output_projection(concat, W_cols, None)):
        return Verdict(False, "you zeroed head i's *columns* of W_O, which are "
                              "output coordinates. Head i's block W_O^i is the "
                              "rows i*d_k:(i+1)*d_k (it multiplies its slice "
                              "of concat).")
    out_cols = _as_array(output_projection(concat, W_O, b_O)).copy()
    out_cols[..., cols] = 0
    if _close(got, out_cols):
        return Verdict(False, "you zeroed coordinates i*d_k:(i+1)*d_k of the "
                              "output. After W_O every output coordinate mixes "
                              "all heads; remove the head before W_O.")
    others = [j for j in range(h) if j != i]
    if _close(got, without(others)) or _close(got, without(others, b=None)):
        return Verdict(False, "you kept only head i and removed the others; "
                              "remove head i and keep the rest.")
    return Verdict(False, "not the output without head i: set columns "
                          "i*d_k:(i+1)*d_k of a copy of concat to 0, then "
                          "apply W_O and add b_O.")


@_verdicts
def check_mha_flops(fn) -> Verdict:
    """Check ``fn(B, L, d_model, h)`` returns the matmul FLOPs of one
    self-attention forward pass, ``8 B L d_model^2 + 4 B L^2 d_model``.

    Recognises: multiply-adds counted once (half), W_O left out, only one of
    Q K^T and A V counted, the attention term multiplied by h or computed with
    d_k instead of d_model, the batch B left out, the attention term left out,
    and projections counted for one head only.
    """
    sizes = [(2, 10, 16, 4), (3, 7, 12, 3), (1, 24, 8, 2), (2, 5, 6, 6)]

    def f(B, L, d, h, proj=8, attn=4, batch=True):
        b = B if batch else 1
        return proj * b * L * d * d + attn * b * L * L * d

    mistakes = [
        ("you counted multiply-adds; a multiply-add is 2 FLOPs, so double it.",
         lambda B, L, d, h: f(B, L, d, h) // 2),
        ("you left out the output projection W_O: 4 projections of "
         "2·B·L·d_model² FLOPs each, not 3.",
         lambda B, L, d, h: f(B, L, d, h, proj=6)),
        ("you counted only one of the two attention products: Q K^T and A V "
         "each cost 2·B·L²·d_model.",
         lambda B, L, d, h: f(B, L, d, h, attn=2)),
        ("you multiplied the attention term by h: each head works in d_k = "
         "d_model/h dimensions, so h heads together cost 4·B·L²·d_model.",
         lambda B, L, d, h: f(B, L, d, h, attn=4 * h)),
        ("you used d_k for the attention term: that is one head; there are h "
         "of them, h·d_k = d_model.",
         lambda B, L, d, h: 8 * B * L * d * d + 4 * B * L * L * (d // h)),
        ("you left out the batch: every sequence of the B costs the same.",
         lambda B, L, d, h: f(B, L, d, h, batch=False)),
        ("you left out the attention products Q K^T and A V "
         "(4·B·L²·d_model).",
         lambda B, L, d, h: f(B, L, d, h, attn=0)),
        ("you counted the projections of one head (d_model × d_k); the h "
         "heads' blocks together make d_model × d_model matrices.",
         lambda B, L, d, h: 8 * B * L * d * (d // h) + 4 * B * L * L * d),
    ]
    got = []
    for size in sizes:
        value, err = _call(fn, *size)
        if err is not None:
            return err
        got.append(float(_number(value, "a number (of FLOPs)", "return")))
    want = [mha_flops(*s)["total"] for s in sizes]
    if got == want:
        return Verdict(True, "correct: 8·B·L·d_model² + 4·B·L²·d_model; h "
                             "cancels.")
    for message, wrong in mistakes:
        if got == [wrong(*s) for s in sizes]:
            return Verdict(False, message)
    B, L, d, h = sizes[0]
    return Verdict(False, f"for B={B}, L={L}, d_model={d}, h={h} you gave "
                          f"{got[0]:,.0f}; expected {want[0]:,.0f}. Count "
                          "2 FLOPs per multiply-add in the 4 projections and "
                          "in Q K^T and A V.")
