"""One trace of a function, handed to ``torch.onnx.export`` as it is.

``torch.onnx.export(dynamo=True)`` given a module first captures it with
``torch.export``: a symbolic trace of the whole graph. The trainer's graphs
(:mod:`mhacourse.web_train`) are traced already, with ``make_fx`` (to take
``torch.func``'s gradients and to decompose into the operations ONNX has), so
that capture was a second trace of the same graph, about a third of each
graph's export. This module makes the ``ExportedProgram`` from the first
trace instead:

- :func:`fake_inputs`: the example inputs as fake tensors in which the
  declared axes alone are symbolic (``torch.export.Dim``), the others fixed,
  as ``torch.export`` fixes an axis it is not told is dynamic;
- :func:`trace`: ``make_fx`` of the function on them, then the two rewrites
  the ONNX translation needs (:func:`_numel_to_sizes`, and the caller's
  own, such as ``web_train.scalars_to_tensors``), each size computed
  once (:func:`_share_sizes`), no ``expand`` to the shape its input
  already has (:func:`_drop_same_shape_expands`), and each value computed
  once (:func:`_common_subexpressions`);
- :func:`exported_program`: the graph as an ``ExportedProgram`` whose inputs
  are the function's arguments (its tensor constants lifted to constant
  inputs, :func:`_lift_constants`) and whose outputs are its results;
- :func:`dim_names`: which of the trace's size symbols (``s0``, ``s37``)
  each declared axis became, so that the ONNX file names them
  (:func:`rename_dims`) as the export did (``d_model``, ``h``, ``L``, ``N``).

:func:`trace`'s ``swaps`` traces a twin in place of one of the package's
functions wherever the package calls it (:func:`_swapped`; the trainer's
graphs take one-operation softmax and LayerNorm this way, ``web_train.FUSED``).

It checks what ``torch.export`` would have refused: an axis declared
dynamic that the trace fixed to its example's size, and two axes of
different names that the trace found to be equal.

:func:`recorded_types` speeds up one pass of the export itself, for these
graphs and for any other (MiniLM's): the pass that inserts the casts ONNX
needs where an operation mixes dtypes reads each node's value from the
graph instead of running the whole graph again on fake tensors.
"""
from __future__ import annotations

import contextlib
import operator
import re
import sys

import sympy
import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import (
    DimDynamic,
    ShapeEnv,
    StatelessSymbolicContext,
)
from torch.onnx._internal.exporter import _fx_passes
from torch.onnx._internal.fx.passes import type_promotion

from ._validate import InputError, InputTypeError, check_graph_module, describe


def check_trace(fn, args, dynamic) -> None:
    """``fn`` a function of ``args``; ``args`` and ``dynamic`` as
    :func:`check_dynamic` says."""
    if not callable(fn):
        raise InputTypeError(f"fn must be a function of the example inputs; "
                             f"got {describe(fn)}.")
    check_dynamic(args, dynamic)


def check_swaps(swaps) -> None:
    """``swaps`` a tuple of pairs of functions ``(function, twin)``."""
    if not isinstance(swaps, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and all(map(callable, p)) for p in swaps):
        raise InputError(f"swaps must be a tuple of pairs (function, twin); "
                         f"got {describe(swaps)}.")


def check_dim_names(gm, dynamic) -> None:
    """``gm`` a trace; ``dynamic`` one entry for each of its last inputs."""
    check_graph_module(gm)
    n = sum(node.op == "placeholder" for node in gm.graph.nodes)
    if not isinstance(dynamic, (list, tuple)) or len(dynamic) > n:
        raise InputError(f"dynamic must hold one entry (None, or {{axis: Dim}}) for each "
                         f"of gm's last inputs (it has {n}); got {describe(dynamic)}.")


