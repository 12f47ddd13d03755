"""Bad input to the training step and the training export (issue 30):
``tiny_model.step`` (the checked ``train_step`` around the traced
``_train_step_core``, ``param_shapes``, ``param_names``, ``noise_pool``),
``tiny_model``'s new knobs, and ``web_train``'s build helpers. Each row
asserts the package's own one-line error naming what was wrong; the last
tests assert correct answers for the inputs that are allowed."""
from __future__ import annotations

import math

import pytest
import torch
from bad_input_checks import assert_the_packages_error

from mhacourse import tasks, web_train
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import step as st

H, D_K = 2, 4  # d_model 8: every row is fast
CFG = tm.TinyConfig(h=H, d_k=D_K)


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def start(n_layers=2):
    model = tm.TinyTransformer(tm.TinyConfig(h=H, d_k=D_K, n_layers=n_layers))
    P = tuple(p.detach().clone() for p in model.state_dict().values())
    return P, tuple(torch.zeros_like(p) for p in P), tuple(torch.zeros_like(p) for p in P)


X = tasks.sample(4, seed=0)[0]  # (4, 16)


def step_args(**change):
    P, M, V = start()
    args = dict(params=P, m=M, v=V, s=0, steps=800, x=X, heads=torch.zeros(H))
    return args | change


def with_item(group, i, value, **change):
    """step_args with tensor ``i`` of ``group`` ("params", "m", "v") replaced."""
    args = step_args(**change)
    tensors = list(args[group])
    tensors[i] = value(tensors[i]) if callable(value) else value
    return args | {group: tuple(tensors)}


def nan_at(t):
    t = t.clone()
    t.view(-1)[0] = float("nan")
    return t


def ids(value, L=16):
    x = X[:, :L].clone()
    x[0, 1] = value
    return x


