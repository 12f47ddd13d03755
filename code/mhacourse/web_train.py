"""Training in the reader's browser: the package's training step, exported.

At build time (``scripts/export_explorer.py``) this module writes seven ONNX
graphs (``patch`` and ``ablate``: :mod:`mhacourse.web_patch`), each traced
**once** for every (h, d_k), and the data they read. Each graph takes the
weights (``params[].input`` in the manifest; the step also AdamW's moments
``m`` and ``v``, each one vector of every weight, :data:`MOMENTS`), then its
named inputs,
:data:`mhacourse.web_inputs.INPUTS`, from which this table is made (the
sizes ``h``, ``d_model``, ``L``, a sequence's length, and ``N``, a number
of sequences, are symbolic; ``P``, the noise pool's length, is fixed):

{INPUTS}

and gives:

=============  ==============================================================
graph          outputs
=============  ==============================================================
``init``       the weights, in ``param_names`` order
``step``       ``loss``, ``grad_norm`` (), the new weights, ``new_m`` and
               ``new_v``; the gradients (fetched by the tests only)
``forward``    ``logits``, ``attn_1``, ``attn_2``
``evaluate``   ``accuracy`` (3,), ``stats`` (2, h, 5), ``role``, ``named``
``circuits``   ``comp_q``, ``comp_k``, ``comp_v`` (h, h), ``prev_band``,
               ``copying``, ``prefix`` (2, h), ``probe_stats`` (2, h, 5),
               ``probe_role``, ``probe_named``
=============  ==============================================================

``head_mask`` and ``layer_on`` are
:func:`~mhacourse.tiny_model.model._forward_core`'s. The knobs
(:data:`KNOBS`) are inputs of the same graphs, so the page has no second
code path for them.

They are :mod:`mhacourse.tiny_model.step`'s functions: the model is
:func:`~mhacourse.tiny_model.model._forward_core`, the gradients are
``torch.func``'s, the update is AdamW with :func:`train`'s schedule. The
data: ``pool.f16`` (the normals :func:`~step._init_core` reads),
``batches.u16`` (the training batches, :func:`tasks.sample` with
:func:`train`'s generator), ``heldout.u16`` (:func:`training.heldout`) and
``baseline.f32`` (:func:`baseline_table`: the circuits' random baseline
for every size the page allows, a function of ``d_model`` and ``d_k``
alone, so the circuits graph need not recompute it at every read-out).

How a step is exported (torch 2.13): ``torch.onnx.export`` cannot export a
``torch.func`` transform directly, so the step is first traced to ``aten``
operations with ``make_fx``, on fake inputs whose declared sizes
(``d_model``, ``h``, ``L``, ``N``) alone are symbolic; the few operations
that hold a symbolic number as a Python scalar (``x / d_model``) are
rewritten to their tensor forms (:func:`scalars_to_tensors`). The trace
already decomposes every operation into ones ONNX has, with the exporter's
own table, so the exporter's decomposition pass is skipped, and it is handed
to the dynamo exporter as an ``ExportedProgram``
(:mod:`mhacourse.onnx_program`), so that ``torch.export`` does not trace it
a second time: the seven graphs export in 74 s on one core instead of 91 s
(one process, on the course's 2-core build machine). The
ONNX optimiser is left off: it folds AdamW's ``+ 1e-8`` away as if it were
``+ 0``, and a weight whose moments are 0 (an embedding row no batch has
touched yet) then becomes 0 / 0.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import re
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from . import attention, block, onnx_program, tasks, web_patch
from ._validate import (
    InputError,
    InputTypeError,
    check_bool,
    check_folder,
    check_graph_module,
    check_path,
    check_positive_int,
    check_seed,
    describe,
)
from .catalogue import BUDGET_D_MODEL, SEED, steps_for
from .circuits import GRAPH_READOUTS
from .circuits.core import KINDS, PROBE_N, _baseline_core, _readouts_core
from .tiny_model import step as st
from .tiny_model import training
from .tiny_model.model import TinyConfig
from .web_inputs import INPUTS, _example_inputs, inputs_table

__doc__ = __doc__.replace("{INPUTS}", inputs_table())

OPSET = 20  # ONNX Gelu (20): one operation
H_MAX = 16  # heads: 1 .. 16
D_K_RANGE = (2, 64)  # width of a head
D_MODEL_MAX = 256  # time: a step at d_model 256 takes ~0.1 s in the page
MAX_STEPS = 1500  # the longest run the page offers (train_tiny_models' d_model 8)
EXAMPLE = TinyConfig(h=3, d_k=7)  # traced at d_model 21: no size equals another
MOMENTS = ("m", "v")  # the step's AdamW moments, each one vector (n_weights,)
#: The cores the graphs trace as twins (same equations): softmax, LayerNorm
#: as one ONNX operation each, the loss on (B·L, V) rows with its gradient
#: written out; the step's alone: GELU keeping erf for its gradient
FUSED = ((attention._softmax_core, attention._softmax_fused),
         (block._layer_norm_core, block._layer_norm_fused),
         (training._loss_core, training._loss_rows))
STEP_FUSED = FUSED + ((block._feed_forward_core, block._feed_forward_fused),)
STEP_NAMES = ("step", "ablate", "patch", "evaluate", "forward", "circuits", "init")  # longest first


#: The words of every size limit, written once: :func:`check_sizes` raises
#: them and the manifest carries them (``train.limits.messages``), so the
#: page refuses a size in the same words. ``str.format`` templates over
#: ``{h}``, ``{d_k}``, ``{d_model}``, ``{h_max}``, ``{d_k_min}``,
#: ``{d_k_max}``, ``{d_model_max}`` and ``{budget}``.
SIZE_MESSAGES = {
    "h": "h must be a whole number from 1 to {h_max} (time and memory: the page "
         "trains on one CPU thread); got {h}.",
    "budget": "h = {h} does not divide d_model = {budget}: pick a divisor ("
              + ", ".join(str(h) for h in range(1, H_MAX + 1) if BUDGET_D_MODEL % h == 0)
              + "), or untick \"same budget\".",
    "d_k": "d_k must be a whole number from {d_k_min} to {d_k_max} (time: a step "
           "grows as d_model\u00b2); got {d_k}.",
    "d_model": "d_model = h \u00d7 d_k = {h} \u00d7 {d_k} = {d_model} is over "
               "{d_model_max} (time: a step grows as d_model\u00b2); make h or d_k "
               "smaller.",
}


#: The trainer's knobs, each written once: the page builds its control from
#: the entry (``label``, ``help``, ``default``; a ``"switch"`` is a tick box,
#: a ``"count"`` a choice of ``min..max``), feeds ``input`` to every graph
#: that has it (a switch: ``on`` or ``off``; a count n: ``layer_on``, 1 for
#: the first n blocks), and writes the Python line of a run from ``python``
#: (``arg=`` of ``TinyConfig`` or ``train``, the literal of each value; only
#: a value other than the default is written). To add a knob: its input in
#: ``web_inputs.INPUTS`` (an argument of the graph's core of that name), one
#: entry here, the schema's ``graphs`` list (CONTRIBUTING.md, "Add a knob").
KNOBS = (
    {"name": "layers", "label": "layers", "control": "count", "default": EXAMPLE.n_layers,
     "min": 1, "max": EXAMPLE.n_layers, "input": "layer_on",
     "help": "One layer cannot form an induction head: it has no previous-token head "
             "below it.",
     "python": {"call": "TinyConfig", "arg": "n_layers"}},
    {"name": "warmup", "label": "warm-up", "control": "switch", "default": True,
     "input": "warmup", "on": EXAMPLE.warmup, "off": 0,
     "help": f"The learning rate rises linearly over the first {EXAMPLE.warmup} steps "
             "(TinyConfig.warmup).",
     "python": {"call": "TinyConfig", "arg": "warmup", "on": str(EXAMPLE.warmup),
                "off": "0"}},
    {"name": "identical", "label": "identical start", "control": "switch", "default": False,
     "input": "identical", "on": 1, "off": 0,
     "help": "Every head of a layer starts as a copy of its first head (W_Q, W_K, W_V "
             "columns and W_O rows).",
     "python": {"call": "train", "arg": "identical_heads", "on": "True", "off": "False"}},
    {"name": "clip", "label": "clip gradients", "control": "switch", "default": True,
     "input": "clip", "on": st.CLIP, "off": 0,
     "help": f"Before each AdamW step the gradients' global norm is cut to {st.CLIP:g} "
             "(clip_grad_norm_); unticked, the gradients are used as they are.",
     "python": {"call": "train", "arg": "clip", "on": repr(st.CLIP), "off": "None"}},
)

#: The circuits graph's read-outs the page draws, each written once: its
#: ``output`` of the circuits graph, its ``label``, how it is ``draw``n (a
#: ``"map"``: an h x h heatmap of layer-1 head i into layer-2 head j, read
#: against the ``baseline`` column of ``baseline.f32``; a ``"column"``: one
#: number per head in the per-head table, for the ``layers`` it means
#: something in) and ``help`` (its caption). To add one: an output of
#: ``circuits._readouts_core``, one entry here (CONTRIBUTING.md, "Add a
#: read-out").
READOUTS = (
    {"name": "comp_k", "output": "comp_k", "label": "K-composition", "draw": "map",
     "baseline": "comp_k", "layers": [1, 2],
     "help": "how much a layer-2 head's keys read what a layer-1 head writes (induction)"},
    {"name": "comp_q", "output": "comp_q", "label": "Q-composition", "draw": "map",
     "baseline": "comp_q", "layers": [1, 2],
     "help": "how much a layer-2 head's queries read what a layer-1 head writes"},
    {"name": "comp_v", "output": "comp_v", "label": "V-composition", "draw": "map",
     "baseline": "comp_v", "layers": [1, 2],
     "help": "how much a layer-2 head's values read what a layer-1 head writes"},
    {"name": "prev_band", "output": "prev_band", "label": "prev band", "draw": "column",
     "layers": [1],
     "help": "positional QK at offset \u22121 (layer 1 only: a layer-2 head also reads "
             "what layer 1 wrote, which this score leaves out)"},
    {"name": "prefix", "output": "prefix", "label": "prefix", "draw": "column",
     "layers": [1, 2], "help": "prefix matching on repeated random tokens"},
    {"name": "copying", "output": "copying", "label": "copying", "draw": "column",
     "layers": [1, 2], "help": "copying: how much the OV circuit maps a word to itself"},
)
BASELINE_COLUMNS = ("d_model", "d_k", *(f"comp_{k}" for k in KINDS))  # baseline.f32's


def limits() -> dict:
    """The limits :func:`check_sizes` applies, by the names its messages use."""
    return {"h_max": H_MAX, "d_k_min": D_K_RANGE[0], "d_k_max": D_K_RANGE[1],
            "d_model_max": D_MODEL_MAX, "budget": BUDGET_D_MODEL}


def _whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_sizes(h, d_k, budget: bool = False) -> None:
    """The sizes the page accepts, refused in :data:`SIZE_MESSAGES`' words
    (the page says the same). ``budget``: "same budget" is ticked, so h must
    divide the budget's d_model."""
    check_bool("budget", budget)
    words = {**limits(), "h": h, "d_k": d_k, "d_model": "?"}
    if not _whole(h) or not 1 <= h <= H_MAX:
        raise InputError(SIZE_MESSAGES["h"].format(**words))
    if budget and BUDGET_D_MODEL % h:
        raise InputError(SIZE_MESSAGES["budget"].format(**words))
    if not _whole(d_k) or not D_K_RANGE[0] <= d_k <= D_K_RANGE[1]:
        raise InputError(SIZE_MESSAGES["d_k"].format(**words))
    if h * d_k > D_MODEL_MAX:
        raise InputError(SIZE_MESSAGES["d_model"].format(**{**words, "d_model": h * d_k}))


