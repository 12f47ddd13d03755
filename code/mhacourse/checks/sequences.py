"""Chapters 13 to 16's checkers: masks in batches, positions,
cross-attention, the key/value cache (sequences as real models meet them)."""
from __future__ import annotations

import math

import torch

from ..batching import batch_mask
from ..positions import sinusoidal_positions
from ._verdict import Verdict, _call, _verdicts


def _as_bool_mask(got, B: int, L: int):
    """The learner's mask as (B, L, L) bool, or a Verdict saying why not."""
    if not isinstance(got, torch.Tensor):
        return None, Verdict(False, f"return a torch.Tensor; got {type(got).__name__}.")
    if got.dtype != torch.bool:
        return None, Verdict(False, f"return a boolean mask (True = blocked); got "
                                    f"dtype {got.dtype}.")
    if tuple(got.shape) == (B, 1, L, L):
        got = got[:, 0]
    if tuple(got.shape) != (B, L, L):
        return None, Verdict(False, f"the mask has shape {tuple(got.shape)}; expected "
                                    f"(B, 1, L, L) = {(B, 1, L, L)}: one (L, L) "
                                    "mask per sentence, broadcast over heads.")
    return got, None


@_verdicts
def check_batch_mask(fn) -> Verdict:
    """Check ``fn(lengths, L, causal) -> mask`` (B, 1, L, L), True = blocked:
    padding keys blocked, and with ``causal=True`` every later key too.

    Recognises: the opposite convention (True = allowed), padding applied to
    the queries (rows) instead of the keys (columns), an off-by-one length,
    a causal mask that blocks the past instead of the future, and a causal
    mask that forgets the padding (or the reverse).
    """
    lengths, L = torch.tensor([3, 5, 2]), 5
    B = len(lengths)
    for causal in (False, True):
        got, err = _call(fn, lengths.clone(), L, causal)
        if err is not None:
            return err
        got, err = _as_bool_mask(got, B, L)
        if err is not None:
            return err
        want = batch_mask(lengths, L, causal)[:, 0]  # (B, L, L)
        if torch.equal(got, want):
            continue
        i = torch.arange(L)[:, None]
        j = torch.arange(L)[None, :]
        pad_k = (j[None] >= lengths[:, None, None]).expand(B, L, L)  # keys
        pad_q = (i[None] >= lengths[:, None, None]).expand(B, L, L)  # queries
        fut = (j > i)[None].expand(B, L, L)  # later keys
        none = torch.zeros(B, L, L, dtype=torch.bool)
        what = "causal + padding" if causal else "padding"
        if torch.equal(got, ~want):
            return Verdict(False, f"{what}: your mask is inverted. In this course, "
                                  "as in nn.MultiheadAttention, True means "
                                  "blocked (F.scaled_dot_product_attention uses "
                                  "the opposite).")
        if torch.equal(got, pad_q | (fut if causal else none)):
            return Verdict(False, f"{what}: you blocked padded queries (rows); "
                                  "block padded keys (columns, the last axis), "
                                  "so no real token reads the padding.")
        for shift, word in ((1, "blocks one real token too many"),
                            (-1, "lets the first padding key through")):
            off = (j[None] >= (lengths - shift)[:, None, None]).expand(B, L, L)
            if torch.equal(got, off | (fut if causal else none)):
                return Verdict(False, f"{what}: off by one: your mask {word} "
                                      "(key j is padding when j >= n_b).")
        if causal and torch.equal(got, pad_k | (j < i)[None].expand(B, L, L)):
            return Verdict(False, "causal + padding: you blocked the past (j < i); "
                                  "block the future, keys j > i.")
        if causal and torch.equal(got, fut):
            return Verdict(False, "causal + padding: the causal part is right but "
                                  "the padding is missing: combine them with |.")
        if causal and torch.equal(got, pad_k):
            return Verdict(False, "causal + padding: the padding part is right but "
                                  "the causal part is missing (keys j > i).")
        if not causal and torch.equal(got, pad_k | fut):
            return Verdict(False, "with causal=False the mask must not block later "
                                  "keys: only the padding.")
        wrong = int((got != want).sum())
        return Verdict(False, f"{what}: {wrong} entries differ from the expected "
                              f"mask for lengths {lengths.tolist()}, L = {L}.")
    return Verdict(True, "correct: padding keys blocked in every sentence, and "
                         "with causal=True every later key as well.")


