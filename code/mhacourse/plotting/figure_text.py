"""Figures that say how small their text is.

A figure's smallest text, in pixels of the saved PNG, is

    min_text_px = min over visible, non-empty texts of  fontsize_pt * dpi / 72

and on the page it is shown at ``min_text_px * shown_width / natural_width``.
:func:`install_png_formatter` makes every matplotlib figure a notebook shows
carry that number in its PNG (a tEXt entry, key :data:`TEXT_PX_KEY`), so the
site test (tests/test_site.py) can check every figure's text is >= 10 px as a
reader sees it. A figure drawn without the entry fails that test, unless it
has no text at all.

Plotting, not math: it imports matplotlib (no math module imports it) and
not IPython (the notebook hands in its shell).
"""
from __future__ import annotations

import io
import struct
import zlib

import matplotlib
import matplotlib.axis
import matplotlib.figure
import matplotlib.text

from .._validate import InputTypeError, check_bool, describe
from ._checks import check_figure, check_png

TEXT_PX_KEY = "mhacourse:min-text-px"   # PNG tEXt key; value: pixels, or "none"
NO_TEXT = "none"                         # the value for a figure with no text


def _drawn_texts(artist, out: list) -> list:
    """The Text artists under ``artist`` that a draw would paint: visible,
    with visible parents, and not on an axis that ``ax.axis("off")`` hides."""
    if not artist.get_visible():
        return out
    if isinstance(artist, matplotlib.text.Text):
        if artist.get_text().strip():
            out.append(artist)
        return out
    children = artist.get_children()
    if getattr(artist, "axison", True) is False:        # ax.axis("off")
        children = [c for c in children if not isinstance(c, matplotlib.axis.Axis)]
    for child in children:
        _drawn_texts(child, out)
    return out


def min_text_px(fig: matplotlib.figure.Figure, dpi: float | None = None) -> float | None:
    """Smallest text height of ``fig`` in pixels when saved at ``dpi``
    (``fig.dpi`` by default): ``min(fontsize_pt) * dpi / 72``; None if the
    figure has no text."""
    check_figure(fig, dpi)
    dpi = fig.dpi if dpi is None else dpi
    fig.draw_without_rendering()          # tick labels get their text at draw time
    sizes = [t.get_fontsize() for t in _drawn_texts(fig, [])]
    return min(sizes) * dpi / 72 if sizes else None


def png_with_text_size(fig: matplotlib.figure.Figure, dpi: float | None = None,
                       close: bool = False, **savefig_kwargs) -> bytes:
    """``fig`` as PNG bytes (``bbox_inches="tight"``), with its
    :func:`min_text_px` at that dpi stored under :data:`TEXT_PX_KEY`;
    ``close=True`` then closes the figure (for widgets' pictures)."""
    check_figure(fig, dpi)
    check_bool("close", close)
    dpi = fig.dpi if dpi is None else dpi
    px = min_text_px(fig, dpi)
    buf = io.BytesIO()
    kw = {"format": "png", "dpi": dpi, "bbox_inches": "tight",
          "facecolor": fig.get_facecolor(), "edgecolor": fig.get_edgecolor()}
    kw.update(savefig_kwargs)
    kw["metadata"] = {**kw.get("metadata", {}),
                      TEXT_PX_KEY: NO_TEXT if px is None else f"{px:.2f}"}
    fig.canvas.print_figure(buf, **kw)
    if close:
        import matplotlib.pyplot as plt
        plt.close(fig)
    return buf.getvalue()


def _notebook_png(fig):
    """The notebook's image/png formatter for a Figure (base64 text, as
    matplotlib_inline's own formatter returns)."""
    import base64
    if not fig.axes and not fig.lines:        # an empty figure shows nothing
        return None
    return base64.b64encode(png_with_text_size(fig)).decode("ascii")


def install_png_formatter(ip) -> bool:
    """Show every matplotlib figure in the IPython shell ``ip`` (a notebook
    passes ``get_ipython()``) through :func:`png_with_text_size`. Call once
    per notebook, after which ``plt.show()`` and a figure left as a cell's
    value both carry the entry. Returns False when ``ip`` is None (no
    IPython: nothing to install)."""
    check_shell(ip)
    if ip is None:
        return False
    # The inline backend registers its own PNG formatter when it is first
    # imported (at the first figure, since matplotlib resolves backends
    # lazily): import it now, so that ours, set after it, is the one used.
    if "inline" in matplotlib.get_backend():
        import matplotlib_inline.backend_inline  # noqa: F401
    ip.display_formatter.formatters["image/png"].for_type(matplotlib.figure.Figure,
                                                          _notebook_png)
    return True


def check_shell(ip) -> None:
    """``ip``: None or an IPython shell (``get_ipython()``)."""
    if ip is not None and not hasattr(getattr(ip, "display_formatter", None),
                                      "formatters"):
        raise InputTypeError(f"ip must be the IPython shell (get_ipython()) or None; "
                             f"got {describe(ip)}.")


def png_text_entries(png: bytes) -> dict[str, str]:
    """The tEXt, zTXt and iTXt entries of a PNG file, as {key: value}."""
    check_png(png)
    entries, pos = {}, 8
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"tEXt":
            key, _, value = data.partition(b"\0")
            entries[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = data.partition(b"\0")
            entries[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = data.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _tkey, _, text = rest.partition(b"\0")
            entries[key.decode("latin-1")] = (zlib.decompress(text) if compressed
                                              else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return entries


def png_min_text_px(png: bytes) -> float | None:
    """The smallest text size recorded in a PNG by :func:`png_with_text_size`:
    pixels, or None for a figure with no text. Raises KeyError for a PNG made
    without the entry."""
    check_png(png)
    value = png_text_entries(png)[TEXT_PX_KEY]
    return None if value == NO_TEXT else float(value)