N = len(st.param_names())
STEP_ROWS = [
    # the lists of tensors
    ("params-tensor", lambda: step_args(params=torch.zeros(3)), "params"),
    ("params-None", lambda: step_args(params=None), "params"),
    ("params-short", lambda: step_args(params=start()[0][:-1]), "params"),
    ("params-empty", lambda: step_args(params=()), "params"),
    ("m-short", lambda: step_args(m=start()[1][:-1]), "params, m and v"),
    ("v-short", lambda: step_args(v=start()[2][:-1]), "params, m and v"),
    ("m-empty", lambda: step_args(m=()), "params, m and v"),
    ("v-long", lambda: step_args(v=start()[2] + (torch.zeros(1),)), "params, m and v"),
    ("m-None", lambda: step_args(m=None), "m must be"),
    ("v-string", lambda: step_args(v="zeros"), "v must be"),
    # the tensors
    ("params-NaN", lambda: with_item("params", 0, nan_at), "NaN"),
    ("params-inf", lambda: with_item("params", N - 1, lambda t: t + math.inf), "inf"),
    ("m-NaN", lambda: with_item("m", 5, nan_at), "m blocks.0.W_1"),
    ("v-negative", lambda: with_item("v", 0, lambda t: t - 1), "negative"),
    ("v-NaN", lambda: with_item("v", 2, nan_at), "NaN"),
    ("params-int", lambda: with_item("params", 0, lambda t: t.long()), "float32"),
    ("params-float64", lambda: with_item("params", 3, lambda t: t.double()), "float32"),
    ("m-float16", lambda: with_item("m", 1, lambda t: t.half()), "float32"),
    ("params-bool", lambda: with_item("params", 2, lambda t: t > 0), "float32"),
    ("params-list", lambda: with_item("params", 2, lambda t: t.tolist()), "float32"),
    ("params-b1-shape", lambda: with_item("params", 6, torch.zeros(7)), "shape"),
    ("params-W_E-1d", lambda: with_item("params", 0, torch.zeros(8)), "W_E"),
    ("params-W_E-empty", lambda: with_item("params", 0, torch.zeros(288, 0)), "W_E"),
    ("params-other-width", lambda: with_item("params", 14, torch.zeros(12, 12)), "shape"),
    ("m-other-shape", lambda: with_item("m", 0, torch.zeros(8, 288)), "shape"),
    # s and steps
    ("s-minus-1", lambda: step_args(s=-1), "s must"),
    ("s-at-end", lambda: step_args(s=800), "past the end"),
    ("s-past-end", lambda: step_args(s=900, steps=800), "past the end"),
    ("s-NaN", lambda: step_args(s=float("nan")), "s must"),
    ("s-inf", lambda: step_args(s=math.inf), "s must"),
    ("s-fraction", lambda: step_args(s=1.5), "s must"),
    ("s-string", lambda: step_args(s="0"), "s must"),
    ("s-None", lambda: step_args(s=None), "s must"),
    ("s-bool", lambda: step_args(s=True), "s must"),
    ("s-tensor-NaN", lambda: step_args(s=torch.tensor(float("nan"))), "s must"),
    ("s-vector", lambda: step_args(s=torch.zeros(2)), "s must"),
    ("steps-0", lambda: step_args(steps=0), "steps must"),
    ("steps-negative", lambda: step_args(steps=-5), "steps must"),
    ("steps-NaN", lambda: step_args(steps=float("nan")), "steps must"),
    ("steps-huge", lambda: step_args(steps=10**9), "steps must"),
    ("steps-string", lambda: step_args(steps="800"), "steps must"),
    ("steps-complex", lambda: step_args(steps=800j), "steps must"),
    # the batch
    ("x-float", lambda: step_args(x=X.float()), "x must"),
    ("x-bool", lambda: step_args(x=X > 3), "x must"),
    ("x-1d", lambda: step_args(x=X[0]), "x must"),
    ("x-3d", lambda: step_args(x=X[None]), "x must"),
    ("x-no-rows", lambda: step_args(x=X[:0]), "x must"),
    ("x-list", lambda: step_args(x=X.tolist()), "x must"),
    ("x-None", lambda: step_args(x=None), "x must"),
    ("x-L1-nothing-scored", lambda: step_args(x=X[:, :1]), "position 0 is never scored"),
    ("x-L17", lambda: step_args(x=torch.cat([X, X[:, :1]], 1)), "positions"),
    ("x-id-vocab", lambda: step_args(x=ids(288)), "word ids in 0..287"),
    ("x-id-negative", lambda: step_args(x=ids(-1)), "wrap around"),
    ("x-id-huge", lambda: step_args(x=ids(10**6)), "word ids"),
    # heads, warm-up, layers
    ("heads-3-of-8", lambda: step_args(heads=torch.zeros(3)), "heads"),
    ("heads-16-of-8", lambda: step_args(heads=torch.zeros(16)), "heads"),
    ("heads-empty", lambda: step_args(heads=torch.zeros(0)), "heads"),
    ("heads-2d", lambda: step_args(heads=torch.zeros(2, 1)), "heads"),
    ("heads-list", lambda: step_args(heads=[0, 0]), "heads"),
    ("heads-None", lambda: step_args(heads=None), "heads"),
    ("warmup-negative", lambda: step_args(warmup=-1), "warmup"),
    ("warmup-NaN", lambda: step_args(warmup=float("nan")), "warmup"),
    ("warmup-string", lambda: step_args(warmup="100"), "warmup"),
    ("warmup-None", lambda: step_args(warmup=None), "warmup"),
    ("layer_on-3", lambda: step_args(layer_on=torch.ones(3)), "layer_on"),
    ("layer_on-half", lambda: step_args(layer_on=torch.tensor([1.0, 0.5])), "layer_on"),
    ("layer_on-NaN", lambda: step_args(layer_on=torch.tensor([1.0, math.nan])), "layer_on"),
    ("layer_on-list", lambda: step_args(layer_on=[1, 0]), "layer_on"),
    ("clip-negative", lambda: step_args(clip=-1.0), "clip"),
    ("clip-NaN", lambda: step_args(clip=float("nan")), "clip"),
    ("clip-inf", lambda: step_args(clip=float("inf")), "clip"),
    ("clip-string", lambda: step_args(clip="1"), "clip"),
    ("clip-bool", lambda: step_args(clip=True), "clip"),
]


