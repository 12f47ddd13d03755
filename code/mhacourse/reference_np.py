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

from ._arrays import to_numpy
from ._errors import (
    BLOCK_PARAMS,
    BLOCKED_AT,
    InputError,
    InputTypeError,
    check_eps,
    check_float_mask_values,
    check_heads,
    check_lengths,
    check_mask_dtype,
    check_mask_shapes,
    check_mask_size,
    check_ndim,
    check_positional,
    check_positive_int,
    check_same_batching,
    describe,
    is_tensor,
    refuse_blocked_rows,
)


def _check_array(name: str, x, min_ndim: int = 1,
                 allow_nonfinite: bool = False) -> np.ndarray:
    """``x`` (an array, list or tensor of real numbers) as a float array with
    no NaN or inf (unless ``allow_nonfinite``), or raise
    :class:`~mhacourse.InputError`."""
    if is_tensor(x):
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


def _mask(mask, name: str = "mask") -> np.ndarray:
    """A mask as NumPy: bool (True = blocked) or additive float; the rules
    of the PyTorch functions (:func:`mhacourse._validate.check_mask`), from
    the same checks (:mod:`mhacourse._errors`)."""
    try:
        m = to_numpy(mask, dtype=None)
    except (TypeError, ValueError):
        m = None
    if m is None or m.dtype.kind not in "biuf":
        raise InputTypeError(f"{name} must be an array of bools (True = "
                             f"blocked); got {describe(mask)}.")
    if m.dtype != bool:
        check_mask_dtype(name, str(m.dtype), m.dtype.kind == "f")
        check_float_mask_values(name, m, bool(np.isnan(m).any())
                                or bool(np.isposinf(m).any()))
    return m


def _refuse_blocked_rows(blocked: np.ndarray, what: str = "the mask") -> None:
    """:func:`mhacourse.masks.check_no_blocked_rows` for a NumPy bool array
    (..., L, S), ``True`` = blocked."""
    full = blocked.all(axis=-1)  # (..., L)
    where = [tuple(int(i) for i in ix) for ix in np.argwhere(full)[:3]]
    refuse_blocked_rows(where, int(full.sum()), what)


def _blocked(mask: np.ndarray) -> np.ndarray:
    return mask if mask.dtype == bool else mask <= BLOCKED_AT


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last (key) axis; rows sum to 1. ``-inf`` (a blocked
    key) is allowed; NaN, +inf and a row of only ``-inf`` raise."""
    scores = _check_array("scores", scores, 0, allow_nonfinite=True)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise InputError(f"scores needs at least one entry per row; got shape "
                         f"{scores.shape}.")
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise InputError("scores holds NaN or +inf: the softmax would be NaN. "
                         "Only -inf (a blocked key) is allowed.")
    _refuse_blocked_rows(np.isneginf(scores), what="scores: a row of only -inf")
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def causal_mask(L: int, S: int | None = None) -> np.ndarray:
    """(L, S) bool, ``True`` where key j is later than query i (blocked)."""

    L = check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
    check_mask_size(L, S)
    return np.arange(S)[None, :] > np.arange(L)[:, None]


def padding_mask(lengths, S: int) -> np.ndarray:
    """(B, S) bool, ``True`` on the padding after ``lengths[b]`` real tokens."""

    S = check_positive_int("S (key length)", S)
    lengths = np.array(check_lengths(lengths, S))  # (B,)
    return np.arange(S)[None, :] >= lengths[:, None]  # (B, S)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` -> ``(output, weights)``.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v), mask broadcastable
    to (..., L, S) with ``True`` = blocked.
    """
    Q, K, V = _check_array("Q", Q, 2), _check_array("K", K, 2), _check_array("V", V, 2)
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
        _refuse_blocked_rows(_blocked(mask))  # (..., L, S)
        scores = (np.where(mask, -np.inf, scores) if mask.dtype == bool
                  else scores + mask)
    weights = softmax(scores)  # (..., L, S)
    return weights @ V, weights


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(B, L, d_model) -> (B, h, L, d_k)."""
    x = _check_array("x", x, 3)
    check_ndim("x", x.shape, 3, "(B, L, d_model)")
    check_heads(x.shape[-1], h)
    return _split(x, h)


def _split(x: np.ndarray, h: int) -> np.ndarray:
    B, L, d_model = x.shape
    d_k = d_model // h
    return x.reshape(B, L, h, d_k).transpose(0, 2, 1, 3)  # (B, h, L, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(B, h, L, d_k) -> (B, L, h*d_k)."""
    x = _check_array("x", x, 4)
    check_ndim("x", x.shape, 4, "(B, h, L, d_k)")
    return _merge(x)


def _merge(x: np.ndarray) -> np.ndarray:
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
    Q = _split(_proj(query, w.W_Q, w.b_Q), h)  # (B, h, L, d_k)
    K = _split(_proj(key, w.W_K, w.b_K), h)  # (B, h, S, d_k)
    V = _split(_proj(value, w.W_V, w.b_V), h)  # (B, h, S, d_k)
    heads, weights = _attend(Q, K, V, mask)  # (B, h, L, d_k), (B, h, L, S)
    concat = _merge(heads)  # (B, L, d_model)
    out = _proj(concat, w.W_O, w.b_O)  # (B, L, d_model)
    return (out, weights, concat) if return_concat else (out, weights)


