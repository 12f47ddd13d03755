"""Deprecated: :mod:`mhacourse.checks.head_patterns` (checkers are named by concept)."""
import warnings

from . import head_patterns as _new

warnings.warn("mhacourse.checks.ch04_what_heads_learn is now mhacourse.checks.head_patterns",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
