"""SmolLM2-135M for the static site's explorer: the package's own forward
pass (:func:`~.model._forward_core`'s block and logits) exported to ONNX,
its weights kept in the GGUF file's 4-bit blocks.

``torch.onnx.export`` traces one block (:class:`BlockGraph`,
:func:`~.model._block_core`) and what follows the last
(:class:`TailGraph`: the logits and the next-token loss), weights as float32
constants; :func:`_stitch` repeats the block for the 30 layers, each with
its own weights; :func:`_to_4bit` then puts back, in place of each float
matrix, the file's own blocks, which onnxruntime multiplies with its
``MatMulNBits`` operator (``com.microsoft``):

- the 210 Q4_1 matrices: 32 weights share ``d`` and ``m``, each weight is
  ``d * q + m`` (``q`` in 0..15). ``MatMulNBits`` computes ``scale * (q -
  zero_point)``, so ``scale = d`` and ``zero_point = -m / d`` (a float zero
  point); ``d`` and ``m`` are stored as the file's float16 and ``-m / d`` is
  computed in the graph in float32 (onnxruntime folds it when it loads);
- the Q8_0 embedding (``d * q``, ``q`` int8), which is also the unembedding
  (tied): one table of ``q + 128`` (uint8), read by ``Gather`` for the
  input and by an 8-bit ``MatMulNBits`` (zero point 128) for the logits.

The numbers the graph multiplies are therefore the numbers
:func:`~.files.load_weights` dequantizes (to float32 rounding of ``d * (q -
zp)`` against ``d * q + m``): the page computes what ``load_smollm2()``
computes. Graph (a sentence of ``L`` tokens, 2..:data:`MAX_WEB_LEN`, padded
to :data:`MAX_WEB_LEN`), its weights in :data:`DATA_NAME` beside it:

====================================  ======================================
inputs                                outputs
====================================  ======================================
``input_ids`` (1, L) int64;           ``loss`` (L - 1,): ``-log p(token i+1
``head_mask`` (30, 9) float32,        | tokens <= i)``; ``attn_1..attn_30``
1 = keep, 0 = remove the head         (1, 9, L, L)
====================================  ======================================
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .._validate import InputError, InputTypeError, check_path, describe
from ..multihead import MHAWeights
from .model import CausalLM, _block_core, _logits_core, _mask_and_rotate
from .weights import LMLayer, LMWeights

__all__ = ["MAX_WEB_LEN", "build"]

#: The longest sentence the page runs, in tokens (the graph's limit).
MAX_WEB_LEN = 64
#: GGUF tensor name of each of the course's matrices (``blk.<l>.<name>.weight``).
GGUF_NAMES = {"W_Q": "attn_q", "W_K": "attn_k", "W_V": "attn_v", "W_O": "attn_output",
              "W_gate": "ffn_gate", "W_up": "ffn_up", "W_down": "ffn_down"}
GAINS = ("g_1", "g_2")
ATTENTION = ("W_Q", "W_K", "W_V", "W_O")  # the matrices an LMLayer keeps in its .attn
BLOCK = 32  # weights per Q4_1 / Q8_0 block
UNEMBED_CHUNKS = 8  # slices of the vocabulary the logits are computed in (:func:`_unembed`)
#: The graph's weights, in a file of their own beside it (ONNX external
#: data): the page hands them to onnxruntime-web as ``externalData``, which
#: copies each tensor once into its memory rather than the whole model twice.
DATA_NAME = "smollm2.onnx.data"


class BlockGraph(nn.Module):
    """What is exported of one block (:func:`~.model._block_core`), once
    for all 30: ``(x (1, L, d_model), m (h,))`` -> ``(y (1, L, d_model),
    A (1, h, L, L))``, ``m`` the block's row of the head mask. Its weights
    are buffers named as layer 0's in the stitched graph (``l0_W_Q``, ...,
    ``l0_g_2``), which :func:`_stitch` fills with each layer's. The trace
    needs their shapes only: each is a constant of its own value, since the
    exporter merges equal constants into one (two gains of 1 would become
    one weight of every layer)."""

    def __init__(self, lw: LMLayer, cfg):
        super().__init__()
        self.cfg = cfg
        for k, name in enumerate((*GGUF_NAMES, *GAINS)):
            self.register_buffer(f"l0_{name}", torch.full_like(_weight(lw, name), 1.0 + k / 16))

    def forward(self, x, m):
        def get(n):
            return getattr(self, f"l0_{n}")
        lw = LMLayer(MHAWeights(*(get(n) for n in ATTENTION)),
                     get("g_1"), get("g_2"), get("W_gate"), get("W_up"), get("W_down"))
        mask, rotate = _mask_and_rotate(x.shape[1], self.cfg)
        y, A, _ = _block_core(x, lw, self.cfg, mask, rotate, m)  # (1, L, d), (1, h, L, L)
        return y, A


class TailGraph(nn.Module):
    """What is exported after the last block: ``(x (1, L, d_model),
    input_ids (1, L))`` -> ``loss (L - 1,)``, :func:`~.model._logits_core`
    and the next-token cross-entropy at every position but the last. Its
    buffers are ``E`` and ``g_f``; the exporter folds ``E^T`` into a
    (d_model, vocab) constant, which :func:`_to_4bit` recognises."""

    def __init__(self, lm: CausalLM):
        super().__init__()
        self.cfg = lm.cfg
        self.register_buffer("E", lm.w.E)
        self.register_buffer("g_f", lm.w.g_f)

    def forward(self, x, input_ids):
        logits = _logits_core(x, LMWeights(self.E, [], self.g_f), self.cfg)  # (1, L, V)
        return _next_token_loss_core(logits, input_ids)


def _weight(lw: LMLayer, name: str) -> torch.Tensor:
    """The weight of one block named as in :data:`GGUF_NAMES` or :data:`GAINS`."""
    return getattr(lw.attn if name in ATTENTION else lw, name)


def _next_token_loss_core(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``-log softmax(logits[0, i])[ids[0, i + 1]]`` for i < L - 1, no checks.
    Shapes: (1, L, V), (1, L) -> (L - 1,)."""
    logp = torch.log_softmax(logits[0, :-1], dim=-1)  # (L - 1, V)
    return -logp.gather(1, ids[0, 1:, None])[:, 0]  # (L - 1,)


