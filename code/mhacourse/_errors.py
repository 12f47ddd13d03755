"""The checks that need no framework: the package's error types, whole
numbers, head counts, axes, masks' values and lengths. Every module uses them,
the PyTorch ones through :mod:`mhacourse._validate` and the NumPy twin
(:mod:`mhacourse.reference_np`) directly, so both give one message for one
mistake, and the NumPy twin imports no torch.

A tensor is recognised by duck typing (:func:`is_tensor`), not by importing
torch.
"""
from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np

#: A float mask value at or below this blocks a key (BERT's old -10000; a
#: dtype's most negative number; -inf).
BLOCKED_AT = -1e4

HF_MASK_FIX = ("pass a bool mask, True = blocked (`mask.bool()`); a Hugging "
               "Face attention_mask has 1 = keep, so pass "
               "`~attention_mask.bool()`")

#: The block's weights besides the attention's, in the course's layout
#: (``x @ W_1``): named once for the PyTorch block and the NumPy twin.
BLOCK_PARAMS = ("W_1", "b_1", "W_2", "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2")

#: Most entries (L * S) a mask may have: 10**8 bools are 100 MB.
MAX_MASK_ENTRIES = 10**8


def is_tensor(value) -> bool:
    """Whether ``value`` is a ``torch.Tensor`` (or a subclass such as
    ``nn.Parameter``), told without importing torch."""
    return (type(value).__module__.split(".")[0] == "torch"
            and hasattr(value, "dtype") and hasattr(value, "shape"))


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


# Defined here so that the NumPy twin needs no torch; their public home, as
# before, is mhacourse._validate (and ``mhacourse.InputError``).
for _cls in (InputError, InputTypeError, InputFileError):
    _cls.__module__ = "mhacourse._validate"
del _cls


def describe(value) -> str:
    """A short description of ``value`` for a message: its type name first
    (``ndarray``, ``list``, ``str``), then its dtype and shape or its value."""
    if value is None:
        return "None"
    if is_tensor(value):
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


def one_line(text) -> str:
    """``text`` (an exception, a repr) on one line of at most 200 characters,
    for a message."""
    text = " ".join(str(text).split())
    return text if len(text) < 200 else text[:197] + "..."


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def as_int(name: str, value, what: str = "a whole number") -> int:
    """``value`` as an ``int``: Python, NumPy and 0-d torch integers are
    accepted; bools, floats, strings and the rest raise :class:`InputTypeError`."""
    if is_tensor(value) and value.ndim == 0 and not (
            value.is_floating_point() or value.is_complex()
            or _dtype_name(value.dtype) == "bool"):
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


def check_eps(eps) -> None:
    """``eps`` must be a positive real number (it keeps sqrt(var + eps) > 0)."""
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
        raise InputTypeError(f"eps must be a small positive number such as "
                             f"1e-5; got {describe(eps)}.")
    if not 0 < eps < float("inf"):
        raise InputError(f"eps must be a small positive number such as 1e-5 "
                         f"(it keeps sqrt(var + eps) above 0); got {eps!r}.")


def check_mask_dtype(name: str, dtype_name: str, is_float: bool) -> None:
    """A mask is bool or float: refuse integer masks (a Hugging Face
    ``attention_mask`` passed as it is)."""
    if dtype_name != "bool" and not is_float:
        raise InputError(f"{name} is {dtype_name}: {HF_MASK_FIX}.")


def check_float_mask_values(name: str, m, nonfinite: bool) -> None:
    """Refuse a float mask that would not block what it means to: NaN or
    +inf (``nonfinite``), only 0 and 1, only 0 and -1. ``m``: a tensor or
    an array (the tests use only ``==``, ``|``, ``.all()``, ``.any()``)."""
    if nonfinite:
        raise InputError(
            f"{name} holds NaN or +inf: a float mask is added to the scores, "
            "0 = keep, -inf = blocked. Or pass a bool mask, True = blocked.")
    if bool(((m == 0) | (m == 1)).all()) and bool((m == 1).any()):
        raise InputError(
            f"{name} is a float mask of 0 and 1: it would add 1 to some scores "
            f"instead of blocking keys. A float mask is additive (0 = keep, "
            f"-inf = blocked); for a 0/1 mask {HF_MASK_FIX}.")
    if bool(((m == 0) | (m == -1)).all()) and bool((m == -1).any()):
        raise InputError(
            f"{name} is a float mask of 0 and -1: subtracting 1 from a score "
            "does not block its key. Use -inf to block "
            "(`mask.masked_fill(mask == -1, float('-inf'))`), or a bool mask, "
            "True = blocked.")


