"""Input checks for the modules written after the core (chapters 12-15's
``batching``, ``positions``, ``decoder``, ``kv_cache``; ``tiny_model``,
``web_export``'s loader and ``tasks``).

Each public entry point of those modules calls one checking function from
here at its top, before any mathematics, so the checks stay apart from the
formulas. The rules are the core's (:mod:`mhacourse._validate`): one
:class:`~mhacourse._validate.InputError` (or :class:`InputTypeError`,
:class:`InputFileError`) whose one-line message names the argument, what was
given, what is allowed and the fix; NaN and inf refused unless the function
takes ``allow_nonfinite=True``; integer tensors refused where floats belong;
indices checked against their range (no negative wrap-around).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ._validate import (
    FLOAT_DTYPES,
    InputError,
    InputTypeError,
    as_int,
    check_all_finite,
    check_finite,
    check_heads,
    check_mask,
    check_positive_int,
    check_same_dtype,
    check_tensor,
    describe,
)

#: Most numbers a model or table that these functions build may hold (a
#: model of the course runs on a laptop's CPU).
MAX_ELEMENTS = 50_000_000


# --- small building blocks ------------------------------------------------

def check_bool(name: str, value) -> bool:
    """``value`` if it is ``True`` or ``False`` (NumPy bools too), else raise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputTypeError(f"{name} must be True or False; got {describe(value)}.")