def check_example(cfg) -> None:
    """The size a graph is traced at: a TinyConfig of the page's layers and
    batch, within the page's sizes."""
    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"cfg must be a TinyConfig (the size a graph is traced "
                             f"at, such as web_train.EXAMPLE); got {describe(cfg)}.")
    check_sizes(cfg.h, cfg.d_k)
    if (cfg.n_layers, cfg.batch, cfg.max_len) != (EXAMPLE.n_layers, EXAMPLE.batch,
                                                  EXAMPLE.max_len):
        raise InputError(f"cfg must keep the page's n_layers = {EXAMPLE.n_layers}, "
                         f"batch = {EXAMPLE.batch} and max_len = {EXAMPLE.max_len}; "
                         "change only h and d_k.")


def check_graphs(graphs) -> None:
    """``graphs``: export_job's entry for every graph of :data:`STEP_NAMES`."""
    if not isinstance(graphs, dict) or sorted(graphs) != sorted(STEP_NAMES) or not all(
            isinstance(v, dict) and {"file", "bytes", "export_seconds"} <= set(v)
            for v in graphs.values()):
        raise InputError(f"graphs must hold export_job's entry for every graph "
                         f"{sorted(STEP_NAMES)}; got {describe(graphs)}: a manifest "
                         "without them would leave the page unable to train.")
    for kind, v in sorted(graphs.items()):  # a plain name in the build's folder
        if not (isinstance(v["file"], str) and re.fullmatch(r"[\w-]{1,64}\.onnx", v["file"])):
            raise InputError(f"graphs[{kind!r}]['file'] must be a plain .onnx file name, "
                             f"such as '{kind}.onnx'; got {describe(v['file'])}.")


