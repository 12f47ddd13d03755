"""Pictures of attention. Imports the math, never the widgets.

Colour map: ``viridis`` (perceptually uniform, readable with the common
colour-vision deficiencies and in greyscale). Every heatmap has a text
alternative: :func:`top_attended`.
"""
from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

CMAP = "viridis"


def _np(a) -> np.ndarray:
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def attention_heatmap(ax, weights, q_tokens: Sequence[str],
                      k_tokens: Sequence[str] | None = None, title: str | None = None,
                      vmax: float = 1.0, annotate: bool = False, colorbar: bool = True):
    """Draw one (L, S) weight matrix: rows are queries, columns are keys."""
    w = _np(weights)
    k_tokens = q_tokens if k_tokens is None else k_tokens
    im = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(k_tokens)), k_tokens, rotation=90, fontsize=8)
    ax.set_yticks(range(len(q_tokens)), q_tokens, fontsize=8)
    ax.set_xlabel("key (attended to)", fontsize=8)
    ax.set_ylabel("query (attending)", fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    if annotate:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if w[i, j] > 0.6 * vmax else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return im


def heads_grid(weights, tokens: Sequence[str], titles: Sequence[str] | None = None,
               ncols: int = 4, suptitle: str | None = None, size: float = 2.6):
    """One heatmap per head. ``weights`` (h, L, L). Returns the figure."""
    w = _np(weights)
    h = w.shape[0]
    ncols = min(ncols, h)
    nrows = math.ceil(h / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols + 1, size * nrows + 0.6),
                             squeeze=False, constrained_layout=True)
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.axis("off")
            continue
        im = attention_heatmap(ax, w[i], tokens, title=titles[i] if titles else f"head {i + 1}",
                               colorbar=False)
        if i % ncols:
            ax.set_ylabel("")
            ax.set_yticklabels([])
    fig.colorbar(im, ax=axes, fraction=0.02, pad=0.02, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return fig


def top_attended(weights, q_tokens: Sequence[str], k_tokens: Sequence[str] | None = None,
                 queries: Sequence[int] | None = None) -> str:
    """Text alternative to a heatmap: each query's most-attended key and weight.

    ``weights`` (L, S) for one head or (h, L, S) for several.
    """
    w = _np(weights)
    k_tokens = q_tokens if k_tokens is None else k_tokens
    if w.ndim == 2:
        w = w[None]
    queries = range(w.shape[1]) if queries is None else queries
    lines = []
    for i, head in enumerate(w):
        parts = [f"{q_tokens[q]}→{k_tokens[int(head[q].argmax())]} ({head[q].max():.2f})"
                 for q in queries]
        prefix = f"head {i + 1}: " if w.shape[0] > 1 else ""
        lines.append(prefix + ", ".join(parts))
    return "\n".join(lines)


def figure_png(fig, dpi: int = 80) -> bytes:
    """Render a figure to PNG bytes and close it (for widgets and slides)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def png_html(png: bytes, alt: str, caption: str = "") -> str:
    """An ``<img>`` with alt text (and an optional caption) as an HTML string."""
    import base64
    import html

    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    cap = f"<div class='mha-caption'>{html.escape(caption)}</div>" if caption else ""
    return (f"<img src='{src}' alt='{html.escape(alt, quote=True)}' "
            f"style='max-width:100%;height:auto'/>{cap}")


# Okabe–Ito colours, one per head (up to 8), for pictures coloured by head.
HEAD_COLORS = ["#e69f00", "#56b4e9", "#009e73", "#f0e442",
               "#0072b2", "#d55e00", "#cc79a7", "#999999"]


def _text_colour(hex_colour: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on ``hex_colour``."""
    def lin(v):
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


def _head_label(i: int, d_k: int) -> str:
    return f"head {i + 1}" if d_k >= 2 else f"h{i + 1}"


def _split_sizes(x, blocks):
    """``x`` (L, d_model) and its head blocks (h, L, d_k) as arrays, with their
    sizes, refusing blocks that do not hold x's entries or too many heads."""
    x, blocks = _np(x), _np(blocks)
    L, d_model = x.shape
    h, L_b, d_k = blocks.shape
    if h * L_b * d_k != L * d_model:
        raise ValueError(f"blocks {blocks.shape} do not hold the {L * d_model} "
                         f"entries of x {x.shape}.")
    if h > len(HEAD_COLORS):
        raise ValueError(f"at most {len(HEAD_COLORS)} heads can be coloured; got h = {h}.")
    return x, blocks, L, d_model, h, L_b, d_k


def head_split_figure(x, blocks, title: str | None = None,
                      arrow_label: str = "", cell: float = 0.5):
    """Where each entry of a projection output lands when it is cut into heads.

    ``x`` (L, d_model): the projection output, with **distinct** entries (e.g.
    ``torch.arange``) so each can be followed. ``blocks`` (h, L, d_k): what a
    split produced from it (correct or not). Top: ``x``, each entry coloured by
    the head that owns its column (head i owns columns i*d_k:(i+1)*d_k).
    Bottom: the h blocks, each entry keeping its number and colour, so a
    wrong split shows up as colours (and token rows) mixed inside a head.
    Returns the figure.
    """
    from matplotlib.patches import Rectangle

    x, blocks, L, d_model, h, L_b, d_k = _split_sizes(x, blocks)
    where = {}
    for t in range(L):
        for c in range(d_model):
            where[float(x[t, c])] = (t, c)
    if len(where) != x.size:
        raise ValueError("the entries of x must be distinct, e.g. torch.arange, "
                         "so that each one can be followed.")
    colour = [HEAD_COLORS[c // d_k] for c in range(d_model)]
    gap = 0.6                      # between head blocks, in cells
    width_bottom = h * d_k + (h - 1) * gap
    width = max(d_model, width_bottom)
    top_x0 = (width - d_model) / 2
    y_bottom = L + 2.2             # the blocks start this many cells lower
    fig, ax = plt.subplots(figsize=(cell * width + 1.4, cell * (2 * L + 3.6) + 0.4))
    small = 8

    def draw(x0, y0, value, fill):
        ax.add_patch(Rectangle((x0, y0), 1, 1, facecolor=fill, edgecolor="white", lw=1.5))
        ax.text(x0 + 0.5, y0 + 0.5, f"{value:g}", ha="center", va="center",
                fontsize=small, color=_text_colour(fill))

    for t in range(L):             # top: the (L, d_model) projection output
        ax.text(top_x0 - 0.2, t + 0.5, f"token {t}", ha="right", va="center",
                fontsize=8)
        for c in range(d_model):
            draw(top_x0 + c, t, x[t, c], colour[c])
    for i in range(h):             # head labels over the columns each head owns
        ax.text(top_x0 + (i + 0.5) * d_k, -0.35, _head_label(i, d_k), ha="center",
                va="bottom", fontsize=8)
    ax.text(top_x0 + d_model / 2, -1.1, f"projection output, shape (L, d_model) = "
            f"({L}, {d_model})", ha="center", va="bottom", fontsize=9)
    ax.annotate("", xy=(width / 2, y_bottom - 0.55), xytext=(width / 2, L + 0.25),
                arrowprops=dict(arrowstyle="->", lw=1.2))
    if arrow_label:
        ax.text(width / 2 + 0.3, L + 1.0, arrow_label, ha="left", va="center",
                fontsize=8)
    for i in range(h):             # bottom: the (h, L, d_k) blocks
        bx = (width - width_bottom) / 2 + i * (d_k + gap)
        for t in range(L):
            for c in range(d_k):
                value = blocks[i, t, c]
                _, col = where[float(value)]
                draw(bx + c, y_bottom + t, value, colour[col])
        ax.text(bx + d_k / 2, y_bottom + L + 0.2, _head_label(i, d_k),
                ha="center", va="top", fontsize=8)
    for t in range(L):
        ax.text((width - width_bottom) / 2 - 0.2, y_bottom + t + 0.5, f"token {t}",
                ha="right", va="center", fontsize=8)
    ax.text(width / 2, y_bottom + L + 1.0, f"heads, shape (h, L, d_k) = ({h}, {L}, "
            f"{d_k}); the code reads row t of each head as token t",
            ha="center", va="top", fontsize=8)
    ax.set_xlim(-2.6, width + 0.2)
    ax.set_ylim(y_bottom + L + 2.0, -1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return fig


# Okabe-Ito colours, one per head (they repeat after five heads; every block
# is also labelled, so colour is never the only cue).


def head_blocks(ax, values, h: int, axis: int = 1, fmt: str = "{:.1f}",
                row_labels: Sequence[str] | None = None, title: str | None = None,
                head_names: Sequence[str] | None = None, first_head: int = 0,
                fontsize: float = 8):
    """Draw a matrix whose blocks of ``d_k`` columns (``axis=1``, as in the
    concatenated heads) or rows (``axis=0``, as in ``W_O``) belong to heads.

    Each block gets a light tint of its head's colour, a dark outline and a
    label ("head 1", ...); cells show their value with ``fmt`` (``fmt=""``
    shows none). ``values`` (n_rows, n_cols), with ``h`` dividing the
    blocked axis. ``first_head`` offsets the colour and label of block 0;
    ``fontsize`` sets the cells' text (labels get the same size).
    """
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Rectangle

    v = _np(values)
    if v.ndim != 2 or v.shape[axis] % h:
        raise ValueError(f"values must be 2-D with h = {h} dividing axis {axis}; "
                         f"got shape {v.shape}.")
    n_rows, n_cols = v.shape
    d_k = v.shape[axis] // h
    names = head_names or [f"head {first_head + i + 1}" for i in range(h)]
    for r in range(n_rows):
        for c in range(n_cols):
            i = (c if axis == 1 else r) // d_k
            colour = HEAD_COLORS[(first_head + i) % len(HEAD_COLORS)]
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=to_rgba(colour, 0.3),
                                   edgecolor="white", linewidth=1))
            if fmt:
                ax.text(c + 0.5, r + 0.5, fmt.format(v[r, c]), ha="center",
                        va="center", fontsize=fontsize, color="black")
    for i in range(h):
        colour = HEAD_COLORS[(first_head + i) % len(HEAD_COLORS)]
        if axis == 1:
            xy, w, hgt = (i * d_k, 0), d_k, n_rows
            ax.text(i * d_k + d_k / 2, -0.15, names[i], ha="center", va="bottom",
                    fontsize=fontsize, color=colour, fontweight="bold")
        else:
            xy, w, hgt = (0, i * d_k), n_cols, d_k
            ax.text(-0.2, i * d_k + d_k / 2, names[i], ha="right", va="center",
                    fontsize=fontsize, color=colour, fontweight="bold")
        ax.add_patch(Rectangle(xy, w, hgt, fill=False, edgecolor=colour,
                               linewidth=2.2))
    ax.set_xlim(-0.05, n_cols + 0.05)
    ax.set_ylim(n_rows + 0.05, -0.9 if axis == 1 else -0.05)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(n_cols)], [str(c) for c in range(n_cols)],
                  fontsize=fontsize - 1)
    if row_labels is not None:
        ax.set_yticks([r + 0.5 for r in range(n_rows)], list(row_labels),
                      fontsize=fontsize)
    else:
        ax.set_yticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    if title:
        ax.set_title(title, fontsize=fontsize + 1, pad=2 * fontsize if axis == 1 else 6)
    return ax