def check_real(name: str, value, *, low=None, low_open=False, high=None,
               high_open=False, allow_nonfinite=False, what="a number") -> float:
    """``value`` as a float if it is a real number (not a bool or a string)
    within the bounds, else raise, naming the allowed range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        fix = ""
        if isinstance(value, str):
            fix = " Write the number without quotes."
        elif isinstance(value, torch.Tensor) and value.numel() == 1:
            fix = f" Pass {name}.item()."
        raise InputTypeError(f"{name} must be {what}; got {describe(value)}.{fix}")
    x = float(value)
    if not math.isfinite(x):
        if allow_nonfinite:
            return x
        raise InputError(f"{name} must be a finite number; got {value!r}: it "
                         "would put NaN or inf into the result.")
    lo = "" if low is None else (f"> {low:g}" if low_open else f">= {low:g}")
    hi = "" if high is None else (f"< {high:g}" if high_open else f"<= {high:g}")
    allowed = " and ".join(s for s in (lo, hi) if s)
    if (low is not None and (x <= low if low_open else x < low)) or \
            (high is not None and (x >= high if high_open else x > high)):
        raise InputError(f"{name} must be {allowed}; got {value!r}.")
    return x


def check_nonneg_int(name: str, value, at_most: int | None = None) -> int:
    """``value`` as an int ``>= 0`` (at most ``at_most``), else raise."""
    n = as_int(name, value, "a whole number >= 0")
    if n < 0 or (at_most is not None and n > at_most):
        top = "" if at_most is None else f"..{at_most}"
        raise InputError(f"{name} must be a whole number in 0{top or ' or more'}"
                         f"; got {n}.")
    return n


def check_seed(name: str, seed) -> int:
    """A random seed: a whole number 0 .. 2**40."""
    return check_nonneg_int(name, seed, 2**40)


def check_float_dtype(name: str, dtype) -> torch.dtype:
    """``dtype`` if it is a floating torch dtype; integer ones would truncate
    every value, so they are refused."""
    if not isinstance(dtype, torch.dtype):
        raise InputTypeError(f"{name} must be a torch dtype such as torch.float32; "
                             f"got {describe(dtype)}.")
    if dtype not in FLOAT_DTYPES:
        raise InputError(
            f"{name} = {dtype} is not a floating-point dtype: the values would be "
            "truncated or cast. Use torch.float32 (or float64, float16, "
            "bfloat16).")
    return dtype


def check_generator(name: str, generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InputTypeError(f"{name} must be a torch.Generator or None; got "
                             f"{describe(generator)}. Make one with "
                             "torch.Generator().manual_seed(0).")


def check_size(name: str, n_elements: int) -> None:
    if n_elements > MAX_ELEMENTS:
        raise InputError(f"{name}: {n_elements:,} numbers is too large (at most "
                         f"{MAX_ELEMENTS:,} on a CPU); choose smaller sizes.")


def check_id_tensor(name: str, ids, n: int, *, ndim: int = 2, legend="(B, L)",
                    what="token ids", long_only=False) -> torch.Tensor:
    """``ids`` if it is an integer tensor with ``ndim`` axes, none empty,
    every value in ``0 .. n-1`` (a negative id would wrap around)."""
    if not isinstance(ids, torch.Tensor):
        raise InputTypeError(f"{name} must be a {legend} torch.Tensor of {what}; "
                             f"got {describe(ids)}. Convert it with "
                             f"torch.tensor({name.split()[0]}, dtype=torch.long).")
    if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex() or (
            long_only and ids.dtype != torch.long):
        raise InputError(f"{name} must hold integer {what} (torch.long); got dtype "
                         f"{str(ids.dtype).replace('torch.', '')}: pass "
                         f"{name.split()[0]}.long() (whole numbers only).")
    if ids.ndim != ndim or 0 in ids.shape:
        extra = " (one sequence: ids[None])" if ndim == 2 and ids.ndim == 1 else ""
        raise InputError(f"{name} must have shape {legend}, every axis >= 1; got "
                         f"shape {tuple(ids.shape)}{extra}.")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= n:
        raise InputError(f"{name} must be {what} in 0..{n - 1}; got values "
                         f"{lo}..{hi}. Negative ids would wrap around; ids >= "
                         f"{n} are past the table.")
    return ids


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) < 200 else text[:197] + "..."


# --- batching -------------------------------------------------------------

def check_pad_batch(sequences, pad_value, allow_nonfinite) -> None:
    if isinstance(sequences, torch.Tensor) or not isinstance(sequences, (list, tuple)):
        raise InputTypeError(
            f"sequences must be a list of (tokens, d) tensors; got "
            f"{describe(sequences)}. A tensor (B, L, d) is already a batch; "
            "for one sequence pass [x].")
    if not sequences:
        raise InputError("pad_batch needs at least one sequence; got none "
                         "(sequences = []).")
    check_bool("allow_nonfinite", allow_nonfinite)
    for i, x in enumerate(sequences):
        check_tensor(f"sequences[{i}]", x)
        if x.ndim != 2 or x.shape[0] == 0:
            raise InputError(
                f"every sequence must be a (tokens, d) tensor with at least one "
                f"token; sequences[{i}] has shape {tuple(x.shape)}.")
    widths = sorted({x.shape[1] for x in sequences})
    if len(widths) != 1:
        raise InputError(f"every sequence must have the same width d; got widths "
                         f"{widths} (sequences[i].shape[1]).")
    check_same_dtype(**{f"sequences[{i}]": x for i, x in enumerate(sequences)})
    for i, x in enumerate(sequences):
        check_finite(f"sequences[{i}]", x, allow_nonfinite)
    v = check_real("pad_value", pad_value, allow_nonfinite=allow_nonfinite)
    top = min(torch.finfo(sequences[0].dtype).max, 2.0**62)
    if math.isfinite(v) and abs(v) > top:
        raise InputError(f"pad_value = {pad_value!r} does not fit the sequences' dtype "
                         f"{sequences[0].dtype} (at most {top:.3g} in size); use 0.0.")


def check_batch_mask(causal) -> None:
    check_bool("causal", causal)


def check_dropout(p, training, generator, Q=None) -> None:
    p = check_real("dropout probability p", p, low=0.0, high=1.0, high_open=True,
                   what="a number in [0, 1) (p = 1 would drop every weight)")
    check_bool("training", training)
    check_generator("generator", generator)
    if training and isinstance(Q, torch.Tensor) and Q.dtype in FLOAT_DTYPES:
        check_dropout_scale(p, Q.dtype)  # the weights are at most 1


def check_dropout_scale(p, dtype, peak: float = 1.0) -> None:
    """The kept weights are divided by ``1 - p``: refuse a ``p`` so close to 1
    that they overflow the dtype (float16: 1 / (1 - p) > 65504)."""
    if p and peak * (1.0 / (1.0 - p)) > torch.finfo(dtype).max:
        raise InputError(f"dropout probability p = {p!r} scales the kept weights by "
                         f"1 / (1 - p) = {1 / (1 - p):.3g}, past {dtype}'s largest "
                         "number (they would become inf); use a smaller p or float32.")


def check_attention_dropout(weights, p, training, generator, allow_nonfinite) -> None:
    check_tensor("weights", weights, min_ndim=2, legend="(..., L, S)")
    check_dropout(p, training, generator)
    check_bool("allow_nonfinite", allow_nonfinite)
    check_finite("weights", weights, allow_nonfinite)
    if training and weights.numel() and not allow_nonfinite:
        check_dropout_scale(p, weights.dtype, float(weights.detach().abs().max()))


# --- positions ------------------------------------------------------------

def check_base(base) -> float:
    return check_real("base", base, low=1.0, low_open=True, high=1e12,
                      what="a number > 1 (10000 in the paper)")


def check_sinusoidal(L, d_model, base, dtype) -> None:
    L = check_positive_int("L (positions)", L)
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise InputError(f"d_model must be even (sin and cos pairs); got "
                         f"{d_model}. Use {d_model + 1} or {d_model - 1}.")
    check_size("sinusoidal_positions (L x d_model)", L * d_model)
    check_base(base)
    check_float_dtype("dtype", dtype)


def check_positions(positions, L: int | None, *, integer=False,
                    allow_nonfinite=False) -> None:
    """A 1-D tensor of positions (with ``L`` entries when given)."""
    if not isinstance(positions, torch.Tensor):
        raise InputTypeError(f"positions must be a 1-D torch.Tensor; got "
                             f"{describe(positions)}. Write torch.tensor(positions) "
                             "or torch.arange(L).")
    if positions.dtype == torch.bool or positions.is_complex() or (
            integer and positions.is_floating_point()):
        want = "integer row numbers (torch.long)" if integer else "numbers"
        raise InputError(f"positions must be {want}; got dtype "
                         f"{str(positions.dtype).replace('torch.', '')}. Pass "
                         + ("positions.long()." if integer else "positions.float()."))
    if positions.ndim != 1 or (L is not None and positions.shape[0] != L):
        want = "(L,)" if L is None else f"(L,) = ({L},)"
        raise InputError(f"positions must have shape {want}; got "
                         f"{tuple(positions.shape)}.")
    if positions.is_floating_point():
        check_finite("positions", positions, allow_nonfinite)


def check_rotary_angles(positions, d, base) -> None:
    check_positions(positions, None)
    d = check_even_width("d (head width)", d)
    check_size("rotary_angles (L x d/2)", positions.numel() * d // 2)
    check_base(base)


def check_even_width(name: str, d) -> int:
    d = check_positive_int(name, d, 2**20, "memory")
    if d % 2:
        raise InputError(f"rotary positions rotate pairs of coordinates, so the "
                         f"head width {name} must be even; got {d}.")
    return d


def check_rotary(x, positions, base, allow_nonfinite) -> None:
    check_tensor("x", x, min_ndim=2, legend="(..., L, d) of queries or keys")
    check_bool("allow_nonfinite", allow_nonfinite)
    L, d = x.shape[-2:]
    if L == 0:
        raise InputError(f"x has no tokens: shape {tuple(x.shape)}; L must be >= 1.")
    check_even_width("d (x.shape[-1])", d)
    if positions is not None:
        check_positions(positions, L)
    check_base(base)
    check_finite("x", x, allow_nonfinite)


def check_embed_with_positions(input_ids, model, positions, use_positions) -> None:
    from .bert import check_ids
    from .bert_weights import Bert

    if not isinstance(model, Bert):
        raise InputTypeError(f"model must be a model loaded with "
                             f"mhacourse.load_model(); got {describe(model)}.")
    check_ids(input_ids, model.config)
    check_bool("use_positions", use_positions)
    if positions is None:
        return
    if not use_positions:
        raise InputError("positions were given but use_positions=False would "
                         "ignore them: pass one or the other.")
    check_positions(positions, input_ids.shape[1], integer=True)
    n = model.E_pos.shape[0]
    lo, hi = int(positions.min()), int(positions.max())
    if lo < 0 or hi >= n:
        raise InputError(f"positions must be rows of the position table, "
                         f"0..{n - 1}; got values {lo}..{hi} (a negative row "
                         "would wrap around).")


# --- decoder --------------------------------------------------------------

def check_y_memory(y, memory) -> None:
    check_tensor("y", y, ndim=(2, 3), legend="(B, L, d_model)")
    check_tensor("memory", memory, ndim=(2, 3), legend="(B, S, d_model)")
    if y.ndim != memory.ndim:
        raise InputError(f"y and memory must both be batched (B, tokens, d_model) "
                         f"or both unbatched; got shapes {tuple(y.shape)} and "
                         f"{tuple(memory.shape)}.")
    if y.shape[-1] != memory.shape[-1]:
        raise InputError(f"y and memory must have the same width d_model; got "
                         f"y {tuple(y.shape)} and memory {tuple(memory.shape)}.")
    if y.ndim == 3 and y.shape[0] != memory.shape[0]:
        raise InputError(f"y and memory must share B (one memory per target); got "
                         f"y {tuple(y.shape)} and memory {tuple(memory.shape)}.")
    if 0 in y.shape or 0 in memory.shape:
        raise InputError(f"y and memory need at least one token each; got shapes "
                         f"{tuple(y.shape)} and {tuple(memory.shape)}.")
    check_same_dtype(y=y, memory=memory)
    check_finite("y", y, option=False)
    check_finite("memory", memory, option=False)


def check_memory_mask(y, memory, mask) -> None:
    """``memory_key_padding_mask``: (B, S) for batched input, (S,) unbatched."""
    if mask is None:
        return
    check_mask("memory_key_padding_mask", mask)
    want = tuple(memory.shape[:-1])
    if tuple(mask.shape) != want:
        raise InputError(f"memory_key_padding_mask must have shape "
                         f"{'(B, S)' if memory.ndim == 3 else '(S,)'} = {want}, True = "
                         f"padding; got {tuple(mask.shape)}.")


def check_tgt_mask(y, tgt_mask) -> None:
    if tgt_mask is None:
        return
    check_mask("tgt_mask", tgt_mask)
    L = y.shape[-2]
    if tgt_mask.ndim < 2 or tuple(tgt_mask.shape[-2:]) != (L, L):
        raise InputError(f"tgt_mask must end in (L, L) = ({L}, {L}), True = blocked "
                         f"(mc.causal_mask(L)); got shape {tuple(tgt_mask.shape)}.")


def check_cross_attention(y, memory, w, h, memory_key_padding_mask=None) -> None:
    from .multihead import MHAWeights

    check_y_memory(y, memory)
    check_memory_mask(y, memory, memory_key_padding_mask)
    if not isinstance(w, MHAWeights):
        raise InputTypeError(f"w must be an MHAWeights (mc.random_weights or "
                             f"mc.from_torch); got {describe(w)}.")
    check_heads(y.shape[-1], h)


def check_decoder_layer(y, memory, p, h, return_weights, tgt_mask=None,
                        memory_key_padding_mask=None) -> None:
    from .decoder import DecoderLayerWeights

    if not isinstance(p, DecoderLayerWeights):
        raise InputTypeError(f"p must be a DecoderLayerWeights (from "
                             f"decoder_weights_from_torch); got {describe(p)}.")
    check_y_memory(y, memory)
    check_tgt_mask(y, tgt_mask)
    check_memory_mask(y, memory, memory_key_padding_mask)
    d = y.shape[-1]
    check_heads(d, h)
    check_bool("return_weights", return_weights)
    check_bool("p.norm_first", p.norm_first)
    if p.activation not in ("relu", "gelu"):
        raise InputError(f"p.activation must be 'relu' or 'gelu'; got "
                         f"{describe(p.activation)}.")
    check_real("p.eps", p.eps, low=0.0, low_open=True)
    for k in ("gammas", "betas"):
        v = getattr(p, k)
        if not isinstance(v, (tuple, list)) or len(v) != 3:
            raise InputError(f"p.{k} must be 3 tensors (d_model,), one per "
                             f"LayerNorm; got {describe(v)}.")
        for i, t in enumerate(v):
            check_tensor(f"p.{k}[{i}]", t, ndim=1, legend="(d_model,)")
            if t.shape[0] != d:
                raise InputError(f"p.{k}[{i}] must have shape (d_model,) = ({d},); "
                                 f"got {tuple(t.shape)}.")
    check_tensor("p.W_1", p.W_1, ndim=2, legend="(d_model, d_ff)")
    if p.W_1.shape[0] != d:
        raise InputError(f"p.W_1 must have shape (d_model, d_ff) with d_model = {d} "
                         f"(y's width); got {tuple(p.W_1.shape)}.")
    check_same_dtype(y=y, W_1=p.W_1, gamma_1=p.gammas[0])


# --- kv_cache -------------------------------------------------------------

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
    from .gqa import check_kv_heads
    from .kv_cache import KVCache
    from .multihead import MHAWeights, check_weights

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
    from .gqa import check_kv_heads

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
    from .gqa import check_kv_heads

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
    from .kv_cache import CausalLM

    if not isinstance(model, CausalLM):
        raise InputTypeError(f"model must be a CausalLM (random_causal_lm or "
                             f"from_tiny_model); got {describe(model)}.")


def check_lm_ids(model, ids, t0: int = 0, name: str = "ids") -> None:
    check_id_tensor(name, ids, model.E_tok.shape[0], long_only=True)
    if t0 + ids.shape[1] > model.max_len:
        raise InputError(f"{name}: positions {t0}..{t0 + ids.shape[1] - 1} exceed "
                         f"the model's max_len = {model.max_len} (learned "
                         f"positions 0..{model.max_len - 1}).")


def check_forward_cached(model, ids_new, caches) -> None:
    from .kv_cache import KVCache

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
