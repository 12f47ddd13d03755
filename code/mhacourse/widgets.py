"""Widgets: they only wire controls to plotting functions.

:func:`precomputed_explorer` works in **both** places a reader meets it:

- in a live kernel (Jupyter, Binder, Colab), and
- on the static website, with no kernel: every combination of the controls is
  rendered when the page is built, and the controls pick one with links that
  run in the browser (``jslink`` between each control's ``index`` and a
  ``Stack``'s ``selected_index``). Nothing needs Python after the build.

The cost is one picture per combination, so keep the grid small.
"""
from __future__ import annotations

from typing import Callable, Sequence

import ipywidgets as W

Option = tuple[str, object]  # (label shown to the reader, value passed to render)


def control(description: str, options: Sequence[Option], value_index: int = 0,
            kind: str = "toggle") -> W.ValueWidget:
    """A labelled, keyboard-operable control choosing one of ``options``.

    ``kind`` is ``"toggle"`` (a row of buttons, for a few options) or
    ``"dropdown"``. (No slider: its handle has no accessible name in the
    static widget manager.)
    """
    labels = [label for label, _ in options]
    style = {"description_width": "initial"}
    if kind == "dropdown":
        w = W.Dropdown(options=labels, description=description, style=style)
    else:
        w = W.ToggleButtons(options=labels, description=description, style=style)
    w.index = value_index
    return w


def precomputed_explorer(
    controls: Sequence[tuple[str, Sequence[Option]]],
    render: Callable[..., str],
    kinds: Sequence[str] | None = None,
    defaults: Sequence[int] | None = None,
    names: Sequence[str] | None = None,
) -> W.VBox:
    """Controls over a grid of pre-rendered views.

    ``controls``: ``[(description, [(label, value), ...]), ...]``.
    ``render(**{name: value})`` returns HTML (e.g. :func:`plotting.png_html`)
    for one combination; ``names`` are the keyword names (default: the
    descriptions, lower-cased). The returned box holds the controls and nested
    ``Stack`` widgets, one level per control.
    """
    kinds = kinds or ["toggle"] * len(controls)
    defaults = defaults or [0] * len(controls)
    names = names or [d.lower() for d, _ in controls]
    ctrls = [control(d, opts, i, k) for (d, opts), k, i in zip(controls, kinds, defaults)]

    def build(level: int, chosen: dict) -> W.Widget:
        if level == len(controls):
            return W.HTML(render(**chosen))
        children = [build(level + 1, {**chosen, names[level]: value})
                    for _, value in controls[level][1]]
        stack = W.Stack(children, selected_index=defaults[level])
        W.jslink((ctrls[level], "index"), (stack, "selected_index"))
        return stack

    return W.VBox([W.HBox(ctrls, layout=W.Layout(flex_flow="row wrap")), build(0, {})])
