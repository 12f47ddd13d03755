"""Input checks shared by every module: one error type of the package's own,
never a traceback from deep inside a matmul.

Every public function checks its input **before** torch sees it and raises
:class:`InputError` (a ``ValueError``), or :class:`InputTypeError` (also a
``TypeError``) when the argument has the wrong type. Each message names the
argument, says what was given and what is allowed, and gives the likely fix.

Rules the checks enforce (the API page lists them with examples):

- tensors: a ``torch.Tensor`` of a floating dtype (float16/bfloat16/float32/
  float64), all of one dtype, with no NaN or inf unless the function takes
  ``allow_nonfinite=True``;
- masks: bool with ``True`` = blocked; or float and **additive** (added to the
  scores: ``0`` keeps a key, ``-inf`` or a large negative number blocks it,
  other finite values are score biases). Integer masks, and float masks made
  only of 0 and 1 (or 0 and -1), are refused: they would add 1 to the scores
  of the keys they mean to keep or block instead of blocking anything;
- a query whose every key is blocked (``-inf``, ``True``, or a value at or
  below :data:`BLOCKED_AT`) is refused, in every function, softmax included.
"""
from __future__ import annotations

import math
import numbers
import weakref
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

if TYPE_CHECKING:  # the annotation only; bert_weights imports this module
    from .bert_weights import Bert

#: A float mask value at or below this blocks a key (BERT's old -10000; a
#: dtype's most negative number; -inf).
BLOCKED_AT = -1e4

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

HF_MASK_FIX = ("pass a bool mask, True = blocked (`mask.bool()`); a Hugging "
               "Face attention_mask has 1 = keep, so pass "
               "`~attention_mask.bool()`")


class InputError(ValueError):
    """Bad input to an ``mhacourse`` function.

    The message names the argument, what was given, what is allowed and the
    likely fix. A ``ValueError``, so ``except ValueError`` catches it.
    """


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a list where a tensor is needed, a string
    where a number is). Both an :class:`InputError` and a ``TypeError``."""


class InputFileError(InputError, FileNotFoundError):
    """A path argument that names no such file or folder. Both an
    :class:`InputError` and a ``FileNotFoundError``."""


def describe(value) -> str:
    """A short description of ``value`` for a message: its type name first
    (``ndarray``, ``list``, ``str``), then its dtype and shape or its value."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return (f"Tensor ({str(value.dtype).replace('torch.', '')}, "
                f"shape {tuple(value.shape)})")
    if isinstance(value, np.ndarray):
        return f"ndarray ({value.dtype}, shape {value.shape})"
    text = repr(value)
    if "\n" in text:  # one line (an nn.Module's repr has many)
        text = " ".join(text.split())
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def as_int(name: str, value, what: str = "a whole number") -> int:
    """``value`` as an ``int``: Python, NumPy and 0-d torch integers are
    accepted; bools, floats, strings and the rest raise :class:`InputTypeError`."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and not (
            value.is_floating_point() or value.is_complex()
            or value.dtype == torch.bool):
        return int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        fix = ""
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            fix = f" Write {int(value)} (an int), not {value!r}."
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
            fix = f" Write {value.strip()} without quotes."
        raise InputTypeError(
            f"{name} must be {what}; got {describe(value)}.{fix}")
    return int(value)


def check_positive_int(name: str, value, at_most: int | None = None,
                       why: str = "") -> int:
    """Return ``value`` as an ``int`` if it is a positive whole number (at
    most ``at_most``, for ``why``), else raise :class:`InputError`."""
    n = as_int(name, value, "a positive integer")
    if n <= 0:
        raise InputError(f"{name} must be a positive integer; got {value!r}. "
                         "Use 1 or more.")
    if at_most is not None and n > at_most:
        raise InputError(f"{name} = {n} is too large: at most {at_most}"
                         + (f" ({why})" if why else "") + ".")
    return n


def check_heads(d_model: int, h: int) -> int:
    """Check ``h`` heads can split ``d_model``; return ``d_k = d_model // h``."""
    d_model = check_positive_int("d_model", d_model)
    h = check_positive_int("h (num_heads)", h)
    if d_model % h != 0:
        divisors = [n for n in range(1, min(d_model, 10**6) + 1) if d_model % n == 0]
        shown = ", ".join(map(str, divisors[:12]))
        more = ", ..." if len(divisors) > 12 else ""
        raise InputError(
            f"h = {h} heads cannot split d_model = {d_model} evenly "
            f"(d_model / h = {d_model / h:.3g} is not a whole number). "
            f"Allowed head counts for d_model = {d_model}: {shown}{more}."
        )
    return d_model // h


