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
from IPython.display import display
from traitlets import TraitError, validate

from . import explorer as ex
from ._validate import InputError, InputTypeError, as_int, describe
from .plotting_html import heads_html, message_html

Option = tuple[str, object]  # (label shown to the reader, value passed to render)

KINDS = ("toggle", "dropdown")
MAX_VIEWS = 2000  # pre-rendered views a static explorer may hold (page weight)


def check_control(description, options, value_index, kind) -> None:
    if not isinstance(description, str):
        raise InputTypeError(f"description must be the control's label (a str); got "
                             f"{describe(description)}.")
    if isinstance(options, (str, bytes)) or not isinstance(options, (list, tuple)) \
            or not options or not all(isinstance(o, tuple) and len(o) == 2
                                      and isinstance(o[0], str) for o in options):
        raise InputTypeError(f"options must be a non-empty list of (label, value) "
                             f"pairs, each label a str; got {describe(options)}.")
    i = as_int("value_index", value_index)
    if not 0 <= i < len(options):
        raise InputError(f"value_index = {i} is not an option: 0..{len(options) - 1}.")
    if kind not in KINDS:
        raise InputError(f"kind must be one of {list(KINDS)}; got {describe(kind)}.")


def check_explorer(controls, render, kinds, defaults, names) -> None:
    if isinstance(controls, (str, bytes)) or not isinstance(controls, (list, tuple)) \
            or not controls or not all(isinstance(c, tuple) and len(c) == 2
                                       for c in controls):
        raise InputTypeError(f"controls must be a non-empty list of (description, "
                             f"options) pairs; got {describe(controls)}.")
    if not callable(render):
        raise InputTypeError(f"render must be a function returning HTML; got "
                             f"{describe(render)}.")
    n = len(controls)
    for name, seq in (("kinds", kinds), ("defaults", defaults), ("names", names)):
        if seq is not None and (isinstance(seq, (str, bytes))
                                or not isinstance(seq, (list, tuple)) or len(seq) != n):
            raise InputTypeError(f"{name} must be None or a list with one entry per "
                                 f"control ({n}); got {describe(seq)}.")
    views = 1
    for i, (d, opts) in enumerate(controls):
        check_control(d, opts, 0 if defaults is None else defaults[i],
                      "toggle" if kinds is None else kinds[i])
        views *= len(opts)
    if views > MAX_VIEWS:
        raise InputError(f"the controls make {views:,} combinations, each rendered "
                         f"in advance; at most {MAX_VIEWS:,} keep the page light. "
                         "Offer fewer options.")
    if names is not None and not all(isinstance(k, str) and k.isidentifier()
                                     for k in names):
        raise InputError(f"names must be keyword names for render; got {names!r}.")


def check_sentences(sentences) -> None:
    if sentences is not None and (isinstance(sentences, (str, bytes))
                                  or not isinstance(sentences, (list, tuple))
                                  or not sentences
                                  or not all(isinstance(s, str) and s.strip()
                                             for s in sentences)):
        raise InputTypeError(f"sentences must be None (the examples) or a non-empty "
                             f"list of sentences; got {describe(sentences)}.")


def check_static_tiny(sentences, hs, d_ks, layers, default_h, default_d_k) -> None:
    check_sentences(sentences)
    for name, got, grid in (("hs", hs, ex.GRID_H), ("d_ks", d_ks, ex.GRID_DK)):
        if got is not None and (not isinstance(got, (list, tuple)) or not got
                                or not all(isinstance(v, int) and v in grid for v in got)):
            raise InputError(f"{name} must be None or values from the trained grid "
                             f"{list(grid)}; got {describe(got)}.")
    check_layers(layers, 2)
    for name, v, grid in (("default_h", default_h, hs or ex.GRID_H),
                          ("default_d_k", default_d_k, d_ks or ex.GRID_DK)):
        if isinstance(v, bool) or v not in grid:
            raise InputError(f"{name} must be one of {list(grid)}; got {describe(v)}.")


def check_layers(layers, n_layers: int) -> None:
    if not isinstance(layers, (list, tuple)) or not layers or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= n_layers
            for n in layers):
        raise InputError(f"layers must be a non-empty list of layers counted from 1 "
                         f"to {n_layers}; got {describe(layers)}.")


def control(description: str, options: Sequence[Option], value_index: int = 0,
            kind: str = "toggle") -> W.ValueWidget:
    """A labelled, keyboard-operable control choosing one of ``options``.

    ``kind`` is ``"toggle"`` (a row of buttons, for a few options) or
    ``"dropdown"``. (No slider: its handle has no accessible name in the
    static widget manager.)
    """
    check_control(description, options, value_index, kind)
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
    check_explorer(controls, render, kinds, defaults, names)
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


# --- The attention explorer -------------------------------------------------

def _render_view(view) -> str:
    return heads_html(view.weights, view.tokens, view.titles, header=view.header)


class LayerDropdown(W.Dropdown):
    """The explorer's layer control: a ``Dropdown`` that refuses a layer the
    source lacks (``explorer.layer.value = 7``) with one
    :class:`~mhacourse.InputError` line, as the explorer's constructor does,
    instead of traitlets' "Invalid selection"; the control, and the picture,
    keep the layer they had."""

    @validate("value")
    def _validate_value(self, proposal):
        try:
            return super()._validate_value(proposal)
        except TraitError:
            raise InputError(
                f"layer must be one of {list(self.options)} for this source "
                f"(layers count from 1); got {describe(proposal.value)}.") from None

    @validate("index")
    def _validate_index(self, proposal):
        try:
            return super()._validate_index(proposal)
        except TraitError:
            raise InputError(
                f"layer.index must be a position 0 to {len(self.options) - 1} in "
                f"the layers {list(self.options)}; got {describe(proposal.value)}."
            ) from None


