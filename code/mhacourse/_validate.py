"""Input checks shared by every module: clear ``ValueError``s, never tracebacks
from deep inside a matmul.

Every message says what was given and what is allowed.
"""
from __future__ import annotations

from typing import Sequence


def check_positive_int(name: str, value) -> int:
    """Return ``value`` if it is a positive ``int``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"{name} must be a positive integer; got {value!r}."
        )
    return value


def check_heads(d_model: int, h: int) -> int:
    """Check ``h`` heads can split ``d_model``; return ``d_k = d_model // h``."""
    check_positive_int("d_model", d_model)
    check_positive_int("h (num_heads)", h)
    if d_model % h != 0:
        divisors = [n for n in range(1, d_model + 1) if d_model % n == 0]
        shown = ", ".join(map(str, divisors[:12]))
        more = ", ..." if len(divisors) > 12 else ""
        raise ValueError(
            f"h = {h} heads cannot split d_model = {d_model} evenly "
            f"(d_model / h = {d_model / h:.3g} is not a whole number). "
            f"Allowed head counts for d_model = {d_model}: {shown}{more}."
        )
    return d_model // h


def check_ndim(name: str, shape: Sequence[int], ndim: int, legend: str) -> None:
    """Raise if ``shape`` does not have ``ndim`` axes (``legend`` names them)."""
    if len(shape) != ndim:
        raise ValueError(
            f"{name} must have {ndim} axes {legend}; got shape {tuple(shape)}."
        )


def check_last_dim(name: str, shape: Sequence[int], size: int, what: str) -> None:
    """Raise if the last axis of ``shape`` is not ``size``."""
    if shape[-1] != size:
        raise ValueError(
            f"{name} must end in {what} = {size}; got shape {tuple(shape)}."
        )
