"""Bad inputs to the export path and the leftovers of issue 30:
``web_export`` (a file that holds another model than its name says, NaN
weights, an output folder that is a file, a manifest with graphs missing),
``catalogue.steps_for``, ``TransformerBlock``'s ``eps`` (also when set after
construction), the explorer's layer control and ``tiny_model.save`` into a
path under a regular file.

Each row of ``ROWS`` must raise the package's own error from the package's
code, in one line holding the words given; a good call of the same group
must work right after. Each row of ``ANSWERS`` must give the answer that an
independent computation gives. ``test_export_table_size`` counts the rows.
"""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from bad_input_checks import assert_the_packages_error

import mhacourse as mc
from mhacourse import catalogue, web_train
from mhacourse import tiny_model as tm
from mhacourse import web_export as wx
from mhacourse._validate import InputError, InputTypeError
from mhacourse.widgets import AttentionExplorer

NAN, INF = float("nan"), float("inf")
C = tm.TinyConfig
G = torch.Generator().manual_seed(30)
X = torch.randn(2, 4, 8, generator=G)  # (B, L, d_model)
ROOT = Path(tempfile.mkdtemp(prefix="mha_bad_export_"))
A_FILE = ROOT / "notes.txt"  # a regular file where a folder would have to be
A_FILE.write_text("not a folder")
LONG_NAME = "x" * 300 + ".safetensors"  # longer than a file system's 255 bytes
GRAPHS = {k: {"kind": k, "file": f"{k}.onnx", "bytes": 1, "export_seconds": 0.0}
          for k in web_train.STEP_NAMES}  # what export_job returns, for each kind


def tiny(cfg=None, seed=0, shift=0.0):
    """A tiny model; with ``shift`` its weights moved off the seeded start
    (a stand-in for a trained one)."""
    m = tm.TinyTransformer(cfg or C(h=2, d_k=8), seed)
    if shift:
        with torch.no_grad():
            for p in m.parameters():
                p.add_(shift)
    return m


def tiny_with(name, value, index=0):
    """The h = 2, d_k = 8 model with ``value`` at ``index`` of weight ``name``."""
    m = tiny()
    with torch.no_grad():
        dict(m.named_parameters())[name].view(-1)[index] = value
    return m


PARAM_NAMES = [n for n, _ in tiny().named_parameters()]
MODEL_FILE = tm.save(tiny(), ROOT / "model.safetensors")  # a file, not a folder


# --------------------------------------------- a models folder with wrong files

WRONG_FILES = {  # (h, d_k, trained) the name says -> (config held, trained?)
    (2, 8, True): (C(h=1, d_k=8), True),
    (2, 16, True): (C(h=2, d_k=8), True),
    (4, 16, True): (C(h=8, d_k=8), True),  # the same d_model, split otherwise
    (4, 8, True): (C(h=8, d_k=4), True),
    (8, 8, True): (C(h=4, d_k=16), True),
    (1, 8, True): (C(h=1, d_k=8, n_layers=1), True),
    (1, 16, True): (C(h=1, d_k=16, max_len=8), True),
    (1, 32, True): (C(h=1, d_k=32, ff_mult=2), True),
    (2, 32, True): (C(h=2, d_k=32), False),  # the untrained one, as trained
    (2, 8, False): (C(h=1, d_k=8), False),
    (4, 8, False): (C(h=2, d_k=16), False),
    (4, 16, False): (C(h=4, d_k=16), True),  # a trained one, as untrained
}
RIGHT_FILES = {(1, 64, True): True, (1, 64, False): False, (16, 4, True): True}


@functools.cache
def assets() -> Path:
    """An assets/ folder whose files hold ``WRONG_FILES`` and ``RIGHT_FILES``."""
    folder = ROOT / "assets" / "models"
    folder.mkdir(parents=True)
    held = {**WRONG_FILES, **{(h, d_k, tr): (C(h=h, d_k=d_k), held_trained)
                              for (h, d_k, tr), held_trained in RIGHT_FILES.items()}}
    for (h, d_k, trained), (cfg, held_trained) in held.items():
        path = folder / f"{tm.model_name(h, d_k, trained)}.safetensors"
        if held_trained:
            tm.save(tiny(cfg, shift=0.01), path, dtype=torch.float32,
                    extra={"steps": 10, "seed": 0})
        else:
            tm.save(tiny(cfg, seed=catalogue.SEED), path, init_seed=catalogue.SEED)
    return folder.parent


