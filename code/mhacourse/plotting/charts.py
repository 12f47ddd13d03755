"""Charts of measured numbers: benchmark ratios as grouped bars (chapter 9)
and accuracy against the number of heads (chapter 8).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .._arrays import to_numpy
from .._validate import InputError
from ._checks import check_accuracy_vs_heads, check_ratio_bars
from .colours import HEAD_COLORS, PART_COLOURS

# Okabe-Ito colours, and a hatch per series so that colour is never the only cue.
RATIO_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
RATIO_HATCHES = ("", "//", "..", "xx", "\\\\", "--")


def ratio_bars(ax, groups: Sequence[str], series: dict, reference: float = 1.0,
               reference_label: str = "reference = 1", annotate: bool = True,
               fmt: str = "{:.2f}", title: str | None = None,
               ylabel: str = "time / reference time", legend: bool = True,
               fontsize: float = 8, headroom: float | None = None,
               legend_kw: dict | None = None):
    """Grouped bars of ratios to a reference: one group per entry of
    ``groups`` (e.g. shapes), one bar per series (``{label: [value per
    group]}``; ``nan`` or ``None`` draws no bar and writes "n/a"). A dashed
    line marks ``reference``; bars above it are slower than the reference.
    Colours are Okabe-Ito with a hatch per series; ``annotate`` writes each
    value above its bar. ``headroom`` multiplies the tallest bar to set the
    top of the y axis (room for the values and the legend); ``legend_kw`` is
    passed to ``ax.legend``.
    """
    check_ratio_bars(ax, groups, series, reference, reference_label, annotate, fmt,
                     title, ylabel, legend, fontsize, headroom, legend_kw)
    labels = list(series)
    n_groups, n_series = len(groups), len(labels)
    if n_series == 0:
        raise InputError("series is empty: give at least one {label: values}.")
    for lab in labels:
        if len(series[lab]) != n_groups:
            raise InputError(f"series {lab!r} has {len(series[lab])} values; "
                             f"expected one per group ({n_groups}).")
    width = 0.8 / n_series
    top = reference
    for k, lab in enumerate(labels):
        vals = np.array([np.nan if v is None else float(v) for v in series[lab]])
        xs = np.arange(n_groups) - 0.4 + width * (k + 0.5)
        ok = ~np.isnan(vals)
        ax.bar(xs[ok], vals[ok], width * 0.92, label=lab,
               color=RATIO_COLOURS[k % len(RATIO_COLOURS)],
               hatch=RATIO_HATCHES[k % len(RATIO_HATCHES)],
               edgecolor="white", linewidth=0.5)
        if ok.any():
            top = max(top, float(np.nanmax(vals)))
        for x, v in zip(xs, vals):
            if np.isnan(v):
                ax.text(x, reference * 0.05, "n/a", ha="center", va="bottom",
                        fontsize=fontsize - 1, rotation=90, color="#333333")
            elif annotate:
                ax.text(x, v, fmt.format(v), ha="center", va="bottom",
                        fontsize=fontsize - 2, rotation=90 if n_series > 3 else 0)
    ax.axhline(reference, color="#333333", ls="--", lw=1, label=reference_label)
    ax.set_xticks(range(n_groups), list(groups), fontsize=fontsize)
    ax.set_ylabel(ylabel, fontsize=fontsize)
    if headroom is None:
        headroom = 1.25 if annotate else 1.08
    ax.set_ylim(0, top * headroom)
    ax.tick_params(axis="y", labelsize=fontsize)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, fontsize=fontsize + 1)
    if legend:
        ax.legend(**{"fontsize": fontsize - 1, "frameon": False,
                     **(legend_kw or {})})
    return ax


#: Okabe-Ito colour (:data:`PART_COLOURS`, the live trainer's), marker and
#: line style of each part of the tiny models' task ("accuracy" is overall).
PART_STYLE = {"accuracy": (PART_COLOURS["overall"], "o", "-"),
              "previous": (PART_COLOURS["previous"], "s", "--"),
              "lookup": (PART_COLOURS["lookup"], "^", "-.")}


def accuracy_vs_heads(ax, h, curves: dict, d_model: int | None = None,
                      baselines: dict | None = None, title: str | None = None):
    """Accuracy against the number of heads ``h`` (log-2 axis).

    ``curves``: ``{name: (mean, low, high)}``, three sequences over ``h``
    (``low``/``high`` may be ``None``: then no error bars), drawn with
    :data:`PART_STYLE` where ``name`` is one of its keys. ``d_model``: label
    each tick ``h`` over ``d_k = d_model // h``. ``baselines``:
    ``{label: (value, colour)}`` drawn as dotted horizontal lines.
    """
    check_accuracy_vs_heads(ax, h, curves, d_model, baselines, title)
    h = [int(x) for x in h]
    for i, (name, (mean, low, high)) in enumerate(curves.items()):
        colour, marker, ls = PART_STYLE.get(
            name, (HEAD_COLORS[i % len(HEAD_COLORS)], "o", "-"))
        mean = to_numpy(mean)
        yerr = None
        if low is not None and high is not None:
            yerr = np.vstack([mean - to_numpy(low), to_numpy(high) - mean])
        ax.errorbar(h, mean, yerr=yerr, color=colour, marker=marker, ls=ls,
                    capsize=3, label=name)
    for label, (value, colour) in (baselines or {}).items():
        ax.axhline(value, color=colour, ls=":", lw=1.2, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(h)
    if d_model is not None:
        ax.set_xticklabels([f"{x}\n{d_model // x}" for x in h])
        ax.set_xlabel(f"h (top) and d_k = {d_model} / h (bottom)")
    else:
        ax.set_xticklabels([str(x) for x in h])
        ax.set_xlabel("h")
    ax.minorticks_off()
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("held-out accuracy")
    if title:
        ax.set_title(title, fontsize=9)
    # below the axes, so that it never hides a curve or a baseline
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3),
              ncols=3, frameon=False)
    return ax