@_verdicts
def check_sinusoidal(fn) -> Verdict:
    """Check ``fn(L, d_model) -> (L, d_model)`` is the 2017 paper's table,
    ``PE[t, 2i] = sin(t / 10000^(2i/d))``, ``PE[t, 2i+1] = cos(...)``.

    Recognises: sin and cos swapped, the two halves laid side by side
    (``[sin | cos]``) instead of interleaved, the exponent ``i/d`` instead of
    ``2i/d``, a missing minus (frequencies growing with i), a wrong shape.
    """
    L, d = 12, 8
    got, err = _call(fn, L, d)
    if err is not None:
        return err
    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"return a torch.Tensor; got {type(got).__name__}.")
    if tuple(got.shape) != (L, d):
        return Verdict(False, f"the table has shape {tuple(got.shape)}; expected "
                              f"(L, d_model) = {(L, d)}: one row per position.")
    got = got.double()
    want = sinusoidal_positions(L, d, dtype=torch.float64)

    def close(x):
        return torch.allclose(got, x, atol=1e-5)

    if close(want):
        return Verdict(True, "correct: sin on the even coordinates, cos on the odd "
                             "ones, frequencies 1 / 10000^(2i/d_model).")
    t = torch.arange(L, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)[None]
    for expo, words in ((2 * i / d, None), (i / d, "the exponent is 2i/d_model "
                        "(i counts the pairs), not i/d_model"),
                        (-2 * i / d, "the frequencies must fall with i: divide t "
                         "by 10000^(2i/d_model), do not multiply")):
        a = t / 10000 ** expo  # (L, d/2)
        inter = torch.empty(L, d, dtype=torch.float64)
        inter[:, 0::2], inter[:, 1::2] = a.cos(), a.sin()
        if close(inter):
            return Verdict(False, "sin and cos are swapped: sin goes on the even "
                                  "coordinates 2i, cos on the odd ones 2i+1.")
        if close(torch.cat([a.sin(), a.cos()], -1)):
            return Verdict(False, "you put all the sines first and all the cosines "
                                  "after; the paper interleaves them: "
                                  "PE[:, 0::2] = sin, PE[:, 1::2] = cos.")
        if words:
            inter[:, 0::2], inter[:, 1::2] = a.sin(), a.cos()
            if close(inter):
                return Verdict(False, words + ".")
    err = float((got - want).abs().max())
    return Verdict(False, f"your table differs from the paper's by up to {err:.3g}; "
                          "row t, coordinate 2i should be sin(t / "
                          "10000^(2i/d_model)).")


@_verdicts
def check_cross_attention(fn) -> Verdict:
    """Check ``fn(Y, M, W_Q, W_K, W_V) -> (output, weights)`` is one head of
    cross-attention: queries from ``Y`` (L, d), keys and values from ``M``
    (S, d); weights (L, S) = softmax(Y W_Q (M W_K)^T / sqrt(d_k)).

    Recognises: queries taken from the memory (weights S x L), keys or values
    taken from the decoder side (self-attention), a missing 1/sqrt(d_k), and a
    causal mask where none belongs.
    """
    g = torch.Generator().manual_seed(0)
    L, S, d, d_k = 3, 5, 6, 4
    Y = torch.randn(L, d, generator=g, dtype=torch.float64)
    M = torch.randn(S, d, generator=g, dtype=torch.float64)
    W_Q, W_K, W_V = (torch.randn(d, d_k, generator=g, dtype=torch.float64)
                     for _ in range(3))
    got, err = _call(fn, Y, M, W_Q, W_K, W_V)
    if err is not None:
        return err
    if not (isinstance(got, tuple) and len(got) == 2
            and all(isinstance(t, torch.Tensor) for t in got)):
        return Verdict(False, "return a pair of tensors (output, weights).")
    out, A = (t.double() for t in got)
    if tuple(A.shape) == (S, L):
        return Verdict(False, f"the weights are (S, L) = {(S, L)}: your queries came "
                              "from the memory M. Queries come from the decoder "
                              "side Y, so the weights are (L, S): one row per "
                              "target token.")
    if tuple(A.shape) == (L, L):
        return Verdict(False, f"the weights are (L, L) = {(L, L)}: your keys came from "
                              "Y, which is self-attention. Keys and values come "
                              "from the memory M.")
    if tuple(A.shape) != (L, S):
        return Verdict(False, f"the weights have shape {tuple(A.shape)}; expected "
                              f"(L, S) = {(L, S)}.")
    Q, K, V = Y @ W_Q, M @ W_K, M @ W_V
    raw = Q @ K.T  # (L, S)
    want = torch.softmax(raw / math.sqrt(d_k), -1)
    if torch.allclose(A, torch.softmax(raw, -1), atol=1e-6):
        return Verdict(False, "divide the scores by sqrt(d_k) "
                              f"(= {math.sqrt(d_k):g} here) before the softmax.")
    blocked = torch.ones(L, S, dtype=torch.bool).triu(1)
    if torch.allclose(A, torch.softmax((raw / math.sqrt(d_k)).masked_fill(
            blocked, float("-inf")), -1), atol=1e-6):
        return Verdict(False, "you applied a causal mask: in cross-attention every "
                              "target token may read the whole source sentence; "
                              "the causal mask belongs to the decoder's "
                              "self-attention.")
    if not torch.allclose(A, want, atol=1e-6):
        gap = float((A - want).abs().max())
        return Verdict(False, "the weights differ from softmax(Y W_Q (M W_K)^T / "
                              f"sqrt(d_k)) by up to {gap:.3g}.")
    if tuple(out.shape) != (L, d_k):
        return Verdict(False, f"the output has shape {tuple(out.shape)}; expected "
                              f"(L, d_k) = {(L, d_k)}: weights @ (M W_V).")
    if not torch.allclose(out, A @ V, atol=1e-6):
        return Verdict(False, "the weights are right but the output is not "
                              "weights @ (M W_V): values come from the memory.")
    return Verdict(True, "correct: queries from the decoder, keys and values from "
                         "the encoder's output, weights (L, S).")