def check_ndim(name: str, shape: Sequence[int], ndim: int, legend: str) -> None:
    """Raise if ``shape`` does not have ``ndim`` axes (``legend`` names them)."""
    if len(shape) != ndim:
        raise InputError(
            f"{name} must have {ndim} axes {legend}; got shape {tuple(shape)}."
        )


def check_tensor(name: str, value, *, ndim: int | Sequence[int] | None = None,
                 min_ndim: int | None = None, legend: str = "",
                 numpy_hint: str = "") -> torch.Tensor:
    """Return ``value`` if it is a floating-point ``torch.Tensor`` (with
    ``ndim`` axes, or at least ``min_ndim``), else raise.

    A list, NumPy array or number raises :class:`InputTypeError` saying how to
    convert it; an integer, bool or complex tensor raises :class:`InputError`
    with the ``.float()`` fix.
    """
    if not isinstance(value, torch.Tensor):
        hint = numpy_hint or ""
        raise InputTypeError(
            f"{name} must be a torch.Tensor; got {describe(value)}. Convert it "
            f"with torch.as_tensor({name.split()[0]}, dtype=torch.float32)"
            + (f"; {hint}" if hint else "") + ".")
    if value.dtype not in FLOAT_DTYPES:
        kind = ("bool" if value.dtype == torch.bool else
                "complex" if value.is_complex() else "integer")
        raise InputError(
            f"{name} is {_dtype_name(value.dtype)} ({kind}): attention needs "
            f"floating-point numbers; pass {name.split()[0]}.float() (or "
            ".double()).")
    want = (ndim,) if isinstance(ndim, int) else ndim
    if want is not None and value.ndim not in want:
        axes = " or ".join(str(n) for n in want)
        raise InputError(f"{name} must have {axes} axes {legend}; got shape "
                         f"{tuple(value.shape)}.".replace("  ", " "))
    if min_ndim is not None and value.ndim < min_ndim:
        raise InputError(f"{name} needs at least {min_ndim} axes {legend}; got "
                         f"shape {tuple(value.shape)}.".replace("  ", " "))
    return value


def check_finite(name: str, t: torch.Tensor, allow_nonfinite: bool = False,
                 option: bool = True) -> None:
    """Refuse NaN and +-inf in ``t`` (unless ``allow_nonfinite``), naming the
    first bad position. ``option``: the function offers ``allow_nonfinite``."""
    if allow_nonfinite or t.numel() == 0:
        return
    t = t.detach()
    if bool(torch.isfinite(t.sum())):  # one pass, no copy: NaN/inf make it so
        return
    bad = ~torch.isfinite(t)  # (a huge but finite sum lands here too)
    if not bool(bad.any()):
        return
    first = tuple(int(i) for i in bad.nonzero()[0])
    n_nan = int(torch.isnan(t.detach()).sum())
    what = f"{n_nan} NaN" if n_nan else ""
    n_inf = int(bad.sum()) - n_nan
    what += (" and " if n_nan and n_inf else "") + (f"{n_inf} inf" if n_inf else "")
    raise InputError(
        f"{name} holds {what} value(s) (first at index {first}): the result "
        "would be NaN. Find where they came from (a division by 0, a log of 0, "
        "an overflow)" + ("; to watch NaN spread on purpose, pass "
                          "allow_nonfinite=True" if option else "") + ".")


_FINITE: dict = {}  # id(tensor) -> (weak reference, version found finite)


def _known_finite(t: torch.Tensor) -> bool:
    entry = _FINITE.get(id(t))
    return entry is not None and entry[0]() is t and entry[1] == t._version


def _remember_finite(t: torch.Tensor) -> None:
    key = id(t)
    _FINITE[key] = (weakref.ref(t, lambda _ref: _FINITE.pop(key, None)), t._version)


def check_all_finite(allow_nonfinite: bool = False, **tensors) -> None:
    """:func:`check_finite` for several tensors at once (weights): one test in
    the usual case (all finite), the exact search only when something is not.

    A tensor found finite is remembered until it is changed in place (its
    ``_version`` counter moves) or freed, so fixed weights are checked once.
    """
    named = {k: v for k, v in tensors.items()
             if v is not None and v.numel() and not _known_finite(v)}
    if allow_nonfinite or not named:
        return
    if not bool(torch.isfinite(sum(v.detach().sum() for v in named.values()))):
        for name, t in named.items():
            check_finite(name, t, option=False)
    for t in named.values():
        _remember_finite(t)


