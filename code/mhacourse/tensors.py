"""Small exact tensors for the worked examples.

The hand-worked examples of chapters 2 and 3 use matrices of small whole
numbers, so every product can be checked on paper. In float64 their sums,
products and square roots round far below the 3 decimals the chapters print.
"""
from __future__ import annotations

import torch

from ._validate import InputError, InputTypeError, describe


def _check_rows(rows) -> None:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)):
        raise InputTypeError(
            f"rows must be a list of rows of numbers, e.g. [[1, 2], [3, 4]]; "
            f"got {describe(rows)}.")


def exact(rows) -> torch.Tensor:
    """``rows`` (nested lists of numbers, e.g. ``[[1, 2], [3, 4]]``) as a
    float64 tensor of the same shape: (n_rows, n_cols) for a list of rows.

    A ragged list or a non-number raises :class:`~mhacourse.InputError`.
    """
    _check_rows(rows)
    try:
        return torch.tensor(rows, dtype=torch.float64)
    except (TypeError, ValueError) as e:
        raise InputError(
            f"rows must be a rectangular list of numbers (every row the same "
            f"length), e.g. [[1, 2], [3, 4]]; got {rows!r} ({e}).") from None
