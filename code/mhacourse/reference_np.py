"""The same mathematics in plain NumPy, for readers who want no framework.

Each function mirrors its PyTorch twin (same name, same shapes, same mask
convention: boolean ``True`` = blocked) and the tests check they agree.
:func:`multi_head_attention` and :func:`multi_head_attention_loop` take the
same arguments as the PyTorch forms, ``(query, key, value, w, h, *,
attn_mask, key_padding_mask, ...)``, with arrays instead of tensors; the input
checks are the PyTorch ones, so bad input gets the same message.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

import numpy as np
import torch

from ._arrays import to_numpy
from ._validate import (
    BLOCKED_AT,
    HF_MASK_FIX,
    InputError,
    InputTypeError,
    check_heads,
    check_mask,
    check_ndim,
    check_no_blocked_rows,
    check_positional,
    check_positive_int,
    check_same_batching,
    describe,
    unbatched_padding_mask,
)
from .block import check_eps
from .masks import _check_size, combine_masks
from .masks import padding_mask as torch_padding_mask
from .multihead import MHAWeights as TorchWeights
from .multihead import _check_inputs


def _arr(name: str, x, min_ndim: int = 1,
         allow_nonfinite: bool = False) -> np.ndarray:
    """``x`` (an array, list or tensor of real numbers) as a float array with
    no NaN or inf (unless ``allow_nonfinite``), or raise
    :class:`~mhacourse.InputError`."""
    if isinstance(x, torch.Tensor):
        x = to_numpy(x, dtype=None)  # its own dtype; bfloat16 as float32
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
    if a.size and not allow_nonfinite and not np.isfinite(a).all():
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
    scores = to_numpy(scores) if not isinstance(scores, np.ndarray) else scores
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
    x = to_numpy(x, dtype=None) if not isinstance(x, np.ndarray) else x
    check_ndim("x", x.shape, 3, "(B, L, d_model)")
    B, L, d_model = x.shape
    d_k = check_heads(d_model, h)
    return x.reshape(B, L, h, d_k).transpose(0, 2, 1, 3)  # (B, h, L, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(B, h, L, d_k) -> (B, L, h*d_k)."""
    x = to_numpy(x, dtype=None) if not isinstance(x, np.ndarray) else x
    check_ndim("x", x.shape, 4, "(B, h, L, d_k)")
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, h * d_k)  # (B, L, d_model)


@dataclass
class MHAWeights:
    """:class:`mhacourse.MHAWeights` in NumPy: ``W_*`` (d_model, d_model)
    arrays acting as ``x @ W`` (``W_K``, ``W_V`` may be (d_model, h_kv*d_k)
    there, not here); ``b_*`` (d_model,) or ``None``. The functions below
    also take the PyTorch ``MHAWeights`` and read it as NumPy."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: np.ndarray | None = None
    b_K: np.ndarray | None = None
    b_V: np.ndarray | None = None
    b_O: np.ndarray | None = None


WEIGHT_NAMES = tuple(f.name for f in fields(MHAWeights))  # W_Q, ..., b_O


def _proj(x, W, b):
    """``x W + b``: (..., d_in) @ (d_in, d_out) -> (..., d_out)."""
    return x @ W if b is None else x @ W + b


def _cols(b, c: slice):
    """Head ``c``'s part of a bias (``None``: no bias)."""
    return None if b is None else b[c]