@_verdicts
def check_cached_step(fn) -> Verdict:
    """Check ``fn(q, k, v, K, V) -> (out, K_all, V_all)``: one decoding step of
    one head with a key/value cache. ``q``, ``k``, ``v`` (1, d) are the new
    token's; ``K``, ``V`` (t, d) the cache. The step appends ``k``, ``v`` and
    returns ``softmax(q K_all^T / sqrt(d)) V_all`` with ``K_all = [K; k]``.

    Recognises: attending before appending (the token cannot see itself),
    prepending instead of appending, forgetting to append the value, and a
    missing 1/sqrt(d).
    """
    g = torch.Generator().manual_seed(0)
    t, d = 5, 4
    K, V = (torch.randn(t, d, generator=g, dtype=torch.float64) for _ in range(2))
    q, k, v = (torch.randn(1, d, generator=g, dtype=torch.float64) for _ in range(3))
    got, err = _call(fn, q, k, v, K.clone(), V.clone())
    if err is not None:
        return err
    if not (isinstance(got, tuple) and len(got) == 3
            and all(isinstance(x, torch.Tensor) for x in got)):
        return Verdict(False, "return three tensors: (out, K_all, V_all).")
    out, K_all, V_all = (x.double() for x in got)
    if tuple(K_all.shape) != (t + 1, d):
        return Verdict(False, f"K_all has shape {tuple(K_all.shape)}; expected "
                              f"(t + 1, d) = {(t + 1, d)}: the cache plus the new key.")
    if torch.equal(K_all, torch.cat([k, K])):
        return Verdict(False, "you put the new key first; append it after the "
                              "cached ones, so that row j is still token j.")
    if not torch.equal(K_all, torch.cat([K, k])):
        return Verdict(False, "K_all should be the cached keys followed by the new "
                              "key, unchanged.")
    if tuple(V_all.shape) != (t + 1, d) or not torch.equal(V_all, torch.cat([V, v])):
        return Verdict(False, "append the new value to V as well: V_all = [V; v], "
                              f"shape {(t + 1, d)}.")
    want = torch.softmax(q @ K_all.T / math.sqrt(d), -1) @ V_all  # (1, d)
    before = torch.softmax(q @ K.T / math.sqrt(d), -1) @ V
    if tuple(out.shape) != (1, d):
        return Verdict(False, f"out has shape {tuple(out.shape)}; expected (1, d) = "
                              f"{(1, d)}: one row for the one new query.")
    if torch.allclose(out, before, atol=1e-9):
        return Verdict(False, "you attended to the cache before appending the new "
                              "key and value: the new token must see itself too "
                              "(under a causal mask, keys 0..t).")
    if torch.allclose(out, torch.softmax(q @ K_all.T, -1) @ V_all, atol=1e-9):
        return Verdict(False, f"divide the scores by sqrt(d) (= {math.sqrt(d):g}).")
    if not torch.allclose(out, want, atol=1e-9):
        return Verdict(False, "the output differs from softmax(q K_all^T / sqrt(d)) "
                              f"V_all by up to {float((out - want).abs().max()):.3g}.")
    return Verdict(True, "correct: the new key and value appended, and the new "
                         "query attends over all t + 1 tokens.")
