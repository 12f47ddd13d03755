"""The attention explorer's computation: which model, which sentence, which
heads. Pure computation (no plotting, no widgets); :mod:`mhacourse.widgets`
wires it to controls.

Sources of attention weights:

- ``"trained"``: a tiny causal transformer trained on :mod:`mhacourse.tasks`
  for one (h, d_k) of the grid ``GRID_H x GRID_DK``, from ``assets/models/``
  (the grid, names and paths are :mod:`mhacourse.catalogue`'s;
  ``scripts/train_tiny_models.py`` makes them);
- ``"untrained"``: the same architecture at its seeded initialisation, for
  any h and d_k (the "before" picture);
- ``"MiniLM"``: the real all-MiniLM-L6-v2 model (6 layers x 12 heads), run by
  the course's own code (:mod:`mhacourse.bert`).

Every bad input raises :class:`~mhacourse.InputError` (a ``ValueError``) with
a one-line message meant to be shown to the reader in place of the heatmaps.
Sizes are capped (:data:`MAX_HEADS`, :data:`MAX_D_K`, :data:`MAX_D_MODEL`):
an untrained model is built on the fly, and its memory grows as d_model^2.
"""
from __future__ import annotations

import functools
import json
import warnings
from dataclasses import dataclass

import torch

from . import bert, tasks
from . import tiny_model as tm
from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_heads,
    check_positive_int,
    describe,
)
from .catalogue import GRID_DK, GRID_H, assets_dir, tiny_model_path  # noqa: F401
from .tasks import EXAMPLE_SENTENCES

MAX_TOKENS = 32  # longest sentence (word pieces) the explorer draws for MiniLM
MAX_HEADS = 16  # most heads the explorer draws for an untrained model
MAX_D_K = 256  # widest head of an untrained model
MAX_D_MODEL = 1024  # widest untrained model: 2 blocks of ~6 d_model^2
#     parameters, 12.6 M numbers (50 MB) at 1024, built in about a second
SIZE_WHY = "memory: an untrained model is built on the fly"
SOURCES = ("trained", "untrained", "MiniLM")
TINY_LAYERS = (1, 2)  # the tiny models' layers, counted from 1
MINILM_LAYERS = (1, 2, 3, 4, 5, 6)  # MiniLM's layers, counted from 1


def layers_of(source: str) -> tuple[int, ...]:
    """The layers (counted from 1) that ``source`` has: 1-2 for the tiny
    models, 1-6 for MiniLM."""
    check_source(source)
    return MINILM_LAYERS if source == "MiniLM" else TINY_LAYERS


def check_source(source) -> str:
    if not isinstance(source, str) or source not in SOURCES:
        raise InputError(f"source must be one of {list(SOURCES)}; got "
                         f"{describe(source)}.")
    return source
#: The sentences the explorer offers (and precomputes for the browser): the
#: course's first four example sentences, in order.
EXAMPLES = EXAMPLE_SENTENCES[:4]


@dataclass
class View:
    """What the explorer draws: ``weights`` (h, L, L) over ``tokens``."""

    tokens: list[str]
    weights: torch.Tensor
    header: str
    titles: list[str]


def check_sentence(sentence) -> str:
    """The sentence, stripped; refuse empty ones."""
    if not isinstance(sentence, str):
        raise InputTypeError(f"sentence must be text (a str); got "
                             f"{describe(sentence)}.")
    if not sentence.strip():
        raise InputError("Type a sentence: the text is empty.")
    return sentence.strip()


def check_sizes(h, d_k) -> tuple[int, int]:
    """``h`` and ``d_k`` as ints within the explorer's caps, or raise."""
    h = check_positive_int("h (number of heads)", h)
    d_k = check_positive_int("d_k (width of one head)", d_k)
    if h > MAX_HEADS:
        raise InputError(f"h = {h} is more heads than the explorer draws "
                         f"(at most {MAX_HEADS}: one heatmap per head).")
    check_positive_int("d_k (width of one head)", d_k, MAX_D_K, SIZE_WHY)
    check_positive_int("d_model = h * d_k", h * d_k, MAX_D_MODEL, SIZE_WHY)
    return h, d_k


def tiny_model_for(h: int, d_k: int, trained: bool):
    """Load (cached) the tiny model for (h, d_k), trained or at initialisation."""
    h, d_k = check_sizes(h, d_k)
    if not isinstance(trained, bool):
        raise InputTypeError(f"trained must be True or False; got "
                             f"{describe(trained)}.")
    return _cached_tiny_model(h, d_k, trained)


@functools.lru_cache(maxsize=64)
def _cached_tiny_model(h: int, d_k: int, trained: bool):
    if trained and (h not in GRID_H or d_k not in GRID_DK):
        raise InputError(
            f"No trained model for h = {h}, d_k = {d_k}: trained models exist for "
            f"h in {list(GRID_H)} and d_k in {list(GRID_DK)}. Pick one of those, or "
            "the untrained source (any size).")
    path = tiny_model_path(h, d_k, trained)
    if path.exists():
        return tm.load(path)
    if trained:
        raise InputError(f"{path} is missing: run scripts/train_tiny_models.py.")
    return tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=0).eval()


