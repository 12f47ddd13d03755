"""Bad inputs to the sequence modules (chapters 13-16's ``batching``,
``positions``, ``decoder``, ``kv_cache``) and the models' (``tiny_model``
(config, model, files, analysis, training), ``web_export``'s loader,
``tasks``); and the plain raises of ``head_analysis`` and ``plotting``.

Each row must raise the package's own error (the InputError family) from
the package's code, in one line that names the argument; a good call of the
same group must work right after. ``test_newer_table_size`` counts the rows
(at least 250).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import struct
import tempfile
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from bad_input_checks import assert_the_packages_error  # noqa: E402

import mhacourse as mc  # noqa: E402
from mhacourse import batching, decoder, head_analysis, kv_cache, positions, tasks  # noqa: E402
from mhacourse import tiny_model as tm  # noqa: E402
from mhacourse import web_export as wx  # noqa: E402
from mhacourse._validate import InputError, InputFileError, InputTypeError  # noqa: E402
from mhacourse.plotting import (  # noqa: E402
    attention_heatmap,
    block_diagram,
    figure_png,
    figure_text,
    head_blocks,
    head_class_grid,
    head_split_figure,
    head_value_grid,
    heads_grid,
    kv_sharing_diagram,
    png_html,
    ratio_bars,
    top_attended,
)
from mhacourse.tiny_model.files import _digest  # noqa: E402

G = torch.Generator().manual_seed(23)
NAN, INF = float("nan"), float("inf")


def on_new_axes(draw):
    """``draw(ax)`` as a call of no arguments, on a figure closed afterwards."""
    def call():
        fig, ax = plt.subplots()
        try:
            return draw(ax)
        finally:
            plt.close(fig)
    return call


def t(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=G).to(dtype)


def with_value(x, index, value):
    y = x.clone()
    y[index] = value
    return y


SEQ_A, SEQ_B = t(3, 4), t(2, 4)
A_W = torch.softmax(t(2, 3, 3), -1)  # attention weights (B, L, S)
QKV = t(1, 2, 3, 4)  # (B, h, L, d_k)
Y, MEM = t(2, 3, 8), t(2, 5, 8)  # (B, L, d_model), (B, S, d_model)
W8 = mc.random_weights(8, 2)
CFG = tm.TinyConfig(h=2, d_k=4)
TINY = tm.TinyTransformer(CFG, seed=0).eval()
LM = kv_cache.random_causal_lm(vocab=11, d_model=8, h=4, h_kv=2, n_layers=2, max_len=6)
IDS = torch.tensor([[1, 2, 3]])
DATA = tasks.sample(8, seed=0)


@functools.cache
def dec_weights():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return decoder.decoder_weights_from_torch(layer.eval())


@functools.cache
def bert_model():
    return mc.load_model()


@functools.cache
def files() -> dict:
    """Model files, good and broken, in a temporary folder."""
    from safetensors.torch import load_file, save_file

    d = Path(tempfile.mkdtemp(prefix="mhacourse_bad_files_"))
    good = tm.save(TINY, d / "good.safetensors")
    init = tm.save(TINY, d / "init.safetensors", init_seed=0)
    meta = {"config": json.dumps(dataclasses.asdict(CFG)), "extra": "{}"}
    tensors = load_file(str(good))
    out = {"dir": d, "good": good, "init": init, "missing": d / "nowhere.safetensors"}
    (d / "empty.safetensors").write_bytes(b"")
    out["empty"] = d / "empty.safetensors"
    raw = good.read_bytes()
    (d / "truncated.safetensors").write_bytes(raw[: len(raw) // 2])
    out["truncated"] = d / "truncated.safetensors"
    (d / "garbage.safetensors").write_bytes(b"this is not a model file at all" * 10)
    out["garbage"] = d / "garbage.safetensors"
    (d / "header.safetensors").write_bytes(struct.pack("<Q", 10**12) + b"{}")
    out["header"] = d / "header.safetensors"

    def write(name, tensors_, meta_):
        if meta_ is not None:  # a true digest: the file reaches the check after it
            meta_ = {**meta_, "digest": _digest(meta_, tensors_)}
        save_file(tensors_, str(d / name), metadata=meta_)
        out[name.split(".")[0]] = d / name

    write("nometa.safetensors", tensors, None)
    write("badjson.safetensors", tensors, {**meta, "config": "{h: 2"})
    write("impossible.safetensors", tensors,
          {**meta, "config": json.dumps({**dataclasses.asdict(CFG), "h": 0})})
    write("unknownkey.safetensors", tensors,
          {**meta, "config": json.dumps({**dataclasses.asdict(CFG), "heads": 2})})
    write("mismatch.safetensors", tensors,
          {**meta, "config": json.dumps({**dataclasses.asdict(CFG), "d_k": 8})})
    write("morelayers.safetensors", tensors,
          {**meta, "config": json.dumps({**dataclasses.asdict(CFG), "n_layers": 3})})
    write("integer.safetensors", {k: v.to(torch.int32) for k, v in tensors.items()}, meta)
    write("nan.safetensors", {k: v.float().fill_(NAN) if k == "W_E" else v
                              for k, v in tensors.items()}, meta)
    write("lacking.safetensors", {k: v for k, v in tensors.items() if k != "W_U"}, meta)
    write("badextra.safetensors", tensors, {**meta, "extra": "[1, 2"})
    write("badseed.safetensors", {}, {**meta, "init_seed": "five", "fingerprint": "x"})
    write("wrongprint.safetensors", {}, {**meta, "init_seed": "0", "fingerprint": "0" * 64})
    return out


def new_cache(B=1, h_kv=2, d_k=2, max_len=6, dtype=torch.float32):
    return kv_cache.KVCache(B, h_kv, d_k, max_len, dtype)


def kv(n=1, B=1, h_kv=2, d_k=2, dtype=torch.float32):
    return t(B, h_kv, n, d_k, dtype=dtype)


def lm_with(**changes):
    return dataclasses.replace(LM, **changes)


def layers_with(**changes):
    return [dict(LM.layers[0], **changes)] + LM.layers[1:]


def _rows():
    """(group, id, call, error class, words the message must hold)."""
    E, T, Fe = InputError, InputTypeError, InputFileError
    R = []

    def add(group, ident, call, err, arg):
        R.append(pytest.param(group, call, err, arg, id=f"{group}-{ident}"))

    # ---- batching: pad_batch
    pad = batching.pad_batch
    for name, bad, err, arg in [
        ("None", None, T, "sequences"), ("str", "abc", T, "sequences"),
        ("int", 3, T, "sequences"), ("tensor-3d", t(2, 3, 4), T, "sequences"),
        ("empty", [], E, "at least one sequence"),
        ("item-None", [None], T, "sequences[0]"),
        ("item-list", [[[1.0, 2.0]]], T, "sequences[0]"),
        ("item-numpy", [np.zeros((2, 4))], T, "sequences[0]"),
        ("first-int", [torch.arange(8).reshape(2, 4), SEQ_A], E, "sequences[0]"),
        ("second-int", [SEQ_A, torch.ones(2, 4, dtype=torch.long)], E, "sequences[1]"),
        ("bool", [SEQ_A > 0], E, "sequences[0]"),
        ("complex", [SEQ_A.to(torch.complex64)], E, "sequences[0]"),
        ("1d", [t(4)], E, "sequences[0]"),
        ("3d-item", [t(1, 2, 4)], E, "sequences[0]"),
        ("no-tokens", [SEQ_A, t(0, 4)], E, "at least one token"),
        ("widths", [SEQ_A, t(2, 5)], E, "same width"),
        ("dtype-mix", [SEQ_A, SEQ_B.double()], E, "sequences[1] float64"),
        ("nan", [SEQ_A, with_value(SEQ_B, (1, 2), NAN)], E, "sequences[1] holds 1 NaN"),
        ("inf", [with_value(SEQ_A, (0, 0), INF), SEQ_B], E, "sequences[0] holds"),
    ]:
        add("batching", f"pad-{name}", lambda b=bad: pad(b), err, arg)
    for name, bad, err in [("str", "0", T), ("None", None, T), ("nan", NAN, E),
                           ("inf", -INF, E), ("bool", True, T),
                           ("tensor", torch.tensor(0.0), T), ("list", [0.0], T),
                           ("huge-int", 2**70, E), ("past-float32", 1e300, E)]:
        add("batching", f"pad_value-{name}", lambda b=bad: pad([SEQ_A, SEQ_B], b),
            err, "pad_value")
    add("batching", "pad-allow-str", lambda: pad([SEQ_A], allow_nonfinite="yes"), T,
        "allow_nonfinite")
    # batch_mask
    bm = batching.batch_mask
    for name, lengths, L, causal, err, arg in [
        ("length-0", [0, 2], 3, False, E, "length"),
        ("length-past-L", [5, 2], 3, False, E, "length"),
        ("lengths-str", ["a"], 3, False, T, "length"),
        ("L-0", [1], 0, False, E, "L"), ("L-float", [1], 2.5, False, T, "L"),
        ("L-str", [1], "3", False, T, "L"),
        ("causal-str", [1, 2], 3, "yes", T, "causal"),
        ("causal-int", [1, 2], 3, 1, T, "causal"),
        ("causal-None", [1, 2], 3, None, T, "causal"),
    ]:
        add("batching", f"batch_mask-{name}",
            lambda a=lengths, b=L, c=causal: bm(a, b, c), err, arg)
    # attention_dropout
    drop = batching.attention_dropout
    for name, bad, err in [("None", None, T), ("list", [[0.5, 0.5]], T),
                           ("int", torch.ones(2, 2, dtype=torch.long), E),
                           ("1d", torch.ones(3) / 3, E),
                           ("nan", with_value(A_W, (0, 1, 1), NAN), E),
                           ("inf", with_value(A_W, (1, 0, 2), INF), E)]:
        add("batching", f"dropout-weights-{name}", lambda b=bad: drop(b, 0.1), err,
            "weights")
    for name, bad, err in [("one", 1.0, E), ("negative", -0.1, E), ("nan", NAN, E),
                           ("inf", INF, E), ("str", "0.1", T), ("None", None, T),
                           ("bool", True, T), ("tensor", torch.tensor(0.1), T),
                           ("two", 2, E)]:
        if name == "two":
            add("batching", "dropout-p-overflows-float16",
                lambda: drop(A_W.half(), 0.99999), E, "dropout probability p")
            add("batching", "with_dropout-p-overflows-float16",
                lambda: awd(QKV.half(), QKV.half(), QKV.half(), p=0.99999), E,
                "dropout probability p")
        add("batching", f"dropout-p-{name}", lambda b=bad: drop(A_W, b), err,
            "dropout probability p")
    for name, bad in [("str", "yes"), ("None", None), ("int", 1)]:
        add("batching", f"dropout-training-{name}",
            lambda b=bad: drop(A_W, 0.1, training=b), T, "training")
    for name, bad in [("int", 1), ("str", "g")]:
        add("batching", f"dropout-generator-{name}",
            lambda b=bad: drop(A_W, 0.1, generator=b), T, "generator")
    awd = batching.attention_with_dropout
    for name, kw, err, arg in [
        ("p-one", dict(p=1.0), E, "dropout probability p"),
        ("p-str", dict(p="0.5"), T, "dropout probability p"),
        ("training-None", dict(training=None), T, "training"),
        ("generator-int", dict(generator=0), T, "generator"),
        ("Q-int", dict(Q=QKV.long()), E, "Q"),
        ("Q-nan", dict(Q=with_value(QKV, (0, 0, 0, 0), NAN)), E, "Q"),
        ("mask-int", dict(mask=mc.causal_mask(3).long()), E, "mask"),
    ]:
        def call(kw=kw):
            args = dict(Q=QKV, K=QKV, V=QKV) | kw
            return awd(args.pop("Q"), args.pop("K"), args.pop("V"), **args)
        add("batching", f"with_dropout-{name}", call, err, arg)

    # ---- positions
    sin = positions.sinusoidal_positions
    for name, args, err, arg in [
        ("L-0", (0, 4), E, "L"), ("L-neg", (-1, 4), E, "L"), ("L-float", (2.0, 4), T, "L"),
        ("L-str", ("4", 4), T, "L"), ("L-None", (None, 4), T, "L"),
        ("L-bool", (True, 4), T, "L"), ("d-odd", (4, 5), E, "even"),
        ("d-0", (4, 0), E, "d_model"), ("d-float", (4, 3.5), T, "d_model"),
        ("huge", (10**8, 64), E, "L x d_model"),
    ]:
        add("positions", f"sin-{name}", lambda a=args: sin(*a), err, arg)
    for name, bad, err in [("0", 0, E), ("neg", -1.0, E), ("one", 1, E), ("half", 0.5, E),
                           ("nan", NAN, E), ("inf", INF, E), ("str", "1e4", T),
                           ("None", None, T)]:
        add("positions", f"sin-base-{name}", lambda b=bad: sin(4, 4, base=b), err, "base")
    for name, bad, err in [("long", torch.long, E), ("int32", torch.int32, E),
                           ("bool", torch.bool, E), ("complex", torch.complex64, E),
                           ("str", "float32", T), ("py-float", float, T),
                           ("numpy", np.float32, T)]:
        add("positions", f"sin-dtype-{name}", lambda b=bad: sin(4, 4, dtype=b), err,
            "dtype")
    ang = positions.rotary_angles
    for name, args, err, arg in [
        ("pos-list", ([0, 1], 4), T, "positions"), ("pos-None", (None, 4), T, "positions"),
        ("pos-2d", (torch.zeros(2, 2), 4), E, "positions"),
        ("pos-bool", (torch.ones(2, dtype=torch.bool), 4), E, "positions"),
        ("pos-nan", (torch.tensor([0.0, NAN]), 4), E, "positions"),
        ("d-odd", (torch.arange(2), 3), E, "d (head width)"),
        ("d-0", (torch.arange(2), 0), E, "d (head width)"),
        ("d-huge", (torch.arange(2), 2**70), E, "d (head width)"),
        ("size-huge", (torch.arange(10**6), 2**20), E, "too large"),
        ("base-0", (torch.arange(2), 4, 0), E, "base"),
    ]:
        add("positions", f"angles-{name}", lambda a=args: ang(*a), err, arg)
    rot = positions.rotary
    X4 = t(2, 3, 4)
    for name, args, kw, err, arg in [
        ("x-None", (None,), {}, T, "x"), ("x-list", ([[1.0, 2.0]],), {}, T, "x"),
        ("x-int", (torch.ones(3, 4, dtype=torch.long),), {}, E, "x"),
        ("x-1d", (t(4),), {}, E, "x"), ("x-no-tokens", (t(0, 4),), {}, E, "x"),
        ("x-odd", (t(3, 5),), {}, E, "even"),
        ("x-nan", (with_value(X4, (0, 1, 2), NAN),), {}, E, "x holds 1 NaN"),
        ("x-inf", (with_value(X4, (1, 1, 1), -INF),), {}, E, "x holds"),
        ("pos-list", (X4, [0, 1, 2]), {}, T, "positions"),
        ("pos-length", (X4, torch.arange(4)), {}, E, "positions must have shape"),
        ("pos-2d", (X4, torch.zeros(3, 1)), {}, E, "positions"),
        ("pos-bool", (X4, torch.zeros(3, dtype=torch.bool)), {}, E, "positions"),
        ("pos-complex", (X4, torch.zeros(3, dtype=torch.complex64)), {}, E, "positions"),
        ("pos-nan", (X4, torch.tensor([0.0, NAN, 2.0])), {}, E, "positions"),
        ("pos-inf", (X4, torch.tensor([0.0, 1.0, INF])), {}, E, "positions"),
        ("base-neg", (X4,), dict(base=-2.0), E, "base"),
        ("base-str", (X4,), dict(base="10000"), T, "base"),
        ("allow-str", (X4,), dict(allow_nonfinite="no"), T, "allow_nonfinite"),
    ]:
        add("positions", f"rotary-{name}", lambda a=args, k=kw: rot(*a, **k), err, arg)
    emb = positions.embed_with_positions
    ids = torch.tensor([[101, 1996, 4937, 102]])
    for name, args, kw, err, arg in [
        ("model-None", (ids, None), {}, T, "model"),
        ("model-str", (ids, "bert"), {}, T, "model"),
        ("ids-float", (ids.float(), "M"), {}, E, "input_ids"),
        ("ids-1d", (ids[0], "M"), {}, E, "input_ids"),
        ("ids-past-vocab", (ids + 10**6, "M"), {}, E, "input_ids"),
        ("ids-negative", (-ids, "M"), {}, E, "input_ids"),
        ("ids-list", (ids.tolist(), "M"), {}, T, "input_ids"),
        ("pos-float", (ids, "M"), dict(positions=torch.arange(4.0)), E, "positions"),
        ("pos-bool", (ids, "M"), dict(positions=torch.ones(4, dtype=torch.bool)), E,
         "positions"),
        ("pos-shape", (ids, "M"), dict(positions=torch.arange(5)), E, "positions"),
        ("pos-past-table", (ids, "M"), dict(positions=torch.arange(4) + 510), E,
         "0..511"),
        ("pos-negative", (ids, "M"), dict(positions=torch.arange(4) - 2), E, "positions"),
        ("pos-list", (ids, "M"), dict(positions=[0, 1, 2, 3]), T, "positions"),
        ("use-str", (ids, "M"), dict(use_positions="no"), T, "use_positions"),
        ("pos-unused", (ids, "M"), dict(positions=torch.arange(4), use_positions=False),
         E, "use_positions=False"),
    ]:
        def call(a=args, k=kw):
            a = tuple(bert_model() if v == "M" else v for v in a)
            return emb(*a, **k)
        add("positions", f"embed-{name}", call, err, arg)

    # ---- decoder
    ca = decoder.cross_attention
    for name, args, err, arg in [
        ("y-None", (None, MEM, W8, 2), T, "y"), ("y-list", (Y.tolist(), MEM, W8, 2), T, "y"),
        ("y-int", (Y.long(), MEM, W8, 2), E, "y"), ("y-1d", (t(8), MEM, W8, 2), E, "y"),
        ("memory-int", (Y, MEM.int(), W8, 2), E, "memory"),
        ("memory-width", (Y, t(2, 5, 6), W8, 2), E, "memory"),
        ("memory-batch", (Y, t(3, 5, 8), W8, 2), E, "memory"),
        ("memory-unbatched", (Y, t(5, 8), W8, 2), E, "memory"),
        ("memory-empty", (Y, t(2, 0, 8), W8, 2), E, "memory"),
        ("y-nan", (with_value(Y, (0, 0, 0), NAN), MEM, W8, 2), E, "y holds"),
        ("memory-inf", (Y, with_value(MEM, (1, 2, 3), INF), W8, 2), E, "memory holds"),
        ("dtype-mix", (Y, MEM.double(), W8, 2), E, "memory float64"),
        ("w-None", (Y, MEM, None, 2), T, "w"), ("w-dict", (Y, MEM, {}, 2), T, "w"),
        ("h-3", (Y, MEM, W8, 3), E, "h"), ("h-0", (Y, MEM, W8, 0), E, "h"),
        ("h-str", (Y, MEM, W8, "2"), T, "h"),
    ]:
        add("decoder", f"cross-{name}", lambda a=args: ca(*a), err, arg)
    dl = decoder.decoder_layer
    for name, args, kw, err, arg in [
        ("p-None", (Y, MEM, None, 2), {}, T, "p"), ("p-dict", (Y, MEM, {}, 2), {}, T, "p"),
        ("y-int", (Y.long(), MEM, "P", 2), {}, E, "y"),
        ("memory-width", (Y, t(2, 5, 4), "P", 2), {}, E, "memory"),
        ("y-nan", (with_value(Y, (1, 1, 1), NAN), MEM, "P", 2), {}, E, "y holds"),
        ("h-3", (Y, MEM, "P", 3), {}, E, "h"),
        ("return-str", (Y, MEM, "P", 2), dict(return_weights="yes"), T, "return_weights"),
        ("tgt_mask-int", (Y, MEM, "P", 2), dict(tgt_mask=mc.causal_mask(3).long()), E,
         "mask"),
        ("act", (Y, MEM, dict(activation="tanh"), 2), {}, E, "p.activation"),
        ("eps-0", (Y, MEM, dict(eps=0.0), 2), {}, E, "p.eps"),
        ("eps-nan", (Y, MEM, dict(eps=NAN), 2), {}, E, "p.eps"),
        ("gammas-2", (Y, MEM, "G2", 2), {}, E, "p.gammas"),
        ("gammas-shape", (Y, MEM, "G6", 2), {}, E, "p.gammas[0]"),
        ("W_1-rows", (Y, MEM, "W1", 2), {}, E, "p.W_1"),
        ("norm_first-str", (Y, MEM, dict(norm_first="yes"), 2), {}, T, "p.norm_first"),
        ("weights-f64", (Y, MEM, "F64", 2), {}, E, "W_1 float64"),
    ]:
        def call(a=args, k=kw):
            p = dec_weights()
            changes = {"G2": dict(gammas=p.gammas[:2]),
                       "G6": dict(gammas=(torch.ones(6),) + p.gammas[1:]),
                       "W1": dict(W_1=t(6, 16)),
                       "F64": dict(W_1=p.W_1.double())}
            q = a[2]
            if q == "P":
                q = p
            elif isinstance(q, str):
                q = dataclasses.replace(p, **changes[q])
            elif isinstance(q, dict) and q:
                q = dataclasses.replace(p, **q)
            return dl(a[0], a[1], q, a[3], **k)
        add("decoder", f"layer-{name}", call, err, arg)
    for name, fn, mask, arg in [
        ("cross-mkpm-float01", "cross", torch.ones(2, 5), "memory_key_padding_mask"),
        ("cross-mkpm-int", "cross", torch.zeros(2, 5, dtype=torch.long),
         "memory_key_padding_mask"),
        ("cross-mkpm-shape", "cross", torch.zeros(2, 4, dtype=torch.bool),
         "memory_key_padding_mask must have shape (B, S) = (2, 5)"),
        ("cross-mkpm-list", "cross", [[False] * 5] * 2, "memory_key_padding_mask"),
        ("layer-mkpm-shape", "layer", torch.zeros(5, dtype=torch.bool),
         "memory_key_padding_mask"),
        ("layer-tgt-shape", "tgt", mc.causal_mask(4), "tgt_mask must end in (L, L)"),
        ("layer-tgt-float01", "tgt", mc.causal_mask(3).float(), "tgt_mask"),
        ("layer-tgt-list", "tgt", [[True]], "tgt_mask"),
    ]:
        def call(fn=fn, m=mask):
            if fn == "cross":
                return ca(Y, MEM, W8, 2, m)
            if fn == "layer":
                return dl(Y, MEM, dec_weights(), 2, memory_key_padding_mask=m)
            return dl(Y, MEM, dec_weights(), 2, tgt_mask=m)
        add("decoder", name, call, T if name.endswith("list") else E, arg)
    dwt = decoder.decoder_weights_from_torch
    for name, make, err, arg in [
        ("None", lambda: None, T, "layer"), ("linear", lambda: nn.Linear(2, 2), T, "layer"),
        ("encoder", lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), T,
         "layer"),
        ("tanh", lambda: nn.TransformerDecoderLayer(8, 2, 16, activation=torch.tanh,
                                                    batch_first=True), E, "activation"),
        ("bias-False", lambda: nn.TransformerDecoderLayer(8, 2, 16, bias=False,
                                                          batch_first=True), E, "bias=False"),
        ("gelu-tanh", lambda: nn.TransformerDecoderLayer(
            8, 2, 16, activation=nn.GELU(approximate="tanh"), batch_first=True), E,
         "activation"),
    ]:
        add("decoder", f"from_torch-{name}", lambda m=make: dwt(m()), err, arg)

    # ---- kv_cache: KVCache, append, attention_step
    for name, args, err, arg in [
        ("B-0", (0, 2, 2, 4), E, "B"), ("h_kv-neg", (1, -1, 2, 4), E, "h_kv"),
        ("d_k-float", (1, 2, 2.5, 4), T, "d_k"), ("max_len-str", (1, 2, 2, "4"), T, "max_len"),
        ("dtype-long", (1, 2, 2, 4, torch.long), E, "dtype"),
        ("dtype-int32", (1, 2, 2, 4, torch.int32), E, "dtype"),
        ("dtype-str", (1, 2, 2, 4, "float"), T, "dtype"),
        ("dtype-None", (1, 2, 2, 4, None), T, "dtype"),
        ("huge", (64, 64, 128, 10**6), E, "max_len"),
    ]:
        add("kv_cache", f"KVCache-{name}", lambda a=args: kv_cache.KVCache(*a), err, arg)
    for name, K, V, kw, err, arg in [
        ("K-None", None, kv(), {}, T, "K_new"), ("K-list", [[0.0]], kv(), {}, T, "K_new"),
        ("K-int", kv().long(), kv(), {}, E, "K_new"), ("K-3d", t(2, 1, 2), kv(), {}, E, "K_new"),
        ("K-shape", kv(h_kv=3), kv(h_kv=3), {}, E, "must have shape"),
        ("V-shape", kv(), kv(d_k=3), {}, E, "V_new"),
        ("K-f64-cast", kv(dtype=torch.float64), kv(), {}, E, "K_new is float64"),
        ("V-f16-cast", kv(), kv(dtype=torch.float16), {}, E, "V_new is float16"),
        ("K-nan", with_value(kv(), (0, 1, 0, 1), NAN), kv(), {}, E, "K_new holds"),
        ("V-inf", kv(), with_value(kv(), (0, 0, 0, 0), INF), {}, E, "V_new holds"),
        ("too-many", kv(7), kv(7), {}, E, "at most max_len = 6"),
        ("allow-str", kv(), kv(), dict(allow_nonfinite="x"), T, "allow_nonfinite"),
    ]:
        add("kv_cache", f"append-{name}",
            lambda a=K, b=V, k=kw: new_cache().append(a, b, **k), err, arg)
    w = LM.attention_weights[0]  # d_model 8, h 4, h_kv 2, d_k 2
    xs = t(1, 2, 8)
    for name, args, err, arg in [
        ("x-None", (None, w, 4, 2, "C"), T, "x_new"),
        ("x-int", (xs.long(), w, 4, 2, "C"), E, "x_new"),
        ("x-2d", (t(2, 8), w, 4, 2, "C"), E, "x_new"),
        ("x-width", (t(1, 2, 6), w, 4, 2, "C"), E, "x_new"),
        ("x-empty", (t(1, 0, 8), w, 4, 2, "C"), E, "x_new"),
        ("x-nan", (with_value(xs, (0, 1, 3), NAN), w, 4, 2, "C"), E, "x_new holds"),
        ("x-f64", (xs.double(), w, 4, 2, new_cache(dtype=torch.float64)), E, "x_new"),
        ("w-None", (xs, None, 4, 2, "C"), T, "w"),
        ("cache-None", (xs, w, 4, 2, None), T, "cache"),
        ("cache-h_kv", (xs, w, 4, 2, new_cache(h_kv=1, d_k=2)), E, "cache"),
        ("cache-B", (xs, w, 4, 2, new_cache(B=2)), E, "cache"),
        ("cache-dtype", (xs, w, 4, 2, new_cache(dtype=torch.float64)), E, "cache"),
        ("h_kv-3", (xs, w, 4, 3, "C"), E, "h_kv"), ("h-0", (xs, w, 0, 2, "C"), E, "h"),
        ("cache-full", (t(1, 7, 8), w, 4, 2, "C"), E, "at most max_len = 6"),
    ]:
        add("kv_cache", f"step-{name}",
            lambda a=args: kv_cache.attention_step(
                *a[:4], new_cache() if isinstance(a[4], str) else a[4]), err, arg)
    # CausalLM made from bad parts
    for name, changes, err, arg in [
        ("E_tok-int", dict(E_tok=LM.E_tok.long()), E, "E_tok"),
        ("E_tok-nan", dict(E_tok=with_value(LM.E_tok, (3, 3), NAN)), E, "E_tok"),
        ("E_pos-width", dict(E_pos=t(6, 4)), E, "E_pos"),
        ("W_U-shape", dict(W_U=t(8, 5)), E, "W_U"),
        ("gamma_f", dict(gamma_f=torch.ones(7)), E, "gamma_f"),
        ("h-3", dict(h=3), E, "h"), ("h_kv-3", dict(h_kv=3), E, "h_kv"),
        ("h_kv-0", dict(h_kv=0), E, "h_kv"),
        ("activation", dict(activation="tanh"), E, "activation"),
        ("eps-0", dict(eps=0.0), E, "eps"), ("layers-empty", dict(layers=[]), E, "layers"),
        ("layers-missing", dict(layers=[{"W_Q": LM.layers[0]["W_Q"]}]), E, "layers[0]"),
        ("layers-int", dict(layers=layers_with(W_1=LM.layers[0]["W_1"].long())), E,
         "layers[0]['W_1']"),
    ]:
        add("kv_cache", f"CausalLM-{name}", lambda c=changes: lm_with(**c), err, arg)
    rcl = kv_cache.random_causal_lm
    good = dict(vocab=11, d_model=8, h=4, h_kv=2, n_layers=1, max_len=6)
    for name, changes, err, arg in [
        ("vocab-0", dict(vocab=0), E, "vocab"), ("h-3", dict(h=3), E, "h"),
        ("h_kv-3", dict(h_kv=3), E, "h_kv"), ("n_layers-0", dict(n_layers=0), E, "n_layers"),
        ("n_layers-neg", dict(n_layers=-2), E, "n_layers"),
        ("n_layers-float", dict(n_layers=1.5), T, "n_layers"),
        ("max_len-0", dict(max_len=0), E, "max_len"), ("d_ff-0", dict(d_ff=0), E, "d_ff"),
        ("seed-neg", dict(seed=-1), E, "seed"), ("seed-str", dict(seed="0"), T, "seed"),
        ("dtype-long", dict(dtype=torch.long), E, "dtype"),
        ("huge", dict(vocab=10**6, d_model=512, h=8, h_kv=8), E, "too large"),
    ]:
        add("kv_cache", f"random_lm-{name}", lambda c=changes: rcl(**(good | c)), err, arg)
    ff = kv_cache.forward_full
    for name, args, err, arg in [
        ("model-None", (None, IDS), T, "model"),
        ("model-tiny", (TINY, IDS), T, "model"),
        ("ids-float", (LM, IDS.float()), E, "token ids"),
        ("ids-int32", (LM, IDS.int()), E, "ids"),
        ("ids-1d", (LM, IDS[0]), E, "ids"), ("ids-3d", (LM, IDS[None]), E, "ids"),
        ("ids-empty", (LM, IDS[:, :0]), E, "ids"),
        ("ids-too-long", (LM, torch.zeros(1, 7, dtype=torch.long)), E, "max_len = 6"),
        ("ids-past-vocab", (LM, IDS + 9), E, "0..10"),
        ("ids-negative", (LM, -IDS), E, "0..10"),
        ("ids-list", (LM, [[1, 2]]), T, "ids"),
    ]:
        add("kv_cache", f"full-{name}", lambda a=args: ff(*a), err, arg)
    fc = kv_cache.forward_cached
    for name, ids_, caches, err, arg in [
        ("caches-None", IDS, None, T, "caches"),
        ("caches-empty", IDS, [], E, "caches"),
        ("caches-one", IDS, "one", E, "caches"),
        ("caches-B", IDS, "B2", E, "caches[0]"),
        ("caches-dtype", IDS, "f64", E, "caches[0]"),
        ("caches-lengths", IDS, "ragged", E, "caches"),
        ("caches-small", IDS, "small", E, "caches[0]"),
        ("ids-float", IDS.float(), "ok", E, "ids_new"),
        ("ids-past-max_len", torch.zeros(1, 7, dtype=torch.long), "ok", E, "ids_new"),
        ("ids-past-vocab", IDS + 20, "ok", E, "ids_new"),
    ]:
        def call(i=ids_, c=caches):
            if c == "ok":
                c = LM.new_caches(1)
            elif c == "one":
                c = LM.new_caches(1)[:1]
            elif c == "B2":
                c = LM.new_caches(2)
            elif c == "f64":
                c = [new_cache(1, 2, 2, 6, torch.float64) for _ in range(2)]
            elif c == "ragged":
                c = LM.new_caches(1)
                c[0].append(kv(), kv())
            elif c == "small":
                c = LM.new_caches(1, max_len=2)
            return fc(LM, i, c)
        add("kv_cache", f"cached-{name}", call, err, arg)
    gen = kv_cache.generate
    for name, args, kw, err, arg in [
        ("n_new-0", (LM, IDS, 0), {}, E, "n_new"), ("n_new-neg", (LM, IDS, -1), {}, E, "n_new"),
        ("n_new-float", (LM, IDS, 2.0), {}, T, "n_new"),
        ("prompt-float", (LM, IDS.float(), 2), {}, E, "prompt"),
        ("prompt-1d", (LM, IDS[0], 2), {}, E, "prompt"),
        ("prompt-past-max_len", (LM, IDS, 4), {}, E, "n_new"),
        ("prompt-past-vocab", (LM, IDS * 5, 2), {}, E, "prompt"),
        ("use_cache-str", (LM, IDS, 2), dict(use_cache="yes"), T, "use_cache"),
        ("model-None", (None, IDS, 2), {}, T, "model"),
    ]:
        add("kv_cache", f"generate-{name}", lambda a=args, k=kw: gen(*a, **k), err, arg)
    for name, args, err, arg in [("B-0", (0,), E, "B"), ("max_len-0", (1, 0), E, "max_len"),
                                 ("B-str", ("1",), T, "B")]:
        add("kv_cache", f"new_caches-{name}", lambda a=args: LM.new_caches(*a), err, arg)
    for name, bad in [("None", None), ("list", [LM.layers[0]]), ("no-W_Q", {"W_K": 1})]:
        add("kv_cache", f"layer_weights-{name}",
            lambda b=bad: kv_cache.layer_weights(b), T, "p")
    for name, bad in [("None", None), ("lm", LM)]:
        add("kv_cache", f"from_tiny-{name}", lambda b=bad: tm.from_tiny_model(b), T,
            "model")

    # ---- tiny_model: config, model, forward
    for name, kw, err, arg in [
        ("h-0", dict(h=0), E, "h"), ("d_k-neg", dict(d_k=-1), E, "d_k"),
        ("n_layers-0", dict(n_layers=0), E, "n_layers"),
        ("ff_mult-float", dict(ff_mult=1.5), T, "ff_mult"),
        ("vocab-str", dict(vocab_size="9"), T, "vocab_size"),
        ("max_len-None", dict(max_len=None), T, "max_len"),
        ("batch-0", dict(batch=0), E, "batch"), ("lr-0", dict(lr=0.0), E, "lr"),
        ("lr-neg", dict(lr=-1e-3), E, "lr"), ("lr-nan", dict(lr=NAN), E, "lr"),
        ("lr-str", dict(lr="1e-3"), T, "lr"), ("warmup-neg", dict(warmup=-1), E, "warmup"),
        ("warmup-float", dict(warmup=1.5), T, "warmup"),
        ("decay-neg", dict(weight_decay=-0.1), E, "weight_decay"),
        ("decay-nan", dict(weight_decay=NAN), E, "weight_decay"),
        ("huge", dict(d_k=10**5), E, "too large"),
    ]:
        add("tiny_model", f"config-{name}", lambda k=kw: tm.TinyConfig(**k), err, arg)
    for name, args, err, arg in [
        ("cfg-None", (None,), T, "cfg"), ("cfg-dict", ({"h": 2},), T, "cfg"),
        ("seed-neg", (CFG, -1), E, "seed"), ("seed-float", (CFG, 1.5), T, "seed"),
        ("seed-str", (CFG, "0"), T, "seed"),
    ]:
        add("tiny_model", f"model-{name}", lambda a=args: tm.TinyTransformer(*a), err, arg)
    L = CFG.max_len
    for name, ids_, kw, err, arg in [
        ("None", None, {}, T, "ids"), ("list", [[1, 2]], {}, T, "ids"),
        ("float", IDS.float(), {}, E, "ids"), ("bool", IDS > 1, {}, E, "ids"),
        ("1d", IDS[0], {}, E, "ids"), ("3d", IDS[None], {}, E, "ids"),
        ("L-0", IDS[:, :0], {}, E, "sequence length"),
        ("L-past-max_len", torch.ones(1, L + 1, dtype=torch.long), {}, E, "sequence length"),
        ("B-0", IDS[:0], {}, E, "ids"),
        ("past-vocab", IDS + CFG.vocab_size, {}, E, f"0..{CFG.vocab_size - 1}"),
        ("negative", -IDS, {}, E, "ids"),
        ("return-str", IDS, dict(return_attention="yes"), T, "return_attention"),
    ]:
        add("tiny_model", f"forward-{name}", lambda i=ids_, k=kw: TINY(i, **k), err, arg)
    for name, args, err, arg in [
        ("model-None", (None, "the cat"), T, "model"),
        ("sentence-None", (TINY, None), T, "sentence"),
        ("sentence-int", (TINY, 3), T, "sentence"),
        ("sentence-ids", (TINY, [1, 2]), T, "sentence"),
        ("sentence-mixed", (TINY, ["the", 2]), T, "sentence"),
        ("sentence-bytes", (TINY, b"the cat"), T, "sentence"),
        ("empty", (TINY, ""), E, "sentence"), ("blank", (TINY, "   "), E, "sentence"),
        ("empty-list", (TINY, []), E, "sentence"),
        ("too-long", (TINY, "the cat " * 20), E, "sequence length"),
    ]:
        add("tiny_model", f"attention_on-{name}", lambda a=args: tm.attention_on(*a), err,
            arg)
    x, y, kind = DATA
    for name, data, err, arg in [
        ("str", "heldout", T, "data"), ("pair", (x, y), T, "data"),
        ("x-float", (x.float(), y, kind), E, "data: x"),
        ("x-past-vocab", (x + 10**4, y, kind), E, "data: x"),
        ("shapes", (x, y[:, :-1], kind), E, "data"),
        ("too-long", (torch.cat([x, x], 1), torch.cat([y, y], 1), torch.cat([kind, kind], 1)),
         E, "max_len"),
        ("kind-5", (x, y, kind + 5), E, "kind"),
        ("too-short", (x[:, :2], y[:, :2], kind[:, :2]), E, "data"),
        ("kind-not-targets", (x, y, kind.flip(1)), E, "not the task's targets"),
    ]:
        add("tiny_model", f"head_scores-{name}", lambda d=data: tm.head_scores(TINY, d), err,
            arg)
    add("tiny_model", "head_scores-model", lambda: tm.head_scores(None), T, "model")
    for name, args, kw, err, arg in [
        ("model-None", (None,), {}, T, "model"),
        ("batch-0", (TINY, DATA), dict(batch=0), E, "batch"),
        ("batch-str", (TINY, DATA), dict(batch="8"), T, "batch"),
        ("no-lookup", (TINY, (x[:, :2], y[:, :2], kind[:, :2])), {}, E, "lookup"),
        ("x-float", (TINY, (x.float(), y, kind)), {}, E, "data: x"),
        ("y-not-targets", (TINY, (x, y.roll(1, 0), kind)), {}, E, "not the task's targets"),
    ]:
        add("tiny_model", f"evaluate-{name}", lambda a=args, k=kw: tm.evaluate(*a, **k), err,
            arg)
    for name, kw, err, arg in [
        ("cfg-None", dict(cfg=None), T, "cfg"), ("steps-0", dict(steps=0), E, "steps"),
        ("steps-float", dict(steps=1.5), T, "steps"), ("seed-neg", dict(seed=-1), E, "seed"),
        ("task-None", dict(task=None), T, "task"),
        ("task-too-long", dict(task=tasks.TaskConfig(L=CFG.max_len + 1)), E, "task"),
        ("log_every-neg", dict(log_every=-1), E, "log_every"),
        ("eval_data-str", dict(eval_data="heldout"), T, "eval_data"),
    ]:
        add("tiny_model", f"train-{name}",
            lambda k=kw: tm.train(**(dict(cfg=CFG, steps=1) | k)), err, arg)
    for name, args, err, arg in [("task-None", (None,), T, "task"),
                                 ("n-0", (tasks.TaskConfig(), 0), E, "n")]:
        add("tiny_model", f"heldout-{name}", lambda a=args: tm.heldout(*a), err, arg)
    logits = t(2, 3, 5)
    yy, kk = torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)
    for name, args, err, arg in [
        ("logits-int", (logits.long(), yy, kk), E, "logits"),
        ("y-shape", (logits, yy[:, :2], kk), E, "y"),
        ("y-past-V", (logits, yy * 7, kk), E, "y"),
        ("kind-none-scored", (logits, yy, kk * 0), E, "kind"),
    ]:
        add("tiny_model", f"loss_fn-{name}", lambda a=args: tm.loss_fn(*a), err, arg)
    for name, args, err, arg in [
        ("scores-None", (None,), T, "scores"), ("scores-list", ([1, 2],), T, "scores"),
        ("threshold-str", ([[{"self": 0.5}]], "0.5"), T, "threshold"),
        ("threshold-nan", ([[{"self": 0.5}]], NAN), E, "threshold"),
    ]:
        add("tiny_model", f"head_roles-{name}", lambda a=args: tm.head_roles(*a), err, arg)
    A_ok = [torch.full((8, 2, 16, 16), 1 / 16)]
    for name, att, err, arg in [
        ("attention-empty", [], T, "attention"),
        ("attention-shape", [torch.ones(8, 2, 16, 15)], E, "attention[0]"),
        ("attention-nan", [with_value(A_ok[0], (0, 0, 1, 1), NAN)], E, "attention[0]"),
        ("attention-int", [A_ok[0].long()], E, "attention[0]"),
    ]:
        add("tiny_model", f"statistics-{name}",
            lambda a=att: tm.task_attention_statistics(x, kind, a), err, arg)
    add("tiny_model", "uniform-data-str", lambda: tm.uniform_statistics("x"), T, "data")
    for name, args, err, arg in [
        ("h-0", (0, 8), E, "h"), ("d_k-float", (2, 1.5), T, "d_k"),
        ("trained-str", (2, 8, "yes"), T, "trained"), ("trained-int", (2, 8, 1), T, "trained"),
    ]:
        add("tiny_model", f"model_name-{name}", lambda a=args: tm.model_name(*a), err, arg)
    add("tiny_model", "fingerprint-None", lambda: tm.fingerprint(None), T, "model")

    # ---- files: save and load
    for name, args, kw, err, arg in [
        ("model-None", (None, "P"), {}, T, "model"),
        ("path-None", (TINY, None), {}, T, "path"), ("path-int", (TINY, 3), {}, T, "path"),
        ("path-dir", (TINY, "DIR"), {}, E, "folder"),
        ("dtype-long", (TINY, "P"), dict(dtype=torch.long), E, "dtype"),
        ("dtype-int8", (TINY, "P"), dict(dtype=torch.int8), E, "dtype"),
        ("dtype-str", (TINY, "P"), dict(dtype="float16"), T, "dtype"),
        ("extra-str", (TINY, "P"), dict(extra="notes"), T, "extra"),
        ("extra-nan", (TINY, "P"), dict(extra={"loss": NAN}), E, "extra"),
        ("extra-object", (TINY, "P"), dict(extra={"f": object()}), E, "extra"),
        ("init_seed-neg", (TINY, "P"), dict(init_seed=-1), E, "init_seed"),
        ("init_seed-str", (TINY, "P"), dict(init_seed="0"), T, "init_seed"),
        ("init_seed-wrong", (TINY, "P"), dict(init_seed=6), E, "init_seed=6"),
        ("weights-nan", ("NAN", "P"), {}, E, "W_E"),
        ("weights-overflow-f16", ("BIG", "P"), {}, E, "float16"),
    ]:
        def call(a=args, k=kw):
            d = files()["dir"]
            model = a[0]
            if model in ("NAN", "BIG"):
                model = tm.TinyTransformer(CFG)
                with torch.no_grad():
                    model.W_E[0, 0] = NAN if a[0] == "NAN" else 1e6
            path = {"P": d / "out.safetensors", "DIR": d}.get(a[1], a[1]) \
                if isinstance(a[1], str) else a[1]
            return tm.save(model, path, **k)
        add("files", f"save-{name}", call, err, arg)
    for name, key, err, arg in [
        ("missing", "missing", Fe, "nowhere.safetensors does not exist"),
        ("folder", "dir", E, "not a file"),
        ("empty", "empty", E, "empty.safetensors is empty"),
        ("truncated", "truncated", E, "truncated.safetensors is not a readable"),
        ("garbage", "garbage", E, "garbage.safetensors is not a readable"),
        ("header", "header", E, "header.safetensors is not a readable"),
        ("no-metadata", "nometa", E, "nometa.safetensors has no tiny-model config"),
        ("bad-json", "badjson", E, "badjson.safetensors has a broken config"),
        ("impossible-config", "impossible", E, "impossible.safetensors has an impossible"),
        ("unknown-key", "unknownkey", E, "unknownkey.safetensors has a broken config"),
        ("mismatched-sizes", "mismatch", E, "wrong sizes for the config"),
        ("more-layers", "morelayers", E, "morelayers.safetensors does not match"),
        ("integer", "integer", E, "integer.safetensors: "),
        ("nan", "nan", E, "nan.safetensors: W_E holds NaN"),
        ("lacking", "lacking", E, "missing ['W_U']"),
        ("bad-extra", "badextra", E, "badextra.safetensors has broken 'extra'"),
        ("bad-seed", "badseed", E, "init_seed 'five'"),
        ("wrong-fingerprint", "wrongprint", E, "wrongprint.safetensors: rebuilding"),
    ]:
        add("files", f"load-{name}", lambda k=key: tm.load(files()[k]), err, arg)
    for name, bad in [("None", None), ("int", 3), ("bytes", b"x.safetensors")]:
        add("files", f"load-path-{name}", lambda b=bad: tm.load(b), T, "path")
    add("files", "load-path-empty", lambda: tm.load(""), E, "path")

    # ---- web_export
    for name, args, err, arg in [
        ("h-0", (0, 8, True), E, "h"), ("h-str", ("2", 8, True), T, "h"),
        ("no-such-cell", (3, 5, True), E, "no tiny model with h = 3, d_k = 5"),
        ("trained-str", (2, 8, "yes"), T, "trained"), ("trained-int", (2, 8, 1), T, "trained"),
        ("trained-None", (2, 8, None), T, "trained"),
    ]:
        add("web_export", f"load_tiny-{name}", lambda a=args: wx.load_tiny(*a), err, arg)
    for name, bad, err in [("nan", np.array([0.5, NAN]), E), ("big", np.array([1.5]), E),
                           ("negative", np.array([-0.5]), E), ("str", "abc", T),
                           ("tensor-inf", torch.tensor([INF]), E)]:
        add("web_export", f"quantize-{name}", lambda b=bad: wx.quantize(b), err, "weights")
    add("web_export", "write_tiny_weights-None", lambda: wx.write_tiny_weights(None, "x.f32"),
        T, "model")
    add("web_export", "write_tiny_weights-3-layers",
        lambda: wx.write_tiny_weights(tm.TinyTransformer(tm.TinyConfig(h=1, d_k=2, n_layers=3)),
                                      "x.f32"), E, "n_layers")

    # ---- tasks
    for name, bad in [("None", None), ("int", 3), ("list", ["a"]), ("bytes", b"the cat")]:
        add("tasks", f"split_words-{name}", lambda b=bad: tasks.split_words(b), T, "text")
    for name, bad in [("None", None), ("int", 3), ("float", 3.5), ("ids", [1, 2]),
                      ("mixed", ["the", None]), ("bytes-items", [b"the"]),
                      ("tensor", torch.tensor([1, 2])), ("dict", {"the": 1}),
                      ("nested", [["the"]])]:
        add("tasks", f"word_ids-{name}", lambda b=bad: tasks.word_ids(b), T, "text_or_tokens")
    n_vocab = len(tasks.VOCAB)
    for name, bad, err, arg in [
        ("None", None, T, "ids"), ("negative", [-1], E, "ids"),
        ("past-vocab", [n_vocab], E, f"0..{n_vocab - 1}"),
        ("float", [1.5], T, "ids[0]"), ("whole-float", [2.0], T, "ids[0]"),
        ("str", ["3"], T, "ids[0]"), ("bool", [True], T, "ids[0]"),
        ("text", "the cat", T, "ids"),
        ("tensor-float", torch.tensor([1.0, 2.0]), E, "ids"),
        ("tensor-2d", torch.ones(2, 2, dtype=torch.long), E, "ids"),
        ("tensor-negative", torch.tensor([3, -2]), E, "ids"),
        ("numpy-float", np.array([1.0]), E, "ids"), ("int", 5, T, "ids"),
    ]:
        add("tasks", f"decode-{name}", lambda b=bad: tasks.decode(b), err, arg)
    for name, kw, err, arg in [
        ("L-0", dict(L=0), E, "L"), ("n_min-0", dict(n_min=0), E, "n_min"),
        ("n_min-1", dict(n_min=1), E, "n_min must be at least 2"),
        ("n_max-past-vocab", dict(n_max=10**4), E, "n_max"),
        ("vocab-str", dict(vocab_size="9"), T, "vocab_size"),
        ("n_min-past-n_max", dict(n_min=10, n_max=8), E, "n_min"),
        ("n_max-float", dict(n_max=8.5), T, "n_max"),
    ]:
        add("tasks", f"TaskConfig-{name}", lambda k=kw: tasks.TaskConfig(**k), err, arg)
    for name, bad, err in [("None", None, T), ("float", x.float(), E), ("1d", x[0], E),
                           ("negative", -x - 1, E), ("L-0", x[:, :0], E),
                           ("list", x.tolist(), T)]:
        add("tasks", f"targets-{name}", lambda b=bad: tasks.targets(b), err, "x")
    for name, bad in [("None", None), ("int", 3), ("str", "abc"), ("unhashable", [[1], [2]])]:
        add("tasks", f"targets_reference-{name}",
            lambda b=bad: tasks.targets_reference(b), T, "words")
    for name, args, kw, err, arg in [
        ("n-0", (0,), dict(seed=0), E, "n"), ("n-float", (1.5,), dict(seed=0), T, "n"),
        ("cfg-None", (2, None), dict(seed=0), T, "cfg"),
        ("both", (2,), dict(seed=0, generator=torch.Generator()), E, "seed"),
        ("neither", (2,), {}, E, "seed"), ("seed-neg", (2,), dict(seed=-1), E, "seed"),
        ("seed-str", (2,), dict(seed="0"), T, "seed"),
        ("generator-int", (2,), dict(generator=3), T, "generator"),
    ]:
        add("tasks", f"sample-{name}", lambda a=args, k=kw: tasks.sample(*a, **k), err, arg)
    for name, args, err, arg in [
        ("x-float", (x.float(), y, kind), E, "x"),
        ("no-lookup", (x[:, :2], y[:, :2], kind[:, :2]), E, "lookup"),
        ("shapes", (x, y[:, :3], kind), E, "shape"),
        ("y-not-targets", (x, y.roll(1, 0), kind), E, "not the task's targets"),
    ]:
        add("tasks", f"baselines-{name}", lambda a=args: tasks.baselines(*a), err, arg)

    # ---- head_analysis and plotting: their own raises are the package's error
    toks = ["[CLS]", "the", "cat", "[SEP]"]
    A4 = torch.full((1, 1, 4, 4), 0.25)
    for name, args, arg in [
        ("counts", ([A4], [toks, toks]), "attentions and tokens"),
        ("empty", ([], []), "attentions and tokens"),
        ("shape", ([A4[0]], [toks]), "attentions[0]"),
        ("no-cls", ([A4], [["the", "cat", "sat", "[SEP]"]]), "tokens[0]"),
    ]:
        add("plotting", f"attention_statistics-{name}",
            lambda a=args: head_analysis.attention_statistics(*a), InputError, arg)
    ha = head_analysis
    for name, fn, err, arg in [
        ("attentions-str", lambda: ha.attention_statistics("A", [toks]), T, "attentions"),
        ("tokens-None", lambda: ha.attention_statistics([A4], None), T, "tokens"),
        ("attentions-list", lambda: ha.attention_statistics([[[0.5]]], [toks]), T,
         "attentions[0]"),
        ("attentions-int", lambda: ha.attention_statistics([A4.long()], [toks]), E,
         "attentions[0]"),
        ("attentions-nan", lambda: ha.attention_statistics(
            [with_value(A4, (0, 0, 1, 1), NAN)], [toks]), E, "attentions[0]"),
        ("tokens-str", lambda: ha.attention_statistics([A4], ["[CLS] the"]), T, "tokens[0]"),
        ("head_statistics-texts", lambda: ha.head_statistics("one sentence"), T, "texts"),
        ("head_statistics-empty", lambda: ha.head_statistics([]), T, "texts"),
        ("head_statistics-model", lambda: ha.head_statistics(["a b"], model="minilm"), T,
         "model"),
        ("classify-stats", lambda: ha.classify_heads(None), T, "stats"),
        ("classify-threshold", lambda: ha.classify_heads(_stats(), threshold=2), E,
         "threshold"),
        ("classify-broad", lambda: ha.classify_heads(_stats(), broad="x"), T, "broad"),
        ("class_counts", lambda: ha.class_counts(3), T, "labels"),
        ("word_attention-A", lambda: ha.word_attention(None, [[1]]), T, "A"),
        ("word_attention-spans", lambda: ha.word_attention(A4[0, 0], [[5]]), E, "spans"),
        ("claim-str", lambda: ha.check_claim("it"), T, "claim"),
        ("claim-top", lambda: ha.check_claim(ha.SEED_CLAIMS[0], top=0), E, "top"),
        ("claims-str", lambda: ha.check_claims("claims"), T, "claims"),
        ("ablation-texts", lambda: ha.ablation_ranking(texts=None), T, "texts"),
        ("ablation-cache", lambda: ha.ablation_ranking(["a b"], cache="c"), T, "cache"),
        ("pruning-order", lambda: ha.pruning_curve(order="0,1"), T, "order"),
        ("pruning-pair", lambda: ha.pruning_curve(order=[(0,)]), T, "order[0]"),
        ("pruning-float", lambda: ha.pruning_curve(order=[(0, 1.5)]), T, "order[0][1]"),
        ("report", lambda: ha.report(None), T, "a"),
    ]:
        add("plotting", f"head_analysis-{name}", fn, err, arg)
    for name, fn, err, arg in [
        ("precomputed", lambda: wx.precomputed_views("The cat."), T, "sentences"),
        ("precomputed-None", lambda: wx.precomputed_views([None]), T, "sentences[0]"),
        ("export_minilm-path", lambda: wx.export_minilm(None), T, "path"),
        ("export_minilm-model", lambda: wx.export_minilm("m.onnx", "minilm"), T, "model"),
        ("tiny_entry-model", lambda: wx.tiny_entry(None, True, Path("x")), T, "model"),
        ("tiny_entry-trained", lambda: wx.tiny_entry(TINY, "yes", Path("x")), T, "trained"),
        ("tiny_entry-file", lambda: wx.tiny_entry(TINY, True, Path("/nonexistent/x")), E,
         "file"),
        ("build-out", lambda: wx.build(None), T, "out"),
        ("MiniLMGraph-None", lambda: wx.MiniLMGraph(None), T, "model"),
        ("MiniLMGraph-tiny", lambda: wx.MiniLMGraph(TINY), T, "model"),
        ("tokenizer_json-str", lambda: wx.minilm_tokenizer_json("minilm"), T, "model"),
        ("build-minilm", lambda: wx.build("out", minilm="no"), T, "minilm"),
    ]:
        add("web_export", name, fn, err, arg)
    add("plotting", "png-signature", lambda: figure_text.png_text_entries(b"GIF89a.."),
        InputError, "png")
    for name, call_, arg in [
        ("class-grid-unknown", lambda ax: head_class_grid(ax, [["bogus"]]), "labels"),
        ("value-grid-1d", lambda ax: head_value_grid(ax, np.zeros(3)), "values"),
        ("head_blocks-h", lambda ax: head_blocks(ax, np.zeros((2, 6)), 4), "values"),
        ("ratio-empty", lambda ax: ratio_bars(ax, ["a"], {}), "series"),
        ("ratio-count", lambda ax: ratio_bars(ax, ["a", "b"], {"s": [1.0]}), "series"),
    ]:
        add("plotting", name, on_new_axes(call_), InputError, arg)
    W3 = np.full((3, 3), 1 / 3)
    tk = ["a", "b", "c"]
    for name, fn, err, arg in [
        ("heatmap-None", lambda ax: attention_heatmap(ax, None, tk), T, "weights"),
        ("heatmap-str", lambda ax: attention_heatmap(ax, "w", tk), T, "weights"),
        ("heatmap-1d", lambda ax: attention_heatmap(ax, np.ones(3), tk), E, "weights"),
        ("heatmap-nan", lambda ax: attention_heatmap(ax, np.full((3, 3), NAN), tk), E,
         "weights"),
        ("heatmap-tokens", lambda ax: attention_heatmap(ax, W3, tk[:2]), E, "q_tokens"),
        ("heatmap-tokens-str", lambda ax: attention_heatmap(ax, W3, "abc"), T, "q_tokens"),
        ("heatmap-k_tokens", lambda ax: attention_heatmap(ax, W3, tk, ["x"]), E, "k_tokens"),
        ("block_diagram-pre_ln", lambda ax: block_diagram(ax, "yes"), T, "pre_ln"),
        ("kv_sharing-h_kv", lambda ax: kv_sharing_diagram(ax, 8, 3), E, "h_kv"),
        ("kv_sharing-h", lambda ax: kv_sharing_diagram(ax, 0, 1), E, "h"),
    ]:
        add("plotting", name, on_new_axes(fn), err, arg)
    for name, fn, err, arg in [
        ("heads_grid-2d", lambda: heads_grid(W3, tk), E, "weights"),
        ("heads_grid-ncols", lambda: heads_grid(W3[None], tk, ncols=0), E, "ncols"),
        ("top_attended-tokens", lambda: top_attended(W3, tk[:1]), E, "q_tokens"),
        ("top_attended-queries", lambda: top_attended(W3, tk, queries=[5]), E, "queries[0]"),
        ("top_attended-queries-str", lambda: top_attended(W3, tk, queries="0"), T,
         "queries"),
        ("top_attended-complex", lambda: top_attended(torch.ones(3, 3, dtype=torch.cfloat),
                                                      tk), T, "weights"),
        ("figure_png-None", lambda: figure_png(None), T, "fig"),
        ("png_html-str", lambda: png_html("png", "alt"), T, "png"),
        ("png_html-alt", lambda: png_html(b"png", None), T, "alt"),
        ("png_html-alt-empty", lambda: png_html(b"png", "  "), E, "alt"),
    ]:
        add("plotting", name, fn, err, arg)
    for name, args, arg in [
        ("split-sizes", (np.arange(12).reshape(3, 4), np.zeros((2, 3, 3))), "blocks"),
        ("split-distinct", (np.zeros((2, 4)), np.zeros((2, 2, 2))), "distinct"),
    ]:
        add("plotting", f"head_split-{name}", lambda a=args: head_split_figure(*a),
            InputError, arg)
    return R


@functools.cache
def _stats():
    toks = ["[CLS]", "the", "cat", "[SEP]"]
    return head_analysis.attention_statistics([torch.full((1, 1, 4, 4), 0.25)], [toks])


ROWS = _rows()


def _finite(*tensors):
    for v in tensors:
        assert bool(torch.isfinite(v).all())


def _good(group):
    """A good call of the group, checked against an independent result."""
    if group == "batching":
        X, lengths = batching.pad_batch([SEQ_A, SEQ_B])
        assert torch.equal(X[1, :2], SEQ_B) and torch.equal(X[1, 2], torch.zeros(4))
        assert lengths.tolist() == [3, 2]
        assert batching.batch_mask(lengths, 3, causal=True)[1, 0, 2].tolist() == [
            False, False, True]
        out = batching.attention_dropout(A_W, 0.5, generator=torch.Generator().manual_seed(0))
        _finite(out)
        assert bool(((out == 0) | torch.isclose(out, 2 * A_W)).all())
    elif group == "positions":
        pe = positions.sinusoidal_positions(3, 4, dtype=torch.float64)
        assert math.isclose(float(pe[2, 1]), math.cos(2.0))
        y = positions.rotary(t(3, 4), torch.tensor([0, 5, 9]))
        _finite(y)
        q = t(1, 4)
        assert torch.allclose(positions.rotary(q, torch.tensor([0])), q)
    elif group == "decoder":
        p = dec_weights()
        out = decoder.decoder_layer(Y, MEM, p, 2)
        _finite(out)
        o, A = decoder.cross_attention(Y, MEM, W8, 2)
        assert torch.allclose(A.sum(-1), torch.ones(1), atol=1e-5)
    elif group == "kv_cache":
        ids = torch.tensor([[1, 2, 3, 4]])
        full = kv_cache.forward_full(LM, ids)
        caches = LM.new_caches(1)
        step = torch.cat([kv_cache.forward_cached(LM, ids[:, :2], caches),
                          kv_cache.forward_cached(LM, ids[:, 2:], caches)], 1)
        assert torch.allclose(full, step, atol=1e-5)
        _finite(full)
    elif group in ("tiny_model", "files"):
        logits = TINY(IDS)
        _finite(logits)
        tokens, att = tm.attention_on(TINY, "the cat sat.")
        assert tokens == ["the", "cat", "sat", "."]
        if group == "files":
            back = tm.load(files()["good"])
            assert torch.allclose(back(IDS), logits, atol=5e-2)
            assert tm.fingerprint(tm.load(files()["init"])) == tm.fingerprint(TINY)
    elif group == "web_export":
        assert len(wx.quantize(np.array([0.0, 1.0]))) > 0
    elif group == "tasks":
        assert tasks.word_ids(["the", "zebra"]) == [tasks.WORD_TO_ID["the"], tasks.UNK_ID]
        assert tasks.decode(torch.tensor([1, 2])) == ["the", "a"]
    elif group == "plotting":
        toks = ["[CLS]", "the", "cat", "[SEP]"]
        head_analysis.attention_statistics([torch.full((1, 1, 4, 4), 0.25)], [toks])


@pytest.mark.parametrize("group, call, err, arg", ROWS)
def test_newer_bad_input_raises_the_packages_error(group, call, err, arg):
    with pytest.raises(err) as info:
        call()
    assert_the_packages_error(info, arg)
    _good(group)  # a good call works right after


def test_newer_table_size():
    """At least 250 bad inputs (issue 23's floor), in every group."""
    groups = {}
    for p in ROWS:
        groups[p.values[0]] = groups.get(p.values[0], 0) + 1
    print(groups, sum(groups.values()))
    assert sum(groups.values()) >= 250
    assert min(groups.values()) >= 5


def test_model_file_messages_name_the_file_in_one_line():
    for key in ("missing", "empty", "truncated", "garbage", "nometa", "mismatch",
                "integer", "lacking"):
        path = files()[key]
        with pytest.raises(InputError) as info:
            tm.load(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert isinstance(pytest.raises(FileNotFoundError, tm.load, files()["missing"]).value,
                      InputError)


def test_nan_only_on_purpose():
    nan_seq = with_value(SEQ_B, (0, 0), NAN)
    X, _ = batching.pad_batch([SEQ_A, nan_seq], allow_nonfinite=True)
    assert torch.isnan(X).any()
    assert torch.isnan(batching.attention_dropout(with_value(A_W, (0, 0, 0), NAN), 0.0,
                                                  allow_nonfinite=True)).any()
    assert torch.isnan(positions.rotary(with_value(t(3, 4), (0, 0), NAN),
                                        allow_nonfinite=True)).any()
    c = new_cache()
    K, _ = c.append(with_value(kv(), (0, 0, 0, 0), NAN), kv(), allow_nonfinite=True)
    assert torch.isnan(K).any()


def test_no_silent_wrong_answers():
    # an integer first sequence is refused, not truncated into the batch
    with pytest.raises(InputError, match="float"):
        batching.pad_batch([torch.ones(2, 2, dtype=torch.long), torch.full((1, 2), 0.5)])
    # a float64 cache keeps float64 keys exactly
    c = new_cache(dtype=torch.float64)
    K_new = kv(dtype=torch.float64) / 3
    K, _ = c.append(K_new, K_new)
    assert torch.equal(K, K_new)
    # a list of ids is not read as unknown words
    with pytest.raises(InputTypeError, match="decode"):
        tasks.word_ids([5, 6])
    # a failed cached step leaves the caches as they were
    caches = LM.new_caches(1, max_len=3)
    kv_cache.forward_cached(LM, IDS[:, :2], caches)
    with pytest.raises(InputError):
        kv_cache.forward_cached(LM, IDS, caches)
    assert [c.length for c in caches] == [2, 2]
    # evaluate and head_scores never answer NaN
    short = tuple(v[:, :2] for v in DATA)
    with pytest.raises(InputError):
        tm.evaluate(TINY, short)
    scores = tm.head_scores(TINY, DATA)
    assert all(math.isfinite(v) for layer in scores for s in layer for v in s.values())


def test_load_tiny_suggests_only_models_that_exist():
    msg = str(pytest.raises(InputError, wx.load_tiny, 3, 5, True).value)
    assert all(f"{h}x{d_k}" in msg for h, d_k in wx.tiny_cells())
    assert "train_tiny_models" not in msg  # no command to build an impossible model
