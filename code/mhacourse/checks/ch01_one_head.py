"""Deprecated: :mod:`mhacourse.checks.one_head` (checkers are named by concept)."""
import warnings

from . import one_head as _new

warnings.warn("mhacourse.checks.ch01_one_head is now mhacourse.checks.one_head",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
