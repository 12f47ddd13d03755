"""Activation patching in the reader's browser: the Patch view's graphs and
data (page 11c's maps, on the model the reader trained).

:mod:`mhacourse.web_train` exports two more graphs, ``patch`` and
``ablate``, traced once for every (h, d_k) like the others:

==========  =========================================  =========================
graph       inputs                                     outputs
==========  =========================================  =========================
``patch``   weights, ``clean``, ``corrupted`` (N, 16)  ``ends`` (2,): the clean
            int64, ``answer``, ``rival``,              and corrupted mean logit
            ``positions`` (N,) int64, ``heads`` (h,)   difference; ``fractions``
                                                       (2, 2, h)
``ablate``  the same                                   the same; ``fractions``
                                                       (3, 2, h)
==========  =========================================  =========================

Their bodies are :func:`mhacourse.interventions._patch_maps_core` (each
head patched, :data:`~mhacourse.interventions.DIRECTIONS`) and
:func:`~mhacourse.interventions._ablation_maps_core` (each head ablated,
:data:`~mhacourse.interventions.METHODS`), the two halves of
:func:`~mhacourse.interventions._maps_core`, on
:func:`~mhacourse.tiny_model.step._forward_core`'s weights: the same
functions :func:`~mhacourse.interventions.patching_map` and
:func:`~mhacourse.interventions.ablation_map` run, so the page has no
second copy of the math. Two graphs, run one after the other, so that the
page draws the patching maps (a third of the work) before the ablation
maps are computed. The pairs are :func:`~mhacourse.interventions.corrupt`'s
for each corruption (``N_PAIRS`` with ``SEED``), written by the build
(``patch-<name>.u16``: clean, corrupted, answer, rival, positions), and the
manifest's ``train.patch`` declares them (:func:`manifest_entry`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from . import interventions as iv
from ._validate import InputError, InputTypeError, check_path, describe
from .heads import _split_heads_core
from .tiny_model import step as st
from .tiny_model.model import TinyConfig, _forward_core

N_PAIRS = 256  # pairs per corruption the page scores
SEED = 0  # corrupt()'s seed
_L = TinyConfig().max_len  # a sequence's length
#: The Patch graphs' named inputs after the weights, as
#: :data:`mhacourse.web_inputs.INPUTS` declares a graph's (shape in the
#: graph's sizes, dtype, example, meaning); their examples are one
#: corruption's pairs (:func:`graph`).
INPUTS = {
    "clean": (("N", _L), "int64", "pairs", "clean sequences"),
    "corrupted": (("N", _L), "int64", "pairs", "their corrupted copies"),
    "answer": (("N",), "int64", "pairs", "the clean target at the scored position"),
    "rival": (("N",), "int64", "pairs", "the corrupted sequence's target there"),
    "positions": (("N",), "int64", "pairs", "the scored position of each pair"),
    "heads": (("h",), "float32", 0.0, "any values: its length is h"),
}
OUTPUTS = ("ends", "fractions")
#: fractions' first axis, in order: the patch graph's, then the ablate graph's
MAPS = (*iv.DIRECTIONS, *iv.METHODS)
#: each graph's body and the maps its fractions hold
GRAPHS = {"patch": (iv._patch_maps_core, iv.DIRECTIONS),
          "ablate": (iv._ablation_maps_core, iv.METHODS)}


def _heads_core(params, ids, heads, head_mask=None, head_values=None):
    """``TinyTransformer.forward_heads`` as a function of ``params`` (no
    checks): ``(logits (B, L, V), heads (n_layers, B, h, L, d_k))``;
    ``heads`` (h,) gives h."""
    h = heads.shape[0]
    logits, _, concats = _forward_core(ids, st._weights(params), h, head_mask=head_mask,
                                      head_values=head_values, return_concat=True)
    # each concat (B, L, d_model) -> (B, h, L, d_k); stacked over layers
    return logits, torch.stack([_split_heads_core(c, h) for c in concats])


def _patch_core(params, clean, corrupted, answer, rival, positions, heads,
               kind="all"):
    """A Patch graph's body on the model ``params`` and one corruption's
    pairs: ``(ends (2,), fractions (maps, n_layers, h))``; ``kind`` "patch"
    or "ablate" (:data:`GRAPHS`), or "all":
    :func:`~mhacourse.interventions._maps_core`, the five maps in
    :data:`MAPS` order."""
    n_layers = (len(params) - len(st.param_names(0))) // st.PER_BLOCK
    body = iv._maps_core if kind == "all" else GRAPHS[kind][0]
    return body(lambda ids, m, v: _heads_core(params, ids, heads, m, v),
                clean, corrupted, answer, rival, positions, n_layers, heads.shape[0])


def graph(names: list, params: tuple, h: int, kind: str = "patch") -> tuple:
    """The ``kind`` graph (:data:`GRAPHS`) for web_train.graph_functions:
    ``(function of flat tensors, example inputs, input names, output
    names)``."""
    check_weight_names(names, params)
    if kind not in GRAPHS:
        raise InputError(f"kind must be one of {list(GRAPHS)}; got {describe(kind)}.")
    n = len(params)
    p = iv.corrupt("successor", 8, seed=SEED)  # (8, 16): any N, the graph's axis

    def patch(*a):
        return _patch_core(a[:n], *a[n:], kind=kind)
    return (patch, (*params, p.clean, p.corrupted, p.answer, p.rival, p.positions,
                    torch.zeros(h)),
            [*names, *INPUTS], list(OUTPUTS))


def check_weight_names(names, params) -> None:
    if not isinstance(names, list) or not isinstance(params, tuple) or len(names) != len(
            params):
        raise InputTypeError(f"names and params must be one name per weight; got "
                             f"{describe(names)} and {describe(params)}.")


def write_pairs(folder) -> list:
    """Each corruption's :func:`~mhacourse.interventions.corrupt` pairs as
    ``patch-<name>.u16`` in ``folder``: rows clean (N, 16), corrupted (N,
    16), then answer, rival, positions (N,) as one (N, 35) table; returns
    the manifest's entries."""
    folder = check_path("folder", folder)
    if not folder.is_dir():
        raise InputError(f"folder {folder} is not a folder; the build writes the "
                         "training data there first.")
    out = []
    for name, (_, what) in iv.CORRUPTIONS.items():
        p = iv.corrupt(name, N_PAIRS, seed=SEED)
        table = torch.cat([p.clean, p.corrupted, p.answer[:, None], p.rival[:, None],
                           p.positions[:, None]], dim=1).numpy().astype(np.uint16)
        (Path(folder) / f"patch-{name}.u16").write_bytes(table.tobytes())
        out.append({"name": name, "help": what, "file": f"patch-{name}.u16",
                    "shape": list(table.shape), "dtype": "uint16",
                    "bytes": table.nbytes})
    return out


def manifest_entry(folder) -> dict:
    """The manifest's ``train.patch``: the corruptions (their pairs written
    into ``folder``), the maps' order and names, the smallest gap the page
    accepts, the maps each graph gives (``graphs``, in the order the page
    runs them) and what the Python line calls."""
    folder = check_path("folder", folder)
    return {"corruptions": write_pairs(folder), "default": "successor",
            "n_pairs": N_PAIRS, "seed": SEED, "maps": list(MAPS),
            "graphs": {k: list(m) for k, (_, m) in GRAPHS.items()},
            "directions": list(iv.DIRECTIONS), "methods": list(iv.METHODS),
            "min_gap": iv.MIN_GAP, "layers": 2}
