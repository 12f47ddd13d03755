"""Deprecated: :mod:`mhacourse.checks.block` (checkers are named by concept)."""
import warnings

from . import block as _new

warnings.warn("mhacourse.checks.ch10_11_block_beyond is now mhacourse.checks.block",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
