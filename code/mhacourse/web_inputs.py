"""The named inputs of the trainer's exported graphs, each declared once.

:mod:`mhacourse.web_train` exports seven graphs; each takes the weights (in
the step also AdamW's moments), then the named inputs :data:`INPUTS`
declares for it: name, shape, dtype, an example value and what it means.
From this one table come the graphs' argument order and the names their
bodies take them by (``web_train.graph_functions``), the axes the export
makes dynamic (``web_train._dynamic_shapes``), the manifest's
``train.graphs[].inputs`` (``web_train.graph_io``), the table in
``web_train``'s docstring (:func:`inputs_table`) and the inputs the tests
leave out (:func:`_example_inputs`). A knob (``web_train.KNOBS``) names
the input it feeds; ``assets/site/explorer/manifest.schema.json`` lists
each graph's inputs too, and ``tests/test_manifest.py`` checks that it
lists these.
"""
from __future__ import annotations

import torch

from . import tasks, web_patch
from .tiny_model import step as st
from .tiny_model.model import TinyConfig

_PAGE = TinyConfig()  # the page's layers, batch, sequence length and warm-up

#: Each graph's named inputs in graph order, after the weights:
#: ``name: (shape, dtype, example, meaning)``. A shape is in numbers and the
#: graph's sizes: ``h``, ``d_model``, ``L`` (a sequence's length) and ``N``
#: (a number of sequences) are dynamic in the export; ``P``, the noise
#: pool's length, is fixed. ``example`` is what a graph is traced with and
#: a knob's default: a number (every element), ``"pool"`` (the noise pool)
#: or ``"tokens"`` (a training batch's words); the Patch graphs' ``"pairs"``
#: are :func:`mhacourse.web_patch.graph`'s. A graph's body takes them by
#: these names, which are the arguments of the core it calls
#: (``_train_step_core(..., clip)``).
_HEADS = (("h",), "float32", 0.0, "any values: its length is h")
_LAYER_ON = ((_PAGE.n_layers,), "float32", 1.0, "1 run the block, 0 skip it")
_HEAD_MASK = ((_PAGE.n_layers, "h"), "float32", 1.0, "1 keep the head, 0 remove it")
INPUTS = {
    "init": {
        "noise": (("P",), "float16", "pool", "the normals the weights are drawn from"),
        "width": (("d_model",), "float32", 0.0, "any values: its length is d_model"),
        "seed": ((), "int64", 0, "the run's seed"),
        "heads": _HEADS,
        "identical": ((), "float32", 0.0, "1: every head of a layer starts as a copy "
                                          "of head 0"),
    },
    "step": {
        "s": ((), "float32", 0.0, "the step's number, from 0"),
        "steps": ((), "float32", 800.0, "the run's length (the learning rate's schedule)"),
        "warmup": ((), "float32", float(_PAGE.warmup), "the warm-up's length (100 on, "
                                                       "0 off)"),
        "layer_on": _LAYER_ON,
        "x": ((_PAGE.batch, _PAGE.max_len), "int64", "tokens", "the batch's words"),
        "heads": _HEADS,
        "clip": ((), "float32", st.CLIP, "the bound on the gradients' global norm "
                                         "(0: none, train's clip=None)"),
    },
    "forward": {
        "ids": ((1, "L"), "int64", "tokens", "one sequence's words"),
        "head_mask": _HEAD_MASK,
        "layer_on": _LAYER_ON,
    },
    "evaluate": {
        "x": (("N", _PAGE.max_len), "int64", "tokens", "held-out sequences"),
        "head_mask": _HEAD_MASK,
        "layer_on": _LAYER_ON,
    },
    "circuits": {"heads": _HEADS},
    **dict.fromkeys(web_patch.GRAPHS, web_patch.INPUTS),
}


def _shape_text(shape: tuple) -> str:
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def inputs_table() -> str:
    """:data:`INPUTS` as a reStructuredText table (graph, input, shape,
    dtype, meaning), one row an input."""
    rows = [(f"``{kind}``", f"``{name}``", _shape_text(shape), dtype, meaning)
            for kind, inputs in INPUTS.items()
            for name, (shape, dtype, _, meaning) in inputs.items()]
    heading = ("graph", "input", "shape", "dtype", "meaning")
    widths = [max(len(r[i]) for r in [heading, *rows]) for i in range(4)]
    rule = "  ".join("=" * w for w in widths) + "  " + "=" * 20

    def line(r):
        return "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4]
    return "\n".join([rule, line(heading), rule, *map(line, rows), rule])


def _example_inputs(kind: str, cfg: TinyConfig) -> dict:
    """``{name: tensor}``: graph ``kind``'s named inputs at ``cfg``'s sizes
    (``L`` 5, ``N`` the batch), from :data:`INPUTS`' examples; the Patch
    graphs' pairs are left out. No checks: ``web_train.graph_functions``
    passes a checked size, the tests a page's size."""
    sizes = {"P": st.noise_pool().numel(), "d_model": cfg.d_model, "h": cfg.h, "L": 5,
             "N": cfg.batch}
    words = tasks.sample(cfg.batch, seed=1)[0]  # (32, 16)
    out = {}
    for name, (shape, dtype, example, _) in INPUTS[kind].items():
        shape, dtype = tuple(sizes.get(s, s) for s in shape), getattr(torch, dtype)
        if example == "pool":
            out[name] = st.noise_pool().to(dtype)
        elif example == "tokens":
            out[name] = words[tuple(slice(0, s) for s in shape)]
        elif isinstance(example, (int, float)):
            out[name] = torch.full(shape, example, dtype=dtype)
    return out