def _gguf_name(buffer: str) -> str | None:
    """The GGUF tensor of a stitched graph's matrix (:func:`_stitch`)
    (``l3_W_up`` -> ``blk.3.ffn_up.weight``, ``E`` -> ``token_embd.weight``);
    ``None`` for the gains."""
    if buffer == "E":
        return "token_embd.weight"
    if buffer.startswith("l") and "_" in buffer:
        layer, name = buffer[1:].split("_", 1)
        if name in GGUF_NAMES and layer.isdigit():
            return f"blk.{layer}.{GGUF_NAMES[name]}.weight"
    return None


# ------------------------------------------------------- the 4-bit blocks

def _q4_1_blocks(raw: np.ndarray, n: int, k: int):
    """A Q4_1 tensor's bytes ``(n, k / 32 * 20)`` as ``MatMulNBits``'s
    ``(B (n, k / 32, 16) uint8, d (n * k / 32,) float16, m (same))``:
    each GGUF block is ``d, m, 16 bytes`` with weight j in the low nibble of
    byte j and weight j + 16 in its high nibble; ``MatMulNBits`` wants
    weights 2i and 2i + 1 in byte i (low nibble first)."""
    b = np.ascontiguousarray(raw).reshape(n, k // BLOCK, 20)
    d = b[..., 0:2].copy().view(np.float16).reshape(-1)
    m = b[..., 2:4].copy().view(np.float16).reshape(-1)
    qs = b[..., 4:]  # (n, nb, 16)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (n, nb, 32): weight order
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # (n, nb, 16)
    if not np.all(d != 0):
        raise InputError("a Q4_1 block has scale 0: its float zero point -m/d is "
                         "undefined; this is not the file the course was built for.")
    return packed, d, m


def _q8_0_blocks(raw: np.ndarray, n: int, k: int):
    """A Q8_0 tensor's bytes ``(n, k / 32 * 34)`` as ``(q + 128 (n, k / 32,
    32) uint8, d (n * k / 32,) float16)``: each block is ``d, 32 int8``."""
    b = np.ascontiguousarray(raw).reshape(n, k // BLOCK, 34)
    d = b[..., 0:2].copy().view(np.float16).reshape(-1)
    q = b[..., 2:].copy().view(np.int8).astype(np.int16) + 128  # (n, nb, 32)
    return q.astype(np.uint8), d


def _to_4bit(model, reader, cfg) -> None:
    """Replace, in the ONNX ``model`` (in place) that :func:`_export_float`
    made, every float matrix of the file by its GGUF blocks (``reader``: a
    ``gguf.GGUFReader`` of the same file): each ``MatMul`` by a float
    weight becomes ``MatMulNBits`` (4-bit, or 8-bit for the unembedding),
    and ``Gather(E, ids)`` gathers the embedding's 8-bit rows and scales
    them. Refuses a graph in which a matrix is left in float."""
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    raw = {t.name: t for t in reader.tensors}
    inits = {i.name: i for i in g.initializer}
    nodes, new_inits, used = [], [], set()
    d, V = cfg.d_model, cfg.vocab

    def init(name, array):
        new_inits.append(numpy_helper.from_array(array, name))
        return name

    def f32(name_16, array16):  # float16 stored, float32 computed (exact)
        init(name_16, array16)
        nodes.append(helper.make_node("Cast", [name_16], [name_16 + "_f32"],
                                      to=TensorProto.FLOAT))
        return name_16 + "_f32"

    q8, e_d = _q8_0_blocks(raw["token_embd.weight"].data, V, d)
    init("E_q8", q8)  # (V, d / 32, 32) uint8: q + 128
    e_scale = f32("E_d16", e_d.reshape(V, d // BLOCK))  # (V, d / 32)
    for node in g.node:
        B = node.input[1] if len(node.input) > 1 else None
        if node.op_type == "Gather" and node.input[0] == "E":
            rows, scale, out = node.output[0] + "_q", node.output[0] + "_d", node.output[0]
            nodes += [
                helper.make_node("Gather", ["E_q8", node.input[1]], [rows], axis=0),
                helper.make_node("Cast", [rows], [rows + "_f"], to=TensorProto.FLOAT),
                helper.make_node("Sub", [rows + "_f", init(out + "_128", np.float32(128))],
                                 [rows + "_c"]),
                helper.make_node("Gather", [e_scale, node.input[1]], [scale], axis=0),
                helper.make_node("Unsqueeze", [scale, init(out + "_ax", np.array([-1]))],
                                 [scale + "_u"]),
                helper.make_node("Mul", [rows + "_c", scale + "_u"], [rows + "_w"]),
                helper.make_node("Reshape", [rows + "_w", init(out + "_shape", np.array(
                    [0, 0, d]))], [out])]
            used.add("E")
            continue
        if node.op_type != "MatMul" or B not in inits:
            nodes.append(node)
            continue
        K, N = inits[B].dims
        name = _gguf_name(B) or ("token_embd.weight" if (K, N) == (d, V) else None)
        if name is None:
            raise InputError(f"MatMul by {B} {K}x{N} is no matrix of the GGUF file.")
        if name == "token_embd.weight":  # the tied unembedding: 8 bits, zero point 128
            nodes += _unembed(node, "E_q8", e_scale, K, N, init)
        else:
            packed, dq, mq = _q4_1_blocks(raw[name].data, N, K)
            base = B + "_q4"
            scale, mm = f32(base + "_d16", dq), f32(base + "_m16", mq)
            nodes += [helper.make_node("Div", [mm, scale], [base + "_md"]),
                      helper.make_node("Neg", [base + "_md"], [base + "_zp"]),
                      helper.make_node("MatMulNBits", [node.input[0], init(base, packed),
                                                       scale, base + "_zp"],
                                       list(node.output), domain="com.microsoft", K=K,
                                       N=N, bits=4, block_size=BLOCK)]
        used.add(B)
    left = [i.name for i in g.initializer if i.name not in used and len(i.dims) == 2]
    if left:
        raise InputError(f"matrices left in float32 in the graph: {left[:5]}")
    keep = [i for i in g.initializer if i.name not in used]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    del g.node[:]
    g.node.extend(nodes)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _unembed(node, table: str, scale: str, K: int, N: int, init) -> list:
    """The logits ``x @ E^T`` as :data:`UNEMBED_CHUNKS` 8-bit ``MatMulNBits``
    over slices of the vocabulary, concatenated: onnxruntime-web's kernel
    widens its ``B`` to float32 while it multiplies, and the whole table
    would take 113 MB of the page's memory for the run; a slice takes an
    eighth. ``table`` (V, d / 32, 32) uint8 and ``scale`` (V, d / 32)."""
    from onnx import helper

    rows, nodes, outs = N // UNEMBED_CHUNKS, [], []
    assert rows * UNEMBED_CHUNKS == N, f"vocabulary {N} not in {UNEMBED_CHUNKS} equal slices"
    flat = init("E_flat", np.array([-1]))
    nodes.append(helper.make_node("Reshape", [scale, flat], [f"{scale}_flat"]))
    per_row = K // BLOCK  # scales a row
    for c in range(UNEMBED_CHUNKS):
        a, b = c * rows, (c + 1) * rows
        q, s, out = f"{table}_{c}", f"{scale}_{c}", f"{node.output[0]}_{c}"
        nodes += [
            helper.make_node("Slice", [table, init(f"{q}_a", np.array([a])),
                                       init(f"{q}_b", np.array([b]))], [q]),
            helper.make_node("Slice", [f"{scale}_flat", init(f"{s}_a", np.array([a * per_row])),
                                       init(f"{s}_b", np.array([b * per_row]))], [s]),
            helper.make_node("MatMulNBits", [node.input[0], q, s], [out], domain="com.microsoft",
                             K=K, N=rows, bits=8, block_size=BLOCK)]
        outs.append(out)
    nodes.append(helper.make_node("Concat", outs, list(node.output), axis=-1))
    return nodes


# ------------------------------------------------------------------ export

def _export_part(module: nn.Module, args: tuple, inputs: list, outputs: list):
    """``torch.onnx.export`` of ``module`` on ``args``, as an ONNX model in
    memory (the TorchScript exporter, every size fixed: the exporter folds
    all shape arithmetic; the dynamo exporter took minutes over the 30
    blocks on one core, and a dynamic L left thousands of shape nodes that
    made onnxruntime take tens of seconds to load the graph)."""
    import io
    import warnings

    import onnx

    f = io.BytesIO()
    with warnings.catch_warnings():  # the exporter's deprecation and tracer notes
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args, f, dynamo=False, opset_version=18,
                          input_names=inputs, output_names=outputs, do_constant_folding=True)
    return onnx.load_from_string(f.getvalue())


def _export_float(lm: CausalLM):
    """SmolLM2's whole graph with float32 weights, for :data:`MAX_WEB_LEN`
    tokens (a sentence is padded to it: the model is causal, so the padding
    changes no weight of the sentence's rows and no loss of its positions;
    the page keeps the first L rows and columns and L - 1 losses).

    The 30 blocks are one computation with different weights, so one block
    is traced (:class:`BlockGraph`, about 100 nodes) and :func:`_stitch`
    repeats it, with each layer's weights, between the embedding and
    :class:`TailGraph` (the whole export took 9 s instead of 34 s on one
    core, the graph's outputs the same to the bit)."""
    cfg, L = lm.cfg, MAX_WEB_LEN
    x = torch.zeros(1, L, cfg.d_model)  # (1, L, d_model)
    block = _export_part(BlockGraph(lm.w.layers[0], cfg), (x, torch.ones(cfg.h)),
                         ["x", "m"], ["y", "A"])
    tail = _export_part(TailGraph(lm), (x, torch.zeros(1, L, dtype=torch.long)),
                        ["x", "input_ids"], ["loss"])
    return _stitch(block, tail, lm)


def _stitch(block, tail, lm: CausalLM):
    """One ONNX model ``(input_ids (1, L), head_mask (n_layers, h))`` ->
    ``(loss, attn_1, ..., attn_n)``: ``x_0 = Gather(E, input_ids)``; for
    each layer ``i`` the ``block``'s nodes, reading ``x_i`` and row ``i`` of
    ``head_mask``, writing ``x_{i+1}`` and ``attn_{i+1}``, its weights
    ``l<i>_<name>`` (layer ``i``'s, float32) and its other constants shared;
    then the ``tail``'s nodes on ``x_n``."""
    from onnx import TensorProto, helper, numpy_helper

    cfg, n = lm.cfg, lm.cfg.n_layers
    for part in (block, tail):
        sub = [nd.op_type for nd in part.graph.node
               if any(a.type in (a.GRAPH, a.GRAPHS) for a in nd.attribute)]
        assert not sub, f"a part of SmolLM2's graph has subgraphs ({sub}): not stitched"
    own = {i.name: i for i in block.graph.initializer if i.name.startswith("l0_")}
    assert set(own) == {f"l0_{k}" for k in (*GGUF_NAMES, *GAINS)}, \
        f"the block's weights are {sorted(own)}: one a name of GGUF_NAMES and GAINS"
    inits = [numpy_helper.from_array(lm.w.E.numpy(), "E")]
    inits += [helper.make_tensor(f"layer_{i}", TensorProto.INT64, [], [i]) for i in range(n)]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["x_0"], axis=0)]

    def copy(part, prefix, names):
        for i in part.graph.initializer:
            if i.name not in own and i.name not in names:
                t = type(i)()
                t.CopyFrom(i)
                t.name = f"{prefix}/{i.name}"
                inits.append(t)
                names[i.name] = t.name
        for nd in part.graph.node:
            out = type(nd)()
            out.CopyFrom(nd)
            out.name = f"{prefix}{nd.name}"
            out.input[:] = [names.get(v, f"{prefix}{v}" if v else v) for v in nd.input]
            out.output[:] = [names.get(v, f"{prefix}{v}") for v in nd.output]
            nodes.append(out)

    consts = [i.name for i in block.graph.initializer if i.name not in own]
    shared: dict[str, str] = {}  # the block's constants: one copy for every layer
    for i, lw in enumerate(lm.w.layers):
        nodes.append(helper.make_node("Gather", ["head_mask", f"layer_{i}"], [f"m_{i}"],
                                      axis=0))  # (h,)
        names = {"x": f"x_{i}", "m": f"m_{i}", "y": f"x_{i + 1}", "A": f"attn_{i + 1}",
                 **shared, **{k: f"l{i}_{k[3:]}" for k in own}}
        copy(block, f"b{i}", names)
        shared = {c: names[c] for c in consts}
        for k in own:
            name = k[3:]
            w = _weight(lw, name).detach().numpy()
            assert list(w.shape) == list(own[k].dims), f"layer {i}'s {name} is {w.shape}"
            inits.append(numpy_helper.from_array(w, f"l{i}_{name}"))
    copy(tail, "tail", {"x": f"x_{n}", "input_ids": "input_ids", "loss": "loss"})
    L = MAX_WEB_LEN
    graph = helper.make_graph(
        nodes, "smollm2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, L]),
         helper.make_tensor_value_info("head_mask", TensorProto.FLOAT, [n, cfg.h])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [L - 1])]
        + [helper.make_tensor_value_info(f"attn_{i + 1}", TensorProto.FLOAT, [1, cfg.h, L, L])
           for i in range(n)], inits)
    model = helper.make_model(graph, opset_imports=list(block.opset_import),
                              producer_name="mhacourse.real_lm.web")
    model.ir_version = block.ir_version  # the exporter's, not the onnx package's newest
    return model