def check_rename(model, names) -> None:
    """``model`` an ``onnx.ModelProto``; ``names`` ``{symbol: name}`` of strings."""
    if not hasattr(model, "graph") or not hasattr(model.graph, "value_info"):
        raise InputTypeError(f"model must be an onnx.ModelProto; got {describe(model)}.")
    if not isinstance(names, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) and v for k, v in names.items()):
        raise InputError(f"names must map symbols to names, such as {{'s0': 'L'}}; "
                         f"got {describe(names)}.")


def check_dynamic(args, dynamic) -> None:
    """``args`` a tuple of tensors; ``dynamic`` one entry an argument:
    ``None`` (every axis fixed) or ``{axis: torch.export.Dim}``."""
    if not isinstance(args, tuple) or not all(isinstance(a, torch.Tensor) for a in args):
        raise InputTypeError(f"args must be a tuple of tensors (the example inputs); "
                             f"got {describe(args)}.")
    if not isinstance(dynamic, (list, tuple)) or len(dynamic) != len(args):
        raise InputError(f"dynamic must hold one entry for each of the {len(args)} "
                         f"arguments (None, or {{axis: torch.export.Dim}}); "
                         f"got {describe(dynamic)}.")
    for i, (a, d) in enumerate(zip(args, dynamic)):
        if d is not None and (not isinstance(d, dict) or not all(
                isinstance(k, int) and 0 <= k < a.dim() for k in d)):
            raise InputError(f"dynamic[{i}] must be None or {{axis: Dim}} with axes of "
                             f"a {a.dim()}-axis tensor; got {describe(d)}.")


def fake_inputs(args: tuple, dynamic) -> tuple[FakeTensorMode, list]:
    """``args`` as fake tensors of one new shape environment, with the axes
    ``dynamic`` names symbolic (a symbol each) and every other axis fixed.
    Where the trace finds two of them equal (``x @ w`` needs x's columns to
    be w's rows), one symbol stands for both: :func:`dim_names` refuses that
    between axes of different names."""
    check_dynamic(args, dynamic)
    mode = FakeTensorMode(shape_env=ShapeEnv())
    # No cache of operations' fake results: with symbolic sizes, making its
    # entries cost more than its hits saved (the step's trace 6.9 s against
    # 9.9 s, ablate's 10.7 against 13.4, one core; the same graphs).
    mode.cache_enabled = False
    fakes = []
    for a, d in zip(args, dynamic):
        sizes = [DimDynamic.DYNAMIC if d and i in d else DimDynamic.STATIC
                 for i in range(a.dim())]
        context = StatelessSymbolicContext(dynamic_sizes=sizes,
                                           constraint_sizes=[None] * a.dim())
        fakes.append(mode.from_tensor(a, symbolic_context=context))
    return mode, fakes


def _numel_to_sizes(gm: torch.fx.GraphModule) -> int:
    """Rewrite each ``aten.sym_numel(t)`` (which the ONNX translation lacks)
    to the product of ``t``'s sizes: ``sym_size.int`` of each symbolic axis
    times the fixed ones. Returns how many it rewrote."""
    graph, count = gm.graph, 0
    for node in list(graph.nodes):
        if node.target is not torch.ops.aten.sym_numel.default:
            continue
        t, product, value = node.args[0], None, 1
        with graph.inserting_before(node):
            for axis, size in enumerate(t.meta["val"].shape):
                factor = size
                if not isinstance(size, int):
                    factor = graph.call_function(torch.ops.aten.sym_size.int, (t, axis))
                    factor.meta["val"] = size
                value = value * size
                if product is None:
                    product = factor
                else:
                    product = graph.call_function(operator.mul, (product, factor))
                    product.meta["val"] = value
        node.replace_all_uses_with(1 if product is None else product)
        graph.erase_node(node)
        count += 1
    graph.lint()
    gm.recompile()
    return count