def refuse_blocked_rows(where: list[tuple[int, ...]], n: int,
                        what: str = "the mask") -> None:
    """Raise when ``n`` > 0 queries have every key blocked (``where``: the
    first few of them, as (index ..., query) tuples)."""
    if n:
        raise InputError(
            f"{what} blocks every key for query position(s) (index ..., query) "
            f"{where[:3]}{' ...' if n > 3 else ''}: softmax over "
            "nothing is 0/0 = NaN. Let each query see at least one key, for "
            "example itself, or drop fully padded rows before attention."
        )


def check_mask_shapes(attn_shape, kpm_shape, B: int, h: int, L: int,
                      S: int) -> None:
    """``attn_mask`` (L, S) or (B*h, L, S), ``key_padding_mask`` (B, S)
    (``None``: not given), as ``nn.MultiheadAttention`` takes them."""
    if attn_shape is not None and tuple(attn_shape) not in ((L, S), (B * h, L, S)):
        raise InputError(
            f"attn_mask must have shape (L, S) = ({L}, {S}) or "
            f"(B*h, L, S) = ({B * h}, {L}, {S}); got {tuple(attn_shape)}."
        )
    if kpm_shape is not None and tuple(kpm_shape) != (B, S):
        hint = (" It looks transposed: pass key_padding_mask.T."
                if tuple(kpm_shape) == (S, B) else "")
        raise InputError(
            f"key_padding_mask must have shape (B, S) = ({B}, {S}), "
            f"True = padded; got {tuple(kpm_shape)}.{hint}"
        )


def check_mask_size(L: int, S: int, names: tuple[str, str] = ("L", "S")) -> None:
    """Refuse an (L, S) mask of more than :data:`MAX_MASK_ENTRIES` entries."""
    if L * S > MAX_MASK_ENTRIES:
        raise InputError(
            f"{names[0]} = {L} and {names[1]} = {S} make a ({L}, {S}) mask of "
            f"{L * S:,} entries, more than the {MAX_MASK_ENTRIES:,} allowed "
            "(memory: each is a byte, and the attention weights would need 4 "
            "bytes each). Use shorter sequences.")


def check_lengths(lengths, S: int) -> list[int]:
    """``lengths`` (a list, tuple, 1-D array or tensor of whole numbers,
    each 1..S) as a list of ints, or raise :class:`InputError`."""
    if isinstance(lengths, np.ndarray) or is_tensor(lengths):
        if lengths.ndim != 1:
            raise InputError(
                f"lengths must be a 1-D list of sequence lengths; "
                f"got shape {tuple(lengths.shape)}.")
        lengths = lengths.tolist()
    if not isinstance(lengths, (list, tuple)):
        raise InputTypeError(
            f"lengths must be a list of sequence lengths, one per sequence "
            f"(such as [5, 3]); got {describe(lengths)}.")
    if not lengths:
        raise InputError("lengths is empty: give one length per sequence.")
    out = []
    for i, n in enumerate(lengths):
        if isinstance(n, float) and n.is_integer():
            n = int(n)  # 3.0 is a length of 3
        out.append(as_int(f"lengths[{i}]", n))
    check_mask_size(len(out), S, ("B = len(lengths)", "S"))
    bad = [n for n in out if not 1 <= n <= S]
    if bad:
        raise InputError(
            f"every length must be between 1 and S = {S}; got {bad}. "
            "A length of 0 would leave a sequence with no key to attend to."
        )
    return out
