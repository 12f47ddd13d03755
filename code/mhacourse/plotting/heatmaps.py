"""Attention heatmaps: one head's (L, S) weights, a grid of heads, their text
alternative (:func:`top_attended`), and figures as PNG/HTML for widgets and
slides. Imports the math, never the widgets.
"""
from __future__ import annotations

import base64
import html
import io
import math
from typing import Sequence

import matplotlib.pyplot as plt

from .._arrays import to_numpy
from ._checks import (
    check_figure,
    check_heatmap,
    check_png_html,
    check_positive_int,
    check_top_attended,
)
from .colours import CMAP


def attention_heatmap(ax, weights, q_tokens: Sequence[str],
                      k_tokens: Sequence[str] | None = None, title: str | None = None,
                      vmax: float = 1.0, annotate: bool = False, colorbar: bool = True):
    """Draw one (L, S) weight matrix: rows are queries, columns are keys."""
    check_heatmap(weights, q_tokens, k_tokens)
    w = to_numpy(weights)
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
    check_heatmap(weights, tokens, None, 3)
    check_positive_int("ncols", ncols)
    w = to_numpy(weights)
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
    check_top_attended(weights, q_tokens, k_tokens, queries)
    w = to_numpy(weights)
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
    check_figure(fig, dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def png_html(png: bytes, alt: str, caption: str = "") -> str:
    """An ``<img>`` with alt text (and an optional caption) as an HTML string."""
    check_png_html(png, alt, caption)
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    cap = f"<div class='mha-caption'>{html.escape(caption)}</div>" if caption else ""
    return (f"<img src='{src}' alt='{html.escape(alt, quote=True)}' "
            f"style='max-width:100%;height:auto'/>{cap}")
