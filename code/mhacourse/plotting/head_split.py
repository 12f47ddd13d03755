"""Pictures of heads as blocks of columns: where each entry of a projection
output lands when it is cut into h heads (chapter 2), and a matrix whose
blocks of d_k columns or rows belong to heads (chapters 5 and 6).

Every head has an Okabe–Ito colour (:data:`~.colours.HEAD_COLORS`) and a
label, so colour is never the only cue.
"""
from __future__ import annotations

import html
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from .._validate import InputError
from ._checks import check_head_blocks, check_matrix, check_options
from .colours import HEAD_COLORS, text_colour


def _head_label(i: int, d_k: int) -> str:
    return f"head {i + 1}" if d_k >= 2 else f"h{i + 1}"


def _check_split_sizes(x, blocks):
    """``x`` (L, d_model) and its head blocks (h, L, d_k) as arrays, with their
    sizes, refusing blocks that do not hold x's entries or too many heads."""
    x, blocks = check_matrix("x", x, 2), check_matrix("blocks", blocks, 3)
    L, d_model = x.shape
    h, L_b, d_k = blocks.shape
    if h * L_b * d_k != L * d_model:
        raise InputError(f"blocks {blocks.shape} do not hold the {L * d_model} "
                         f"entries of x {x.shape}.")
    if h > len(HEAD_COLORS):
        raise InputError(f"blocks: at most {len(HEAD_COLORS)} heads can be "
                         f"coloured; got h = {h}.")
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
    check_options(texts={"title": title, "arrow_label": arrow_label})
    x, blocks, L, d_model, h, L_b, d_k = _check_split_sizes(x, blocks)
    where = {}
    for t in range(L):
        for c in range(d_model):
            where[float(x[t, c])] = (t, c)
    if len(where) != x.size:
        raise InputError("the entries of x must be distinct, e.g. torch.arange, "
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
                fontsize=small, color=text_colour(fill))

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



def head_split_html(x, blocks, title: str = "", arrow_label: str = "") -> str:
    """The picture of :func:`head_split_figure` as HTML tables: quick to make
    (no rendering), so a widget can hold many of them, and readable by screen
    readers (real text in table cells, with captions and row headers).

    ``x`` (L, d_model) with distinct entries; ``blocks`` (h, L, d_k).
    """
    check_options(texts={"title": title, "arrow_label": arrow_label})
    x, blocks, L, d_model, h, L_b, d_k = _check_split_sizes(x, blocks)
    column = {float(x[t, c]): c for t in range(L) for c in range(d_model)}
    if len(column) != x.size:
        raise InputError("the entries of x must be distinct, e.g. torch.arange, "
                         "so that each one can be followed.")
    cell = ("width:2.1em;height:1.7em;text-align:center;font:12px monospace;"
            "border:2px solid white;padding:0;")
    th = "font:11px sans-serif;padding:0 0.4em;text-align:right;white-space:nowrap;"

    def td(value, col):
        fill = HEAD_COLORS[col // d_k]
        return (f"<td style='{cell}background:{fill};color:{text_colour(fill)}'>"
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
    check_head_blocks(ax, h, axis, fmt, title, first_head, fontsize)
    v = check_matrix("values", values, 2)
    if v.ndim != 2 or v.shape[axis] % h:
        raise InputError(f"values must be 2-D with h = {h} dividing axis {axis}; "
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