def _share_sizes(gm: torch.fx.GraphModule) -> int:
    """Compute each symbolic size once: a node whose value is a size
    expression already computed by an earlier node (``sym_size`` of the same
    axis, the same product) is replaced by that node, and so is a
    ``scalar_tensor`` of the same size and dtype. (``make_fx`` records a
    size each time the code asks for it; ``torch.export``'s re-trace, which
    this module skips, kept one of each.) Returns how many it removed."""
    def size(node):
        value = node.meta.get("val")
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return type(value), str(value.node.expr)
        if node.target is torch.ops.aten.scalar_tensor.default:
            return "scalar_tensor", node.args, tuple(sorted(node.kwargs.items()))
        return None

    return _merge_equal(gm, size)


def _merge_equal(gm: torch.fx.GraphModule, key_of) -> int:
    """Replace each ``call_function`` node by the first earlier one with the
    same ``key_of(node)`` (a node whose key is ``None`` is kept): the one
    mechanism of :func:`_share_sizes` and :func:`_common_subexpressions`.
    Returns how many it removed."""
    graph, first, count = gm.graph, {}, 0
    for node in list(graph.nodes):
        key = key_of(node) if node.op == "call_function" else None
        if key is None:
            continue
        if key in first:
            node.replace_all_uses_with(first[key])
            graph.erase_node(node)
            count += 1
        else:
            first[key] = node
    graph.lint()
    gm.recompile()
    return count


def _drop_same_shape_expands(gm: torch.fx.GraphModule) -> int:
    """Remove each ``aten.expand`` whose result has its input's shape, size
    for size (the same symbols): ``matmul``'s decomposition expands both
    operands of every batched product to the shape they already have. In
    PyTorch that is a view and costs nothing; ONNX's ``Expand`` copies it
    (in onnxruntime-web, a (1024, h, 16, 16) copy in every product of the
    held-out evaluation). Returns how many it removed."""
    graph, count = gm.graph, 0
    for node in list(graph.nodes):
        if node.target is not torch.ops.aten.expand.default:
            continue
        before, after = node.args[0].meta["val"].shape, node.meta["val"].shape
        if [str(s) for s in before] == [str(s) for s in after]:  # same size expressions
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            count += 1
    graph.lint()
    gm.recompile()
    return count


def _common_subexpressions(gm: torch.fx.GraphModule) -> int:
    """Compute each value once: a node that applies the same operation to
    the same inputs as an earlier node is replaced by it. The package's
    functions are written to be read, one statistic at a time: the held-out
    evaluation compares every word with every other (``x_s == x_t``) once
    for the targets and again in each layer's statistics, as eager PyTorch
    does; the graph does it once (about a quarter of ``evaluate``'s and
    ``circuits``' operations). Never merged: a random operation, one that
    writes to its input, and a graph output (``init``'s zero biases are one
    value each, each output its own name). Returns how many it removed."""
    outputs = set(pytree.tree_leaves(next(iter(reversed(gm.graph.nodes))).args))

    def operation(node):
        target = node.target
        if node in outputs or (isinstance(target, torch._ops.OpOverload) and (
                target._schema.is_mutable or torch.Tag.nondeterministic_seeded in target.tags)):
            return None
        return target, repr((node.args, node.kwargs))  # a node's repr: its unique name

    return _merge_equal(gm, operation)


def trace(fn, args: tuple, dynamic, decompositions: dict | None = None,
          rewrite=None, swaps: tuple = ()) -> torch.fx.GraphModule:
    """``make_fx`` of ``fn`` on :func:`fake_inputs` (``decompositions``:
    operation -> its decomposition, applied while tracing; ``swaps``: pairs
    ``(function, twin)``, the twin traced wherever the package calls the
    function, :func:`_swapped`), then :func:`_numel_to_sizes` and
    ``rewrite(gm)`` if given, :func:`_drop_same_shape_expands` and
    :func:`_common_subexpressions`. Each node it adds gets its fake value
    (``meta["val"]``), as the export needs."""
    check_trace(fn, args, dynamic)
    check_swaps(swaps)
    mode, fakes = fake_inputs(args, dynamic)
    with mode, _swapped(swaps):
        gm = make_fx(fn, decomposition_table=decompositions or {})(*fakes)
    _numel_to_sizes(gm)
    if rewrite is not None:
        rewrite(gm)
    _drop_same_shape_expands(gm)
    for node in gm.graph.nodes:  # scalar_tensor nodes a rewrite added
        if "val" not in node.meta and node.target is torch.ops.aten.scalar_tensor.default:
            with mode:
                node.meta["val"] = torch.empty((), dtype=node.kwargs["dtype"])
    _share_sizes(gm)
    _common_subexpressions(gm)
    return gm