def _share_constants(model) -> None:
    """Keep one of each set of equal ``Constant`` tensors (in place): the
    tracer writes each block's causal mask and rotary tables again, 30
    copies of about 213 kB, which the page would download."""
    first: dict[bytes, str] = {}
    rename: dict[str, str] = {}
    keep = []
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            key = node.attribute[0].t.SerializeToString()
            if key in first:
                rename[node.output[0]] = first[key]
                continue
            first[key] = node.output[0]
        keep.append(node)
    for node in keep:
        node.input[:] = [rename.get(i, i) for i in node.input]
    del model.graph.node[:]
    model.graph.node.extend(keep)


def _export(path, lm: CausalLM | None = None, gguf_file=None) -> Path:
    """Write SmolLM2's graph with its 4-bit matrices (:func:`_export_float`,
    :func:`_to_4bit`) to ``path``, and its weights to :data:`DATA_NAME` in
    the same folder."""
    import gguf

    from .files import model_file
    from .model import load_smollm2

    path = check_path("path", path)
    lm = load_smollm2() if lm is None else lm
    reader = gguf.GGUFReader(model_file() if gguf_file is None else gguf_file)
    model = _export_float(lm)
    _to_4bit(model, reader, lm.cfg)
    _share_constants(model)
    model.ir_version = min(model.ir_version, 10)  # onnxruntime 1.30 reads up to 10
    _save(model, path)
    return path