def _check_mha(query, key, value, w, h, attn_mask, key_padding_mask,
               allow_nonfinite: bool):
    """Arrays for the NumPy forms, with the PyTorch forms' checks
    (:func:`mhacourse.multihead._check_inputs`), in NumPy; the two masks
    merged as :func:`mhacourse.masks.combine_masks` does into one (B or 1,
    h or 1, L, S) array or ``None``."""
    if not all(hasattr(w, k) for k in WEIGHT_NAMES):
        raise InputTypeError(
            f"w must be an MHAWeights (mhacourse.reference_np.MHAWeights of "
            f"arrays, or mc.random_weights(d_model, h)); got {describe(w)}.")
    missing = [k for k in WEIGHT_NAMES if k[0] == "W" and getattr(w, k) is None]
    if missing:
        raise InputTypeError(f"w.{missing[0]} must be a (d_model, d_model) array; "
                             "got None (only the biases b_* may be None).")
    arrays = {k: None if getattr(w, k) is None
              else _check_array(f"w.{k}", getattr(w, k), allow_nonfinite=allow_nonfinite)
              for k in WEIGHT_NAMES}
    qkv = [_check_array(n, t, allow_nonfinite=allow_nonfinite)
           for n, t in (("query", query), ("key", key), ("value", value))]
    # NumPy mixes dtypes freely: compute in one (no copy when they agree)
    dtype = np.result_type(*qkv, *(a for a in arrays.values() if a is not None))
    arrays = {k: None if a is None else a.astype(dtype, copy=False)
              for k, a in arrays.items()}
    qkv = [a.astype(dtype, copy=False) for a in qkv]
    d = arrays["W_Q"].shape[0] if arrays["W_Q"].ndim == 2 else None
    for k, a in arrays.items():
        want = (d, d) if k.startswith("W") else (d,)
        if a is not None and (d is None or a.shape != want):
            raise InputError(f"w.{k} must have shape (d_model, d_model) for W_* "
                             f"and (d_model,) for b_* (d_model = {d}, from "
                             f"W_Q); got {a.shape}.")
    check_same_batching(*qkv)
    q, k, v = (a[None] if a.ndim == 2 else a for a in qkv)  # (B, tokens, d)
    check_heads(d, h)
    for name, a in (("query", q), ("key", k), ("value", v)):
        check_ndim(name, a.shape, 3, "(B, tokens, d_model)")
        if a.shape[-1] != d:
            raise InputError(f"{name} must end in d_model = {d} (the weights' "
                             f"size); got shape {a.shape}.")
        if 0 in a.shape[:2]:
            raise InputError(f"{name} has no tokens or an empty batch (shape "
                             f"{a.shape}): attention needs at least one.")
    if not (q.shape[0] == k.shape[0] == v.shape[0]) or k.shape[1] != v.shape[1]:
        raise InputError(
            f"query (B, L, d), key and value (B, S, d) must share B, and key "
            f"and value S; got {q.shape}, {k.shape}, {v.shape}.")
    B, L, S = q.shape[0], q.shape[1], k.shape[1]
    kpm = None if key_padding_mask is None else _mask(key_padding_mask,
                                                      "key_padding_mask")
    if kpm is not None and qkv[0].ndim == 2:
        if kpm.ndim != 1:
            raise InputError(
                "with unbatched (tokens, d_model) inputs, key_padding_mask must "
                f"be 1-D (S,), True = padded; got {describe(key_padding_mask)}.")
        kpm = kpm[None]  # (1, S)
    am = None if attn_mask is None else _mask(attn_mask, "attn_mask")
    check_mask_shapes(None if am is None else am.shape,
                      None if kpm is None else kpm.shape, B, h, L, S)
    mask = None
    if am is not None:
        mask = am[None, None] if am.shape == (L, S) else am.reshape(B, h, L, S)
    if kpm is not None:
        pad = kpm[:, None, None, :]  # (B, 1, 1, S)
        if mask is None:
            mask = pad
        elif mask.dtype == bool and pad.dtype == bool:
            mask = mask | pad
        else:
            mask = _additive(mask) + _additive(pad)
    if mask is not None:
        _refuse_blocked_rows(np.broadcast_to(_blocked(mask), (*mask.shape[:2], L, S)))
    return (*qkv, MHAWeights(**arrays), mask)


def _additive(mask: np.ndarray) -> np.ndarray:
    """A bool mask (``True`` = blocked) as ``0`` / ``-inf``; a float one as is."""
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """Normalise over the last axis (biased variance), then scale and shift."""

    x, gamma, beta = _check_array("x", x), _check_array("gamma", gamma), _check_array("beta", beta)
    check_eps(eps)
    if gamma.shape != x.shape[-1:] or beta.shape != x.shape[-1:]:
        raise InputError(f"gamma and beta must have shape {x.shape[-1:]}, one "
                         f"entry per feature of x; got {gamma.shape} and "
                         f"{beta.shape}.")
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def _check_block_dict(p) -> None:
    need = ("W_Q", "W_K", "W_V", "W_O") + BLOCK_PARAMS
    if not isinstance(p, dict):
        raise InputTypeError(f"p must be a dict of NumPy arrays with keys "
                             f"{list(need)}; got {describe(p)}.")
    missing = [k for k in need if k not in p]
    if missing:
        raise InputError(f"p lacks {missing}; it needs {list(need)} (and "
                         "optionally b_Q, b_K, b_V, b_O).")


def transformer_block(X, p: dict, h: int, pre_ln: bool = False, mask=None):
    """ReLU encoder block; ``p`` holds W_Q, W_K, W_V, W_O, b_*, W_1, b_1, W_2,
    b_2, gamma_1, beta_1, gamma_2, beta_2 as NumPy arrays; ``mask`` is the
    self-attention's ``attn_mask`` ((L, L), ``True`` = blocked)."""
    _check_block_dict(p)
    attn_keys = ("W_Q", "W_K", "W_V", "W_O")
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