class AttentionExplorer:
    """The live explorer (needs a kernel): pick a source, h, d_k, a layer and
    type any sentence; every change recomputes from the package.

    Bad input (empty text, too many tokens, h or d_k of 0, a head count that
    does not divide d_model, a size with no trained model, a size over the
    caps) shows a one-line message in place of the heatmaps, and the explorer
    keeps working: every error of an update is caught, so a stale picture
    never stays on screen. The layer control offers only the layers the
    source has (1-2 for the tiny models, 1-6 for MiniLM).
    ``self.widget`` is the box to display; ``self.output.value`` its HTML.
    """

    def __init__(self, sentence: str | None = None, source: str = "trained",
                 h: int = 4, d_k: int = 16, layer: int = 2):

        layers = ex.layers_of(source)
        h, d_k, layer = as_int("h", h), as_int("d_k", d_k), as_int("layer", layer)
        if layer not in layers:
            raise InputError(f"layer must be one of {list(layers)} for the "
                             f"{source} source (layers count from 1); got {layer}.")
        if sentence is not None:
            ex.check_sentence(sentence)
        style = {"description_width": "initial"}
        self.source = W.Dropdown(options=list(ex.SOURCES), value=source,
                                 description="Source", style=style)
        self.h = W.IntText(value=h, description="h (heads)", style=style,
                           layout=W.Layout(width="130px"))
        self.d_k = W.IntText(value=d_k, description="d_k", style=style,
                             layout=W.Layout(width="110px"))
        self.d_model = W.IntText(value=0, description="d_model (untrained; 0 = h·d_k)",
                                 style=style, layout=W.Layout(width="260px"))
        self.layer = LayerDropdown(options=list(layers), value=layer,
                                   description="Layer", style=style)
        self.text = W.Combobox(value=sentence or ex.EXAMPLES[0], options=list(ex.EXAMPLES),
                               description="Sentence", ensure_option=False, style=style,
                               layout=W.Layout(width="640px"))
        self.output = W.HTML()
        self._busy = False  # set while the layer options change
        self.source.observe(lambda _change: self._source_changed(), names="value")
        for w in (self.h, self.d_k, self.d_model, self.layer, self.text):
            w.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([
            W.HBox([self.source, self.h, self.d_k, self.d_model, self.layer],
                   layout=W.Layout(flex_flow="row wrap")),
            self.text, self.output])
        self.update()

    def _source_changed(self) -> None:
        """Offer the new source's layers only, keeping the layer if it has it
        (else its last), then redraw once."""

        layers = list(ex.layers_of(self.source.value))
        if list(self.layer.options) != layers:
            keep = self.layer.value if self.layer.value in layers else layers[-1]
            self._busy = True
            try:
                self.layer.options = layers
                self.layer.value = keep
            finally:
                self._busy = False
        self.update()

    def view(self):
        """The :class:`~mhacourse.explorer.View` for the current controls."""

        if self.source.value == "MiniLM":
            return ex.minilm_view(self.text.value, self.layer.value)
        trained = self.source.value == "trained"
        return ex.tiny_view(self.text.value, self.h.value, self.d_k.value,
                            trained=trained, layer=self.layer.value,
                            d_model=None if trained else self.d_model.value)

    def update(self) -> None:
        """Redraw; any error becomes one line in place of the heatmaps."""
        if self._busy:
            return
        try:
            html = _render_view(self.view())
        except InputError as e:  # bad input: one line, never a traceback
            html = message_html(str(e))
        except Exception as e:  # noqa: BLE001 - never leave a stale picture
            html = message_html(f"Could not draw this view ({type(e).__name__}: "
                                f"{e}). Change a control to try again.")
        self.output.value = html

    def _ipython_display_(self):
        display(self.widget)


def static_tiny_explorer(sentences=None, hs=None, d_ks=None, layers=(1, 2),
                         default_h: int = 4, default_d_k: int = 16) -> W.VBox:
    """The tiny models' explorer for a page without a kernel: every
    (trained?, h, d_k, layer, sentence) combination precomputed."""
    check_static_tiny(sentences, hs, d_ks, layers, default_h, default_d_k)

    sentences = list(sentences or ex.EXAMPLES)
    hs, d_ks = list(hs or ex.GRID_H), list(d_ks or ex.GRID_DK)
    defaults = [0, hs.index(default_h) if default_h in hs else 0,
                d_ks.index(default_d_k) if default_d_k in d_ks else 0,
                len(layers) - 1, 0]
    return precomputed_explorer(
        [("Weights", [("trained", True), ("untrained", False)]),
         ("h (heads)", [(str(h), h) for h in hs]),
         ("d_k", [(str(d), d) for d in d_ks]),
         ("Layer", [(str(n), n) for n in layers]),
         ("Sentence", [(s, s) for s in sentences])],
        lambda trained, h, d_k, layer, sentence: _render_view(
            ex.tiny_view(sentence, h, d_k, trained=trained, layer=layer)),
        kinds=["toggle", "toggle", "toggle", "toggle", "dropdown"],
        names=["trained", "h", "d_k", "layer", "sentence"], defaults=defaults)


def static_minilm_explorer(sentences=None, layers=(1, 2, 3, 4, 5, 6)) -> W.VBox:
    """The real model's 12 heads per layer for a page without a kernel."""
    check_sentences(sentences)
    check_layers(layers, 6)

    sentences = list(sentences or ex.EXAMPLES)
    return precomputed_explorer(
        [("Layer", [(str(n), n) for n in layers]),
         ("Sentence", [(s, s) for s in sentences])],
        lambda layer, sentence: _render_view(ex.minilm_view(sentence, layer)),
        kinds=["toggle", "dropdown"], names=["layer", "sentence"])
