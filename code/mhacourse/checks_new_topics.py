"""Deprecated: the checkers of chapters 12 to 15 are in :mod:`mhacourse.checks`
(:mod:`mhacourse.checks.sequences`)."""
import warnings

from .checks import sequences as _new

warnings.warn("mhacourse.checks_new_topics is now mhacourse.checks "
              "(from mhacourse.checks import check_batch_mask, ...)",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):
    return getattr(_new, name)
