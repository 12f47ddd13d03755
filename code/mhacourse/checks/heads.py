"""Chapters 2 and 3's checkers: splitting d_model into heads, the
parameter count, multi-head attention as a loop over heads."""
from __future__ import annotations

import math

import numpy as np
import torch

from .._validate import check_heads
from ..attention import softmax
from ..heads import merge_heads, split_heads
from ..multihead import MHAWeights, random_weights
from ._verdict import Verdict, _as_array, _call, _close, _number, _verdicts


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
    got = _as_array(got)
    want = _as_array(split_heads(x, h))
    if got.shape == (B, L, h, d_k):
        return Verdict(False, f"shape {got.shape} is (B, L, h, d_k): now move the "
                              "head axis forward with .transpose(1, 2).")
    if got.shape != want.shape:
        return Verdict(False, f"shape {got.shape}; expected (B, h, L, d_k) = {want.shape}.")
    if np.array_equal(got, _as_array(x.reshape(B, h, L, d_k))):
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



# --- Chapters 2 and 3: multi-head attention written as a loop over heads ---


def _mha_variants(X, w, h: int) -> dict:
    """The right multi-head attention and its usual mistakes, on (L, d_model)
    inputs, as ``name -> (output (L, d_model), weights (h, L, L))``."""

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
    out, A = (_as_array(t) for t in got)
    ref = {name: (_as_array(o), _as_array(a)) for name, (o, a) in _mha_variants(X, w, h).items()}
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
    got = _as_array(got)
    cols = slice(i * d_k, (i + 1) * d_k)
    want = _as_array(W[:, cols])
    if np.array_equal(got, want):
        return Verdict(True, f"correct: W^i is W[:, i*d_k:(i+1)*d_k], shape "
                             f"(d_model, d_k) = {want.shape}: all d_model rows, "
                             "so head i reads every input dimension.")
    if got.shape == (d_k, d_model) and np.array_equal(got, _as_array(W[cols, :])):
        return Verdict(False, "you took rows i*d_k:(i+1)*d_k, shape (d_k, d_model). "
                              "In X @ W the rows of W are INPUT dimensions and the "
                              "columns are OUTPUT dimensions; head i owns output "
                              "columns i*d_k:(i+1)*d_k, and keeps every row.")
    if np.array_equal(got, _as_array(W[cols, :].T)):
        return Verdict(False, "you took rows i*d_k:(i+1)*d_k and transposed them: "
                              "that is how head i is cut out of nn.Linear's weight "
                              "(stored as (out, in)). The course's W is (in, out): "
                              "take columns, W[:, i*d_k:(i+1)*d_k].")
    if got.shape == (d_k, d_k) and np.array_equal(got, _as_array(W[cols, cols])):
        return Verdict(False, "you cut the (d_k, d_k) diagonal block: that head "
                              "would read only input dimensions i*d_k:(i+1)*d_k "
                              "(the myth of this chapter). Keep all d_model rows.")
    for j in (i - 1, i + 1):
        if np.array_equal(got, _as_array(W[:, j * d_k:(j + 1) * d_k])):
            return Verdict(False, f"you returned head {j}'s columns, not head {i}'s: "
                                  "heads count from 0, head i starts at column "
                                  "i*d_k.")
    if np.array_equal(got, _as_array(W[:, i:i + d_k])):
        return Verdict(False, "your slice starts at column i; head i starts at "
                              "column i*d_k (there are d_k columns per head).")
    if got.shape != want.shape:
        return Verdict(False, f"shape {got.shape}; expected (d_model, d_k) = "
                              f"{want.shape}.")
    return Verdict(False, "right shape, wrong numbers: return W[:, i*d_k:(i+1)*d_k].")