def in_assets(call):
    """``call`` with ``$MHACOURSE_ASSETS`` on :func:`assets`, then as before."""
    def run():
        old = os.environ.get("MHACOURSE_ASSETS")
        os.environ["MHACOURSE_ASSETS"] = str(assets())
        try:
            return call()
        finally:
            if old is None:
                del os.environ["MHACOURSE_ASSETS"]
            else:
                os.environ["MHACOURSE_ASSETS"] = old
    return run


def build_with_results(results, out=None):
    """``web_export.build`` whose export jobs returned ``results`` (nothing
    exported: the check on the graphs comes first)."""
    def run():
        real = wx.run_jobs
        wx.run_jobs = lambda jobs, workers=2: results
        try:
            return wx.build(out or ROOT / "site", minilm=False, workers=1,
                            log=lambda *_: None)
        finally:
            wx.run_jobs = real
    return run


LAST = {}  # the explorer of the last explorer row, checked after the row


def set_layer(value, attr="value", source="untrained"):
    def run():
        e = LAST["explorer"] = AttentionExplorer(source=source, h=2, d_k=8, layer=1)
        setattr(e.layer, attr, value)
    return run


def block_with_eps(eps):
    """A block whose ``eps`` was changed after construction, run on X."""
    def run():
        b = mc.TransformerBlock(8, 2, seed=0)
        b.eps = eps
        return b(X)
    return run


def from_torch_with_eps(eps):
    def run():
        layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        layer.norm1.eps = eps
        return mc.TransformerBlock.from_torch(layer)
    return run