@pytest.mark.parametrize("name,make,arg", STEP_ROWS, ids=[r[0] for r in STEP_ROWS])
def test_train_step_refuses(name, make, arg):
    args = make()
    with pytest.raises(ValueError) as info:
        st.train_step(**args)
    assert_the_packages_error(info, arg)


def _tmp_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    return f


BUILD_ROWS = [
    # the page's sizes: SIZE_MESSAGES' words
    ("sizes-h-0", lambda t: web_train.check_sizes(0, 8), "h must"),
    ("sizes-h-17", lambda t: web_train.check_sizes(17, 4), "h must"),
    ("sizes-h-fraction", lambda t: web_train.check_sizes(2.5, 8), "h must"),
    ("sizes-h-string", lambda t: web_train.check_sizes("4", 8), "h must"),
    ("sizes-h-bool", lambda t: web_train.check_sizes(True, 8), "h must"),
    ("sizes-h-None", lambda t: web_train.check_sizes(None, 8), "h must"),
    ("sizes-d_k-1", lambda t: web_train.check_sizes(4, 1), "d_k must"),
    ("sizes-d_k-65", lambda t: web_train.check_sizes(4, 65), "d_k must"),
    ("sizes-d_k-float", lambda t: web_train.check_sizes(4, 8.0), "d_k must"),
    ("sizes-d_k-NaN", lambda t: web_train.check_sizes(4, float("nan")), "d_k must"),
    ("sizes-d_model-512", lambda t: web_train.check_sizes(8, 64), "d_model = h"),
    ("sizes-d_model-272", lambda t: web_train.check_sizes(16, 17), "= 272"),
    ("sizes-budget-3", lambda t: web_train.check_sizes(3, 8, True), "does not divide"),
    ("sizes-budget-5", lambda t: web_train.check_sizes(5, 8, budget=True), "divide"),
    ("sizes-budget-string", lambda t: web_train.check_sizes(4, 16, "yes"), "budget"),
    # the data
    ("batches-0", lambda t: web_train.batches(0), "steps"),
    ("batches-huge", lambda t: web_train.batches(10**9), "steps"),
    ("batches-past-max", lambda t: web_train.batches(web_train.MAX_STEPS + 1), "steps"),
    ("batches-negative", lambda t: web_train.batches(-1), "steps"),
    ("batches-fraction", lambda t: web_train.batches(1.5), "steps"),
    ("batches-string", lambda t: web_train.batches("10"), "steps"),
    ("batches-seed", lambda t: web_train.batches(2, seed=-1), "seed"),
    ("write_data-None", lambda t: web_train.write_data(None), "out"),
    ("write_data-file", lambda t: web_train.write_data(_tmp_file(t)), "is a file"),
    # the graphs
    ("export-kind", lambda t: web_train.export("bogus", t / "g.onnx"), "kind"),
    ("export-kind-None", lambda t: web_train.export(None, t / "g.onnx"), "kind"),
    ("export-path-None", lambda t: web_train.export("step", None), "path"),
    ("export-path-int", lambda t: web_train.export("step", 5), "path"),
    ("export-path-empty", lambda t: web_train.export("init", ""), "path"),
    ("export_job-folder-None", lambda t: web_train.export_job(None, "step"), "folder"),
    ("export_job-kind", lambda t: web_train.export_job(t, "nope"), "kind"),
    ("export_job-folder-file", lambda t: web_train.export_job(_tmp_file(t), "init"),
     "is a file"),
    ("trace-kind", lambda t: web_train.trace("x"), "kind"),
    ("graph_io-kind", lambda t: web_train.graph_io(3), "kind"),
    ("manifest-empty", lambda t: web_train.manifest_entry({}, t), "graphs"),
    ("manifest-None", lambda t: web_train.manifest_entry(None, t), "graphs"),
    ("manifest-partial", lambda t: web_train.manifest_entry(
        {"step": {"file": "step.onnx", "bytes": 1, "export_seconds": 1.0}}, t), "graphs"),
    ("manifest-data-list", lambda t: web_train.manifest_entry(
        {k: {"file": f"{k}.onnx", "bytes": 1, "export_seconds": 1.0}
         for k in web_train.STEP_NAMES}, t, ["pool.f16"]), "data must be None"),
    ("manifest-data-partial", lambda t: web_train.manifest_entry(
        {k: {"file": f"{k}.onnx", "bytes": 1, "export_seconds": 1.0}
         for k in web_train.STEP_NAMES}, t, {"pool": {"file": "pool.f16"}}), "data must be None"),
    ("data_job-file", lambda t: web_train.data_job(_tmp_file(t)), "is a file"),
    ("manifest-folder-None", lambda t: web_train.manifest_entry(
        {k: {"file": f"{k}.onnx", "bytes": 1, "export_seconds": 1.0}
         for k in web_train.STEP_NAMES}, None), "folder"),
    # shapes, names, the pool
    ("param_shapes-string", lambda t: st.param_shapes("8"), "d_model"),
    ("param_shapes-0", lambda t: st.param_shapes(0), "d_model"),
    ("param_shapes-negative", lambda t: st.param_shapes(-8), "d_model"),
    ("param_shapes-bool", lambda t: st.param_shapes(True), "d_model"),
    ("param_shapes-float", lambda t: st.param_shapes(8.0), "d_model"),
    ("param_shapes-cfg", lambda t: st.param_shapes(8, cfg="tiny"), "cfg"),
    ("param_names-negative", lambda t: st.param_names(-1), "n_layers"),
    ("param_names-string", lambda t: st.param_names("2"), "n_layers"),
    ("param_names-list", lambda t: st.param_names([2]), "n_layers"),
    ("noise_pool-3", lambda t: st.noise_pool(3), "power of 2"),
    ("noise_pool-0", lambda t: st.noise_pool(0), "size"),
    ("noise_pool-huge", lambda t: st.noise_pool(2**30), "size"),
    ("noise_pool-seed", lambda t: st.noise_pool(1024, seed=-1), "seed"),
    ("noise_pool-list", lambda t: st.noise_pool([1024]), "size"),
    # the knobs in Python
    ("identical_heads-int", lambda t: tm.TinyTransformer(CFG, 0, identical_heads=1),
     "identical_heads"),
    ("train-data_seed", lambda t: tm.train(CFG, 1, data_seed=-1), "data_seed"),
    ("train-eval_every-negative", lambda t: tm.train(CFG, 1, eval_every=-1), "eval_every"),
    ("train-eval_every-fraction", lambda t: tm.train(CFG, 1, eval_every=1.5), "eval_every"),
    ("train-identical-string", lambda t: tm.train(CFG, 1, identical_heads="yes"),
     "identical_heads"),
    ("evaluate-head_mask-shape", lambda t: tm.evaluate(
        tm.TinyTransformer(CFG), tm.heldout(n=16), head_mask=torch.ones(3, 2)), "head_mask"),
    ("evaluate-head_mask-2", lambda t: tm.evaluate(
        tm.TinyTransformer(CFG), tm.heldout(n=16), head_mask=torch.full((2, 2), 2.0)),
     "head_mask"),
    ("head_scores-head_mask-NaN", lambda t: tm.head_scores(
        tm.TinyTransformer(CFG), tm.heldout(n=16),
        head_mask=torch.full((2, 2), math.nan)), "head_mask"),
    ("forward-head_mask-list", lambda t: tm.TinyTransformer(CFG)(X, head_mask=[[1, 1]] * 2),
     "head_mask"),
]


