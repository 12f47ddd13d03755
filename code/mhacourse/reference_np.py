"""The same mathematics in plain NumPy, for readers who want no framework.

Each function mirrors its PyTorch twin (same name, same shapes, same mask
convention: boolean ``True`` = blocked) and the tests check they agree.
"""
from __future__ import annotations

import numpy as np
import torch

from ._validate import (
    BLOCKED_AT,
    HF_MASK_FIX,
    InputError,
    InputTypeError,
    check_heads,
    check_mask,
    check_ndim,
    check_no_blocked_rows,
    check_positive_int,
    describe,
)
from .block import check_eps
from .masks import _check_size
from .masks import padding_mask as torch_padding_mask


def _arr(name: str, x, min_ndim: int = 1) -> np.ndarray:
    """``x`` (an array, list or tensor of real numbers) as a float array with
    no NaN or inf, or raise :class:`~mhacourse.InputError`."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
    except ValueError:  # a ragged list
        raise InputError(f"{name} must be a rectangular array of numbers; got "
                         f"a ragged list ({describe(x)}).") from None
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number) \
            or np.issubdtype(a.dtype, np.complexfloating):
        raise InputTypeError(f"{name} must hold real numbers; got {describe(x)} "
                             f"(dtype {a.dtype}).")
    a = a.astype(np.float64) if not np.issubdtype(a.dtype, np.floating) else a
    if a.ndim < min_ndim:
        raise InputError(f"{name} needs at least {min_ndim} axes; got shape "
                         f"{a.shape}.")
    if a.size and not np.isfinite(a).all():
        raise InputError(f"{name} holds NaN or inf (first at index "
                         f"{tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])}"
                         "): the result would be NaN.")
    return a


def _mask(mask) -> np.ndarray:
    """A mask as NumPy: bool (True = blocked) or additive float; the same
    rules as the PyTorch functions (:func:`mhacourse._validate.check_mask`)."""
    if isinstance(mask, np.ndarray) or isinstance(mask, (list, tuple)):
        try:
            mask = torch.as_tensor(np.asarray(mask))
        except (TypeError, ValueError, RuntimeError):
            raise InputTypeError(f"mask must be an array of bools (True = "
                                 f"blocked); got {describe(mask)}.") from None
    if isinstance(mask, torch.Tensor) and mask.dtype not in (
            torch.bool, torch.float16, torch.float32, torch.float64):
        if mask.is_floating_point() is False and not mask.dtype.is_complex:
            raise InputError(f"mask is {str(mask.dtype).replace('torch.', '')}: "
                             f"{HF_MASK_FIX}.")
    return check_mask("mask", mask).numpy()


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last (key) axis; rows sum to 1. ``-inf`` (a blocked
    key) is allowed; NaN, +inf and a row of only ``-inf`` raise."""
    scores = np.asarray(scores, dtype=float) if not isinstance(
        scores, np.ndarray) else scores
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise InputError(f"scores needs at least one entry per row; got shape "
                         f"{scores.shape}.")
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise InputError("scores holds NaN or +inf: the softmax would be NaN. "
                         "Only -inf (a blocked key) is allowed.")
    check_no_blocked_rows(torch.as_tensor(np.isneginf(scores)),
                          what="scores: a row of only -inf")
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def causal_mask(L: int, S: int | None = None) -> np.ndarray:
    """(L, S) bool, ``True`` where key j is later than query i (blocked)."""

    L = check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
    _check_size(L, S)
    return np.arange(S)[None, :] > np.arange(L)[:, None]


def padding_mask(lengths, S: int) -> np.ndarray:
    """(B, S) bool, ``True`` on the padding after ``lengths[b]`` real tokens."""

    return torch_padding_mask(lengths, S).numpy()  # same checks, (B, S)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` -> ``(output, weights)``.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v), mask broadcastable
    to (..., L, S) with ``True`` = blocked.
    """
    Q, K, V = _arr("Q", Q, 2), _arr("K", K, 2), _arr("V", V, 2)
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise InputError(f"need Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v); "
                         f"got {Q.shape}, {K.shape}, {V.shape}.")
    if 0 in Q.shape or 0 in K.shape or 0 in V.shape:
        raise InputError("attention needs at least one query and one key (and "
                         f"non-empty axes); got Q {Q.shape}, K {K.shape} and V "
                         f"{V.shape}.")
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise InputError(f"Q, K and V must have leading axes that broadcast; "
                         f"got {Q.shape}, {K.shape}, {V.shape}.") from None
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., L, S)
    if mask is not None:
        mask = _mask(mask)
        try:
            mask = np.broadcast_to(mask, scores.shape)  # (..., L, S)
        except ValueError:
            raise InputError(
                f"mask must broadcast to the scores' shape {scores.shape} "
                f"(..., L, S), True = blocked; got shape {mask.shape}.") from None
        bl = mask if mask.dtype == bool else mask <= BLOCKED_AT  # (..., L, S)
        check_no_blocked_rows(torch.as_tensor(np.array(bl)))
        scores = (np.where(mask, -np.inf, scores) if mask.dtype == bool
                  else scores + mask)
    weights = softmax(scores)  # (..., L, S)
    return weights @ V, weights


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(B, L, d_model) -> (B, h, L, d_k)."""
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    check_ndim("x", x.shape, 3, "(B, L, d_model)")
    B, L, d_model = x.shape
    d_k = check_heads(d_model, h)
    return x.reshape(B, L, h, d_k).transpose(0, 2, 1, 3)  # (B, h, L, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(B, h, L, d_k) -> (B, L, h*d_k)."""
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    check_ndim("x", x.shape, 4, "(B, h, L, d_k)")
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, h * d_k)  # (B, L, d_model)