def _attend(Q, K, V, mask):
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` on checked arrays; ``mask``
    (B or 1, h or 1, L, S) bool (``True`` = blocked) or additive, or None."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, h, L, S)
    if mask is not None:
        scores = (np.where(mask, -np.inf, scores) if mask.dtype == bool
                  else scores + mask)  # (B, h, L, S)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)  # (B, h, L, S)
    return weights @ V, weights  # (B, h, L, d_k), (B, h, L, S)


def _mha_forms(fn):
    """Let a NumPy form take what its PyTorch twin takes: unbatched
    (tokens, d_model) input too, checked as :func:`_check_mha` does."""
    def wrapper(query, key, value, w, h, *extra, **kw):
        check_positional(fn.__name__, 5, 5 + len(extra))
        q, k, v, w, mask = _check_mha(query, key, value, w, h, kw.pop(
            "attn_mask", None), kw.pop("key_padding_mask", None),
            kw.get("allow_nonfinite", False))
        if q.ndim == 2:  # one sequence: add the batch axis, then drop it
            return tuple(r[0] for r in fn(q[None], k[None], v[None], w, h,
                                          mask=mask, **kw))
        return fn(q, k, v, w, h, mask=mask, **kw)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    sig = inspect.signature(fn)  # (query, key, value, w, h, *, mask, ...)
    params = list(sig.parameters.values())
    wrapper.__signature__ = sig.replace(parameters=[
        *params[:5],
        inspect.Parameter("attn_mask", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("key_padding_mask", inspect.Parameter.KEYWORD_ONLY,
                          default=None),
        *params[6:]])
    return wrapper


@_mha_forms
def multi_head_attention_loop(query, key, value, w, h: int, *, mask=None,
                              allow_nonfinite: bool = False):
    """h explicit heads: :func:`mhacourse.multi_head_attention_loop` in NumPy,
    same arguments (``query`` (B, L, d_model) or (L, d_model), ``key``,
    ``value`` (B, S, d_model), ``w`` an :class:`MHAWeights`, ``h``,
    ``attn_mask``, ``key_padding_mask``). Returns (output (B, L, d_model),
    weights (B, h, L, S))."""
    d_k = w.W_Q.shape[1] // h
    heads, weights = [], []
    for i in range(h):
        c = slice(i * d_k, (i + 1) * d_k)  # head i's columns
        Q_i = _proj(query, w.W_Q[:, c], _cols(w.b_Q, c))[:, None]  # (B, 1, L, d_k)
        K_i = _proj(key, w.W_K[:, c], _cols(w.b_K, c))[:, None]  # (B, 1, S, d_k)
        V_i = _proj(value, w.W_V[:, c], _cols(w.b_V, c))[:, None]
        m_i = None if mask is None else mask[:, min(i, mask.shape[1] - 1)][:, None]
        o, a = _attend(Q_i, K_i, V_i, m_i)  # (B, 1, L, d_k), (B, 1, L, S)
        heads.append(o[:, 0])
        weights.append(a[:, 0])
    concat = np.concatenate(heads, axis=-1)  # (B, L, d_model)
    return _proj(concat, w.W_O, w.b_O), np.stack(weights, axis=1)


@_mha_forms
def multi_head_attention(query, key, value, w, h: int, *, mask=None,
                         return_concat: bool = False,
                         allow_nonfinite: bool = False):
    """The batched form: :func:`mhacourse.multi_head_attention` in NumPy,
    same arguments and the same numbers. Returns (output (B, L, d_model),
    weights (B, h, L, S)), and concat (B, L, d_model) with
    ``return_concat=True``."""
    Q = split_heads(_proj(query, w.W_Q, w.b_Q), h)  # (B, h, L, d_k)
    K = split_heads(_proj(key, w.W_K, w.b_K), h)  # (B, h, S, d_k)
    V = split_heads(_proj(value, w.W_V, w.b_V), h)  # (B, h, S, d_k)
    heads, weights = _attend(Q, K, V, mask)  # (B, h, L, d_k), (B, h, L, S)
    concat = merge_heads(heads)  # (B, L, d_model)
    out = _proj(concat, w.W_O, w.b_O)  # (B, L, d_model)
    return (out, weights, concat) if return_concat else (out, weights)


def _check_mha(query, key, value, w, h, attn_mask, key_padding_mask,
               allow_nonfinite: bool):
    """Arrays for the NumPy forms, with the PyTorch forms' checks and
    messages (:func:`mhacourse.multihead._check_inputs`); the two masks
    merged by :func:`mhacourse.masks.combine_masks` into one (B or 1, h or 1,
    L, S) array or ``None``."""
    if not all(hasattr(w, k) for k in WEIGHT_NAMES):
        raise InputTypeError(
            f"w must be an MHAWeights (mhacourse.reference_np.MHAWeights of "
            f"arrays, or mc.random_weights(d_model, h)); got {describe(w)}.")
    arrays = {k: None if getattr(w, k) is None
              else _arr(f"w.{k}", getattr(w, k), allow_nonfinite=allow_nonfinite)
              for k in WEIGHT_NAMES}
    qkv = [_arr(n, t, allow_nonfinite=allow_nonfinite)
           for n, t in (("query", query), ("key", key), ("value", value))]
    # NumPy mixes dtypes freely: check in one (no copy when they agree)
    dtype = np.result_type(*qkv, *(a for a in arrays.values() if a is not None))

    def tensor(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=dtype))

    tw = TorchWeights(**{k: None if a is None else tensor(a)
                         for k, a in arrays.items()})  # its shape checks
    t = [tensor(a) for a in qkv]
    check_same_batching(*t)
    t3 = [a[None] if a.ndim == 2 else a for a in t]
    _check_inputs(*t3, tw, h, allow_nonfinite=True)  # finite: checked above
    B, L, S = t3[0].shape[0], t3[0].shape[1], t3[1].shape[1]
    kpm = key_padding_mask
    if t[0].ndim == 2 and kpm is not None:
        kpm = unbatched_padding_mask(_mask_tensor("key_padding_mask", kpm))
    mask = combine_masks(
        None if attn_mask is None else _mask_tensor("attn_mask", attn_mask),
        None if kpm is None else _mask_tensor("key_padding_mask", kpm),
        B, h, L, S)
    return (*qkv, MHAWeights(**arrays), None if mask is None else mask.numpy())


def _mask_tensor(name: str, mask) -> torch.Tensor:
    """A NumPy (or list) mask as a tensor for the shared checks."""
    if isinstance(mask, torch.Tensor):
        return mask
    try:
        return torch.as_tensor(np.asarray(mask))
    except (TypeError, ValueError, RuntimeError):
        raise InputTypeError(f"{name} must be an array of bools (True = "
                             f"blocked); got {describe(mask)}.") from None


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
    b_2, gamma_1, beta_1, gamma_2, beta_2 as NumPy arrays; ``mask`` is the
    self-attention's ``attn_mask`` ((L, L), ``True`` = blocked)."""
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

    w = MHAWeights(**{k: p[k] for k in attn_keys}, **bias_keys)

    def mha(z):
        return multi_head_attention(z, z, z, w, h, attn_mask=mask)[0]

    def ffn(z):
        return np.maximum(z @ p["W_1"] + p["b_1"], 0) @ p["W_2"] + p["b_2"]

    def ln(z, n):
        return layer_norm(z, p[f"gamma_{n}"], p[f"beta_{n}"])

    if pre_ln:
        X = X + mha(ln(X, 1))
        return X + ffn(ln(X, 2))
    X = ln(X + mha(X), 1)
    return ln(X + ffn(X), 2)