def check_kind(kind) -> str:
    """``kind`` if it names a graph of :data:`STEP_NAMES`."""
    if not isinstance(kind, str) or kind not in STEP_NAMES:
        raise InputError(f"kind must be one of the training graphs {list(STEP_NAMES)}; "
                         f"got {describe(kind)}.")
    return kind


# ------------------------------------------------------------------ tracing

def scalars_to_tensors(gm: torch.fx.GraphModule) -> int:
    """Rewrite every ``aten.*.Scalar`` call whose scalar is a symbolic number
    (a node of the graph, such as ``1 / d_model``) to its ``*.Tensor`` form,
    which the ONNX translation accepts. Returns how many it rewrote."""
    check_graph_module(gm)
    graph, count = gm.graph, 0
    for node in list(graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        name = target._overloadname
        symbolic = [i for i, a in enumerate(node.args) if isinstance(a, torch.fx.Node)
                    and not isinstance(a.meta.get("val"), torch.Tensor)]
        if "Scalar" not in name or not symbolic:
            continue
        packet = target.overloadpacket
        tensor_name = name.replace("Scalar", "Tensor")
        if not hasattr(packet, tensor_name):
            tensor_name = "Tensor"
        with graph.inserting_before(node):
            args = list(node.args)
            for i in symbolic:  # a symbolic int stays an integer
                whole = isinstance(args[i].meta.get("val"), torch.SymInt)
                args[i] = graph.call_function(
                    torch.ops.aten.scalar_tensor.default, (args[i],),
                    {"dtype": torch.int64 if whole else torch.float32})
            new = graph.call_function(getattr(packet, tensor_name), tuple(args),
                                      node.kwargs)
        new.meta = node.meta
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        count += 1
    graph.lint()
    gm.recompile()
    return count


def _example_params(cfg: TinyConfig = EXAMPLE) -> tuple:
    return st._init_core(st.noise_pool(), torch.zeros(cfg.d_model), torch.tensor(0))


def graph_functions(cfg: TinyConfig = EXAMPLE) -> dict:
    """For each graph: ``(function of flat tensors, example inputs, input
    names, output names)``; the inputs after the weights are
    ``web_inputs.INPUTS``', passed to the graph's body by name."""
    check_example(cfg)
    n = len(st.param_names())
    names = [k.replace(".", "_") for k in st.param_names()]
    P = _example_params(cfg)

    def zeros():  # new tensors each time: an input passed twice would be merged into one
        return tuple(torch.zeros_like(p) for p in P)

    def named(kind, values):
        return dict(zip(INPUTS[kind], values, strict=True))

    def init(*a):
        k = named("init", a)
        return st._init_core(**{**k, "noise": k["noise"].float()})

    def step(*a):  # the weights, then AdamW's moments: one vector each (n_weights,)
        loss, p, m, v, grads, norm = st._train_step_core(
            a[:n], a[n], a[n + 1], **named("step", a[n + 2:]))
        return (loss, norm, *p, m, v, *grads)

    def forward(*a):  # h is head_mask's second axis: no heads input here
        k = named("forward", a[n:])
        logits, attention = st._forward_with(a[:n], heads=k["head_mask"][0], **k)
        return (logits, *attention)

    def evaluate(*a):
        k = named("evaluate", a[n:])
        return st._evaluate_with(a[:n], heads=k["head_mask"][0], **k)

    def circuits(*a):  # the baseline comes from the build's table (baseline_table)
        return _readouts_core(a[:n], **named("circuits", a[n:]))

    def example(kind):
        return tuple(_example_inputs(kind, cfg).values())

    flat = st._flat(P)  # (N,): the moments' shape
    layers = [f"attn_{i + 1}" for i in range(cfg.n_layers)]
    return {
        "init": (init, example("init"), list(INPUTS["init"]), names),
        "step": (step, (*P, torch.zeros_like(flat), torch.zeros_like(flat),
                        *example("step")),
                 [*names, *MOMENTS, *INPUTS["step"]],
                 ["loss", "grad_norm", *[f"new_{k}" for k in names + list(MOMENTS)],
                  *[f"grad_{k}" for k in names]]),
        "forward": (forward, (*P, *example("forward")), [*names, *INPUTS["forward"]],
                    ["logits", *layers]),
        "evaluate": (evaluate, (*P, *example("evaluate")), [*names, *INPUTS["evaluate"]],
                     ["accuracy", "stats", "role", "named"]),
        "circuits": (circuits, (*P, *example("circuits")), [*names, *INPUTS["circuits"]],
                     list(GRAPH_READOUTS)),
        **{k: web_patch.graph(names, zeros(), cfg.h, k) for k in web_patch.GRAPHS},
    }


@functools.cache
def onnx_decompositions() -> dict:
    """The decompositions the ONNX exporter would apply (every operation it
    has no ONNX function for, into ones it has), less the three that turn a
    constant into an alias (``detach``, ``lift``, ``lift_fresh``: a real
    tensor inside a traced graph). Built from torch.onnx's own registry."""
    from torch.onnx._internal.exporter import _decomp, _registration

    registry = _registration.ONNXRegistry.from_torchlib()
    table = _decomp.create_onnx_friendly_decomposition_table(
        set(_decomp.get_onnx_implemented_overloads(registry)))
    for op in (torch.ops.aten.detach.default, torch.ops.aten.lift.default,
               torch.ops.aten.lift_fresh.default):
        table.pop(op, None)
    return table


def trace(kind: str, cfg: TinyConfig = EXAMPLE) -> torch.fx.GraphModule:
    """``make_fx`` of one graph's function with the declared sizes symbolic
    (:func:`_dynamic_shapes`) and the others fixed, already decomposed into
    the operations ONNX has (:func:`onnx_decompositions`), the cores of
    :data:`FUSED` (:data:`STEP_FUSED`) traced as twins (``onnx_program.trace``)."""
    check_kind(kind)
    st.param_names()  # build the name list outside the trace
    fn, args, _, _ = graph_functions(cfg)[kind]
    swaps = STEP_FUSED if kind == "step" else FUSED
    return onnx_program.trace(fn, args, _dynamic_shapes(kind, args, cfg), onnx_decompositions(),
                              rewrite=scalars_to_tensors, swaps=swaps)


@contextlib.contextmanager
def _decomposed_already():
    """Within: the exporter skips its own decomposition pass. The traced
    graph holds only operations ONNX has (:func:`trace`), and the pass would
    only re-trace all of it again (about half of a graph's export time)."""
    from torch.onnx._internal.exporter import _fx_passes

    keep = _fx_passes.decompose_with_registry
    _fx_passes.decompose_with_registry = lambda exported_program, registry: exported_program
    try:
        yield
    finally:
        _fx_passes.decompose_with_registry = keep


def _dynamic_shapes(kind: str, args, cfg: TinyConfig = EXAMPLE):
    """Which axes of each input are sizes of the graph: ``d_model`` (every
    weight axis of that length), and the named inputs' symbolic axes
    (``web_inputs.INPUTS``: ``h``, ``d_model``, ``L``, ``N``)."""
    dims = {"d_model": torch.export.Dim("d_model", min=2, max=D_MODEL_MAX),
            "h": torch.export.Dim("h", min=1, max=H_MAX),
            "L": torch.export.Dim("L", min=1, max=cfg.max_len),
            "N": torch.export.Dim("N", min=1, max=4096)}
    named = [({i: dims[s] for i, s in enumerate(shape) if s in dims} or None)
             for shape, *_ in INPUTS[kind].values()]
    weights = [({i: dims["d_model"] for i, s in enumerate(t.shape) if s == cfg.d_model}
                or None) for t in args[:len(args) - len(named)]]
    if kind == "step":  # the moments' length, a polynomial in d_model: the exporter's to name
        n = len(st.param_names())
        weights[n:n + len(MOMENTS)] = [{0: torch.export.Dim.AUTO}] * len(MOMENTS)
    return weights + named


def export(kind: str, path, cfg: TinyConfig = EXAMPLE) -> Path:
    """Trace and write one graph (:data:`STEP_NAMES`) to ``path``."""
    check_kind(kind)
    path = check_path("path", path)
    check_folder("path's folder", path.parent)  # one line where a file is in the way
    _, args, inputs, outputs = graph_functions(cfg)[kind]
    gm = trace(kind, cfg)
    names = onnx_program.dim_names(gm, _dynamic_shapes(kind, args, cfg))
    program = onnx_program.exported_program(gm)  # no second trace (torch.export's)
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _decomposed_already(), onnx_program.recorded_types():
                torch.onnx.export(program, (), str(path), dynamo=True, opset_version=OPSET,
                                  input_names=inputs, output_names=outputs,
                                  external_data=False, optimize=False, verbose=False)
    finally:
        quiet.setLevel(level)
    import onnx  # build-time only (requirements.txt), not in Binder's environment

    model = onnx.load(str(path))
    onnx_program.rename_dims(model, names)  # s0 -> L, s37 -> h, ...
    for node in model.graph.node:  # the exporter's stack traces: 4/5 of the bytes
        del node.metadata_props[:]
        node.doc_string = ""
    if kind == "step":  # the moments' length: the exporter's name for it ("s92") made plain
        g = model.graph
        sym = next(i for i in g.input if i.name == MOMENTS[0]).type.tensor_type.shape.dim[0]
        sym = sym.dim_param
        for value in (*g.input, *g.output, *g.value_info):
            for d in value.type.tensor_type.shape.dim:
                if d.dim_param == sym:
                    d.dim_param = "n_weights"
    onnx.save(model, str(path))
    return path


# ------------------------------------------------------------------ data

def batches(steps: int = MAX_STEPS, seed: int = SEED) -> torch.Tensor:
    """The word ids of :func:`train`'s first ``steps`` batches (its generator
    for ``data_seed=seed``, its batch size). Shapes: (steps, 32, 16) int64."""
    steps = check_positive_int("steps", steps, MAX_STEPS,
                               "the longest run the page offers")
    seed = check_seed("seed", seed)
    g = torch.Generator().manual_seed(training.DATA_SEED_OFFSET + seed)
    return torch.stack([tasks.sample(EXAMPLE.batch, generator=g)[0]
                        for _ in range(steps)])


def baseline_table() -> np.ndarray:
    """The circuits' random baseline (:func:`~mhacourse.circuits.core._baseline_core`,
    from the pool as the page loads it, float16) for every ``(h, d_k)`` the
    page allows: rows ``(d_model, d_k, Q, K, V)``, float32, in order of
    ``h`` then ``d_k``. Shapes: -> (sizes, 5)."""
    pool = st.noise_pool().half().float()
    rows = []
    with torch.no_grad():
        for h in range(1, H_MAX + 1):
            for d_k in range(D_K_RANGE[0], D_K_RANGE[1] + 1):
                if h * d_k <= D_MODEL_MAX:
                    rows.append([h * d_k, d_k, *_baseline_core(pool, h * d_k, d_k).tolist()])
    return np.array(rows, dtype=np.float32)


#: The data files :func:`write_data` writes, by their manifest key.
DATA_FILES = {"pool": "pool.f16", "batches": "batches.u16", "heldout": "heldout.u16",
              "baseline": "baseline.f32"}


def write_data(out) -> dict:
    """:data:`DATA_FILES` in ``out``; returns their entries for the manifest."""
    out = check_folder("out", out)
    entries = {}
    for key, array in (("pool", st.noise_pool().numpy().astype(np.float16)),
                       ("batches", batches().numpy().astype(np.uint16)),
                       ("heldout", training.heldout()[0].numpy().astype(np.uint16)),
                       ("baseline", baseline_table())):
        (out / DATA_FILES[key]).write_bytes(array.tobytes())
        entries[key] = {"file": DATA_FILES[key], "shape": list(array.shape),
                        "dtype": str(array.dtype), "bytes": array.nbytes}
    entries["baseline"]["columns"] = list(BASELINE_COLUMNS)
    return entries


def data_job(folder: Path) -> tuple[str, dict]:
    """:func:`write_data` as a job of ``web_export``'s export pool (3.5 s on
    one core: it ran after the pool, alone, at the build's end); returns
    ``("data", its entries)``."""
    folder = check_folder("folder", folder)
    return "data", write_data(folder)


def export_job(folder: Path, kind: str) -> tuple[str, dict]:
    """One graph, as a job of ``web_export``'s export pool: writes
    ``folder/{kind}.onnx``; returns ``("train", {"kind", "file", "bytes",
    "export_seconds"})``."""
    check_kind(kind)
    folder = check_folder("folder", folder)
    t = time.perf_counter()
    torch.set_num_threads(1)
    path = export(kind, Path(folder) / f"{kind}.onnx")
    return "train", {"kind": kind, "file": path.name, "bytes": path.stat().st_size,
                     "export_seconds": round(time.perf_counter() - t, 1)}


def graph_io(kind: str) -> dict:
    """A graph's inputs and outputs by name, in graph order, less the weights
    and AdamW's moments (``params[].input``, :data:`MOMENTS`, ``new_``,
    ``grad_`` of those names): what the page feeds and reads besides them."""
    kind = check_kind(kind)
    _, _, _, outputs = graph_functions()[kind]
    weights = {p.replace(".", "_") for p in st.param_names()}
    derived = weights | set(MOMENTS)
    derived |= {f"{a}_{w}" for a in ("new", "grad") for w in derived}
    return {"inputs": list(INPUTS[kind]),
            "outputs": [o for o in outputs if o not in derived]}


def param_dims() -> dict:
    """Each parameter's shape as a rule the page evaluates for any width:
    ``[[a, b], ...]``, one pair per dimension, which is ``a * d_model + b``
    (every shape of :func:`~mhacourse.tiny_model.step.param_shapes` is linear
    in ``d_model``)."""
    one, two = st.param_shapes(1), st.param_shapes(2)
    rules = {k: [[s2 - s1, 2 * s1 - s2] for s1, s2 in zip(one[k], two[k], strict=True)]
             for k in one}
    for k, shape in st.param_shapes(EXAMPLE.d_model).items():  # the rule, checked
        assert [a * EXAMPLE.d_model + b for a, b in rules[k]] == list(shape), k
    return rules


def check_data_entries(data) -> None:
    """``data``: ``None``, or :func:`write_data`'s entries (one for each of
    its files)."""
    if data is not None and not (isinstance(data, dict) and set(data) == set(DATA_FILES)
                                 and all(isinstance(v, dict) and "file" in v
                                         for v in data.values())):
        raise InputError(f"data must be None or write_data's entries "
                         f"({sorted(DATA_FILES)}); got {describe(data)}.")


def manifest_entry(graphs: dict, folder: Path, data: dict | None = None) -> dict:
    """The manifest's ``"train"`` entry for the exported ``graphs``
    (``{kind: export_job's dict}``). ``data``: :func:`write_data`'s entries
    for ``folder`` if they are written already (the export pool's job,
    :func:`data_job`); ``None``: written into ``folder`` here."""
    check_graphs(graphs)
    check_data_entries(data)
    folder = check_folder("folder", folder)
    cfg = EXAMPLE
    return {
        "graphs": {k: {**{key: v[key] for key in ("file", "bytes", "export_seconds")},
                       **graph_io(k)}
                   for k, v in sorted(graphs.items())},
        "data": write_data(Path(folder)) if data is None else data,
        "params": [{"name": k, "input": k.replace(".", "_"), "dims": dims}
                   for k, dims in param_dims().items()],
        "n_layers": cfg.n_layers, "vocab_size": cfg.vocab_size,
        "batch": [cfg.batch, cfg.max_len], "heldout_n": training.HELDOUT_N, "probe_n": PROBE_N,
        "limits": {**{k: v for k, v in limits().items() if k != "budget"},
                   "max_steps": MAX_STEPS, "messages": SIZE_MESSAGES},
        "steps_for": {str(d): steps_for(d) for d in range(1, D_MODEL_MAX + 1)},
        "budget": BUDGET_D_MODEL, "statistics": list(st.STATISTICS), "seed": SEED,
        "baselines": heldout_baselines(),
        "knobs": [dict(k) for k in KNOBS], "readouts": [dict(r) for r in READOUTS],
    }


def heldout_baselines() -> dict:
    """What the page's accuracy curves are read against: :func:`tasks.baselines`
    on the held-out set, for a uniform guess (chance) and the rule "always the
    previous word", each ``{"all", "previous", "lookup"}``."""
    rules = tasks.baselines(*training.heldout())
    return {name: {part: round(float(v), 6) for part, v in rules[name].items()}
            for name in ("uniform", "previous word")}
