"""SmolLM2 for the static site (mhacourse.real_lm.web): the 4-bit blocks the
exported graph hands to onnxruntime's MatMulNBits stand for the numbers
load_weights dequantizes, and build refuses bad arguments in one line.
(The page's parity with the package: tests/test_explorer_smollm2.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from mhacourse import InputError
from mhacourse.real_lm import model_file, web


@pytest.fixture(scope="module")
def reader():
    gguf = pytest.importorskip("gguf")
    return gguf, gguf.GGUFReader(model_file())


def unpack4(packed: np.ndarray) -> np.ndarray:
    """MatMulNBits' 4-bit layout back to weights in order: byte i holds
    weights 2i (low nibble) and 2i + 1 (high nibble)."""
    q = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), np.uint8)
    q[..., 0::2], q[..., 1::2] = packed & 0x0F, packed >> 4
    return q


@pytest.mark.parametrize("name", ["blk.0.attn_q.weight", "blk.7.attn_k.weight",
                                  "blk.18.ffn_down.weight", "blk.29.attn_output.weight"])
def test_q4_1_blocks_are_the_dequantized_weights(reader, name):
    gguf, r = reader
    t = next(t for t in r.tensors if t.name == name)
    n, k = int(t.shape[1]), int(t.shape[0])  # GGUF lists (in, out)
    packed, d, m = web._q4_1_blocks(t.data, n, k)
    d32, m32 = d.astype(np.float32), m.astype(np.float32)
    zp = -m32 / d32  # what the graph computes (Cast, Div, Neg)
    w = (d32[:, None] * (unpack4(packed).reshape(-1, 32) - zp[:, None])).reshape(n, k)
    want = gguf.quants.dequantize(t.data, t.tensor_type).reshape(n, k)
    assert np.abs(w - want).max() <= 4e-7 * np.abs(want).max()


def test_q8_0_embedding_is_the_dequantized_embedding(reader):
    gguf, r = reader
    t = next(t for t in r.tensors if t.name == "token_embd.weight")
    q, d = web._q8_0_blocks(t.data, 49152, 576)
    w = ((q[:64].astype(np.float32) - 128) * d[: 64 * 18].astype(np.float32).reshape(64, 18, 1))
    want = gguf.quants.dequantize(t.data[:64], t.tensor_type)
    assert np.array_equal(w.reshape(64, 576), want)


@pytest.mark.parametrize("out, log", [(3, print), (b"x", print), ("", print), ("x", 5)])
def test_build_refuses_bad_arguments_in_one_line(out, log):
    with pytest.raises(InputError) as e:
        web.build(out, log)
    assert "\n" not in str(e.value)


def test_the_logits_in_slices_equal_one_8_bit_product():
    """_unembed's UNEMBED_CHUNKS products over slices of the vocabulary give
    the one MatMulNBits over the whole table, to the bit (each logit is the
    same dot product)."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    K, N, rng = 64, 8 * web.UNEMBED_CHUNKS, np.random.default_rng(0)
    table = rng.integers(0, 256, (N, K // 32, 32), dtype=np.uint8)
    scale = rng.uniform(0.01, 0.1, (N, K // 32)).astype(np.float32)
    x = rng.standard_normal((1, 3, K)).astype(np.float32)

    def run(nodes, inits):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        [1, 3, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                                helper.make_opsetid("com.microsoft", 1)])
        m.ir_version = 10
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return s.run(None, {"x": x})[0]

    inits = {"E_q8": table, "E_d": scale, "flat": np.array([-1])}
    one = run([helper.make_node("Reshape", ["E_d", "flat"], ["E_d_flat"]),
               helper.make_node("MatMulNBits", ["x", "E_q8", "E_d_flat"], ["y"],
                                domain="com.microsoft", K=K, N=N, bits=8, block_size=32)], inits)

    def init(name, array):
        inits[name] = array
        return name

    node = helper.make_node("MatMul", ["x", "W"], ["y"])
    sliced = run(web._unembed(node, "E_q8", "E_d", K, N, init), inits)
    assert sliced.shape == (1, 3, N) and np.array_equal(sliced, one)


def test_equal_constants_are_kept_once_and_the_graph_computes_the_same():
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    c = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    d = numpy_helper.from_array(np.ones((2, 3), np.float32))
    nodes = [helper.make_node("Constant", [], ["a"], value=c),
             helper.make_node("Constant", [], ["b"], value=c),
             helper.make_node("Constant", [], ["e"], value=d),
             helper.make_node("Add", ["x", "a"], ["t"]), helper.make_node("Mul", ["t", "b"], ["u"]),
             helper.make_node("Sub", ["u", "e"], ["y"])]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "y")]
    g = helper.make_graph(nodes, "g", io[:1], io[1:])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 10
    x = np.full((2, 3), 0.5, np.float32)

    def run(model):
        s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return s.run(None, {"x": x})[0]

    before = run(m)
    web._share_constants(m)
    assert [n.op_type for n in m.graph.node].count("Constant") == 2
    assert np.array_equal(run(m), before)


def test_one_traced_block_repeated_computes_the_whole_model():
    """_export_float traces one block and stitches it once a layer: on a
    small random LM of SmolLM2's architecture, with a head switched off,
    onnxruntime's losses and attention weights are the package's."""
    ort = pytest.importorskip("onnxruntime")
    import torch

    from mhacourse.real_lm.model import _forward_core, random_lm

    lm = random_lm(seed=1)
    cfg, L = lm.cfg, web.MAX_WEB_LEN
    model = web._export_float(lm)
    weights = {i.name for i in model.graph.initializer if i.name[:1] == "l" and i.dims[1:]}
    readers = [n.input[1] for n in model.graph.node if n.op_type == "MatMul"]
    assert sorted(r for r in readers if r in weights) == sorted(weights)  # each matrix once
    assert len(weights) == 7 * cfg.n_layers
    ids = torch.randint(0, cfg.vocab, (1, L), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(cfg.n_layers, cfg.h)
    mask[1, 2] = 0.0
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    loss, *attn = s.run(None, {"input_ids": ids.numpy(), "head_mask": mask.numpy()})
    logits, want_attn, _ = _forward_core(ids, lm.w, cfg, head_mask=mask)
    want = web._next_token_loss_core(logits, ids)
    assert len(attn) == cfg.n_layers
    assert np.abs(loss - want.numpy()).max() < 1e-5
    for a, w in zip(attn, want_attn):
        assert a.shape == (1, cfg.h, L, L) and np.abs(a - w.numpy()).max() < 1e-6


def test_saving_again_into_the_same_folder_replaces_the_data_file(tmp_path):
    """onnx appends external data to a file already there: _save removes it
    first, so a second export is the size of the first and loads the same."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    w = np.arange(600, dtype=np.float32).reshape(20, 30)  # 2.4 kB: external
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 30])],
                          [numpy_helper.from_array(w, "W")])
    path = tmp_path / "m.onnx"
    sizes = []
    for _ in range(2):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
        m.ir_version = 10
        web._save(m, path)
        sizes.append((tmp_path / web.DATA_NAME).stat().st_size)
    assert sizes[0] == sizes[1] == w.nbytes
    x = np.ones((1, 20), np.float32)
    y = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.array_equal(y, x @ w)
