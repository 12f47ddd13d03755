"""Attention heatmaps as small HTML fragments: fast enough to redraw on every
widget change, small enough to precompute hundreds of them for the static site.

Each head is a tiny PNG with one pixel per (query, key) pair, coloured with
viridis and enlarged by the browser (``image-rendering: pixelated``), framed by
token labels on both axes. Every head also gets a line of text naming each
query's most-attended key (the text alternative). Imports the math and
matplotlib's colour maps; never the widgets.
"""
from __future__ import annotations

import base64
import html
import io
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from ._validate import InputError, InputTypeError, check_text, describe
from .plotting._checks import check_matrix, check_tokens
from .plotting.figure_text import NO_TEXT, TEXT_PX_KEY
from .plotting.heatmaps import top_attended

_VIRIDIS = (colormaps["viridis"](np.linspace(0, 1, 256))[:, :3] * 255).astype(np.uint8)


def check_weights_image(w) -> np.ndarray:
    """(L, S) attention weights: finite numbers in [0, 1]."""
    w = check_matrix("w", w, 2)
    if not ((w >= -1e-6) & (w <= 1 + 1e-6)).all():  # rounding of a softmax
        raise InputError("w must hold attention weights, numbers from 0 to 1; got "
                         f"values from {w.min():.3g} to {w.max():.3g}.")
    return w


def check_head_html(w, q_tokens, k_tokens, title) -> np.ndarray:
    w = check_weights_image(w)
    check_tokens("q_tokens", q_tokens, w.shape[0])
    check_tokens("k_tokens", k_tokens, w.shape[1])
    check_text("title", title)
    return w


def check_heads_html(weights, tokens, titles, header) -> np.ndarray:
    w = check_matrix("weights", weights, 3)  # (h, L, L)
    check_tokens("tokens", tokens, w.shape[-1])
    if titles is not None and (isinstance(titles, (str, bytes))
                               or not isinstance(titles, (list, tuple))
                               or len(titles) != w.shape[0]
                               or not all(isinstance(t, str) for t in titles)):
        raise InputTypeError(f"titles must be None or one title (str) per head "
                             f"({w.shape[0]}); got {describe(titles)}.")
    check_text("header", header)
    return w


def weights_png(w) -> bytes:
    """(L, S) weights in [0, 1] -> PNG bytes of L x S pixels (viridis). The
    PNG records that it has no text (see :mod:`mhacourse.plotting.figure_text`): its
    labels are HTML around it."""
    w = check_weights_image(w)
    idx = np.clip(np.rint(w * 255), 0, 255).astype(np.uint8)  # (L, S)
    buf = io.BytesIO()
    info = PngInfo()
    info.add_text(TEXT_PX_KEY, NO_TEXT)
    Image.fromarray(_VIRIDIS[idx], "RGB").save(buf, format="PNG", optimize=False,
                                               pnginfo=info)
    return buf.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _cell_px(n: int) -> int:
    return int(max(9, min(14, 240 // max(n, 1))))


_STYLE = (
    "<style>.mha-h{display:inline-grid;grid-template-columns:auto auto;"
    "margin:4px 10px 10px 0;font:11px sans-serif;vertical-align:top}"
    ".mha-h figcaption{grid-column:1/3;text-align:center;font-weight:bold}"
    ".mha-q{display:flex;flex-direction:column;align-items:flex-end;padding-right:3px}"
    ".mha-q span{height:var(--c);line-height:var(--c)}"
    ".mha-k{display:flex}.mha-k span{width:var(--c);writing-mode:vertical-rl;"
    "transform:rotate(180deg);text-align:left}"
    ".mha-h img{image-rendering:pixelated}</style>"
)


def head_html(w, q_tokens: Sequence[str], k_tokens: Sequence[str], title: str) -> str:
    """One head: title, query labels (rows), the heatmap, key labels (columns).

    Uses the classes of ``_STYLE``, which :func:`heads_html` includes once.
    """
    w = check_head_html(w, q_tokens, k_tokens, title)
    L, S = w.shape
    c = _cell_px(max(L, S))
    esc = html.escape
    rows = "".join(f"<span>{esc(t)}</span>" for t in q_tokens)
    cols = "".join(f"<span>{esc(t)}</span>" for t in k_tokens)
    alt = (f"{title}: attention heatmap over {L} queries and {S} keys; each query's "
           "most-attended key is listed in the text below")
    return (
        f"<figure class='mha-h' style='--c:{c}px'><figcaption>{esc(title)}</figcaption>"
        f"<div class='mha-q'>{rows}</div>"
        f"<img src='{_data_uri(weights_png(w))}' width='{S * c}' height='{L * c}' "
        f"alt='{esc(alt, quote=True)}'/><div></div><div class='mha-k'>{cols}</div></figure>"
    )


def legend_html() -> str:
    """The colour scale: viridis from weight 0 to weight 1."""
    bar = _data_uri(weights_png(np.linspace(0, 1, 64)[None, :]))
    return ("<div style='font:11px sans-serif;margin:2px 0 6px'>"
            "attention weight: 0 "
            f"<img src='{bar}' width='160' height='10' alt='colour scale from dark "
            "purple (0) through green to yellow (1)' style='image-rendering:pixelated;"
            "vertical-align:middle'/> 1 &nbsp;&middot;&nbsp; rows: queries (attending), "
            "columns: keys (attended to)</div>")


def heads_html(weights, tokens: Sequence[str], titles: Sequence[str] | None = None,
               header: str = "") -> str:
    """All heads of one layer, ``weights`` (h, L, L), with legend and text lines."""
    w = check_heads_html(weights, tokens, titles, header)
    titles = titles or [f"head {i + 1}" for i in range(w.shape[0])]
    figures = "".join(head_html(w[i], tokens, tokens, titles[i]) for i in range(w.shape[0]))
    lines = "".join(
        f"<li>{html.escape(t)}: {html.escape(top_attended(w[i], list(tokens)))}</li>"
        for i, t in enumerate(titles))
    head = f"<div style='font:12px sans-serif;margin-bottom:4px'>{header}</div>" if header else ""
    return (f"<div class='mha-heads'>{_STYLE}{head}{legend_html()}<div>{figures}</div>"
            "<details style='font:11px sans-serif'><summary>Text: each query's "
            f"most-attended key, per head</summary><ul>{lines}</ul></details></div>")


def message_html(text: str) -> str:
    """A one-line message shown in place of the heatmaps (bad input)."""
    check_text("text", text)
    return ("<div role='status' style='font:13px sans-serif;padding:8px;"
            "border-left:4px solid #d55e00;background:#fff4e5;color:#222'>"
            f"{html.escape(text)}</div>")
