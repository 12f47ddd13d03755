"""The same mathematics in plain NumPy, for readers who want no framework.

Each function mirrors its PyTorch twin (same name, same shapes, same mask
convention: boolean ``True`` = blocked) and the tests check they agree.
"""
from __future__ import annotations

import numpy as np

from ._validate import check_heads, check_ndim, check_positive_int


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last (key) axis; rows sum to 1."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def causal_mask(L: int, S: int | None = None) -> np.ndarray:
    """(L, S) bool, ``True`` where key j is later than query i (blocked)."""
    check_positive_int("L (query length)", L)
    S = L if S is None else check_positive_int("S (key length)", S)
    return np.arange(S)[None, :] > np.arange(L)[:, None]


def padding_mask(lengths, S: int) -> np.ndarray:
    """(B, S) bool, ``True`` on the padding after ``lengths[b]`` real tokens."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.min(initial=1) < 1 or lengths.max(initial=1) > S:
        raise ValueError(f"lengths must be a 1-D list of values in 1..S = {S}; "
                         f"got {lengths.tolist()}.")
    return np.arange(S)[None, :] >= lengths[:, None]


def scaled_dot_product_attention(Q, K, V, mask=None):
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` -> ``(output, weights)``.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v), mask broadcastable
    to (..., L, S) with ``True`` = blocked.
    """
    Q, K, V = (np.asarray(a) for a in (Q, K, V))
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"need Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v); "
                         f"got {Q.shape}, {K.shape}, {V.shape}.")
    if Q.shape[-2] == 0 or K.shape[-2] == 0:
        raise ValueError("attention needs at least one query and one key.")
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., L, S)
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
        if mask.all(axis=-1).any():
            raise ValueError("the mask blocks every key for some query: softmax "
                             "over nothing is 0/0 = NaN.")
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores)  # (..., L, S)
    return weights @ V, weights


def split_heads(x: np.ndarray, h: int) -> np.ndarray:
    """(B, L, d_model) -> (B, h, L, d_k)."""
    check_ndim("x", x.shape, 3, "(B, L, d_model)")
    B, L, d_model = x.shape
    d_k = check_heads(d_model, h)
    return x.reshape(B, L, h, d_k).transpose(0, 2, 1, 3)  # (B, h, L, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(B, h, L, d_k) -> (B, L, h*d_k)."""
    check_ndim("x", x.shape, 4, "(B, h, L, d_k)")
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, h * d_k)  # (B, L, d_model)


def _proj(x, W, b):
    return x @ W if b is None else x @ W + b


def multi_head_attention_loop(X, W_Q, W_K, W_V, W_O, h, mask=None,
                              b_Q=None, b_K=None, b_V=None, b_O=None):
    """h explicit heads over self-attention input X (B, L, d_model).
    Returns (output (B, L, d_model), weights (B, h, L, L))."""
    d_k = check_heads(W_Q.shape[1], h)
    heads, weights = [], []
    for i in range(h):
        c = slice(i * d_k, (i + 1) * d_k)  # head i's columns
        sl = (lambda b: None if b is None else b[c])
        Q_i = _proj(X, W_Q[:, c], sl(b_Q))  # (B, L, d_k)
        K_i = _proj(X, W_K[:, c], sl(b_K))
        V_i = _proj(X, W_V[:, c], sl(b_V))
        o, a = scaled_dot_product_attention(Q_i, K_i, V_i, mask)
        heads.append(o)
        weights.append(a)
    concat = np.concatenate(heads, axis=-1)  # (B, L, d_model)
    return _proj(concat, W_O, b_O), np.stack(weights, axis=1)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, mask=None,
                         b_Q=None, b_K=None, b_V=None, b_O=None):
    """Batched form over self-attention input X (B, L, d_model)."""
    Q = split_heads(_proj(X, W_Q, b_Q), h)  # (B, h, L, d_k)
    K = split_heads(_proj(X, W_K, b_K), h)
    V = split_heads(_proj(X, W_V, b_V), h)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        mask = mask[:, None] if mask.ndim == 3 else mask  # (B, 1, L, L)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)
    return _proj(merge_heads(heads), W_O, b_O), weights


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """Normalise over the last axis (biased variance), then scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def transformer_block(X, p: dict, h: int, pre_ln: bool = False, mask=None):
    """ReLU encoder block; ``p`` holds W_Q, W_K, W_V, W_O, b_*, W_1, b_1, W_2,
    b_2, gamma_1, beta_1, gamma_2, beta_2 as NumPy arrays."""
    attn_keys = ("W_Q", "W_K", "W_V", "W_O")
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
