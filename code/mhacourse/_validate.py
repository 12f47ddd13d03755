"""The ground floor of input checks, shared by every module: one error type
of the package's own, never a traceback from deep inside a matmul. Tensors,
dtypes, masks, head counts and indices; numbers, flags, seeds, sizes, token
ids, paths and text. It imports no concept module (only
:mod:`mhacourse._errors`, the checks that need no torch); each concept's own
rules sit beside the concept, in its module (``kv_cache.check_append``) or a
sibling named after it (``tiny_model/_checks.py``, ``plotting/_checks.py``).

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
import os
import stat
import weakref
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ._errors import (  # noqa: F401 - the checks that need no torch, named here too
    BLOCKED_AT,
    HF_MASK_FIX,
    InputError,
    InputFileError,
    InputTypeError,
    _dtype_name,
    as_int,
    check_float_mask_values,
    check_heads,
    check_mask_dtype,
    check_ndim,
    check_positional,
    check_positive_int,
    check_same_batching,
    describe,
    one_line,
    refuse_blocked_rows,
)

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

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
    check_mask_dtype(name, _dtype_name(mask.dtype), mask.dtype in FLOAT_DTYPES)
    m = mask.detach()
    check_float_mask_values(name, m, bool(torch.isnan(m).any())
                            or bool(torch.isposinf(m).any()))
    return mask


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
        refuse_blocked_rows(where, int(full.sum()), what)


def check_dtype(name: str, dtype) -> torch.dtype:
    """Return ``dtype`` if it is a floating ``torch.dtype``; a string such as
    ``'float32'`` raises with the fix ``torch.float32``."""
    if isinstance(dtype, torch.dtype) and dtype in FLOAT_DTYPES:
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype.replace(
            "torch.", ""), None), torch.dtype):
        fix = f" Pass torch.{dtype.replace('torch.', '')}, not the string {dtype!r}."
    else:
        fix = ""
    raise InputTypeError(
        f"{name} must be a floating torch.dtype (torch.float32, torch.float64, "
        f"torch.float16 or torch.bfloat16); got {describe(dtype)}.{fix}")


def check_head_index(name: str, i, h: int) -> int:
    """Return head index ``i`` (counted from 0) if it is in 0..h-1."""
    i = as_int(name, i, "a head index (a whole number)")
    if not 0 <= i < h:
        raise InputError(
            f"{name} = {i} is not a head: with h = {h} heads, heads count from "
            f"0 to {h - 1}" + (" (the last is h - 1, not h)" if i == h else "")
            + ".")
    return i


def check_index(name: str, i, what: str, count: str = "n") -> int:
    """Return ``i`` as an ``int`` if it is an index counted from 0 (a whole
    number >= 0; Python, NumPy or 0-d integer torch). For callers that do not
    know how many ``what`` there are (``count``), so cannot resolve a negative
    index from the end."""
    i = as_int(name, i, f"a {what} index (a whole number >= 0)")
    if i < 0:
        raise InputError(
            f"{name} = {i} is not a {what} index: indices count from 0 "
            f"({name} = 0 is the first {what}); a negative index counts from "
            f"the end, which needs the number of {what}s: pass {name} % {count}.")
    return i


# --- numbers, flags, seeds, dtypes, sizes, ids, paths, text ------------------

#: Most numbers a model or table that these functions build may hold (a
#: model of the course runs on a laptop's CPU).
MAX_ELEMENTS = 50_000_000


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


def check_device(name: str, device):
    """``device`` (``None``, a ``torch.device`` or a name such as ``"cpu"``)
    as torch takes it, if torch knows it and it is there."""
    if device is None or isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise InputTypeError(f"{name} must be None, a torch.device or a name such "
                             f"as 'cpu'; got {describe(device)}.")
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as e:
        raise InputError(f"{name} {device!r} is not a device torch can use here "
                         f"({one_line(e)[:80]}); use 'cpu'.") from None
    return device


def check_generator(name: str, generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InputTypeError(f"{name} must be a torch.Generator or None; got "
                             f"{describe(generator)}. Make one with "
                             "torch.Generator().manual_seed(0).")


def check_graph_module(gm) -> None:
    """``gm`` a ``torch.fx.GraphModule``: a ``make_fx`` trace
    (``onnx_program.trace``, or ``web_train.trace(kind)``, which calls it)."""
    if not isinstance(gm, torch.fx.GraphModule):
        raise InputTypeError(f"gm must be a torch.fx.GraphModule (make_fx's trace, as "
                             f"onnx_program.trace or web_train.trace(kind) makes it); "
                             f"got {describe(gm)}.")


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


def check_path(name: str, path) -> Path:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"{name} must be a file path (str or pathlib.Path); "
                             f"got {describe(path)}.")
    if str(path) == "":
        raise InputError(f"{name} is empty; give a file name.")
    return Path(path)


def check_folder(name: str, folder) -> Path:
    """``folder`` as a Path to a folder (made if missing), or one InputError."""
    folder = check_path(name, folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{name} {folder} is a file, not a folder; give a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot make the folder {folder} ({e.strerror}).") from None
    return folder


def check_text(name: str, text) -> None:
    if not isinstance(text, str):
        raise InputTypeError(f"{name} must be text (a str); got {describe(text)}.")


def check_texts(name: str, texts) -> None:
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
        raise InputTypeError(f"{name} must be a non-empty list of sentences (str); "
                             f"got {describe(texts)}.")
    for i, s in enumerate(texts):
        if not isinstance(s, str) or not s.strip():
            raise InputTypeError(f"{name}[{i}] must be a sentence (a non-empty str); "
                                 f"got {describe(s)}.")


def _shown(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-50:]}"


def check_writable(name: str, path, folder: bool = False) -> Path:
    """``path`` as a ``Path`` if a file (with ``folder``, a folder of files)
    can be written there, else one :class:`~mhacourse.InputError`: a folder
    where the file must go, a regular file where a folder must be (at the
    path, or above it: ``notes.txt/model.safetensors``), or a name the file
    system refuses (too long). Errors while writing: :func:`write_error`."""
    path = check_path(name, path)
    for i, p in enumerate([path, *path.parents]):  # nearest first
        try:
            is_dir = stat.S_ISDIR(os.stat(p).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there yet (or under a file: found further up)
        except OSError as e:
            raise InputError(f"{name} {_shown(path)} cannot be written: "
                             f"{e.strerror}.") from None
        if i == 0 and is_dir and not folder:
            raise InputError(f"{name} {_shown(path)} is a folder; give a file "
                             f"name in it, such as {_shown(path / 'model.safetensors')}.")
        if not is_dir and (i > 0 or folder):
            raise InputError(f"{name} {_shown(path)} needs {_shown(p)} to be a "
                             "folder, but it is a file: choose a path in a folder.")
        return path  # what exists is right, so the rest can be made
    return path


def write_error(name: str, path: Path, e: OSError) -> InputError:
    """An OS error met while writing ``path`` (a full disk, a file system
    that refuses the name), as one line naming the argument."""
    return InputError(f"{name} {_shown(path)} could not be written: "
                      f"{e.strerror or e}.")
