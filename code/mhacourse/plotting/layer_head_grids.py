"""A model's heads as a layers x heads grid (chapter 4): one coloured,
lettered cell per head for its class, or one number per head, and the text
alternative of either. Rows and columns are numbered from 1, as the course
names heads (:func:`mhacourse.heads.head_name`: row 1, column 1 is L1H1);
the arrays are indexed from 0.
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from .._arrays import to_numpy
from .._validate import InputError, InputTypeError, describe
from ._checks import check_grid, check_matrix, check_options, check_plot
from .colours import CMAP, text_colour

#: Colour (Okabe–Ito, plus a light grey) and one-letter mark of each head class
#: of :func:`mhacourse.head_analysis.classify_heads`. Every cell also shows its
#: letter, so colour is never the only cue.
HEAD_CLASS_STYLE = {
    "previous": ("#0072b2", "P"),
    "next": ("#56b4e9", "N"),
    "self": ("#009e73", "S"),
    "sink": ("#e69f00", "K"),
    "broad": ("#cc79a7", "B"),
    "mixed": ("#eeeeee", "M"),
}


# The smallest text (points) of the layers x heads grids. Chapter 4 shows
# them 12 inches wide at 100 dpi in a full-width cell (about 0.8 of natural
# size at 1280 px), so 9 pt comes out at about 10 px (tests/test_site.py).
GRID_FONT = 9


def _layer_head_axes(ax, n_layers: int, h: int, title: str | None) -> None:
    """Ticks (numbered from 1, as head names count), labels and thin white
    cell borders for a (layers, heads) grid."""
    ax.set_xticks(range(h), [str(i + 1) for i in range(h)], fontsize=GRID_FONT)
    ax.set_yticks(range(n_layers), [str(l + 1) for l in range(n_layers)],
                  fontsize=GRID_FONT)
    ax.set_xticks(np.arange(-0.5, h), minor=True)
    ax.set_yticks(np.arange(-0.5, n_layers), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.2)
    ax.tick_params(which="both", length=0)
    ax.set_xlabel("head", fontsize=GRID_FONT + 1)
    ax.set_ylabel("layer", fontsize=GRID_FONT + 1)
    if title:
        ax.set_title(title, fontsize=GRID_FONT + 1)


def head_class_grid(ax, labels, title: str | None = None, legend: bool = True):
    """Draw ``labels[l][i]`` (a class of :data:`HEAD_CLASS_STYLE`) as a
    layers x heads grid: one coloured, lettered cell per head. The legend
    gives each class's letter and count."""
    check_plot(ax, texts={"title": title}, flags={"legend": legend})
    classes = list(HEAD_CLASS_STYLE)
    if isinstance(labels, (str, bytes)) or not isinstance(labels, (list, tuple)) \
            or not labels or not all(isinstance(r, (list, tuple)) and r for r in labels):
        raise InputTypeError(f"labels must be a list of layers, each a list of head "
                             f"classes (strings); got {describe(labels)}.")
    unknown = {c for row in labels for c in row} - set(classes)
    if unknown:
        raise InputError(f"labels: unknown head classes {sorted(unknown)}; "
                         f"expected some of {classes}.")
    idx = np.array([[classes.index(c) for c in row] for row in labels])
    cmap = ListedColormap([HEAD_CLASS_STYLE[c][0] for c in classes])
    ax.imshow(idx, cmap=cmap, vmin=-0.5, vmax=len(classes) - 0.5)
    for l, row in enumerate(labels):
        for i, c in enumerate(row):
            colour, letter = HEAD_CLASS_STYLE[c]
            ax.text(i, l, letter, ha="center", va="center", fontsize=GRID_FONT,
                    color=text_colour(colour), fontweight="bold")
    _layer_head_axes(ax, *idx.shape, title)
    if legend:
        flat = [c for row in labels for c in row]
        handles = [Patch(facecolor=HEAD_CLASS_STYLE[c][0], edgecolor="#555555",
                         label=f"{HEAD_CLASS_STYLE[c][1]} {c} ({flat.count(c)})")
                   for c in classes]
        ax.legend(handles=handles, fontsize=GRID_FONT, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def head_value_grid(ax, values, title: str | None = None, vmin: float = 0.0,
                    vmax: float = 1.0, fmt: str = "{:.2f}", colorbar: bool = True,
                    label: str = ""):
    """Draw one number per head, ``values`` (n_layers, h), as a viridis
    layers x heads heatmap with the number printed in every cell."""
    check_plot(ax, texts={"title": title, "label": label},
               numbers={"vmin": vmin, "vmax": vmax}, flags={"colorbar": colorbar},
               formats={"fmt": fmt} if fmt else None)
    v = check_matrix("values", values, 2)  # (n_layers, h), float64
    im = ax.imshow(v, cmap=CMAP, vmin=vmin, vmax=vmax)
    if fmt:
        for l in range(v.shape[0]):
            for i in range(v.shape[1]):
                bright = (v[l, i] - vmin) > 0.6 * (vmax - vmin)
                ax.text(i, l, fmt.format(v[l, i]),
                        ha="center", va="center", fontsize=GRID_FONT,
                        color="black" if bright else "white")
    _layer_head_axes(ax, *v.shape, title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label=label)
    return im


def head_grid_text(grid, fmt: str = "{}") -> str:
    """Text alternative of a layers x heads grid (classes or numbers): one
    line per layer, numbered from 1 as head names count (``"layer 1: P M K
    ..."``), classes written as their :data:`HEAD_CLASS_STYLE` letters."""
    check_grid(grid)
    check_options(formats={"fmt": fmt})
    lines = []
    # a tensor keeps its dtype, so that fmt "{}" writes integers as integers
    rows = to_numpy(grid, dtype=None) if hasattr(grid, "detach") else grid
    for l, row in enumerate(rows):
        cells = [HEAD_CLASS_STYLE[c][1] if isinstance(c, str) and c in HEAD_CLASS_STYLE
                 else fmt.format(c) for c in row]
        lines.append(f"layer {l + 1}: " + " ".join(cells))
    return "\n".join(lines)