# ---------------------------------------------------------------------------
# Chapters 10 and 11: diagrams drawn with boxes and arrows.

_BLOCK_COLOURS = {  # Okabe-Ito edges; the fills are light tints of them
    "attn": ("#0072b2", "#cfe3f1"),
    "norm": ("#e69f00", "#fbe8c4"),
    "ffn": ("#009e73", "#c8eadf"),
    "io": ("#555555", "#ffffff"),
}


def block_diagram(ax, pre_ln: bool, title: str | None = None,
                  norm_name: str = "LayerNorm"):
    """Draw one transformer block, input at the bottom, as boxes and arrows.

    Post-LN (``pre_ln=False``): ``x -> MHA -> (+x) -> Norm -> FFN -> (+) -> Norm``.
    Pre-LN: ``x -> Norm -> MHA -> (+x) -> Norm -> FFN -> (+)``; the residual
    path (right) skips the norms. Residual additions are drawn as ⊕.
    """
    from matplotlib.patches import Ellipse, FancyArrowPatch, FancyBboxPatch

    if pre_ln:
        steps = [("in", "x"), ("norm", norm_name), ("attn", "Multi-head\nattention"),
                 ("add", ""), ("norm", norm_name), ("ffn", "Feed-forward"),
                 ("add", ""), ("out", "to the next block")]
        branches = [(0, 3), (3, 6)]  # residual from just above step i to the add
    else:
        steps = [("in", "x"), ("attn", "Multi-head\nattention"), ("add", ""),
                 ("norm", norm_name), ("ffn", "Feed-forward"), ("add", ""),
                 ("norm", norm_name), ("out", "to the next block")]
        branches = [(0, 2), (3, 5)]
    n = len(steps)
    ys = [0.04 + 0.92 * i / (n - 1) for i in range(n)]
    xc, w, hgt, r, xr = 0.42, 0.56, 0.066, 0.026, 0.86
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    box = ax.get_position()  # figure fraction: draw circles round on screen
    fw, fh = ax.figure.get_size_inches()
    stretch = (box.height * fh) / (box.width * fw)  # x units per y unit

    def top(i):
        kind = steps[i][0]
        return ys[i] + (r if kind == "add" else 0.02 if kind in ("in", "out")
                        else hgt / 2)

    def bottom(i):
        kind = steps[i][0]
        return ys[i] - (r if kind == "add" else 0.02 if kind in ("in", "out")
                        else hgt / 2)

    for i, (kind, label) in enumerate(steps):
        y = ys[i]
        if kind in ("attn", "norm", "ffn"):
            edge, face = _BLOCK_COLOURS[kind]
            ax.add_patch(FancyBboxPatch((xc - w / 2, y - hgt / 2), w, hgt,
                                        boxstyle="round,pad=0.005,rounding_size=0.02",
                                        fc=face, ec=edge, lw=1.6))
            ax.text(xc, y, label, ha="center", va="center", fontsize=8.5)
        elif kind == "add":
            ax.add_patch(Ellipse((xc, y), 2 * r * stretch, 2 * r, fc="white",
                                 ec="#333333", lw=1.3))
            ax.text(xc, y, "+", ha="center", va="center", fontsize=11)
        else:
            ax.text(xc, y, label, ha="center", va="center", fontsize=8.5,
                    style="italic")
        if i:
            ax.add_patch(FancyArrowPatch((xc, top(i - 1)), (xc, bottom(i)),
                                         arrowstyle="-|>", mutation_scale=9,
                                         lw=1.1, color="#333333"))
    for start, add in branches:
        yb = top(start) + 0.3 * (bottom(start + 1) - top(start))  # the fork
        ax.plot([xc, xr, xr], [yb, yb, ys[add]], color="#333333", lw=1.1)
        ax.plot([xc], [yb], "o", color="#333333", ms=3)
        ax.add_patch(FancyArrowPatch((xr, ys[add]), (xc + r * stretch, ys[add]),
                                     arrowstyle="-|>", mutation_scale=9,
                                     lw=1.1, color="#333333"))
    ax.text(xr + 0.02, (ys[branches[0][0]] + ys[branches[0][1]]) / 2, "residual",
            rotation=90, ha="left", va="center", fontsize=7.5, color="#333333")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def kv_sharing_diagram(ax, h: int, h_kv: int, title: str | None = None):
    """Draw ``h`` query heads (top row) and the ``h_kv`` key/value heads
    (bottom row) they read; query head i reads key/value head i // (h / h_kv).
    Groups are told apart by colour (Okabe-Ito) and by the lines."""
    from matplotlib.patches import Rectangle

    g = h // h_kv
    colours = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
               "#56b4e9", "#f0e442", "#000000"]
    ax.set_xlim(-0.5, h - 0.5)
    ax.set_ylim(-0.35, 1.45)
    ax.axis("off")
    s = 0.7
    kv_x = [(j * g + (g - 1) / 2) for j in range(h_kv)]  # under each group
    for i in range(h):
        c = colours[(i // g) % len(colours)]
        ax.add_patch(Rectangle((i - s / 2, 1.0), s, 0.3, fc=c, ec="black", lw=0.8))
        ax.plot([i, kv_x[i // g]], [1.0, 0.35], color=c, lw=1.2)
    for j, x in enumerate(kv_x):
        c = colours[j % len(colours)]
        ax.add_patch(Rectangle((x - s / 2, 0.05), s, 0.3, fc="white", ec=c, lw=2.2,
                               hatch="///"))
    ax.text(-0.45, 1.36, f"{h} query heads", fontsize=9, va="bottom")
    ax.text(-0.45, -0.02, f"{h_kv} key/value head{'s' if h_kv > 1 else ''} "
            "(cached)", fontsize=9, va="top")
    if title:
        ax.set_title(title, fontsize=10, pad=10)
    return ax


# --- Chapter 4: a gallery of a model's heads (layers x heads) -----------------

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
    """Ticks, labels and thin white cell borders for a (layers, heads) grid."""
    ax.set_xticks(range(h), [str(i) for i in range(h)], fontsize=GRID_FONT)
    ax.set_yticks(range(n_layers), [str(l) for l in range(n_layers)], fontsize=GRID_FONT)
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
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    classes = list(HEAD_CLASS_STYLE)
    unknown = {c for row in labels for c in row} - set(classes)
    if unknown:
        raise ValueError(f"unknown head classes {sorted(unknown)}; "
                         f"expected some of {classes}.")
    idx = np.array([[classes.index(c) for c in row] for row in labels])
    cmap = ListedColormap([HEAD_CLASS_STYLE[c][0] for c in classes])
    ax.imshow(idx, cmap=cmap, vmin=-0.5, vmax=len(classes) - 0.5)
    for l, row in enumerate(labels):
        for i, c in enumerate(row):
            colour, letter = HEAD_CLASS_STYLE[c]
            ax.text(i, l, letter, ha="center", va="center", fontsize=GRID_FONT,
                    color=_text_colour(colour), fontweight="bold")
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
    v = _np(values).astype(float)
    if v.ndim != 2:
        raise ValueError(f"values must be (n_layers, h); got shape {v.shape}.")
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
    line per layer, ``"layer 0: P M K ..."``, classes written as their
    :data:`HEAD_CLASS_STYLE` letters."""
    lines = []
    for l, row in enumerate(_np(grid) if hasattr(grid, "detach") else grid):
        cells = [HEAD_CLASS_STYLE[c][1] if isinstance(c, str) and c in HEAD_CLASS_STYLE
                 else fmt.format(c) for c in row]
        lines.append(f"layer {l}: " + " ".join(cells))
    return "\n".join(lines)


def head_split_html(x, blocks, title: str = "", arrow_label: str = "") -> str:
    """The picture of :func:`head_split_figure` as HTML tables: quick to make
    (no rendering), so a widget can hold many of them, and readable by screen
    readers (real text in table cells, with captions and row headers).

    ``x`` (L, d_model) with distinct entries; ``blocks`` (h, L, d_k).
    """
    import html

    x, blocks, L, d_model, h, L_b, d_k = _split_sizes(x, blocks)
    column = {float(x[t, c]): c for t in range(L) for c in range(d_model)}
    if len(column) != x.size:
        raise ValueError("the entries of x must be distinct, e.g. torch.arange, "
                         "so that each one can be followed.")
    cell = ("width:2.1em;height:1.7em;text-align:center;font:12px monospace;"
            "border:2px solid white;padding:0;")
    th = "font:11px sans-serif;padding:0 0.4em;text-align:right;white-space:nowrap;"

    def td(value, col):
        fill = HEAD_COLORS[col // d_k]
        return (f"<td style='{cell}background:{fill};color:{_text_colour(fill)}'>"
                f"{value:g}</td>")

    def table(caption, rows, header=""):
        body = "".join(f"<tr><th scope='row' style='{th}'>token {t}</th>{r}</tr>"
                       for t, r in enumerate(rows))
        return (f"<table style='border-collapse:collapse;margin:0 0.5em'>"
                f"<caption style='font:12px sans-serif;caption-side:bottom'>"
                f"{html.escape(caption)}</caption>{header}{body}</table>")

    head_row = "<tr><td></td>" + "".join(
        f"<th scope='colgroup' colspan='{d_k}' style='font:11px sans-serif'>"
        f"{'head ' if d_k >= 2 else 'h'}{i + 1}</th>" for i in range(h)) + "</tr>"
    top = table(f"projection output, shape (L, d_model) = ({L}, {d_model})",
                ["".join(td(x[t, c], c) for c in range(d_model)) for t in range(L)],
                head_row)
    heads = "".join(
        table(f"head {i + 1}",
              ["".join(td(v, column[float(v)]) for v in blocks[i, t]) for t in range(L_b)])
        for i in range(h))
    return ("<div style='font:13px sans-serif'>"
            + (f"<p style='margin:0.2em 0'><strong>{html.escape(title)}</strong></p>"
               if title else "")
            + top
            + f"<p style='margin:0.3em 2em'>&darr; {html.escape(arrow_label)}</p>"
            + "<div style='display:flex;flex-wrap:wrap;align-items:flex-start'>"
            + heads + "</div>"
            + f"<p style='margin:0.3em 0;font-size:12px'>heads, shape (h, L, d_k) = "
              f"({h}, {L_b}, {d_k}); the code reads row t of each head as token t.</p>"
            + "</div>")


# ---------------------------------------------------------------------------
# Chapter 9: benchmark ratios as grouped bars.

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
    labels = list(series)
    n_groups, n_series = len(groups), len(labels)
    if n_series == 0:
        raise ValueError("series is empty: give at least one {label: values}.")
    for lab in labels:
        if len(series[lab]) != n_groups:
            raise ValueError(f"series {lab!r} has {len(series[lab])} values; "
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


#: Okabe-Ito colour and marker of each part of the tiny models' task.
PART_STYLE = {"accuracy": ("#000000", "o", "-"), "previous": ("#0072b2", "s", "--"),
              "lookup": ("#d55e00", "^", "-.")}


def accuracy_vs_heads(ax, h, curves: dict, d_model: int | None = None,
                      baselines: dict | None = None, title: str | None = None):
    """Accuracy against the number of heads ``h`` (log-2 axis).

    ``curves``: ``{name: (mean, low, high)}``, three sequences over ``h``
    (``low``/``high`` may be ``None``: then no error bars), drawn with
    :data:`PART_STYLE` where ``name`` is one of its keys. ``d_model``: label
    each tick ``h`` over ``d_k = d_model // h``. ``baselines``:
    ``{label: (value, colour)}`` drawn as dotted horizontal lines.
    """
    h = [int(x) for x in h]
    for i, (name, (mean, low, high)) in enumerate(curves.items()):
        colour, marker, ls = PART_STYLE.get(
            name, (HEAD_COLORS[i % len(HEAD_COLORS)], "o", "-"))
        mean = _np(mean)
        yerr = None
        if low is not None and high is not None:
            yerr = np.vstack([mean - _np(low), _np(high) - mean])
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
