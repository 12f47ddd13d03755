"""Incremental decoding with a key/value cache, for MHA and GQA.

A causal model that writes one token at a time would, without a cache,
recompute the keys and values of every earlier token at every step. Under a
causal mask those never change (token ``j``'s key depends only on tokens
``0..j``), so a decoder keeps them::

    step t:   q_t = x_t W_Q                    (B, h, 1, d_k)     the new query
              k_t = x_t W_K, v_t = x_t W_V     (B, h_kv, 1, d_k)  appended
              K = [k_0 .. k_t], V = [v_0 .. v_t]  (B, h_kv, t+1, d_k)  the cache
              out_t = softmax(q_t K^T / sqrt(d_k)) V                  no mask needed

The cache holds ``2 * n_layers * h_kv * d_k`` numbers per token
(:func:`mhacourse.gqa.kv_cache_per_token`); grouped-query attention shrinks
it by storing ``h_kv < h`` key/value heads (Ainslie et al. 2023).

:class:`KVCache` is one layer's cache (preallocated, filled as tokens
arrive); :func:`attention_step` is one attention layer fed new tokens;
:class:`CausalLM` is a small decoder-only model (pre-LN blocks, learned
positions, ``h`` query heads and ``h_kv`` key/value heads) run either all at
once (:func:`forward_full`) or step by step with caches
(:func:`forward_cached`, :func:`generate`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields

import torch

from ._validate import (
    InputError,
    InputTypeError,
    check_all_finite,
    check_bool,
    check_finite,
    check_float_dtype,
    check_heads,
    check_id_tensor,
    check_positive_int,
    check_real,
    check_same_dtype,
    check_seed,
    check_size,
    check_tensor,
    describe,
)
from .block import BLOCK_PARAMS, BlockWeights, _block_core, _layer_norm_core
from .gqa import check_kv_heads
from .multihead import MHAWeights, _mha_core, check_weights

# --- input checks: the rules of this module's public functions -----------

def check_kv_cache_sizes(B, h_kv, d_k, max_len, dtype) -> None:
    n = 1
    for name, v in (("B", B), ("h_kv", h_kv), ("d_k", d_k), ("max_len", max_len)):
        n *= check_positive_int(name, v)
    check_float_dtype("dtype", dtype)
    check_size("KVCache (2 x B x h_kv x max_len x d_k)", 2 * n)


def check_append(cache, K_new, V_new, allow_nonfinite) -> None:
    check_tensor("K_new", K_new, ndim=4, legend="(B, h_kv, n, d_k)")
    check_tensor("V_new", V_new, ndim=4, legend="(B, h_kv, n, d_k)")
    B, h_kv, T_max, d_k = cache.K.shape
    want = (B, h_kv, K_new.shape[2], d_k)
    if tuple(K_new.shape) != want or tuple(V_new.shape) != want:
        raise InputError(f"new keys and values must have shape (B, h_kv, n, d_k) "
                         f"= {want}; got K_new {tuple(K_new.shape)} and V_new "
                         f"{tuple(V_new.shape)}.")
    for name, t in (("K_new", K_new), ("V_new", V_new)):
        if t.dtype != cache.K.dtype:
            raise InputError(
                f"{name} is {str(t.dtype).replace('torch.', '')} but the cache "
                f"holds {str(cache.K.dtype).replace('torch.', '')}: storing it "
                f"would cast every value. Pass {name}.to({cache.K.dtype}) or make "
                "the cache with that dtype.")
    check_bool("allow_nonfinite", allow_nonfinite)
    check_finite("K_new", K_new, allow_nonfinite)
    check_finite("V_new", V_new, allow_nonfinite)
    check_cache_room(cache, K_new.shape[2])


def check_cache_room(cache, n: int, name: str = "the cache") -> None:
    T_max = cache.K.shape[2]
    if cache.length + n > T_max:
        raise InputError(f"{name} holds at most max_len = {T_max} tokens; "
                         f"{cache.length} are cached and {n} more were given. "
                         "Make a larger cache (max_len=...).")


def check_attention_step(x_new, w, h, h_kv, cache) -> None:
    check_tensor("x_new", x_new, ndim=3, legend="(B, n, d_model)")
    if not isinstance(w, MHAWeights):
        raise InputTypeError(f"w must be an MHAWeights; got {describe(w)}.")
    if not isinstance(cache, KVCache):
        raise InputTypeError(f"cache must be a KVCache; got {describe(cache)}.")
    check_kv_heads(h, h_kv)
    d_k = check_weights(w, h, h_kv)
    B, n, d_model = x_new.shape
    if n == 0 or B == 0:
        raise InputError(f"x_new needs B >= 1 and at least one new token; got shape "
                         f"{tuple(x_new.shape)}.")
    if d_model != w.W_Q.shape[0]:
        raise InputError(f"x_new must end in d_model = {w.W_Q.shape[0]} (the "
                         f"weights' width); got shape {tuple(x_new.shape)}.")
    want = (B, h_kv, d_k)
    got = (cache.K.shape[0], cache.K.shape[1], cache.K.shape[3])
    if got != want:
        raise InputError(f"cache must be KVCache(B={B}, h_kv={h_kv}, d_k={d_k}, "
                         f"...) for x_new and h_kv; got one with (B, h_kv, d_k) = "
                         f"{got}.")
    if cache.K.dtype != x_new.dtype:
        raise InputError(f"the cache holds {cache.K.dtype} but x_new is "
                         f"{x_new.dtype}: make the cache with dtype={x_new.dtype}.")
    check_same_dtype(x_new=x_new, W_Q=w.W_Q)
    check_finite("x_new", x_new, option=False)
    check_cache_room(cache, n)


def check_causal_lm(m) -> None:
    """The parts of a :class:`CausalLM`, once, when it is made."""
    check_tensor("E_tok", m.E_tok, ndim=2, legend="(vocab, d_model)")
    V, d = m.E_tok.shape
    if V == 0 or d == 0:
        raise InputError(f"E_tok must be (vocab, d_model), both >= 1; got "
                         f"{tuple(m.E_tok.shape)}.")
    check_tensor("E_pos", m.E_pos, ndim=2, legend="(max_len, d_model)")
    check_tensor("W_U", m.W_U, ndim=2, legend="(d_model, vocab)")
    for name, t, want in (("E_pos", m.E_pos, (None, d)), ("W_U", m.W_U, (d, V)),
                          ("gamma_f", m.gamma_f, (d,)), ("beta_f", m.beta_f, (d,))):
        check_tensor(name, t)
        if len(t.shape) != len(want) or any(w is not None and s != w
                                            for s, w in zip(t.shape, want)):
            raise InputError(f"{name} must have shape {want} (vocab = {V}, "
                             f"d_model = {d}); got {tuple(t.shape)}.")
    if m.E_pos.shape[0] == 0:
        raise InputError("E_pos has no rows: max_len must be >= 1.")
    check_heads(d, m.h)
    check_kv_heads(m.h, m.h_kv)
    if m.activation not in ("relu", "gelu"):
        raise InputError(f"activation must be 'relu' or 'gelu'; got "
                         f"{describe(m.activation)}.")
    check_real("eps", m.eps, low=0.0, low_open=True)
    if not isinstance(m.layers, (list, tuple)) or not m.layers:
        raise InputError(f"layers must be a non-empty list of dicts (one per "
                         f"layer); got {describe(m.layers)}.")
    need = ("W_Q", "W_K", "W_V", "W_O", "W_1", "b_1", "W_2", "b_2", "gamma_1",
            "beta_1", "gamma_2", "beta_2")
    for i, p in enumerate(m.layers):
        if not isinstance(p, dict):
            raise InputTypeError(f"layers[{i}] must be a dict of weights; got "
                                 f"{describe(p)}.")
        missing = [k for k in need if k not in p]
        if missing:
            raise InputError(f"layers[{i}] lacks {missing}.")
        for k, v in p.items():
            if v is not None:
                check_tensor(f"layers[{i}]['{k}']", v)
    check_same_dtype(E_tok=m.E_tok, E_pos=m.E_pos, W_U=m.W_U, W_Q=m.layers[0]["W_Q"])
    check_all_finite(E_tok=m.E_tok, E_pos=m.E_pos, W_U=m.W_U)


def check_random_causal_lm(vocab, d_model, h, h_kv, n_layers, max_len, d_ff, seed,
                           dtype) -> None:
    vocab = check_positive_int("vocab", vocab)
    d_model = check_positive_int("d_model", d_model)
    n_layers = check_positive_int("n_layers", n_layers)
    max_len = check_positive_int("max_len", max_len)
    check_heads(d_model, h)
    check_kv_heads(h, h_kv)
    d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
    check_seed("seed", seed)
    check_float_dtype("dtype", dtype)
    n = (2 * vocab + max_len) * d_model + n_layers * (
        4 * d_model * d_model + 2 * d_model * d_ff)
    check_size("random_causal_lm (parameters)", n)


def check_layer_dict(p) -> None:
    if not isinstance(p, dict) or not all(k in p for k in ("W_Q", "W_K", "W_V", "W_O")):
        raise InputTypeError(f"p must be one CausalLM layer: a dict with W_Q, W_K, W_V, "
                             f"W_O (and optional biases); got {describe(p)}.")


def check_lm(model) -> None:
    if not isinstance(model, CausalLM):
        raise InputTypeError(f"model must be a CausalLM (random_causal_lm or "
                             f"tiny_model.from_tiny_model); got {describe(model)}.")


def check_lm_ids(model, ids, t0: int = 0, name: str = "ids") -> None:
    check_id_tensor(name, ids, model.E_tok.shape[0], long_only=True)
    if t0 + ids.shape[1] > model.max_len:
        raise InputError(f"{name}: positions {t0}..{t0 + ids.shape[1] - 1} exceed "
                         f"the model's max_len = {model.max_len} (learned "
                         f"positions 0..{model.max_len - 1}).")


def check_forward_cached(model, ids_new, caches) -> None:
    check_lm(model)
    if not isinstance(caches, (list, tuple)) or not all(
            isinstance(c, KVCache) for c in caches):
        raise InputTypeError(f"caches must be a list of KVCache, one per layer "
                             f"(model.new_caches(B)); got {describe(caches)}.")
    if len(caches) != len(model.layers):
        raise InputError(f"caches must hold one KVCache per layer: "
                         f"{len(model.layers)}; got {len(caches)}.")
    lengths = {c.length for c in caches}
    if len(lengths) != 1:
        raise InputError(f"caches hold different numbers of tokens "
                         f"{sorted(lengths)}: they belong to different runs; "
                         "start again with model.new_caches(B).")
    t0 = caches[0].length
    check_lm_ids(model, ids_new, t0, "ids_new")
    want = (ids_new.shape[0], model.h_kv, model.d_k)
    for i, c in enumerate(caches):
        got = (c.K.shape[0], c.K.shape[1], c.K.shape[3])
        if got != want or c.K.dtype != model.E_tok.dtype:
            raise InputError(
                f"caches[{i}] must be a KVCache with (B, h_kv, d_k) = {want} and "
                f"dtype {model.E_tok.dtype}; got {got}, {c.K.dtype}. Make them "
                "with model.new_caches(B).")
        check_cache_room(c, ids_new.shape[1], f"caches[{i}]")


def check_generate(model, prompt, n_new, use_cache) -> None:
    check_lm(model)
    n_new = check_positive_int("n_new", n_new)
    check_bool("use_cache", use_cache)
    check_id_tensor("prompt", prompt, model.E_tok.shape[0], long_only=True)
    L0 = prompt.shape[1]
    if L0 + n_new > model.max_len:
        raise InputError(f"prompt ({L0} tokens) + n_new ({n_new}) = {L0 + n_new} "
                         f"exceeds the model's max_len = {model.max_len}; use at "
                         f"most n_new = {max(model.max_len - L0, 0)} or a shorter "
                         "prompt.")


def check_new_caches(B, max_len) -> None:
    check_positive_int("B", B)
    if max_len is not None:
        check_positive_int("max_len", max_len)


class KVCache:
    """Keys and values of the tokens seen so far, for one attention layer.

    Preallocated for ``max_len`` tokens: ``K``, ``V`` (B, h_kv, max_len, d_k);
    the first :attr:`length` positions are filled. :meth:`append` writes new
    keys and values in place and returns views of everything cached.
    """

    def __init__(self, B: int, h_kv: int, d_k: int, max_len: int,
                 dtype: torch.dtype = torch.float32):
        check_kv_cache_sizes(B, h_kv, d_k, max_len, dtype)
        # (B, h_kv, T_max, d_k) each, filled from position 0 as tokens arrive
        self.K = torch.zeros(B, h_kv, max_len, d_k, dtype=dtype)
        self.V = torch.zeros(B, h_kv, max_len, d_k, dtype=dtype)
        self.length = 0

    @property
    def max_len(self) -> int:
        return self.K.shape[2]

    def append(self, K_new: torch.Tensor, V_new: torch.Tensor,
               allow_nonfinite: bool = False):
        """Store ``K_new``, ``V_new`` (B, h_kv, n, d_k) after the cached tokens.

        Returns ``(K, V)``, views (B, h_kv, length, d_k) of all cached tokens.
        They must have the cache's dtype (nothing is cast) and be finite
        unless ``allow_nonfinite=True``.
        """
        check_append(self, K_new, V_new, allow_nonfinite)
        t0, t1 = self.length, self.length + K_new.shape[2]
        self.K[:, :, t0:t1] = K_new
        self.V[:, :, t0:t1] = V_new
        self.length = t1
        return self.K[:, :, :t1], self.V[:, :, :t1]  # (B, h_kv, t1, d_k) views

    def nbytes_used(self) -> int:
        """Bytes of the cached keys and values (the filled positions only)."""
        B, h_kv, _, d_k = self.K.shape
        per = self.K.element_size() * B * h_kv * d_k  # one key of every head
        return 2 * per * self.length


def attention_step(x_new, w: MHAWeights, h: int, h_kv: int, cache: KVCache):
    """Causal (grouped-query) attention for ``n`` new tokens, reusing the
    cached keys and values of the earlier ones.

    :func:`mhacourse.gqa.grouped_query_attention`'s ``w, h, h_kv``, for
    self-attention (one input ``x_new``) with the causal mask built in.
    Shapes: ``x_new`` (B, n, d_model); ``w.W_Q`` (d_model, h*d_k), ``w.W_K``,
    ``w.W_V`` (d_model, h_kv*d_k), ``w.W_O`` (h*d_k, d_model); biases optional.
    New query ``i`` sits at position ``t0 + i`` (``t0`` = tokens cached
    before the call) and sees keys ``0 .. t0 + i``. ``h_kv = h`` is MHA.
    Returns (B, n, d_model).
    """
    check_attention_step(x_new, w, h, h_kv, cache)
    check_kv_heads(h, h_kv)
    check_weights(w, h, h_kv)
    mask = _step_mask(x_new.shape[1], cache.length)  # (n, t0+n) or None
    out, _, _ = _mha_core(x_new, x_new, x_new, w, h, mask, h_kv=h_kv, cache=cache)
    return out  # (B, n, d_model)


def _step_mask(n: int, t0: int):
    """The causal mask of ``n`` new queries after ``t0`` cached tokens: query
    ``i`` sits at position ``t0 + i`` and sees keys ``0 .. t0 + i``. One new
    token sees everything cached, so needs none (``None``).
    Shapes: (n, t0 + n), ``True`` = blocked."""
    if n == 1:
        return None
    i = torch.arange(n)[:, None] + t0  # (n, 1) absolute query positions
    return torch.arange(t0 + n)[None, :] > i  # (n, t0+n), True = blocked


def layer_weights(p: dict) -> MHAWeights:
    """The attention weights of one :class:`CausalLM` layer (``W_Q`` ..
    ``W_O``, biases ``b_Q`` .. ``b_O`` where the layer has them)."""
    check_layer_dict(p)
    return MHAWeights(**{f.name: p.get(f.name) for f in fields(MHAWeights)})


@dataclass
class CausalLM:
    """A decoder-only model: ``x = E_tok[ids] + E_pos[t]``, then pre-LN
    blocks ``x += Attn(LN1 x)``, ``x += FFN(LN2 x)``, then ``LN(x) W_U``.

    ``layers[l]`` is a dict with ``W_Q`` (d_model, h*d_k), ``W_K``, ``W_V``
    (d_model, h_kv*d_k), ``W_O``, optional biases ``b_Q .. b_O``, ``W_1``,
    ``b_1``, ``W_2``, ``b_2``, ``gamma_1``, ``beta_1``, ``gamma_2``,
    ``beta_2``. ``h_kv = h`` is multi-head attention.
    """

    E_tok: torch.Tensor  # (vocab, d_model)
    E_pos: torch.Tensor  # (max_len, d_model)
    layers: list[dict]
    gamma_f: torch.Tensor  # final LayerNorm
    beta_f: torch.Tensor
    W_U: torch.Tensor  # (d_model, vocab)
    h: int
    h_kv: int
    activation: str = "gelu"
    eps: float = 1e-5
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_causal_lm(self)

    @property
    def d_model(self) -> int:
        return self.E_tok.shape[1]

    @functools.cached_property
    def attention_weights(self) -> list[MHAWeights]:
        """Each layer's attention weights as an :class:`~mhacourse.MHAWeights`
        (made once: decoding reads them at every step)."""
        return [layer_weights(p) for p in self.layers]

    @functools.cached_property
    def block_weights(self) -> list[BlockWeights]:
        """Each layer as a :class:`~mhacourse.block.BlockWeights` (made once),
        what :func:`~mhacourse.block._block_core` runs."""
        return [BlockWeights(a, **{k: p[k] for k in BLOCK_PARAMS})
                for p, a in zip(self.layers, self.attention_weights)]

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    @property
    def max_len(self) -> int:
        return self.E_pos.shape[0]

    def new_caches(self, B: int, max_len: int | None = None) -> list[KVCache]:
        """One empty :class:`KVCache` per layer."""
        check_new_caches(B, max_len)
        T = self.max_len if max_len is None else max_len
        return [KVCache(B, self.h_kv, self.d_k, T, self.E_tok.dtype)
                for _ in self.layers]


def random_causal_lm(vocab: int, d_model: int, h: int, h_kv: int, n_layers: int,
                     max_len: int, d_ff: int | None = None, seed: int = 0,
                     dtype: torch.dtype = torch.float32) -> CausalLM:
    """A :class:`CausalLM` with random weights (no attention biases), entries
    ~ N(0, 1/fan_in); LayerNorms start at gamma = 1, beta = 0."""
    check_random_causal_lm(vocab, d_model, h, h_kv, n_layers, max_len, d_ff,
                              seed, dtype)
    d_k = check_heads(d_model, h)
    check_kv_heads(h, h_kv)
    d_ff = 4 * d_model if d_ff is None else d_ff
    gen = torch.Generator().manual_seed(seed)

    def mat(rows, cols):
        return torch.randn(rows, cols, generator=gen, dtype=dtype) / math.sqrt(rows)

    layers = [dict(W_Q=mat(d_model, d_model), W_K=mat(d_model, h_kv * d_k),
                   W_V=mat(d_model, h_kv * d_k), W_O=mat(d_model, d_model),
                   W_1=mat(d_model, d_ff), b_1=torch.zeros(d_ff, dtype=dtype),
                   W_2=mat(d_ff, d_model), b_2=torch.zeros(d_model, dtype=dtype),
                   gamma_1=torch.ones(d_model, dtype=dtype),
                   beta_1=torch.zeros(d_model, dtype=dtype),
                   gamma_2=torch.ones(d_model, dtype=dtype),
                   beta_2=torch.zeros(d_model, dtype=dtype))
              for _ in range(n_layers)]
    return CausalLM(E_tok=torch.randn(vocab, d_model, generator=gen, dtype=dtype),
                    E_pos=torch.randn(max_len, d_model, generator=gen, dtype=dtype),
                    layers=layers, gamma_f=torch.ones(d_model, dtype=dtype),
                    beta_f=torch.zeros(d_model, dtype=dtype),
                    W_U=mat(d_model, vocab), h=h, h_kv=h_kv)


def _check_ids(model: CausalLM, ids, t0: int = 0) -> None:
    check_lm(model)
    check_lm_ids(model, ids, t0)


def forward_full(model: CausalLM, ids: torch.Tensor) -> torch.Tensor:
    """Every position at once with a causal mask, no cache (the reference):
    each layer is :func:`~mhacourse.block._block_core` (pre-LN) with ``h_kv``
    key/value heads.

    Shapes: ``ids`` (B, L) -> logits (B, L, vocab).
    """
    _check_ids(model, ids)
    L = ids.shape[1]
    x = model.E_tok[ids] + model.E_pos[:L]  # (B, L, d_model)
    mask = torch.ones(L, L, dtype=torch.bool).triu(1)  # (L, L), True = blocked
    for w in model.block_weights:
        x, _ = _block_core(x, w, model.h, mask, True, model.activation, model.eps,
                          h_kv=model.h_kv)  # pre-LN
    return _layer_norm_core(x, model.gamma_f, model.beta_f, model.eps) @ model.W_U


def forward_cached(model: CausalLM, ids_new: torch.Tensor,
                   caches: list[KVCache]) -> torch.Tensor:
    """Feed ``ids_new`` (B, n) after the tokens already in ``caches``; append
    their keys and values: :func:`forward_full`'s blocks, each given its
    layer's cache. Returns logits (B, n, vocab) for the new tokens.
    """
    check_forward_cached(model, ids_new, caches)
    t0 = caches[0].length
    n = ids_new.shape[1]
    x = model.E_tok[ids_new] + model.E_pos[t0:t0 + n]  # (B, n, d_model)
    mask = _step_mask(n, t0)  # (n, t0+n) or None
    for w, cache in zip(model.block_weights, caches):
        x, _ = _block_core(x, w, model.h, mask, True, model.activation, model.eps,
                          h_kv=model.h_kv, cache=cache)  # pre-LN
    return _layer_norm_core(x, model.gamma_f, model.beta_f, model.eps) @ model.W_U


@torch.no_grad()
def generate(model: CausalLM, prompt: torch.Tensor, n_new: int,
             use_cache: bool = True) -> torch.Tensor:
    """Greedy decoding: append the arg-max token ``n_new`` times.

    With ``use_cache`` the prompt is fed once and then one token per step
    (:func:`forward_cached`); without, the whole sequence is recomputed at
    every step (:func:`forward_full`). Same tokens either way.
    Shapes: ``prompt`` (B, L0) -> (B, L0 + n_new).
    """
    check_generate(model, prompt, n_new, use_cache)
    ids = prompt
    if not use_cache:
        for _ in range(n_new):
            nxt = forward_full(model, ids)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            ids = torch.cat([ids, nxt], dim=1)
        return ids
    caches = model.new_caches(prompt.shape[0], prompt.shape[1] + n_new)
    logits = forward_cached(model, prompt, caches)  # (B, L0, vocab)
    for step in range(n_new):
        nxt = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        ids = torch.cat([ids, nxt], dim=1)
        if step < n_new - 1:
            logits = forward_cached(model, nxt, caches)  # (B, 1, vocab)
    return ids