@pytest.mark.parametrize("name,call,arg", BUILD_ROWS, ids=[r[0] for r in BUILD_ROWS])
def test_build_helpers_refuse(name, call, arg, tmp_path):
    with pytest.raises(ValueError) as info:
        call(tmp_path)
    assert_the_packages_error(info, arg)


# --- and the inputs that are allowed get the right answer ---------------------------

@pytest.mark.parametrize("s,steps", [(0, 800), (799, 800), (torch.tensor(3.0), 10.0),
                                     (torch.tensor(2), torch.tensor(5))])
def test_train_step_equals_its_core(s, steps):
    """The checked step is the core on the same numbers, whatever form s and
    steps take (int, float, () tensor); its moments, per weight, are the
    core's flat ones cut into the weights' shapes."""
    P, M, V = start()
    got = st.train_step(P, M, V, s, steps, X, torch.zeros(H))
    want = st._train_step_core(P, st._flat(M), st._flat(V), torch.tensor(float(s)),
                              torch.tensor(float(steps)), X, torch.zeros(H))
    assert torch.equal(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        assert torch.equal(a, b)
    for k in (2, 3):  # m, v
        assert [tuple(t.shape) for t in got[k]] == [tuple(p.shape) for p in P]
        assert torch.equal(st._flat(got[k]), want[k])


def test_train_step_takes_one_layer_and_the_knobs():
    P, M, V = start(n_layers=1)
    loss, P1, _, _, _, norm = st.train_step(P, M, V, 0, 10, X, torch.zeros(H), warmup=0)
    assert len(P1) == len(st.param_names(1)) and math.isfinite(loss.item())
    P, M, V = start()
    on = torch.tensor([1, 0])
    _, P2, _, _, grads, _ = st.train_step(P, M, V, 0, 10, X, torch.zeros(H), layer_on=on)
    for name, g, a, b in zip(st.param_names(), grads, P2, P):
        if name.startswith("blocks.1."):
            assert torch.equal(g, torch.zeros_like(g)) and torch.equal(a, b), name


def test_train_step_clip_off_is_zero_or_none():
    """clip=0 and clip=None both leave the gradients unscaled; the default
    (1, as train()) scales them when their norm is over 1."""
    P, M, V = start()
    on = st.train_step(P, M, V, 0, 10, X, torch.zeros(H))
    off = [st.train_step(P, M, V, 0, 10, X, torch.zeros(H), clip=c) for c in (0, None)]
    for a, b in zip(off[0][1], off[1][1]):
        assert torch.equal(a, b)
    big = st.train_step(P, M, V, 0, 10, X, torch.zeros(H), clip=1e-3)
    assert on[5].item() > 1e-3  # the norm is over the small bound: it clips
    assert not all(torch.equal(a, b) for a, b in zip(big[2], off[0][2]))  # m differs


def test_train_refuses_a_bad_clip():
    cfg = tm.TinyConfig(h=2, d_k=4)
    for bad in (0, -1.0, float("nan"), "1", True):
        with pytest.raises(ValueError) as info:
            tm.train(cfg, 1, clip=bad)
        assert_the_packages_error(info, "clip")


def test_page_sizes_and_messages():
    """The accepted sizes pass; every limit's message is a template the page
    fills with the same names."""
    for h, d_k in [(1, 2), (16, 16), (3, 20), (4, 64)]:
        web_train.check_sizes(h, d_k)
    for h in (1, 2, 4, 8, 16):
        web_train.check_sizes(h, 64 // h, budget=True)
    words = {**web_train.limits(), "h": 3, "d_k": 8, "d_model": 24}
    for key, template in web_train.SIZE_MESSAGES.items():
        text = template.format(**words)
        assert "{" not in text and "\n" not in text, key
    assert len(web_train.batches(2)) == 2
    assert st.param_shapes(8)["W_E"] == (288, 8)


def test_at_least_eighty_rows():
    assert len(STEP_ROWS) + len(BUILD_ROWS) >= 80
