"""Input checks for the plotting functions (the general rules:
:mod:`mhacourse._validate`): each public entry point calls one function
from here at its top, so bad input gives one :class:`~mhacourse.InputError`
naming the argument instead of an error from inside matplotlib or NumPy.
"""
from __future__ import annotations

import numbers

import torch

from .._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_bool,
    check_positive_int,
    check_real,
    describe,
)


def check_axes(ax) -> None:
    """``ax``: the matplotlib Axes to draw on."""
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise InputTypeError(f"ax must be a matplotlib Axes to draw on (fig, ax = "
                             f"plt.subplots()); got {describe(ax)}.")


def check_options(texts=None, numbers=None, flags=None, formats=None) -> None:
    """A drawing's options, one line for the first wrong one: ``texts``
    (str or None), ``numbers`` (finite reals or None), ``flags`` (bools),
    ``formats`` (a ``str.format`` template of one number)."""
    for name, v in (texts or {}).items():
        if v is not None and not isinstance(v, str):
            raise InputTypeError(f"{name} must be text (a str) or None; got "
                                 f"{describe(v)}.")
    for name, v in (numbers or {}).items():
        if v is not None:
            check_real(name, v)
    for name, v in (flags or {}).items():
        check_bool(name, v)
    for name, v in (formats or {}).items():
        if not isinstance(v, str):
            raise InputTypeError(f"{name} must be a format such as '{{:.2f}}'; got "
                                 f"{describe(v)}.")
        try:
            v.format(1.0)
        except (ValueError, IndexError, KeyError) as e:
            raise InputError(f"{name} {v!r} cannot format a number ({e}); use a "
                             "format such as '{:.2f}'.") from None


def check_plot(ax, texts=None, numbers=None, flags=None, formats=None) -> None:
    """An Axes and a drawing's options (:func:`check_options`)."""
    check_axes(ax)
    check_options(texts, numbers, flags, formats)


def check_ratio_bars(ax, groups, series, reference, reference_label, annotate, fmt,
                     title, ylabel, legend, fontsize, headroom, legend_kw) -> None:
    check_plot(ax, texts={"reference_label": reference_label, "title": title,
                          "ylabel": ylabel},
               numbers={"reference": reference, "headroom": headroom},
               flags={"annotate": annotate, "legend": legend}, formats={"fmt": fmt})
    check_real("fontsize", fontsize, low=1, high=72, what="a font size in points")
    if isinstance(groups, (str, bytes)) or not isinstance(groups, (list, tuple)) \
            or not all(isinstance(g, str) for g in groups):
        raise InputTypeError(f"groups must be a list of group names (str); got "
                             f"{describe(groups)}.")
    if not isinstance(series, dict) or not all(
            isinstance(v, (list, tuple)) and all(
                x is None or (isinstance(x, numbers.Real) and not isinstance(x, bool)
                              and not abs(float(x)) == float("inf")) for x in v)
            for v in series.values()):
        raise InputTypeError(f"series must be a dict {{label: [a ratio per group]}}, "
                             f"each ratio a finite number, NaN or None (no bar); "
                             f"got {describe(series)}.")
    if legend_kw is not None and not isinstance(legend_kw, dict):
        raise InputTypeError(f"legend_kw must be a dict of ax.legend options or "
                             f"None; got {describe(legend_kw)}.")


def check_accuracy_vs_heads(ax, h, curves, d_model, baselines, title) -> None:
    check_plot(ax, texts={"title": title})
    if isinstance(h, (str, bytes)) or not isinstance(h, (list, tuple, range)) or not h:
        raise InputTypeError(f"h must be a non-empty list of head counts; got "
                             f"{describe(h)}.")
    for i, x in enumerate(h):
        check_positive_int(f"h[{i}]", x)
    if d_model is not None:
        check_positive_int("d_model", d_model)
    if not isinstance(curves, dict) or not curves or not all(
            isinstance(c, (list, tuple)) and len(c) == 3 for c in curves.values()):
        raise InputTypeError(f"curves must be a dict {{name: (mean, low, high)}}; got "
                             f"{describe(curves)}.")
    for name, (mean, low, high) in curves.items():
        for part, v in (("mean", mean), ("low", low), ("high", high)):
            if v is None and part != "mean":
                continue
            a = check_matrix(f"curves[{name!r}] {part}", v, 1)
            if a.shape[0] != len(h):
                raise InputError(f"curves[{name!r}] {part} has {a.shape[0]} values; "
                                 f"h has {len(h)}: give one per head count.")
    if baselines is not None:
        if not isinstance(baselines, dict) or not all(
                isinstance(v, (list, tuple)) and len(v) == 2 for v in baselines.values()):
            raise InputTypeError(f"baselines must be a dict {{label: (value, colour)}} "
                                 f"or None; got {describe(baselines)}.")
        for label, (value, _) in baselines.items():
            check_real(f"baselines[{label!r}]", value)


def check_head_blocks(ax, h, axis, fmt, title, first_head, fontsize) -> None:
    check_plot(ax, texts={"title": title}, formats={"fmt": fmt} if fmt else None)
    check_positive_int("h", h, 64)
    if axis not in (0, 1) or isinstance(axis, bool):
        raise InputError(f"axis must be 0 (blocks of rows) or 1 (of columns); got "
                         f"{describe(axis)}.")
    if as_int("first_head", first_head) < 0:
        raise InputError(f"first_head must be 0 or more; got {first_head}.")
    check_real("fontsize", fontsize, low=1, high=72, what="a font size in points")


def check_grid(grid) -> None:
    """A layers x heads grid: a 2-D tensor or array, or a list of rows."""
    if hasattr(grid, "ndim") and hasattr(grid, "shape"):
        if grid.ndim != 2 or 0 in grid.shape:
            raise InputError(f"grid must be (n_layers, h); got shape "
                             f"{tuple(grid.shape)}.")
        return
    if isinstance(grid, (str, bytes)) or not isinstance(grid, (list, tuple)) or not grid \
            or not all(isinstance(r, (list, tuple)) and r for r in grid):
        raise InputTypeError(f"grid must be a layers x heads grid (a list of rows, "
                             f"or a 2-D tensor); got {describe(grid)}.")


def check_hex_colour(hex_colour) -> None:
    import re

    if not isinstance(hex_colour, str) or not re.fullmatch(r"#[0-9a-fA-F]{6}",
                                                           hex_colour):
        raise InputError(f"hex_colour must be a colour written '#rrggbb' (such as "
                         f"'#0072b2'); got {describe(hex_colour)}.")


def check_png(png) -> None:
    if not isinstance(png, (bytes, bytearray)):
        raise InputTypeError(f"png must be PNG bytes (png_with_text_size(fig)); got "
                             f"{describe(png)}.")
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise InputError("png is not a PNG file (its first 8 bytes are not the "
                         "PNG signature).")


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
    if dpi is not None:
        check_real("dpi", dpi, low=10, high=1200, what="dots per inch, 10..1200")


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


def check_kv_sharing(h, h_kv, ax=None, title=None) -> None:
    from ..gqa import check_kv_heads

    check_kv_heads(h, h_kv)
    check_plot(ax, texts={"title": title})


def check_block_diagram(pre_ln, ax=None, title=None, norm_name="LayerNorm") -> None:
    check_bool("pre_ln", pre_ln)
    check_plot(ax, texts={"title": title, "norm_name": norm_name})