def _rows():
    """(group, id, call, error class, words the message must hold)."""
    E, T = InputError, InputTypeError
    R = []

    def add(group, ident, call, err, words):
        R.append(pytest.param(group, call, err, words, id=f"{group}-{ident}"))

    # ---- catalogue.steps_for
    for name, bad, err in [
        ("0", 0, E), ("-8", -8, E), ("-1", -1, E), ("huge-negative", -10**100, E),
        ("True", True, T), ("False", False, T), ("np-bool", np.bool_(True), T),
        ("nan", NAN, T), ("inf", INF, T), ("-inf", -INF, T), ("8.0", 8.0, T),
        ("8.5", 8.5, T), ("np-float", np.float64(8), T), ("str", "8", T),
        ("bytes", b"8", T), ("None", None, T), ("list", [8], T),
        ("complex", complex(8, 0), T), ("tensor-float", torch.tensor(8.0), T),
        ("tensor-1d", torch.tensor([8]), T),
    ]:
        add("catalogue", f"steps_for-{name}", lambda b=bad: catalogue.steps_for(b), err,
            "d_model")

    # ---- web_export.load_tiny: the file holds another model than its name says
    for (h, d_k, trained), (cfg, held_trained) in WRONG_FILES.items():
        if (cfg.h, cfg.d_k) != (h, d_k):
            words = f"h = {cfg.h}, d_k = {cfg.d_k}, not the h = {h}, d_k = {d_k}"
        elif held_trained != trained:
            words = "untrained seed-" if trained else "weights other than the seed-"
        else:
            words = "the page's models have"
        add("web_export", f"load_tiny-{h}x{d_k}-{trained}-holds-{cfg.h}x{cfg.d_k}-"
            f"L{cfg.n_layers}-len{cfg.max_len}-ff{cfg.ff_mult}-{held_trained}",
            in_assets(lambda a=(h, d_k, trained): wx.load_tiny(*a)), E, words)

    # ---- web_export.write_tiny_weights: non-finite weights, bad paths
    for name, value in [(PARAM_NAMES[0], NAN), (PARAM_NAMES[1], INF),
                        (PARAM_NAMES[2], -INF), (PARAM_NAMES[5], NAN),
                        (PARAM_NAMES[len(PARAM_NAMES) // 2], NAN),
                        (PARAM_NAMES[-2], INF), (PARAM_NAMES[-1], NAN)]:
        add("web_export", f"write_tiny_weights-{name}-{value}",
            lambda n=name, v=value: wx.write_tiny_weights(tiny_with(n, v),
                                                          ROOT / "w" / "m.f32"),
            E, f"model weight {name} holds 1 NaN or inf")
    add("web_export", "write_tiny_weights-all-nan",
        lambda: wx.write_tiny_weights(tiny(shift=NAN), ROOT / "w" / "m.f32"), E,
        "NaN or inf")
    for name, path, err, words in [
        ("under-a-file", A_FILE / "m.f32", E, "is a file"),
        ("two-under-a-file", A_FILE / "a" / "m.f32", E, "is a file"),
        ("a-folder", ROOT, E, "is a folder"),
        ("name-too-long", ROOT / LONG_NAME, E, "cannot be written"),
        ("None", None, T, "path"), ("empty", "", E, "path is empty"),
        ("int", 3, T, "path"),
    ]:
        add("web_export", f"write_tiny_weights-path-{name}",
            lambda p=path: wx.write_tiny_weights(tiny(), p), err, words)

    # ---- web_export.build: the output folder, the graphs of the manifest
    for name, out in [("a-file", A_FILE), ("under-a-file", A_FILE / "site"),
                      ("two-under-a-file", A_FILE / "a" / "b"),
                      ("name-too-long", ROOT / LONG_NAME)]:
        add("web_export", f"build-out-{name}",
            lambda o=out: wx.build(o, minilm=False, workers=1), E, "out")
    add("web_export", "build-out-empty", lambda: wx.build("", minilm=False), E, "out")
    add("web_export", "build-no-graphs", build_with_results([("precomputed", {})]), E,
        "graphs has no")
    add("web_export", "build-only-step",
        build_with_results([("train", GRAPHS["step"]), ("precomputed", {})]), E,
        "graphs has no")
    for name, graphs, err, words in [
        ("empty", {}, E, "graphs has no"), ("None", None, T, "graphs"),
        ("list", list(GRAPHS), T, "graphs"),
        ("one-missing", {k: v for k, v in GRAPHS.items() if k != "forward"}, E,
         "['forward']"),
        ("unknown-kind", {**GRAPHS, "backward": GRAPHS["step"]}, E, "backward"),
        ("entry-None", {**GRAPHS, "step": None}, E, "graphs['step']"),
        ("entry-no-file", {**GRAPHS, "init": {"bytes": 1, "export_seconds": 0}}, E,
         "graphs['init']"),
    ]:
        add("web_export", f"check_train_graphs-{name}",
            lambda g=graphs: wx.check_train_graphs(g), err, words)

    # ---- TransformerBlock's eps: at construction, after it, from PyTorch
    for name, eps, err in [("-1", -1, E), ("0", 0, E), ("-0.0", -0.0, E),
                           ("underflow", 1e-400, E), ("nan", NAN, E), ("inf", INF, E),
                           ("-inf", -INF, E), ("True", True, T), ("str", "1e-5", T),
                           ("None", None, T), ("tensor", torch.tensor(1e-5), T)]:
        add("block", f"init-eps-{name}", lambda e=eps: mc.TransformerBlock(8, 2, eps=e),
            err, "eps")
    for name, eps, err in [("-1", -1, E), ("0", 0, E), ("-1e-3", -1e-3, E),
                           ("nan", NAN, E), ("-inf", -INF, E), ("inf", INF, E),
                           ("str", "1e-5", T), ("None", None, T)]:
        add("block", f"eps-set-after-{name}", block_with_eps(eps), err, "eps")
    add("block", "from_torch-eps-negative", from_torch_with_eps(-1.0), E, "eps")
    add("block", "from_torch-eps-nan", from_torch_with_eps(NAN), E, "eps")

    # ---- the explorer's layer control
    for name, value in [("7", 7), ("0", 0), ("-1", -1), ("3", 3), ("100", 100),
                        ("str", "1"), ("1.5", 1.5), ("list", [1])]:
        add("explorer", f"layer-value-{name}", set_layer(value), E,
            "layer must be one of [1, 2]")
    for name, value in [("7", 7), ("-1", -1), ("2", 2)]:
        add("explorer", f"layer-index-{name}", set_layer(value, "index"), E,
            "layer.index must be a position 0 to 1")
    add("explorer", "minilm-layer-value-7", set_layer(7, source="MiniLM"), E,
        "layer must be one of [1, 2, 3, 4, 5, 6]")

    # ---- tiny_model.save: a path under a regular file, and other paths
    for name, path, kw, words in [
        ("under-a-file", A_FILE / "m.safetensors", {}, "is a file"),
        ("two-under-a-file", A_FILE / "a" / "m.safetensors", {}, "is a file"),
        ("init-under-a-file", A_FILE / "m.safetensors", {"init_seed": 0}, "is a file"),
        ("float32-under-a-file", A_FILE / "m.safetensors", {"dtype": torch.float32},
         "is a file"),
        ("under-a-model-file", MODEL_FILE / "m.safetensors", {}, "is a file"),
        ("a-folder", ROOT, {}, "is a folder"),
        ("name-too-long", ROOT / LONG_NAME, {}, "cannot be written"),
        ("empty", "", {}, "path is empty"),
    ]:
        add("files", f"save-{name}", lambda p=path, k=kw: tm.save(tiny(), p, **k), E,
            words)
    for name, path in [("None", None), ("int", 3), ("bytes", b"m.safetensors")]:
        add("files", f"save-path-{name}", lambda p=path: tm.save(tiny(), p), T, "path")
    return R


ROWS = _rows()


def _good(group):
    """A good call of the group, checked against an independent result."""
    if group == "catalogue":
        assert catalogue.steps_for(8) == catalogue.STEPS_BY_D_MODEL[8]
    elif group == "web_export":
        model = wx.load_tiny(2, 8, True)  # the course's own file
        assert (model.cfg.h, model.cfg.d_k) == (2, 8)
        path = wx.write_tiny_weights(model, ROOT / "good" / "m.f32")
        flat = np.frombuffer(path.read_bytes(), dtype="<f4")
        assert flat.size == tm.n_params(model)
        assert np.array_equal(flat[:8], model.W_E.detach().reshape(-1)[:8].numpy())
    elif group == "block":
        b = mc.TransformerBlock(8, 2, seed=0)
        assert torch.allclose(b(X), b.to_torch().eval()(X), atol=1e-5)
    elif group == "explorer":
        e = LAST["explorer"]
        before = e.output.value
        assert e.layer.value == 1 and "layer 1 of" in before  # kept its layer
        e.layer.value = 2
        assert "layer 2 of" in e.output.value
    elif group == "files":
        model = tiny(shift=0.01)
        path = tm.save(model, ROOT / "good" / "m.safetensors", dtype=torch.float32)
        assert tm.fingerprint(tm.load(path)) == tm.fingerprint(model)


@pytest.mark.parametrize("group, call, err, words", ROWS)
def test_export_bad_input_raises_the_packages_error(group, call, err, words):
    with pytest.raises(err) as info:
        call()
    assert_the_packages_error(info, words)
    _good(group)  # a good call works right after


# ------------------------------------------------------ rows with an answer

def steps_rule(d_model: int) -> int:
    """``steps_for`` as its docstring states it: the steps of the narrowest
    table width at or above ``d_model``, else of the widest."""
    at_or_above = [s for w, s in sorted(catalogue.STEPS_BY_D_MODEL.items()) if w >= d_model]
    return at_or_above[0] if at_or_above else catalogue.STEPS_BY_D_MODEL[
        max(catalogue.STEPS_BY_D_MODEL)]


def block_out(eps):
    b = mc.TransformerBlock(8, 2, seed=0, eps=eps)
    return b(X), b.to_torch().eval()(X)


def block_after(eps):
    b = mc.TransformerBlock(8, 2, seed=0)
    b.eps = eps
    return b(X), b.to_torch().eval()(X)


def loaded(h, d_k, trained):
    m = in_assets(lambda: wx.load_tiny(h, d_k, trained))()
    seeded = tm.fingerprint(tm.TinyTransformer(m.cfg, catalogue.SEED))
    return (m.cfg.h, m.cfg.d_k, tm.fingerprint(m) != seeded)


def written(model):
    path = wx.write_tiny_weights(model, ROOT / "answers" / "m.f32")
    return np.frombuffer(path.read_bytes(), dtype="<f4")


def _answers():
    """(call, independent answer, comparison) rows."""
    A = []

    def add(ident, call, answer, same=lambda a, b: a == b):
        A.append(pytest.param(call, answer, same, id=ident))

    widths = sorted(catalogue.STEPS_BY_D_MODEL)
    for d in [1, 2, *widths, *(w + 1 for w in widths), 100, 10**6]:
        add(f"steps_for-{d}", lambda d=d: catalogue.steps_for(d), lambda d=d: steps_rule(d))
    for name, d in [("np-int64", np.int64(32)), ("np-int8", np.int8(64)),
                    ("tensor", torch.tensor(128))]:
        add(f"steps_for-{name}", lambda d=d: catalogue.steps_for(d),
            lambda d=d: steps_rule(int(d)))
    for (h, d_k, trained), held in RIGHT_FILES.items():
        add(f"load_tiny-{h}x{d_k}-{trained}", lambda a=(h, d_k, trained): loaded(*a),
            lambda a=(h, d_k, trained): a)
    state = tiny().state_dict()
    add("write_tiny_weights-bytes", lambda: written(tiny()),
        lambda: torch.cat([t.reshape(-1) for t in state.values()]).numpy(),
        np.array_equal)
    near = lambda a, b: torch.allclose(a, b, atol=1e-5)  # noqa: E731
    for eps in [1e-5, np.float64(1e-3), 1.0, 1e-12]:
        add(f"block-eps-{eps}", lambda e=eps: block_out(e)[0],
            lambda e=eps: block_out(e)[1], near)
    for eps in [1e-3, 0.5]:
        add(f"block-eps-set-after-{eps}", lambda e=eps: block_after(e)[0],
            lambda e=eps: block_after(e)[1], near)
    return A


ANSWERS = _answers()


@pytest.mark.parametrize("call, answer, same", ANSWERS)
def test_export_good_input_gives_the_right_answer(call, answer, same):
    got, want = call(), answer()
    assert same(got, want), (got, want)


def test_explorer_layer_refusal_keeps_the_control_and_the_picture():
    """The refused layer leaves the control on its layer and the picture of
    it; the next good layer draws (the "recovers" of issue 30)."""
    e = AttentionExplorer(source="untrained", h=2, d_k=8, layer=2)
    html = e.output.value
    with pytest.raises(InputError, match=r"layer must be one of \[1, 2\].*got int 7"):
        e.layer.value = 7
    assert e.layer.value == 2 and e.layer.index == 1 and e.output.value == html
    e.layer.value = 1
    assert "layer 1 of 2" in e.output.value


def test_build_refuses_before_writing_anything():
    """A refused build leaves no half-written site behind."""
    out = ROOT / "never"
    with pytest.raises(InputError, match="graphs has no"):
        build_with_results([("precomputed", {})], out)()
    assert not (out / "manifest.json").exists()
    assert list(out.rglob("*.f32")) == [] and list(out.rglob("*.onnx")) == []


def test_save_under_a_file_leaves_the_file_alone():
    before = A_FILE.read_text()
    with pytest.raises(InputError, match="is a file"):
        tm.save(tiny(), A_FILE / "m.safetensors")
    assert A_FILE.is_file() and A_FILE.read_text() == before


def test_export_table_size():
    """At least 90 rows (issue 30's share of this file), in every group."""
    groups = {}
    for p in ROWS:
        groups[p.values[0]] = groups.get(p.values[0], 0) + 1
    print(groups, len(ROWS), len(ANSWERS))
    assert len(ROWS) + len(ANSWERS) >= 90
    assert min(groups.values()) >= 5 and len(groups) == 5
    assert len(ANSWERS) >= 20
