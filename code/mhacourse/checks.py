"""Checkers for the exercises: they say *what* is wrong, not just "incorrect".

Each ``check_*`` runs the learner's function on fixed inputs, compares it with
the package's answer and with the usual mistakes, and returns a
:class:`Verdict` whose message names the mistake. Pure computation: no
plotting, no widgets.
"""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import InputError, check_heads, check_positive_int
from .attention import scaled_dot_product_attention, softmax
from .heads import split_heads


@dataclass
class Verdict:
    ok: bool
    message: str

    def __repr__(self) -> str:  # shown as a cell's result
        return ("✅ " if self.ok else "❌ ") + self.message

    def __bool__(self) -> bool:
        return self.ok

    def _repr_html_(self) -> str:  # a wrapped, coloured line in notebooks and the site
        import html

        colour = "#0072b2" if self.ok else "#d55e00"
        return (f"<div style='border-left:4px solid {colour};padding:4px 8px;"
                f"white-space:normal'>{html.escape(repr(self))}</div>")


class _BadOutput(Exception):
    """The learner's result is not something the checker can compare (None,
    a string, a ragged list...); its message is the verdict."""


def _np(x) -> np.ndarray:
    """``x`` as a float64 array, or :class:`_BadOutput` saying what it is."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise _BadOutput(f"your function returned a complex tensor "
                             f"({x.dtype}); return real numbers.")
        return x.detach().cpu().double().numpy()
    if x is None:
        raise _BadOutput("your function returned None: did you forget "
                         "`return`?")
    if isinstance(x, (str, bytes)):
        raise _BadOutput(f"your function returned a string ({str(x)[:30]!r}); "
                         "return numbers (a tensor).")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, RuntimeError):
        if isinstance(x, (list, tuple)):
            lengths = {len(r) if isinstance(r, (list, tuple, np.ndarray,
                                                torch.Tensor)) else 0 for r in x}
            if len(lengths) > 1:
                raise _BadOutput(f"your function returned a ragged "
                                 f"{type(x).__name__} (rows of different "
                                 "lengths); return a tensor.") from None
        raise _BadOutput(f"your function returned {type(x).__name__}, which "
                         "is not an array of numbers; return a tensor.") from None
    return a


def _number(x, what: str = "a number", verb: str = "give"):
    """``x`` as a Python ``int`` or ``float`` when it is one number (an int,
    a float, a NumPy or torch scalar, a one-element array); else
    :class:`_BadOutput` saying what it is."""
    if isinstance(x, torch.Tensor) or isinstance(x, np.ndarray):
        if x.size == 1 if isinstance(x, np.ndarray) else x.numel() == 1:
            x = x.item()
        else:
            raise _BadOutput(f"{verb} {what}; got an array of shape "
                             f"{tuple(x.shape)}.")
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        fix = ""
        if isinstance(x, str):
            fix = " (a string: write the number without quotes)"
        elif x is None:
            fix = " (did you forget `return`, or to fill in the answer?)"
        raise _BadOutput(f"{verb} {what}; got {type(x).__name__}{fix}.")
    if isinstance(x, float) and not math.isfinite(x):
        raise _BadOutput(f"{verb} {what}; got {x}.")
    return x


def _verdicts(check):
    """Turn every problem with the learner's result into a :class:`Verdict`
    (never a crash). Bad arguments to the checker itself (``h = 0``) still
    raise :class:`~mhacourse.InputError`."""
    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except _BadOutput as e:
            return Verdict(False, str(e))
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - the learner's result, not a crash
            return Verdict(False, f"your result could not be checked "
                                  f"({type(e).__name__}: {e}); return what the "
                                  "exercise asks for.")
    return wrapper


def _close(a, b, tol=1e-6) -> bool:
    a, b = _np(a), _np(b)
    return a.shape == b.shape and bool(np.allclose(a, b, atol=tol, rtol=tol))


def _call(fn, *args):
    if not callable(fn):
        return None, Verdict(False, f"pass your function itself (its name, "
                                    f"without parentheses); got "
                                    f"{type(fn).__name__}.")
    try:
        return fn(*args), None
    except Exception as e:  # the learner's bug, reported in one line
        return None, Verdict(False, f"your function raised {type(e).__name__}: {e}")


@_verdicts
def check_attention(fn, as_numpy: bool = False) -> Verdict:
    """Check ``fn(Q, K, V) -> (output, weights)`` implements
    ``softmax(Q K^T / sqrt(d_k)) V``.

    Recognises: wrong return value, wrong shapes, softmax over the wrong axis,
    a missing or wrong scale (d_k instead of sqrt(d_k)), transposed weights.
    """
    g = torch.Generator().manual_seed(0)
    L, S, d_k, d_v = 3, 5, 16, 4  # all different, so shape mistakes show
    Q = 2 * torch.randn(L, d_k, generator=g, dtype=torch.float64)
    K = 2 * torch.randn(S, d_k, generator=g, dtype=torch.float64)
    V = torch.randn(S, d_v, generator=g, dtype=torch.float64)
    args = (Q.numpy(), K.numpy(), V.numpy()) if as_numpy else (Q, K, V)
    got, err = _call(fn, *args)
    if err is not None:
        return err
    if not (isinstance(got, tuple) and len(got) == 2):
        return Verdict(False, "return a pair (output, weights), as "
                              "nn.MultiheadAttention does.")
    out, w = (_np(t) for t in got)
    want_out, want_w = scaled_dot_product_attention(Q, K, V)
    raw = Q @ K.T
    if w.shape == (S, L):
        return Verdict(False, f"weights have shape {w.shape}; expected (L, S) = "
                              f"{(L, S)}: one row per query. Did you compute K Q^T?")
    if w.shape != (L, S):
        return Verdict(False, f"weights have shape {w.shape}; expected (L, S) = {(L, S)}.")
    if _close(w, torch.softmax(raw / math.sqrt(d_k), dim=0)):
        return Verdict(False, "softmax ran over the query axis (dim=0): each "
                              "query's row must sum to 1, so take it over the "
                              "keys, the last axis (dim=-1).")
    if _close(w, softmax(raw)):
        return Verdict(False, "you forgot to divide the scores by sqrt(d_k) "
                              f"(= {math.sqrt(d_k):g} here) before the softmax.")
    if _close(w, softmax(raw / d_k)):
        return Verdict(False, f"you divided by d_k = {d_k}; divide by its square "
                              f"root, sqrt(d_k) = {math.sqrt(d_k):g}.")
    if not np.allclose(w.sum(-1), 1):
        return Verdict(False, "the rows of your weights do not sum to 1: apply "
                              "softmax to the scores.")
    if not _close(w, want_w):
        return Verdict(False, "the weights differ from softmax(Q K^T / sqrt(d_k)) "
                              f"by up to {np.abs(w - _np(want_w)).max():.3g}.")
    if out.shape != (L, d_v):
        return Verdict(False, f"output has shape {out.shape}; expected (L, d_v) = "
                              f"{(L, d_v)}: multiply the weights by V.")
    if not _close(out, want_out):
        return Verdict(False, "the weights are right but the output is not "
                              "weights @ V.")
    return Verdict(True, "correct: weights and output match softmax(Q K^T / "
                         "sqrt(d_k)) V.")


@_verdicts
def check_split_heads(fn) -> Verdict:
    """Check ``fn(x, h)`` turns (B, L, d_model) into (B, h, L, d_k) the right way.

    Recognises the classic bug ``x.reshape(B, h, L, d_k)``, which runs without
    error but mixes different tokens into one head.
    """
    B, L, h, d_k = 2, 3, 4, 5
    x = torch.arange(B * L * h * d_k, dtype=torch.float64).reshape(B, L, h * d_k)
    got, err = _call(fn, x, h)
    if err is not None:
        return err
    got = _np(got)
    want = _np(split_heads(x, h))
    if got.shape == (B, L, h, d_k):
        return Verdict(False, f"shape {got.shape} is (B, L, h, d_k): now move the "
                              "head axis forward with .transpose(1, 2).")
    if got.shape != want.shape:
        return Verdict(False, f"shape {got.shape}; expected (B, h, L, d_k) = {want.shape}.")
    if np.array_equal(got, _np(x.reshape(B, h, L, d_k))):
        return Verdict(False, "reshaping straight to (B, h, L, d_k) puts pieces of "
                              "different tokens into one head (the shape is right, "
                              "the numbers are not). Reshape to (B, L, h, d_k), "
                              "then transpose(1, 2).")
    if not np.array_equal(got, want):
        return Verdict(False, "right shape, wrong numbers: head i must hold "
                              "columns i*d_k:(i+1)*d_k of every token.")
    return Verdict(True, "correct: head i holds columns i*d_k:(i+1)*d_k of every token.")


@_verdicts
def check_param_count(answer: int, d_model: int, h: int, bias: bool = True) -> Verdict:
    """Check a learner's parameter count for one multi-head attention layer.

    ``answer`` may be an int, a float, or a NumPy or torch scalar."""
    check_heads(d_model, h)
    d_model, h = int(d_model), int(h)
    answer = _number(answer, "a number of parameters")
    want = 4 * d_model * d_model + (4 * d_model if bias else 0)
    if answer == want:
        return Verdict(True, f"correct: 4·d_model² {'+ 4·d_model ' if bias else ''}"
                             f"= {want:,}, whatever h is.")
    if answer == 4 * d_model * d_model and bias:
        return Verdict(False, "you left out the 4 bias vectors of d_model each.")
    if answer == 3 * d_model * d_model + (3 * d_model if bias else 0):
        return Verdict(False, "you left out W_O (d_model × d_model) and its bias.")
    d_k = d_model // h
    if answer in (4 * d_model * d_k, 4 * d_model * d_k + 4 * d_k):
        return Verdict(False, "that is one head's share: there are h heads, and "
                              "together their W_Q^i make one d_model × d_model matrix.")
    return Verdict(False, f"not {answer:,}: count W_Q, W_K, W_V, W_O "
                          "(d_model × d_model each) and their biases.")


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
    from .heads import merge_heads as _merge

    for B, h, L, d_k in ((2, 3, 4, 5), (1, 4, 2, 3)):
        x = torch.arange(B * h * L * d_k, dtype=torch.float64)
        x = x.reshape(B, h, L, d_k)  # every entry different: mix-ups show
        got, err = _call(fn, x.clone())
        if err is not None:
            return err
        got = _np(got)
        want = _np(_merge(x))
        if got.shape == (B, L, h, d_k):
            return Verdict(False, f"shape {got.shape} is (B, L, h, d_k): the "
                                  "heads are side by side but not joined; "
                                  "reshape to (B, L, h*d_k).")
        if got.shape != want.shape:
            return Verdict(False, f"shape {got.shape}; expected (B, L, h*d_k) "
                                  f"= {want.shape}.")
        if np.array_equal(got, _np(x.reshape(B, L, h * d_k))):
            return Verdict(False, "reshaping (B, h, L, d_k) straight to (B, L, "
                                  "h*d_k) gives the right shape but puts pieces "
                                  "of different tokens in one row. Transpose "
                                  "to (B, L, h, d_k) first: .transpose(1, 2).")
        if np.array_equal(got, _np(x.permute(0, 2, 3, 1).reshape(B, L, -1))):
            return Verdict(False, "the heads are interleaved (column j*h + i "
                                  "holds coordinate j of head i). Concatenation "
                                  "keeps each head's d_k numbers together: "
                                  "head i fills columns i*d_k:(i+1)*d_k.")
        if np.array_equal(got, _np(_merge(x.flip(1)))):
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
    from .multihead import output_projection

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
    got = _np(got)
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
    out_cols = _np(output_projection(concat, W_O, b_O)).copy()
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


def mha_flops(B: int, L: int, d_model: int, h: int = 1) -> dict:
    """FLOPs of the matrix products of one self-attention forward pass,
    2 per multiply-add (as ``torch.utils.flop_counter`` counts them).

    ``projections``: X W_Q, X W_K, X W_V, Concat W_O: ``4 * 2 B L d_model^2``
    ``attention``: Q K^T and A V, all heads: ``2 * 2 B L^2 d_model``
    (h heads of width d_k = d_model / h, so ``h`` cancels). The softmax,
    the scaling and the biases (lower order) are not counted.
    """
    for name, v in (("B", B), ("L", L)):
        check_positive_int(name, v)
    check_heads(d_model, h)
    proj = 4 * 2 * B * L * d_model * d_model
    attn = 2 * 2 * B * L * L * d_model
    return {"projections": proj, "attention": attn, "total": proj + attn}


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


# --- Chapters 2 and 3: multi-head attention written as a loop over heads ---


def _mha_variants(X, w, h: int) -> dict:
    """The right multi-head attention and its usual mistakes, on (L, d_model)
    inputs, as ``name -> (output (L, d_model), weights (h, L, L))``."""
    from .heads import merge_heads, split_heads

    L, d_model = X.shape
    d_k = d_model // h

    def heads_of(M):                       # (L, d_model) -> (h, L, d_k)
        return split_heads(M[None], h)[0]

    def attend(Q, K, V, scale):            # (h, L, d_k) each
        A = softmax(Q @ K.transpose(-2, -1) / scale)  # (h, L, L)
        return A @ V, A                    # (h, L, d_k), (h, L, L)

    def finish(heads, A, W_O=w.W_O):       # heads (h, L, d_k)
        concat = merge_heads(heads[None])[0]  # (L, d_model)
        return concat @ W_O, A

    Q, K, V = heads_of(X @ w.W_Q), heads_of(X @ w.W_K), heads_of(X @ w.W_V)
    heads, A = attend(Q, K, V, math.sqrt(d_k))
    out = {"right": finish(heads, A)}
    out["sqrt_d_model"] = finish(*attend(Q, K, V, math.sqrt(d_model)))
    out["no_W_O"] = (merge_heads(heads[None])[0], A)
    out["stacked"] = (heads.reshape(L, d_model) @ w.W_O, A)
    # "each head reads only its own slice of the input" (the myth of chapter 2)
    sl = [slice(i * d_k, (i + 1) * d_k) for i in range(h)]
    Qs, Ks, Vs = (torch.stack([X[:, s] @ W[s, s] for s in sl])
                  for W in (w.W_Q, w.W_K, w.W_V))      # (h, L, d_k)
    out["own_slice"] = finish(*attend(Qs, Ks, Vs, math.sqrt(d_k)))
    # head i's matrix taken as rows i*d_k:(i+1)*d_k, transposed (nn.Linear layout)
    Qr, Kr, Vr = (torch.stack([X @ W[s, :].T for s in sl])
                  for W in (w.W_Q, w.W_K, w.W_V))      # (h, L, d_k)
    out["rows"] = finish(*attend(Qr, Kr, Vr, math.sqrt(d_k)))
    return out


@_verdicts
def check_multi_head(fn) -> Verdict:
    """Check ``fn(X, w, h) -> (output, weights)`` is multi-head attention
    written as a loop over heads: ``X`` (L, d_model), ``w`` an
    :class:`~mhacourse.multihead.MHAWeights` **without biases**, returning
    ``output`` (L, d_model) and the per-head ``weights`` (h, L, L).

    Recognises: scaling by sqrt(d_model) instead of sqrt(d_k); heads that
    read only their own slice of the input; head matrices taken as rows
    instead of columns of W_Q; weights averaged over heads; a missing W_O;
    heads stacked instead of concatenated.
    """
    from .multihead import MHAWeights, random_weights

    L, d_model, h = 5, 12, 3               # all different, so shape mistakes show
    d_k = d_model // h
    r = random_weights(d_model, h, bias=False, seed=7, dtype=torch.float64)
    w = MHAWeights(*(2 * t for t in (r.W_Q, r.W_K, r.W_V)), r.W_O)  # peakier
    X = torch.randn(L, d_model, generator=torch.Generator().manual_seed(3),
                    dtype=torch.float64)
    got, err = _call(fn, X, w, h)
    if err is not None:
        return err
    if not (isinstance(got, tuple) and len(got) == 2):
        return Verdict(False, "return a pair (output, weights), as "
                              "nn.MultiheadAttention does.")
    out, A = (_np(t) for t in got)
    ref = {name: (_np(o), _np(a)) for name, (o, a) in _mha_variants(X, w, h).items()}
    want_out, want_A = ref["right"]
    if A.shape == (L, L):
        if np.allclose(A, want_A.mean(0)):
            return Verdict(False, "your weights are the average over heads (what "
                                  "nn.MultiheadAttention returns by default, "
                                  "average_attn_weights=True); return every head's "
                                  f"weights, shape (h, L, L) = {(h, L, L)}.")
        return Verdict(False, f"weights have shape {A.shape}; expected one (L, L) "
                              f"matrix per head, (h, L, L) = {(h, L, L)}.")
    if A.shape != (h, L, L):
        return Verdict(False, f"weights have shape {A.shape}; expected (h, L, L) = "
                              f"{(h, L, L)}: stack the heads' weights on axis 0.")
    mistakes = {
        "sqrt_d_model": "you scaled the scores by sqrt(d_model) = "
                        f"{math.sqrt(d_model):g}; each head divides by the width "
                        f"of its own queries, sqrt(d_k) = {math.sqrt(d_k):g}.",
        "own_slice": "each of your heads reads only its own slice of the input "
                     "(X[:, i*d_k:(i+1)*d_k]): that is the myth of chapter 2. "
                     "Head i's W_Q^i is W_Q[:, i*d_k:(i+1)*d_k], shape "
                     "(d_model, d_k): it multiplies ALL of X.",
        "rows": "you took head i's matrix as rows i*d_k:(i+1)*d_k of W_Q "
                "(transposed): that is nn.Linear's layout. In the course's "
                "x @ W layout head i owns COLUMNS: W_Q[:, i*d_k:(i+1)*d_k].",
    }
    for name, message in mistakes.items():
        if _close(A, ref[name][1]) and not _close(A, want_A):
            return Verdict(False, message)
    if not _close(A, want_A):
        return Verdict(False, "the weights differ from softmax(Q_i K_i^T / "
                              f"sqrt(d_k)) by up to {np.abs(A - want_A).max():.3g}.")
    if out.shape != (L, d_model):
        return Verdict(False, f"output has shape {out.shape}; expected (L, d_model) "
                              f"= {(L, d_model)}: concatenate the heads on the "
                              "last axis, then multiply by W_O.")
    if _close(out, ref["no_W_O"][0]):
        return Verdict(False, "the weights are right and so is the concatenation, "
                              "but you forgot the output projection: multiply "
                              "it by W_O.")
    if _close(out, ref["stacked"][0]):
        return Verdict(False, "the heads were stacked (h, L, d_k) and reshaped "
                              "to (L, d_model), which mixes tokens; concatenate "
                              "along the last axis: torch.cat(heads, dim=-1).")
    if not _close(out, want_out):
        return Verdict(False, "the weights are right but the output is not "
                              "Concat(head_1, ..., head_h) @ W_O.")
    return Verdict(True, "correct: every head reads all of X through its own "
                         "columns of W_Q, W_K, W_V, and the concatenated heads "
                         "go through W_O.")


@_verdicts
def check_head_weights(fn) -> Verdict:
    """Check ``fn(W, i, h)`` returns head ``i``'s block ``W^i`` (counting from 0)
    of a (d_model, d_model) projection ``W`` used as ``X @ W``: its columns
    ``i*d_k:(i+1)*d_k``, shape (d_model, d_k).

    Recognises: rows instead of columns (a head that would read only its own
    slice of the input), rows transposed (nn.Linear's layout), the
    neighbouring head (off by one), a slice d_k wide taken at ``i`` instead
    of ``i*d_k``, and a square (d_k, d_k) diagonal block.
    """
    d_model, h, i = 12, 3, 1
    d_k = d_model // h
    W = torch.arange(d_model * d_model, dtype=torch.float64).reshape(d_model, d_model)
    got, err = _call(fn, W.clone(), i, h)
    if err is not None:
        return err
    if got is None:
        return Verdict(False, "your function returned None: return the block.")
    got = _np(got)
    cols = slice(i * d_k, (i + 1) * d_k)
    want = _np(W[:, cols])
    if np.array_equal(got, want):
        return Verdict(True, f"correct: W^i is W[:, i*d_k:(i+1)*d_k], shape "
                             f"(d_model, d_k) = {want.shape}: all d_model rows, "
                             "so head i reads every input dimension.")
    if got.shape == (d_k, d_model) and np.array_equal(got, _np(W[cols, :])):
        return Verdict(False, "you took rows i*d_k:(i+1)*d_k, shape (d_k, d_model). "
                              "In X @ W the rows of W are INPUT dimensions and the "
                              "columns are OUTPUT dimensions; head i owns output "
                              "columns i*d_k:(i+1)*d_k, and keeps every row.")
    if np.array_equal(got, _np(W[cols, :].T)):
        return Verdict(False, "you took rows i*d_k:(i+1)*d_k and transposed them: "
                              "that is how head i is cut out of nn.Linear's weight "
                              "(stored as (out, in)). The course's W is (in, out): "
                              "take columns, W[:, i*d_k:(i+1)*d_k].")
    if got.shape == (d_k, d_k) and np.array_equal(got, _np(W[cols, cols])):
        return Verdict(False, "you cut the (d_k, d_k) diagonal block: that head "
                              "would read only input dimensions i*d_k:(i+1)*d_k "
                              "(the myth of this chapter). Keep all d_model rows.")
    for j in (i - 1, i + 1):
        if np.array_equal(got, _np(W[:, j * d_k:(j + 1) * d_k])):
            return Verdict(False, f"you returned head {j}'s columns, not head {i}'s: "
                                  "heads count from 0, head i starts at column "
                                  "i*d_k.")
    if np.array_equal(got, _np(W[:, i:i + d_k])):
        return Verdict(False, "your slice starts at column i; head i starts at "
                              "column i*d_k (there are d_k columns per head).")
    if got.shape != want.shape:
        return Verdict(False, f"shape {got.shape}; expected (d_model, d_k) = "
                              f"{want.shape}.")
    return Verdict(False, "right shape, wrong numbers: return W[:, i*d_k:(i+1)*d_k].")


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
    from .block import layer_norm

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
    got_np = _np(got)
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
    return Verdict(False, "not LayerNorm: compute mean and biased variance over "
                          "the last axis, then gamma * (x - mean) / sqrt(var + eps)"
                          f" + beta (largest difference "
                          f"{np.abs(got_np - _np(layer_norm(x, gamma, beta, eps))).max():.3g}).")


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
    from .block import TransformerBlock

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
        diff = np.abs(_np(got) - _np(want)).max()
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
    from .masks import causal_mask

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


# --- Chapter 4: statistics of a head's attention ------------------------------

def _ch04_attention(h: int = 3, L: int = 7) -> torch.Tensor:
    """Fixed (h, L, L) attention weights, rows summing to 1, with no symmetry
    (so the diagonal, the sub- and the super-diagonal all differ)."""
    g = torch.Generator().manual_seed(4)
    scores = 2.0 * torch.randn(h, L, L, generator=g, dtype=torch.float64)
    return torch.softmax(scores, dim=-1)  # (h, L, L)


def _learner_array(fn, arg, wanted: str):
    """Run a learner's ``fn(arg)`` and return ``(array, None)``, or
    ``(None, Verdict)`` when it raised, returned None or returned no array
    (``wanted`` says what it should return)."""
    got, err = _call(fn, arg)
    if err is not None:  # a Verdict is falsy when not ok: test for None
        return None, err
    if got is None:
        return None, Verdict(False, "your function returned None: did you forget "
                                    "`return`?")
    try:
        return _np(got), None
    except _BadOutput as e:
        return None, Verdict(False, f"return {wanted}; got {type(got).__name__}: "
                                    f"{e}")


@_verdicts
def check_previous_token_score(fn) -> Verdict:
    """Check ``fn(A) -> (h,)``: each head's mean attention to the previous
    token, ``mean over q = 1..L-1 of A[i, q, q-1]``, for ``A`` (h, L, L).

    Recognises: the diagonal (attention to itself) or the super-diagonal (the
    next token) instead of the sub-diagonal; dividing by L instead of L - 1;
    a wrap-around (``torch.roll``) that gives query 0 the last key as its
    "previous" token; per-query values not averaged; an average over keys
    (``A.mean(-1)``, always 1/L) or over queries for every key
    (``A.mean(-2)``); an average over the heads as well.
    """
    h, L = 3, 7
    A = _ch04_attention(h, L)
    g, err = _learner_array(fn, A.clone(), f"a tensor of {h} numbers, one per head")
    if err is not None:
        return err
    sub = torch.diagonal(A, offset=-1, dim1=-2, dim2=-1)  # (h, L-1): A[q, q-1]
    want = sub.mean(-1)  # (h,)
    if g.shape == (h, L - 1) and _close(g, sub):
        return Verdict(False, f"these are the {L - 1} per-query weights A[q, q-1] "
                              "of each head; now average them over the queries "
                              "(.mean(-1)) to get one number per head.")
    if g.shape == (h, L) and _close(g, A.mean(-1)):
        return Verdict(False, f"you averaged each row over the keys: a row sums "
                              f"to 1, so that is 1/L = {1 / L:.3f} for every query "
                              "whatever the head does. Take A[q, q-1] from each "
                              "row, then average over the queries.")
    if g.shape == (h, L) and _close(g, A.mean(-2)):
        return Verdict(False, "you averaged every key's column over the queries: "
                              "that is how much attention each key receives. "
                              "Take the sub-diagonal A[q, q-1] first.")
    if g.shape == (L - 1,) and _close(g, sub.mean(0)):
        return Verdict(False, "you averaged over the heads: keep one number per "
                              "head and average over the queries instead.")
    if g.size == 1 and _close(g.reshape(()), want.mean()):
        return Verdict(False, f"one number for all heads; return {h}, one per "
                              "head (average over the queries only).")
    if g.shape != (h,):
        return Verdict(False, f"shape {g.shape}; expected ({h},): one number per "
                              "head.")
    mistakes = [
        (torch.diagonal(A, 0, -2, -1).mean(-1),
         "that is the main diagonal, A[q, q]: attention to the token itself. "
         "The previous token is one step below it: "
         "torch.diagonal(A, offset=-1, dim1=-2, dim2=-1)."),
        (torch.diagonal(A, 1, -2, -1).mean(-1),
         "that is the diagonal above the main one, A[q, q+1]: attention to the "
         "NEXT token (or the transposed matrix). Rows are queries, so take "
         "offset=-1."),
        (sub.sum(-1) / L,
         f"right weights, wrong count: only the {L - 1} queries q = 1..L-1 have a "
         f"previous token, so divide by L - 1 = {L - 1}, not L = {L}."),
        (torch.stack([A[:, q, (q - 1) % L] for q in range(L)], -1).mean(-1),
         "query 0 has no previous token, but your index wrapped around (as "
         "torch.roll does) to the last key. Average over q = 1..L-1 only."),
    ]
    for value, msg in mistakes:
        if _close(g, value):
            return Verdict(False, msg)
    if _close(g, want):
        return Verdict(True, "correct: mean over q = 1..L-1 of A[q, q-1], one "
                             "number per head: "
                             + ", ".join(f"{x:.3f}" for x in want.tolist()) + ".")
    return Verdict(False, "not the mean of A[q, q-1] over the queries q = 1..L-1; "
                          f"expected {[round(x, 3) for x in want.tolist()]}, got "
                          f"{[round(float(x), 3) for x in g.ravel()]}.")


def _ch04_entropy_attention() -> torch.Tensor:
    """(3, L, L) weights: a one-hot previous-token head (exact zeros), a
    random head and a uniform head."""
    L = 6
    onehot = torch.zeros(L, L, dtype=torch.float64)
    onehot[0, 0] = 1.0
    onehot[torch.arange(1, L), torch.arange(L - 1)] = 1.0
    g = torch.Generator().manual_seed(5)
    rand = torch.softmax(2.0 * torch.randn(L, L, generator=g, dtype=torch.float64), -1)
    uniform = torch.full((L, L), 1.0 / L, dtype=torch.float64)
    return torch.stack([onehot, rand, uniform])  # (3, L, L)


@_verdicts
def check_row_entropy(fn) -> Verdict:
    """Check ``fn(A) -> (h, L)``: every row's entropy divided by that of
    uniform attention, ``-sum_k A[q, k] ln A[q, k] / ln L``, for ``A``
    (h, L, L). It is 0 for a one-hot row and 1 for a uniform one.

    Recognises: ``0 * log 0`` giving NaN, a missing minus sign, no
    normalisation (nats), dividing by L instead of ln L, log base 2 or 10
    in the numerator only, the entropy of the columns (over queries), and
    the mean over rows instead of one value per row.
    """
    A = _ch04_entropy_attention()
    h, L, _ = A.shape
    g, err = _learner_array(fn, A.clone(), f"a ({h}, {L}) tensor")
    if err is not None:
        return err
    H = -torch.xlogy(A, A).sum(-1)  # (h, L) in nats
    want = H / math.log(L)
    if np.isnan(g).any():
        return Verdict(False, "NaN: a weight of exactly 0 gives 0 * log(0) = 0 * "
                              "(-inf) = NaN. By convention 0 ln 0 = 0: use "
                              "torch.xlogy(A, A), or A * torch.log(A.clamp_min("
                              "1e-12)).")
    if g.shape in ((h,), (L,)) and (_close(g, want.mean(-1)) or _close(g, want.mean(0))):
        return Verdict(False, f"you averaged; return one value per row, shape "
                              f"({h}, {L}).")
    if g.shape != (h, L):
        return Verdict(False, f"shape {g.shape}; expected (h, L) = ({h}, {L}): one "
                              "value per query row.")
    Hcol = -torch.xlogy(A, A).sum(-2)  # (h, L): over the queries
    mistakes = [
        (-want, "every value is negative: entropy is MINUS the sum of p ln p "
                "(ln p <= 0, so -p ln p >= 0)."),
        (H, f"that is the entropy in nats; divide by ln L = {math.log(L):.3f}, the "
            "entropy of uniform attention over L keys, so a uniform row scores 1."),
        (H / L, f"divide by ln L = {math.log(L):.3f}, not by L = {L}: uniform "
                "attention over L keys has entropy ln L."),
        (H / math.log(2) / math.log(L),
         "log base 2 in the entropy but ln L below it: use the same base in both "
         "(the ratio does not depend on the base)."),
        (H / math.log(10) / math.log(L),
         "log base 10 in the entropy but ln L below it: use the same base in both."),
        (Hcol / math.log(L),
         "that is the entropy of each column (a key, over the queries). A row "
         "(a query's weights over the keys, summing to 1) is the distribution: "
         "sum over the last axis."),
    ]
    for value, msg in mistakes:
        if _close(g, value):
            return Verdict(False, msg)
    if _close(g, want):
        return Verdict(True, "correct: -sum_k A ln A / ln L per row; the one-hot "
                             "head scores 0, the uniform head 1.")
    return Verdict(False, "not -sum_k A[q, k] ln A[q, k] / ln L for every row; "
                          f"largest difference {np.abs(g - _np(want)).max():.3g}.")


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
    from .multihead import MHAWeights, random_weights

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
    out = _np(got)
    ref = {k: _np(v) for k, v in _ch09_batched_variants(X, w, h).items()}
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
        from torch.utils._python_dispatch import TorchDispatchMode

        class _Shapes(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if isinstance(out, torch.Tensor):
                    shapes.append(tuple(out.shape[-2:]))
                return out
        recorder = _Shapes()
    except ImportError:  # pragma: no cover - older PyTorch: skip that check
        import contextlib
        recorder = contextlib.nullcontext()
    with recorder:
        got, err = _call(fn, Q, K, V, block)
    if err is not None:
        return err
    out = _np(got)
    if out.shape != (L, d_v):
        return Verdict(False, f"output has shape {out.shape}; expected "
                              f"(L, d_v) = {(L, d_v)}.")
    if np.isnan(out).any() or np.isinf(out).any():
        return Verdict(False, "the output has NaN or inf: subtract the running "
                              "max before exp, and start it at -inf.")
    if _close(out, want):
        big, err = _call(fn, 300 * Q, K, V, block)     # scores in the 1000s
        if err is None:
            b = _np(big)
            want_big = _np(scaled_dot_product_attention(300 * Q, K, V)[0])
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
                          f"difference {np.abs(out - _np(want)).max():.3g}.")


# --- chapter 8: how many heads? ------------------------------------------------

#: (L, d_model, h) cases for :func:`check_score_rank`; chosen so that every
#: formula it recognises gives a different list of answers.
_SCORE_RANK_CASES = ((16, 64, 64), (16, 64, 2), (512, 768, 12), (6, 32, 4),
                     (100, 64, 8))


def score_rank_bound(L: int, d_model: int, h: int) -> int:
    """Largest rank of one head's (L, L) score matrix ``Q_i K_i^T / sqrt(d_k)``
    when ``h`` heads share ``d_model``: ``min(L, d_k)``, ``d_k = d_model // h``
    (``Q_i`` and ``K_i`` are (L, d_k); Bhojanapalli et al. 2020)."""
    return min(L, d_model // h)


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
