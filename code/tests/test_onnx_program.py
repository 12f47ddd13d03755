"""mhacourse.onnx_program: one trace handed to torch.onnx.export as an
ExportedProgram. Small functions, exported and run by onnxruntime at sizes
other than the example's; the refusals torch.export would have made."""
from __future__ import annotations

import contextlib

import numpy as np
import onnx
import pytest
import torch

from mhacourse import onnx_program as op
from mhacourse._validate import InputError, InputTypeError

ort = pytest.importorskip("onnxruntime")

N = torch.export.Dim("N", min=1, max=64)
D = torch.export.Dim("D", min=1, max=64)


def export(fn, args, dynamic, path, names):
    gm = op.trace(fn, args, dynamic)
    dims = op.dim_names(gm, dynamic)
    torch.onnx.export(op.exported_program(gm), (), str(path), dynamo=True,
                      input_names=names, optimize=False, verbose=False)
    model = onnx.load(str(path))
    op.rename_dims(model, dims)
    onnx.save(model, str(path))
    return model


def shape(value):
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def scaled_rows(x, w):
    """x @ w over the element count, plus a constant row (a lifted tensor)."""
    return x @ w / x.numel() + torch.tensor([1.0, 2.0, 3.0])


def test_a_graph_holds_for_sizes_other_than_its_example(tmp_path):
    args = (torch.randn(5, 4), torch.randn(4, 3))
    model = export(scaled_rows, args, [{0: N, 1: D}, {0: D}], tmp_path / "f.onnx",
                   ["x", "w"])
    # the declared axes carry their names; the undeclared one (w's 3) is fixed
    assert [shape(i) for i in model.graph.input] == [["N", "D"], ["D", 3]]
    session = ort.InferenceSession(str(tmp_path / "f.onnx"))
    for n, d in [(5, 4), (1, 7), (9, 2)]:
        x, w = torch.randn(n, d), torch.randn(d, 3)
        got, = session.run(None, {"x": x.numpy(), "w": w.numpy()})
        np.testing.assert_allclose(got, scaled_rows(x, w).numpy(), rtol=1e-5, atol=1e-6)


def test_sizes_are_computed_once(tmp_path):
    """make_fx records x.shape[0] each time it is asked; share_sizes keeps one."""
    def many(x):
        return x / x.shape[0] + x / x.shape[0] + x * x.shape[0]

    gm = op.trace(many, (torch.randn(6, 2),), [{0: N}])
    sizes = [n for n in gm.graph.nodes if n.target is torch.ops.aten.sym_size.int]
    assert len(sizes) == 1, gm.graph


def test_numel_becomes_the_product_of_the_sizes():
    def per_element(x):
        return x.sum() / x.numel()

    gm = op.trace(per_element, (torch.randn(6, 5),), [{0: N}])
    targets = {n.target for n in gm.graph.nodes}
    assert torch.ops.aten.sym_numel.default not in targets
    assert torch.ops.aten.sym_size.int in targets  # N, times the fixed 5