def _save(model, path: Path) -> None:
    """``model`` to ``path``, its tensors over 1 kB in :data:`DATA_NAME` beside
    it. onnx appends to a data file that is there already (a second export
    into the same folder doubled it, the first copy unread), so it goes first."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / DATA_NAME).unlink(missing_ok=True)
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location=DATA_NAME, size_threshold=1024)
    (path.parent / DATA_NAME).chmod(0o644)  # onnx writes it readable by its owner only


# -------------------------------------------------------- the page's data

#: The example sentences the page shows before (or without) the live model,
#: each as typed and with its tokens repeated.
EXAMPLES = ("The cat sat on the mat because it was soft.",
            "The animal didn't cross the street because it was too tired.")
N_INDUCTION = 5  # the strongest induction heads the page offers to switch off
#: The tab's memory the page says the model needs (measured in Chromium by
#: benchmarks/bench_explorer_smollm2.py: the explorer's tab peaked at 766 MB
#: while loading it, and held 520 after); below twice this, it does not load.
MEMORY_MB = 800
#: What the export depends on, besides the GGUF file and the libraries:
#: the package's files that _forward_core and the views run.
SOURCES = ("real_lm", "multihead.py", "heads.py", "masks.py", "positions.py",
           "attention.py", "_validate.py", "block.py", "circuits", "tasks.py")
LIBRARIES = ("torch", "onnx", "onnxscript", "numpy", "tokenizers", "gguf")
KEEP = 2  # exports kept in the cache


def _quantize8(weights: torch.Tensor) -> str:
    """Attention weights in [0, 1] as base64 of ``round(255 w)`` (uint8):
    one byte a weight, error at most 1/510, for the pictures only (the page
    decodes ``q / 255``)."""
    w = weights.detach().float().clamp(0, 1).numpy()
    return base64.b64encode(np.round(w * 255).astype(np.uint8).tobytes()).decode("ascii")


def _views(lm: CausalLM, sentences=EXAMPLES) -> list[dict]:
    """Each sentence as typed and repeated: ``{"sentence", "repeat", "ids",
    "tokens", "loss" (L - 1 next-token losses), "attn" (one
    :func:`_quantize8` (h, L, L) a layer)}``, from ``lm.forward``."""
    out = []
    for s in sentences:
        ids = lm.encode(s)  # (1, n)
        for repeat in (False, True):
            x = torch.cat([ids, ids], dim=1) if repeat else ids  # (1, L)
            logits, attention = lm.forward(x)
            loss = _next_token_loss_core(logits, x)  # (L - 1,)
            out.append({"sentence": s, "repeat": repeat, "ids": x[0].tolist(),
                        "tokens": lm.decode(x[0]),
                        "loss": [round(float(v), 4) for v in loss],
                        "attn": [_quantize8(A[0]) for A in attention]})
    return out


def _induction_heads(lm: CausalLM, k: int = N_INDUCTION) -> list[str]:
    """The ``k`` heads with the highest induction score (chapter 17's
    detector, :func:`~.induction.head_scores`, averaged over 4 sequences
    of 30 random tokens repeated), as ``"layer.head"`` counted from 1."""
    from .induction import head_scores, repeated_tokens, top_heads

    scores = head_scores(lm, repeated_tokens(lm, n=4, half=30, seed=0)).mean(0)[..., 1]
    return [f"{layer + 1}.{head + 1}" for layer, head in top_heads(scores, k)]


def _cache_key(gguf_file: Path) -> str:
    """SHA-256 of what the export reads: the GGUF file, the package's files
    of :data:`SOURCES`, Python's version and :data:`LIBRARIES`' versions."""
    from .files import _digest

    h = hashlib.sha256(_digest(gguf_file).encode())
    package = Path(__file__).resolve().parents[1]
    for name in SOURCES:
        base = package / name
        for f in sorted(base.rglob("*.py")) if base.is_dir() else [base]:
            h.update(f"{f.relative_to(package)}\0".encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    versions = [platform.python_version()]
    versions += [f"{d}=={importlib.metadata.version(d)}" for d in LIBRARIES]
    h.update("\0".join(versions).encode())
    return h.hexdigest()[:32]


def _write(out: Path, log=print) -> dict:
    """Write into ``out`` the page's SmolLM2 files: ``smollm2.onnx``
    (:func:`_export`), ``tokenizer.json`` and its config, and
    ``precomputed.js`` (``window.mhaSmolLM2 = {manifest, views}``). Returns
    the manifest."""
    from .files import model_file
    from .model import load_smollm2

    out.mkdir(parents=True, exist_ok=True)
    lm = load_smollm2()
    t = time.perf_counter()
    path = _export(out / "smollm2.onnx", lm)
    seconds = time.perf_counter() - t
    (out / "tokenizer.json").write_text(lm.tokenizer.to_str())
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": MAX_WEB_LEN, "clean_up_tokenization_spaces": False}))
    heads = _induction_heads(lm)
    best = int(heads[0].split(".")[0])
    graph_bytes, data_bytes = path.stat().st_size, (out / DATA_NAME).stat().st_size
    manifest = {"file": path.name, "graph_bytes": graph_bytes, "data": DATA_NAME,
                "data_bytes": data_bytes, "bytes": graph_bytes + data_bytes,
                "layers": lm.cfg.n_layers,
                "h": lm.cfg.h, "h_kv": lm.cfg.h_kv, "max_len": MAX_WEB_LEN, "pad": 0,
                "tokenizer": "tokenizer.json", "tokenizer_config": "tokenizer_config.json",
                "weights": "4-bit (Q4_1 blocks; embedding 8-bit Q8_0), onnxruntime MatMulNBits",
                "memory_mb": MEMORY_MB, "induction_heads": heads, "show_layer": best,
                "source": model_file().name, "export_seconds": round(seconds, 1)}
    data = {"manifest": manifest, "views": _views(lm)}
    (out / "precomputed.js").write_text(
        "// Written by mhacourse.real_lm.web: SmolLM2's manifest and example views.\n"
        f"window.mhaSmolLM2 = {json.dumps(data, separators=(',', ':'))};\n")
    log(f"SmolLM2 for the page: {manifest['bytes'] / 1e6:.1f} MB graph exported in "
        f"{seconds:.0f} s; induction heads {', '.join(heads)}")
    return manifest


def check_build(out, log) -> Path:
    """``out`` a folder path; ``log`` a function that takes a line."""
    out = check_path("out", out)
    if not callable(log):
        raise InputTypeError(f"log must be a function that takes a line of text "
                             f"(print, or lambda line: None); got {describe(log)}.")
    return out


def build(out, log=print) -> dict:
    """:func:`_write` into ``out``, or copy from the cache the files of an
    earlier build with the same :func:`_cache_key` (the model file, the
    package's sources and the libraries unchanged). Returns the manifest."""
    from .files import model_file, user_cache_root

    out = check_build(out, log)
    key, root = _cache_key(model_file()), user_cache_root() / "smollm2-web"
    entry = root / key
    if not (entry / "precomputed.js").is_file():
        tmp = root / f".new-{key}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        _write(tmp, log)
        try:
            os.replace(tmp, entry)  # whole, or not at all
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        olds = sorted((p for p in root.iterdir() if not p.name.startswith(".")),
                      key=lambda p: p.stat().st_mtime, reverse=True)
        for old in olds[KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
    else:
        log(f"SmolLM2 for the page: copied from the cache ({entry})")
    shutil.copytree(entry, out, dirs_exist_ok=True)
    os.utime(entry)
    text = (out / "precomputed.js").read_text()
    return json.loads(text[text.index("=") + 1:].strip().rstrip(";"))["manifest"]
