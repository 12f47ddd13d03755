"""Input checks for the plotting functions (the general rules:
:mod:`mhacourse._validate`): each public entry point calls one function
from here at its top, so bad input gives one :class:`~mhacourse.InputError`
naming the argument instead of an error from inside matplotlib or NumPy.
"""
from __future__ import annotations

import torch

from .._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_bool,
    check_positive_int,
    describe,
)


def check_matrix(name: str, values, ndim) -> "object":
    """``values`` as a float64 NumPy array with ``ndim`` axes (an int or a
    tuple of ints), all finite, or raise."""
    import numpy as np

    from .._arrays import to_numpy

    if values is None or isinstance(values, (str, bytes, dict)) or (
            isinstance(values, torch.Tensor) and values.is_complex()):
        raise InputTypeError(f"{name} must be an array of numbers; got "
                             f"{describe(values)}.")
    try:
        w = to_numpy(values)
    except (TypeError, ValueError):
        raise InputTypeError(f"{name} must be an array of numbers (a tensor, an "
                             f"ndarray or nested lists); got {describe(values)}.") from None
    want = (ndim,) if isinstance(ndim, int) else ndim
    if w.ndim not in want or 0 in w.shape:
        raise InputError(f"{name} must have {' or '.join(map(str, want))} non-empty "
                         f"axes; got shape {w.shape}.")
    if not np.isfinite(w).all():
        raise InputError(f"{name} holds NaN or inf; a heatmap of them would be blank.")
    return w


def check_tokens(name: str, tokens, n: int) -> None:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (list, tuple)):
        raise InputTypeError(f"{name} must be a list of token strings; got "
                             f"{describe(tokens)}.")
    if len(tokens) != n:
        raise InputError(f"{name} must have one token per row or column: {n}; got "
                         f"{len(tokens)}.")


def check_heatmap(weights, q_tokens, k_tokens, ndim=2) -> None:
    w = check_matrix("weights", weights, ndim)
    check_tokens("q_tokens", q_tokens, w.shape[-2])
    check_tokens("k_tokens" if k_tokens is not None else "q_tokens (the keys too)",
                 q_tokens if k_tokens is None else k_tokens, w.shape[-1])


def check_top_attended(weights, q_tokens, k_tokens, queries) -> None:
    w = check_matrix("weights", weights, (2, 3))
    check_heatmap(w, q_tokens, k_tokens, w.ndim)
    if queries is not None:
        L = w.shape[-2]
        if isinstance(queries, (str, bytes)) or not isinstance(queries, (list, tuple, range)):
            raise InputTypeError(f"queries must be a list of query rows; got "
                                 f"{describe(queries)}.")
        for k, q in enumerate(queries):
            if not 0 <= as_int(f"queries[{k}]", q) < L:
                raise InputError(f"queries[{k}] = {q} is out of range: rows 0..{L - 1}.")


def check_figure(fig, dpi) -> None:
    import matplotlib.figure

    if not isinstance(fig, matplotlib.figure.Figure):
        raise InputTypeError(f"fig must be a matplotlib Figure; got {describe(fig)}.")
    check_positive_int("dpi", dpi, 1200)


def check_png_html(png, alt, caption) -> None:
    if not isinstance(png, (bytes, bytearray)):
        raise InputTypeError(f"png must be PNG bytes (figure_png(fig)); got "
                             f"{describe(png)}.")
    for name, v in (("alt", alt), ("caption", caption)):
        if not isinstance(v, str):
            raise InputTypeError(f"{name} must be text (a str); got {describe(v)}.")
    if not alt.strip():
        raise InputError("alt must describe the picture (screen readers read it); "
                         "got an empty text.")


def check_kv_sharing(h, h_kv) -> None:
    from ..gqa import check_kv_heads

    check_kv_heads(h, h_kv)


def check_block_diagram(pre_ln) -> None:
    check_bool("pre_ln", pre_ln)