def test_an_expand_to_the_shape_it_has_is_dropped_and_a_broadcast_kept(tmp_path):
    """matmul's decomposition expands both operands of a batched product; to
    their own shape that is a copy in ONNX, and the trace drops it. An
    expand that broadcasts (a's batch of 1 to N) stays, and the values hold."""
    def batched(a, b, c):  # a (N, 3, 4, 5), b (N, 3, 5, 4), c (1, 3, 4, 4)
        return a @ b, c @ (a @ b)  # (N, 3, 4, 4) twice

    args = (torch.randn(6, 3, 4, 5), torch.randn(6, 3, 5, 4), torch.randn(1, 3, 4, 4))
    dynamic = [{0: N}, {0: N}, {}]
    expands = [n for n in op.trace(batched, args, dynamic).graph.nodes
                if n.target is torch.ops.aten.expand.default]
    kept = [(tuple(map(str, n.args[0].meta["val"].shape)), tuple(map(str, n.meta["val"].shape)))
            for n in expands]
    assert kept and all(before != after for before, after in kept), kept
    assert all(before[0] == "1" for before, _ in kept), kept  # the broadcast alone
    model = export(batched, args, dynamic, tmp_path / "b.onnx", ["a", "b", "c"])
    assert sum(n.op_type == "Expand" for n in model.graph.node) == len(kept)
    session = ort.InferenceSession(str(tmp_path / "b.onnx"))
    a, b, c = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 5, 4), torch.randn(1, 3, 4, 4)
    feeds = {"a": a.numpy(), "b": b.numpy(), "c": c.numpy()}
    for got, want in zip(session.run(None, feeds), batched(a, b, c)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_a_value_computed_twice_is_computed_once_and_a_random_one_is_not_merged():
    """The package computes x_s == x_t once for the targets and again in each
    layer's statistics; the trace keeps one. Two draws of noise stay two,
    and so do two outputs."""
    def pairs(x):  # x (N, L) word ids
        same = (x[:, :, None] == x[:, None, :]).float()  # (N, L, L)
        again = (x[:, :, None] == x[:, None, :]).float()
        return same.sum(-1) + again.mean(-1) + torch.rand(6) + torch.rand(6).sum()  # (N, L)

    gm = op.trace(pairs, (torch.randint(0, 5, (4, 6)),), [{0: N}])
    targets = [n.target for n in gm.graph.nodes]
    assert targets.count(torch.ops.aten.eq.Tensor) == 1, gm.graph
    assert targets.count(torch.ops.aten.rand.default) == 2, gm.graph
    x = torch.tensor([[1, 2, 1, 3, 2, 1]])
    torch.manual_seed(0)
    want = pairs(x)
    torch.manual_seed(0)
    torch.testing.assert_close(gm(x), want)
    # two outputs of equal value (init's zero biases) stay two: each its own name
    gm = op.trace(lambda x: (x.new_zeros(3), x.new_zeros(3), x + 1), (torch.randn(4, 3),),
                  [{0: N}])
    first, second, _ = list(gm.graph.nodes)[-1].args[0]
    assert first is not second, gm.graph


def test_an_axis_the_trace_fixed_is_refused():
    def branches(x):
        return x * 2 if x.shape[0] == 3 else x

    gm = op.trace(branches, (torch.ones(3),), [{0: N}])
    with pytest.raises(InputError, match=r"input 0's axis 0 \(N\) was fixed to 3"):
        op.dim_names(gm, [{0: N}])


def test_two_names_the_trace_made_equal_are_refused():
    """x + y needs N = D: a graph with two names would hold only where they are."""
    def add(x, y):
        return x + y

    gm = op.trace(add, (torch.randn(4), torch.randn(4)), [{0: N}, {0: D}])
    with pytest.raises(InputError, match="N and D share the symbol|D and N share the symbol"):
        op.dim_names(gm, [{0: N}, {0: D}])


def test_rename_dims_renames_whole_words():
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [], "g", [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT,
                                                     ["s1", "s12", "s1*s37"])],
        [onnx.helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, ["s37", 4])]))
    assert op.rename_dims(model, {"s1": "d_model", "s37": "h"}) == 3
    assert shape(model.graph.input[0]) == ["d_model", "s12", "d_model*h"]
    assert shape(model.graph.output[0]) == ["h", 4]


def mixed(x, i):
    """Operations on mixed dtypes: float x int64 tensors, a float tensor and
    an int64 sum, an int64 tensor over a Python float."""
    return x * i + i.sum() + (i / 2.0)