@functools.lru_cache(maxsize=1)
def metrics() -> dict:
    """Held-out accuracy and more per model, from ``assets/models/metrics.json``."""
    path = assets_dir() / "models" / "metrics.json"
    if not path.exists():
        return {}
    return {m["name"]: m for m in json.loads(path.read_text()).get("models", [])}


def _accuracy_note(h: int, d_k: int, trained: bool) -> str:
    m = metrics().get(tm.model_name(h, d_k, trained))
    if not m or "accuracy" not in m:
        return ""
    return f"held-out accuracy {100 * m['accuracy']:.1f}%"


def tiny_view(sentence: str, h: int, d_k: int, trained: bool = True,
              layer: int = 1, d_model: int | None = None) -> View:
    """Attention of a tiny model's ``layer`` (1-based) on ``sentence``.

    ``d_model`` (untrained only) overrides ``h * d_k``: then ``d_k = d_model / h``
    and a head count that does not divide it is refused.
    """

    sentence = check_sentence(sentence)
    h = check_positive_int("h (number of heads)", h)
    if not isinstance(trained, bool):
        raise InputTypeError(f"trained must be True or False; got "
                             f"{describe(trained)}.")
    if d_model is not None and d_model != 0:
        d_model = check_positive_int("d_model", d_model, MAX_D_MODEL, SIZE_WHY)
        if trained and d_model != h * as_int("d_k", d_k):
            raise InputError(
                f"d_model = {d_model} applies to the untrained source only: a "
                f"trained model has d_model = h * d_k. Set d_model to 0.")
        d_k = check_heads(d_model, h)
    h, d_k = check_sizes(h, d_k)
    layer = as_int("layer", layer)
    if layer not in TINY_LAYERS:
        raise InputError(f"layer must be between 1 and {len(TINY_LAYERS)} (the "
                         f"tiny models have {len(TINY_LAYERS)} layers, counted "
                         f"from 1); got {layer}.")
    words = tasks.split_words(sentence)
    if not words:
        raise InputError("Type a sentence: no words were found in the text.")
    model = tiny_model_for(h, d_k, trained)
    if len(words) > model.cfg.max_len:
        raise InputError(f"The sentence has {len(words)} tokens; the tiny models read "
                         f"at most {model.cfg.max_len}. Shorten it.")
    tokens, attention = tm.attention_on(model, words)
    if all(t == tasks.UNK for t in tokens):
        raise InputError("None of these words is in the tiny models' vocabulary; "
                         "try one of the example sentences.")
    n_layers = len(attention)
    if not 1 <= layer <= n_layers:
        raise InputError(f"layer must be between 1 and {n_layers}; got {layer}.")
    state = "trained" if trained else "untrained"
    acc = _accuracy_note(h, d_k, trained)
    header = (f"Tiny model, {state}: h = {h} heads of d_k = {d_k} "
              f"(d_model = {h * d_k}), layer {layer} of {n_layers}"
              + (f"; {acc}" if acc else ""))
    return View(tokens, attention[layer - 1], header,
                [f"L{layer} head {i + 1}" for i in range(h)])


@functools.lru_cache(maxsize=32)
def _minilm_run(sentence: str):
    """Tokens and every layer's (h, L, L) attention; cached, so moving the
    layer control only redraws."""

    with warnings.catch_warnings():  # truncation is reported by the caller
        warnings.simplefilter("ignore", UserWarning)
        out = bert.encode(sentence, max_length=MAX_TOKENS + 2)
    truncated = bool(getattr(out, "truncated", [False])[0])
    return out.tokens[0], [A[0] for A in out.attentions], truncated


def minilm_view(sentence: str, layer: int = 1) -> View:
    """The real MiniLM model's 12 heads in ``layer`` (1-6) on ``sentence``."""

    sentence = check_sentence(sentence)
    cfg = bert.load_model().config
    n_layers = cfg.n_layers
    layer = as_int("layer", layer)
    if not 1 <= layer <= n_layers:
        raise InputError(f"layer must be between 1 and {n_layers} (MiniLM's "
                         f"layers, counted from 1); got {layer!r}.")
    tokens, attentions, truncated = _minilm_run(sentence)
    if truncated:
        raise InputError(f"The sentence is longer than {MAX_TOKENS} word pieces; "
                         "shorten it.")
    header = (f"MiniLM (all-MiniLM-L6-v2, trained): layer {layer} of {n_layers}, "
              f"h = {cfg.h} heads of d_k = {cfg.d_model // cfg.h}")
    return View(tokens, attentions[layer - 1], header,
                [f"L{layer} head {i + 1}" for i in range(cfg.h)])
