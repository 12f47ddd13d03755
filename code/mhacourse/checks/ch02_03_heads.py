"""Deprecated: :mod:`mhacourse.checks.heads` (checkers are named by concept)."""
import warnings

from . import heads as _new

warnings.warn("mhacourse.checks.ch02_03_heads is now mhacourse.checks.heads",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