def test_recorded_types_give_the_same_casts_as_the_exporters_pass(tmp_path):
    """The type-promotion pass reading each node's recorded value writes the
    ONNX file the original pass writes, byte for byte, casts included; and
    onnxruntime gives torch's numbers from it at another size."""
    args = (torch.randn(3, 4), torch.arange(12).reshape(3, 4))
    dynamic = [{0: N}, {0: N}]
    files = []
    for name, context in (("original", contextlib.nullcontext), ("recorded", op.recorded_types)):
        path = tmp_path / f"{name}.onnx"
        with context():
            export(mixed, args, dynamic, path, ["x", "i"])
        files.append(path.read_bytes())
    assert files[0] == files[1]
    model = onnx.load_from_string(files[1])
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert len(casts) >= 2, [n.op_type for n in model.graph.node]  # i to float, its sum
    x, i = torch.randn(5, 4), torch.arange(20).reshape(5, 4)
    got, = ort.InferenceSession(files[1]).run(None, {"x": x.numpy(), "i": i.numpy()})
    np.testing.assert_allclose(got, mixed(x, i).numpy(), rtol=1e-6)
    # the exporter's own pass is back after the block
    from torch.onnx._internal.exporter import _fx_passes
    assert _fx_passes.insert_type_promotion_nodes is not op._insert_type_promotion_nodes


def test_swaps_trace_the_twin_and_restore_every_binding():
    """``swaps``: the twin is traced wherever the package calls the function,
    its own module and a module that imported it by name, and both bindings
    are the function again afterwards, also when the trace fails."""
    from mhacourse import attention, block
    from mhacourse.tiny_model import model

    def twice(x, *_):  # twins that the graph shows: exp and sin, not the cores' steps
        return x.exp() * 2

    def sine(x, *_):
        return x.sin() * 2

    def through_the_package(x):
        return attention._softmax_core(x) + model._layer_norm_core(x, x[0], x[0])

    swaps = ((attention._softmax_core, twice), (block._layer_norm_core, sine))
    gm = op.trace(through_the_package, (torch.randn(4, 3),), [{0: N}], swaps=swaps)
    targets = [n.target for n in gm.graph.nodes]
    assert targets.count(torch.ops.aten.exp.default) == 1
    assert targets.count(torch.ops.aten.sin.default) == 1
    assert torch.ops.aten.amax.default not in targets
    assert attention._softmax_core.__name__ == "_softmax_core"
    assert model._layer_norm_core is block._layer_norm_core
    assert block._layer_norm_core.__name__ == "_layer_norm_core"
    with pytest.raises(RuntimeError):
        op.trace(lambda x: attention._softmax_core(x).view(7), (torch.randn(4, 3),),
                 [None], swaps=swaps)
    assert attention._softmax_core.__name__ == "_softmax_core"
    # without swaps the package's own steps are traced
    plain = [n.target for n in op.trace(through_the_package, (torch.randn(4, 3),),
                                        [{0: N}]).graph.nodes]
    assert torch.ops.aten.amax.default in plain


@pytest.mark.parametrize("call, words", [
    (lambda: op.trace(scaled_rows, [torch.ones(2)], [None]), "args must be a tuple"),
    (lambda: op.trace(scaled_rows, (torch.ones(2),), []), "one entry for each"),
    (lambda: op.trace(scaled_rows, (torch.ones(2),), [{1: N}]), "dynamic\\[0\\]"),
    (lambda: op.trace(5, (torch.ones(2),), [None]), "fn must be a function"),
    (lambda: op.trace(scaled_rows, (torch.ones(2),), [None], swaps=[(abs, abs)]),
     "swaps must be a tuple of pairs"),
    (lambda: op.trace(scaled_rows, (torch.ones(2),), [None], swaps=((abs, 3),)),
     "swaps must be a tuple of pairs"),
    (lambda: op.exported_program("graph"), "gm must be a torch.fx.GraphModule"),
    (lambda: op.dim_names(None, [None]), "gm must be a torch.fx.GraphModule"),
    (lambda: op.dim_names(op.trace(scaled_rows, (torch.ones(2, 3), torch.ones(3, 3)),
                                   [None, None]), [None] * 3), "one entry"),
    (lambda: op.rename_dims("model", {}), "model must be an onnx.ModelProto"),
    (lambda: op.rename_dims(onnx.ModelProto(), {"s0": 5}), "names must map symbols"),
])
def test_bad_input_gets_one_line(call, words):
    with pytest.raises((InputError, InputTypeError), match=words):
        call()
