"""Diagrams drawn with boxes and arrows: the transformer block (chapter 10)
and the query heads sharing key/value heads of GQA (chapter 12).
"""
from __future__ import annotations

from matplotlib.patches import Ellipse, FancyArrowPatch, FancyBboxPatch, Rectangle

from ._checks import check_block_diagram, check_kv_sharing

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
    check_block_diagram(pre_ln, ax, title, norm_name)
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
    check_kv_sharing(h, h_kv, ax, title)
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