def check_same_dtype(**tensors) -> None:
    """Refuse a mix of dtypes (float32 with float64), naming each tensor's."""
    named = {k: v for k, v in tensors.items() if v is not None}
    dtypes = {v.dtype for v in named.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{k} {_dtype_name(v.dtype)}" for k, v in named.items())
        first = next(iter(named.values())).dtype
        raise InputError(
            f"all inputs must have one dtype; got {listed}. Convert them to "
            f"one, e.g. `.to(torch.{_dtype_name(first)})` on the others "
            "(weights: `w.to(dtype)`).")


def check_mask(name: str, mask) -> torch.Tensor:
    """Return ``mask`` if it is a course mask: bool (``True`` = blocked) or an
    additive float mask; refuse integer masks and 0/1 float masks."""
    if not isinstance(mask, torch.Tensor):
        raise InputTypeError(
            f"{name} must be a torch.Tensor (bool, True = blocked); got "
            f"{describe(mask)}. Build it with mc.causal_mask(L) or "
            f"mc.padding_mask(lengths, S), or torch.as_tensor({name}, dtype=torch.bool).")
    if mask.dtype == torch.bool:
        return mask
    if mask.dtype not in FLOAT_DTYPES:
        raise InputError(f"{name} is {_dtype_name(mask.dtype)}: {HF_MASK_FIX}.")
    m = mask.detach()
    if bool(torch.isnan(m).any()) or bool(torch.isposinf(m).any()):
        raise InputError(
            f"{name} holds NaN or +inf: a float mask is added to the scores, "
            "0 = keep, -inf = blocked. Or pass a bool mask, True = blocked.")
    if m.numel() and bool(((m == 0) | (m == 1)).all()) and bool((m == 1).any()):
        raise InputError(
            f"{name} is a float mask of 0 and 1: it would add 1 to some scores "
            f"instead of blocking keys. A float mask is additive (0 = keep, "
            f"-inf = blocked); for a 0/1 mask {HF_MASK_FIX}.")
    if m.numel() and bool(((m == 0) | (m == -1)).all()) and bool((m == -1).any()):
        raise InputError(
            f"{name} is a float mask of 0 and -1: subtracting 1 from a score "
            "does not block its key. Use -inf to block "
            "(`mask.masked_fill(mask == -1, float('-inf'))`), or a bool mask, "
            "True = blocked.")
    return mask


def check_positional(name: str, n_positional: int, n_given: int) -> None:
    """Every form of the layer takes ``(query, key, value, w, h)`` (GQA:
    ``h_kv`` too) by position and the rest by name; say so when more are given."""
    if n_given > n_positional:
        raise InputTypeError(
            f"{name} takes {n_positional} positional arguments but {n_given} "
            "were given: name the rest, e.g. attn_mask=mask (after h, every "
            "argument is keyword-only).")


def check_same_batching(query, key, value) -> None:
    """``query``, ``key``, ``value`` (tensors or arrays) all batched
    (B, tokens, d_model) or all unbatched (tokens, d_model)."""
    if len({t.ndim for t in (query, key, value)}) > 1:
        raise InputError(
            "query, key and value must all be batched (B, tokens, d_model) "
            "or all unbatched (tokens, d_model); got shapes "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}.")


def unbatched_padding_mask(key_padding_mask) -> torch.Tensor:
    """The (S,) ``key_padding_mask`` of unbatched input as (1, S)."""
    if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.ndim != 1:
        raise InputError(
            "with unbatched (tokens, d_model) inputs, key_padding_mask must be "
            f"1-D (S,), True = padded; got {describe(key_padding_mask)}.")
    return key_padding_mask[None]  # (1, S)


def blocked(mask: torch.Tensor) -> torch.Tensor:
    """Where ``mask`` blocks a key: ``True`` in a bool mask, a value at or
    below :data:`BLOCKED_AT` (``-inf`` included) in a float one."""
    return mask if mask.dtype == torch.bool else mask.detach() <= BLOCKED_AT


def check_no_blocked_rows(mask: torch.Tensor, what: str = "the mask") -> None:
    """Refuse a mask that blocks every key of some query.

    Such a row has softmax(all -inf) = 0/0 = NaN (or, with a large negative
    number, weights spread evenly over keys that were all meant to be
    blocked). The course raises instead, in every function (PyTorch's own
    kernels return NaN or zeros depending on the path).
    Shapes: ``mask`` (..., L, S), bool (``True`` = blocked) or additive.
    """
    full = blocked(mask).all(dim=-1)  # (..., L)
    if bool(full.any()):
        where = [tuple(int(i) for i in ix) for ix in full.nonzero()[:3]]
        raise InputError(
            f"{what} blocks every key for query position(s) (index ..., query) "
            f"{where}{' ...' if int(full.sum()) > 3 else ''}: softmax over "
            "nothing is 0/0 = NaN. Let each query see at least one key, for "
            "example itself, or drop fully padded rows before attention."
        )


# --- the real model (mhacourse.bert) -----------------------------------------

def _index(name: str, i, n: int, why: str) -> int:
    """``i`` as an index into ``n`` things (``-n .. n-1``), or raise."""
    i = as_int(name, i, "a whole number")
    if not -n <= i < n:
        raise InputError(f"{name} = {i} is out of range: allowed 0..{n - 1} "
                         f"({why}).")
    return i % n


def check_ids(input_ids, config) -> None:
    """Refuse anything but a (B, L) integer tensor of ids in the vocabulary,
    with 1 <= L <= max_len."""
    if not isinstance(input_ids, torch.Tensor):
        raise InputTypeError(
            f"input_ids must be a (B, L) torch.Tensor of token ids; got "
            f"{describe(input_ids)}. Get them from mhacourse.bert.tokenize(text).")
    if input_ids.dtype == torch.bool or input_ids.is_floating_point() \
            or input_ids.is_complex():
        raise InputError(f"input_ids must hold integer token ids; got dtype "
                         f"{str(input_ids.dtype).replace('torch.', '')}: pass "
                         "input_ids.long().")
    if input_ids.ndim != 2 or 0 in input_ids.shape:
        raise InputError(f"input_ids must have shape (B, L), B, L >= 1; got "
                         f"{tuple(input_ids.shape)} (one text: input_ids[None]).")
    L = input_ids.shape[1]
    if L > config.max_len:
        raise InputError(f"at most {config.max_len} tokens; got L = {L}.")
    lo, hi = int(input_ids.min()), int(input_ids.max())
    if lo < 0 or hi >= config.vocab_size:
        raise InputError(f"input_ids must be token ids 0..{config.vocab_size - 1}; "
                         f"got values {lo}..{hi}.")


def check_head_mask(head_mask, config, shape=None) -> torch.Tensor | None:
    """Return ``head_mask`` as a float (n_layers, h) tensor, or raise.

    Every entry must be in [0, 1]: 1 keeps a head, 0 removes it, and a value
    in between scales its output (a partial ablation). Shapes: ``shape``
    overrides (n_layers, h), e.g. (h,) for one layer.
    """
    if head_mask is None:
        return None
    want = (config.n_layers, config.h) if shape is None else shape
    legend = "(n_layers, h)" if shape is None else "(h,)"
    try:
        m = torch.as_tensor(head_mask, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise InputTypeError(
            f"head_mask must be numbers, shape {legend} = {want}, 1 = keep "
            f"the head and 0 = remove it; got {describe(head_mask)}.") from None
    if tuple(m.shape) != want:
        raise InputError(
            f"head_mask must have shape {legend} = {want}, 1 = keep the "
            f"head and 0 = remove it; got shape {tuple(m.shape)}."
        )
    if not bool(torch.isfinite(m).all()):
        raise InputError("head_mask must be finite (0 = remove, 1 = keep).")
    if not bool(((m >= 0) & (m <= 1)).all()):
        raise InputError(
            f"head_mask entries must be between 0 (remove the head) and 1 (keep "
            f"it); got values {float(m.min()):g}..{float(m.max()):g}. Scaling a "
            "head by 2 or -1 is not an ablation.")
    return m


def check_model(model) -> "Bert":
    """``model`` if it is a loaded :class:`Bert` (``None``: the default model)."""
    from .bert_weights import Bert, load_model  # here: bert_weights imports this module

    if model is None:
        return load_model()
    if not isinstance(model, Bert):
        raise InputTypeError(
            f"model must be a model loaded with mhacourse.bert.load_model(), "
            f"or None for all-MiniLM-L6-v2; got {describe(model)}. There is "
            "no model to choose by name: leave model out.")
    return model


def _check_masked_output(concat, w, h, head_mask) -> None:
    # types and shapes only (no value checks): this also runs inside the
    # exported core (layer_core)
    from .multihead import MHAWeights  # here: multihead imports this module

    if not isinstance(w, MHAWeights):
        raise InputTypeError(f"w must be an MHAWeights (layer.attn); got "
                             f"{describe(w)}.")
    check_tensor("concat", concat, ndim=3, legend="(B, L, d_model)")
    check_heads(concat.shape[-1], h)
    if head_mask is not None and (
            not isinstance(head_mask, torch.Tensor) or head_mask.ndim not in (1, 2)
            or head_mask.shape[-1] != h):
        raise InputError(f"head_mask must be a tensor of shape (h,) = ({h},) or "
                         f"(B, h), 1 = keep, 0 = remove; got {describe(head_mask)}.")
