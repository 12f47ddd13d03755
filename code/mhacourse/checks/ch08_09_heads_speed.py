"""Deprecated: :mod:`mhacourse.checks.rank_speed` (checkers are named by concept)."""
import warnings

from . import rank_speed as _new

warnings.warn("mhacourse.checks.ch08_09_heads_speed is now mhacourse.checks.rank_speed",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
