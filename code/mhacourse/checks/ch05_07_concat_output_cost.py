"""Deprecated: :mod:`mhacourse.checks.concat_output` (checkers are named by concept)."""
import warnings

from . import concat_output as _new

warnings.warn("mhacourse.checks.ch05_07_concat_output_cost is now mhacourse.checks.concat_output",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
