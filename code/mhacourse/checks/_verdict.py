"""The verdict every checker returns, and the helpers that run the learner's
function and compare its result. Pure computation: no plotting, no widgets.
"""
from __future__ import annotations

import functools
import html
import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from .._arrays import to_numpy
from .._validate import InputError


@dataclass
class Verdict:
    ok: bool
    message: str

    def __repr__(self) -> str:  # shown as a cell's result
        return ("✅ " if self.ok else "❌ ") + self.message

    def __bool__(self) -> bool:
        return self.ok

    def _repr_html_(self) -> str:  # a wrapped, coloured line in notebooks and the site

        colour = "#0072b2" if self.ok else "#d55e00"
        return (f"<div style='border-left:4px solid {colour};padding:4px 8px;"
                f"white-space:normal'>{html.escape(repr(self))}</div>")


class _BadOutput(Exception):
    """The learner's result is not something the checker can compare (None,
    a string, a ragged list...); its message is the verdict."""


def _as_array(x) -> np.ndarray:
    """``x`` as a float64 array (:func:`~mhacourse._arrays.to_numpy`), or
    :class:`_BadOutput` saying what it is."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise _BadOutput(f"your function returned a complex tensor "
                             f"({x.dtype}); return real numbers.")
        return to_numpy(x)
    if x is None:
        raise _BadOutput("your function returned None: did you forget "
                         "`return`?")
    if isinstance(x, (str, bytes)):
        raise _BadOutput(f"your function returned a string ({str(x)[:30]!r}); "
                         "return numbers (a tensor).")
    try:
        a = to_numpy(x)
    except (TypeError, ValueError, RuntimeError):
        if isinstance(x, (list, tuple)):
            lengths = {len(r) if isinstance(r, (list, tuple, np.ndarray,
                                                torch.Tensor)) else 0 for r in x}
            if len(lengths) > 1:
                raise _BadOutput(f"your function returned a ragged "
                                 f"{type(x).__name__} (rows of different "
                                 "lengths); return a tensor.") from None
        raise _BadOutput(f"your function returned {type(x).__name__}, which "
                         "is not an array of numbers; return a tensor.") from None
    return a


def _number(x, what: str = "a number", verb: str = "give"):
    """``x`` as a Python ``int`` or ``float`` when it is one number (an int,
    a float, a NumPy or torch scalar, a one-element array); else
    :class:`_BadOutput` saying what it is."""
    if isinstance(x, torch.Tensor) or isinstance(x, np.ndarray):
        if x.size == 1 if isinstance(x, np.ndarray) else x.numel() == 1:
            x = x.item()
        else:
            raise _BadOutput(f"{verb} {what}; got an array of shape "
                             f"{tuple(x.shape)}.")
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        fix = ""
        if isinstance(x, str):
            fix = " (a string: write the number without quotes)"
        elif x is None:
            fix = " (did you forget `return`, or to fill in the answer?)"
        raise _BadOutput(f"{verb} {what}; got {type(x).__name__}{fix}.")
    if isinstance(x, float) and not math.isfinite(x):
        raise _BadOutput(f"{verb} {what}; got {x}.")
    return x


def _verdicts(check):
    """Turn every problem with the learner's result into a :class:`Verdict`
    (never a crash). Bad arguments to the checker itself (``h = 0``) still
    raise :class:`~mhacourse.InputError`."""
    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except _BadOutput as e:
            return Verdict(False, str(e))
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - the learner's result, not a crash
            return Verdict(False, f"your result could not be checked "
                                  f"({type(e).__name__}: {e}); return what the "
                                  "exercise asks for.")
    return wrapper


def _close(a, b, tol=1e-6) -> bool:
    a, b = _as_array(a), _as_array(b)
    return a.shape == b.shape and bool(np.allclose(a, b, atol=tol, rtol=tol))


def _call(fn, *args):
    if not callable(fn):
        return None, Verdict(False, f"pass your function itself (its name, "
                                    f"without parentheses); got "
                                    f"{type(fn).__name__}.")
    try:
        return fn(*args), None
    except Exception as e:  # the learner's bug, reported in one line
        return None, Verdict(False, f"your function raised {type(e).__name__}: {e}")