@contextlib.contextmanager
def _swapped(swaps: tuple):
    """Within: each module of this package that binds a function of
    ``swaps`` (the module that defines it, and each that imports it by
    name) binds its twin instead, so that a trace records the twin. Every
    binding is restored on the way out."""
    package = __name__.partition(".")[0]
    done = []
    try:
        for function, twin in swaps:
            for module in list(sys.modules.values()):
                if getattr(module, "__name__", "").partition(".")[0] != package:
                    continue
                for name, value in list(vars(module).items()):
                    if value is function:
                        setattr(module, name, twin)
                        done.append((module, name, function))
        yield done
    finally:
        for module, name, function in reversed(done):
            setattr(module, name, function)


def _lift_constants(gm: torch.fx.GraphModule) -> tuple[list[InputSpec], dict]:
    """Turn each tensor the graph holds (``get_attr``) into a constant input
    placed before the arguments, as ``torch.export`` lifts them; returns
    their input specs and ``{name: tensor}``."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    mode = torch._guards.detect_fake_mode([n.meta.get("val") for n in placeholders])
    specs, constants = [], {}
    for node in list(graph.nodes):
        if node.op != "get_attr":
            continue
        value = getattr(gm, node.target)
        assert isinstance(value, torch.Tensor), f"{node.target} is not a tensor"
        with graph.inserting_before(placeholders[0]):
            lifted = graph.placeholder(f"c_{node.target}")
        lifted.meta["val"] = mode.from_tensor(value)
        node.replace_all_uses_with(lifted)
        graph.erase_node(node)
        delattr(gm, node.target)
        specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(name=lifted.name),
                               target=node.target))
        constants[node.target] = value
    graph.lint()
    gm.recompile()
    return specs, constants


def exported_program(gm: torch.fx.GraphModule) -> ExportedProgram:
    """``gm`` (:func:`trace`'s) as an ``ExportedProgram``: its constants
    lifted (:func:`_lift_constants`), its placeholders the user's inputs and
    each value it returns a user output, in order."""
    check_graph_module(gm)
    constant_specs, constants = _lift_constants(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0]
    results = tuple(results) if isinstance(results, (list, tuple)) else (results,)
    output.args = (results,)  # one result: a tuple of one, as the spec below says
    gm.recompile()
    inputs = constant_specs + [
        InputSpec(InputKind.USER_INPUT, TensorArgument(name=n.name), target=None)
        for n in placeholders[len(constant_specs):]]
    outputs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(name=n.name), target=None)
               for n in results]
    n_args = len(placeholders) - len(constant_specs)
    in_spec = pytree.tree_flatten((tuple(range(n_args)), {}))[1]
    out_spec = pytree.tree_flatten(tuple(range(len(results))))[1]
    calls = [ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec,
                                                     out_spec=out_spec))]
    env = placeholders[0].meta["val"].fake_mode.shape_env
    return ExportedProgram(gm, gm.graph, ExportGraphSignature(inputs, outputs), {},
                           dict(env.var_to_range), calls, constants=constants)


def dim_names(gm: torch.fx.GraphModule, dynamic) -> dict[str, str]:
    """``{symbol: name}``: the trace's symbol of each axis ``dynamic``
    declares with a named ``Dim`` (an unnamed one, ``Dim.AUTO``, is left to
    the caller). Refuses a declared axis the trace fixed, and two names on
    one symbol."""
    check_dim_names(gm, dynamic)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    placeholders = placeholders[len(placeholders) - len(dynamic):]
    names: dict[str, str] = {}
    for i, (node, declared) in enumerate(zip(placeholders, dynamic)):
        for axis, dim in (declared or {}).items():
            name = getattr(dim, "__name__", None)
            size = node.meta["val"].shape[axis]
            if name is None:
                continue
            if isinstance(size, int) or not isinstance(size.node.expr, sympy.Symbol):
                raise InputError(f"input {i}'s axis {axis} ({name}) was fixed to "
                                 f"{size} by the trace: the graph would hold for that "
                                 f"size alone.")
            symbol = str(size.node.expr)
            if names.setdefault(symbol, name) != name:
                raise InputError(f"{name} and {names[symbol]} share the symbol {symbol}: "
                                 "the trace found them equal, so the graph would hold "
                                 "only where they are; declare them as one Dim.")
    return names


def rename_dims(model, names: dict[str, str]) -> int:
    """Rename the symbols in ``model``'s (an ``onnx.ModelProto``) symbolic
    axes, in its inputs, outputs and value infos, ``names`` maps (a whole
    word at a time, so ``s1`` leaves ``s12`` alone and ``s1*s37`` becomes
    ``d_model*h``). Returns how many axes changed."""
    check_rename(model, names)
    if not names:
        return 0
    word = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    graph, count = model.graph, 0
    for value in (*graph.input, *graph.output, *graph.value_info):
        for d in value.type.tensor_type.shape.dim:
            if d.dim_param:
                new = word.sub(lambda m: names[m.group(1)], d.dim_param)
                count += new != d.dim_param
                d.dim_param = new
    return count


class _RecordedTypePromotion(type_promotion._TypePromotionInterpreter):
    """torch.onnx's type-promotion interpreter, except that a node it leaves
    as it is gives the value its graph recorded (``meta["val"]``) instead of
    being run again on fake tensors. A node it changes (an argument cast to
    the rule's dtype) and each cast it adds are still run, so their values
    are the new ones, as in the original pass."""

    def run_node(self, n: torch.fx.Node):
        with self._set_current_node(n):
            rule = type_promotion.get_type_promotion_rule(n, self.type_promotion_table)
            if rule is not None:
                self._maybe_promote_node(n, rule)  # runs n again if it changed it
        if n.op == "call_function" and "val" in n.meta:
            return n.meta["val"]
        return torch.fx.Interpreter.run_node(self, n)  # placeholders, the output


def _insert_type_promotion_nodes(graph_module: torch.fx.GraphModule) -> None:
    """``_fx_passes.insert_type_promotion_nodes`` with
    :class:`_RecordedTypePromotion` as its interpreter."""
    for module in graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            raise InputTypeError(f"expected a GraphModule; got {describe(module)}.")
        promote = type_promotion.InsertTypePromotion(module)
        promote.interpreter = _RecordedTypePromotion(module, type_promotion.TypePromotionTable())
        promote.run()


@contextlib.contextmanager
def recorded_types():
    """Within: ``torch.onnx.export(dynamo=True)``'s type-promotion pass takes
    each node's value from the graph (:class:`_RecordedTypePromotion`). The
    original pass ran every node again on fake tensors, which with symbolic
    sizes was about two thirds of the exporter's own time. Every graph of
    the build's export is byte for byte the one the original pass gives
    (tests/test_onnx_program.py checks the casts on a graph that needs them)."""
    keep = _fx_passes.insert_type_promotion_nodes
    _fx_passes.insert_type_promotion_nodes = _insert_type_promotion_nodes
    try:
        yield
    finally:
        _fx_passes.insert_type_promotion_nodes = keep