def _proj(x, W, b):
    return x @ W if b is None else x @ W + b


def _cols(b, c: slice):
    """Head ``c``'s part of a bias (``None``: no bias)."""
    return None if b is None else b[c]


def multi_head_attention_loop(X, W_Q, W_K, W_V, W_O, h, mask=None,
                              b_Q=None, b_K=None, b_V=None, b_O=None):
    """h explicit heads over self-attention input X (B, L, d_model).
    Returns (output (B, L, d_model), weights (B, h, L, L))."""
    X, W_Q, W_K, W_V, W_O, (b_Q, b_K, b_V, b_O) = _check_mha(
        X, W_Q, W_K, W_V, W_O, h, (b_Q, b_K, b_V, b_O))
    d_k = check_heads(W_Q.shape[1], h)
    heads, weights = [], []
    for i in range(h):
        c = slice(i * d_k, (i + 1) * d_k)  # head i's columns
        Q_i = _proj(X, W_Q[:, c], _cols(b_Q, c))  # (B, L, d_k)
        K_i = _proj(X, W_K[:, c], _cols(b_K, c))
        V_i = _proj(X, W_V[:, c], _cols(b_V, c))
        o, a = scaled_dot_product_attention(Q_i, K_i, V_i, mask)
        heads.append(o)
        weights.append(a)
    concat = np.concatenate(heads, axis=-1)  # (B, L, d_model)
    return _proj(concat, W_O, b_O), np.stack(weights, axis=1)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, mask=None,
                         b_Q=None, b_K=None, b_V=None, b_O=None):
    """Batched form over self-attention input X (B, L, d_model)."""
    X, W_Q, W_K, W_V, W_O, (b_Q, b_K, b_V, b_O) = _check_mha(
        X, W_Q, W_K, W_V, W_O, h, (b_Q, b_K, b_V, b_O))
    Q = split_heads(_proj(X, W_Q, b_Q), h)  # (B, h, L, d_k)
    K = split_heads(_proj(X, W_K, b_K), h)
    V = split_heads(_proj(X, W_V, b_V), h)
    if mask is not None:
        mask = _mask(mask)
        mask = mask[:, None] if mask.ndim == 3 else mask  # (B, 1, L, L)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)
    return _proj(merge_heads(heads), W_O, b_O), weights


def _check_mha(X, W_Q, W_K, W_V, W_O, h, biases):
    X = _arr("X", X)
    check_ndim("X", X.shape, 3, "(B, L, d_model)")
    if 0 in X.shape:
        raise InputError(f"X is empty (shape {X.shape}): attention needs at "
                         "least one sequence and one token.")
    d = X.shape[-1]
    Ws = []
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        W = _arr(name, W)
        if W.shape != (d, d):
            raise InputError(f"{name} must have shape (d_model, d_model) = "
                             f"{(d, d)} (X ends in d_model = {d}); got {W.shape}.")
        Ws.append(W)
    check_heads(d, h)
    bs = []
    for name, b in zip(("b_Q", "b_K", "b_V", "b_O"), biases):
        if b is not None:
            b = _arr(name, b)
            if b.shape != (d,):
                raise InputError(f"{name} must have shape ({d},); got {b.shape}.")
        bs.append(b)
    return (X, *Ws, bs)


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """Normalise over the last axis (biased variance), then scale and shift."""

    x, gamma, beta = _arr("x", x), _arr("gamma", gamma), _arr("beta", beta)
    check_eps(eps)
    if gamma.shape != x.shape[-1:] or beta.shape != x.shape[-1:]:
        raise InputError(f"gamma and beta must have shape {x.shape[-1:]}, one "
                         f"entry per feature of x; got {gamma.shape} and "
                         f"{beta.shape}.")
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def transformer_block(X, p: dict, h: int, pre_ln: bool = False, mask=None):
    """ReLU encoder block; ``p`` holds W_Q, W_K, W_V, W_O, b_*, W_1, b_1, W_2,
    b_2, gamma_1, beta_1, gamma_2, beta_2 as NumPy arrays."""
    attn_keys = ("W_Q", "W_K", "W_V", "W_O")
    need = attn_keys + ("W_1", "b_1", "W_2", "b_2", "gamma_1", "beta_1",
                        "gamma_2", "beta_2")
    if not isinstance(p, dict):
        raise InputTypeError(f"p must be a dict of NumPy arrays with keys "
                             f"{list(need)}; got {describe(p)}.")
    missing = [k for k in need if k not in p]
    if missing:
        raise InputError(f"p lacks {missing}; it needs {list(need)} (and "
                         "optionally b_Q, b_K, b_V, b_O).")
    bias_keys = {k: p.get(k) for k in ("b_Q", "b_K", "b_V", "b_O")}

    def mha(z):
        return multi_head_attention(z, *(p[k] for k in attn_keys), h, mask,
                                    **bias_keys)[0]

    def ffn(z):
        return np.maximum(z @ p["W_1"] + p["b_1"], 0) @ p["W_2"] + p["b_2"]

    def ln(z, n):
        return layer_norm(z, p[f"gamma_{n}"], p[f"beta_{n}"])

    if pre_ln:
        X = X + mha(ln(X, 1))
        return X + ffn(ln(X, 2))
    X = ln(X + mha(X), 1)
    return ln(X + ffn(X), 2)
