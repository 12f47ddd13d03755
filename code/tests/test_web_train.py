"""The in-browser training graphs (mhacourse.web_train), checked in Python
with onnxruntime against PyTorch: loss and gradients, SGD and AdamW runs, the
initial weights, the forward pass and the evaluation, at many (h, d_k) from
the one exported graph. (tests/test_train_live.py runs them in Chromium.)

The graphs are the built site's (``_generated/explorer-data/train``, which
``make book`` writes before ``make test`` runs); without a build they are
exported here once (a few minutes).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mhacourse import attention, block, explorer, tasks, web_export, web_inputs, web_train
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import step as st
from mhacourse.tiny_model import training

ort = pytest.importorskip("onnxruntime")

BUILT = Path(__file__).resolve().parents[2] / "_generated" / "explorer-data" / "train"
# d_model = 2 (h = 1, d_k = 2) is allowed but left out here: LayerNorm over
# two numbers is so ill-conditioned that PyTorch's own float32 gradients
# differ from float64 by 1.6e-4 there.
SIZES = [(3, 8), (4, 16), (3, 20), (1, 64), (16, 4), (7, 5), (16, 16), (2, 2)]
N = len(st.param_names())


ort.set_default_logger_severity(3)  # not its notes on constant folding


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    folder = BUILT
    if not all((BUILT / f"{k}.onnx").exists() for k in web_train.STEP_NAMES):
        folder = tmp_path_factory.mktemp("train")
        for kind in web_train.STEP_NAMES:
            web_train.export(kind, folder / f"{kind}.onnx")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return {k: ort.InferenceSession(str(folder / f"{k}.onnx"), so,
                                    providers=["CPUExecutionProvider"])
            for k in web_train.STEP_NAMES}


def run(session, *arrays, outputs=None, **named):
    """The graph on ``arrays`` (its first inputs, in order) and ``named``
    inputs; an input left out is web_inputs.INPUTS' example: the knobs'
    defaults (warm-up on, every layer and head on, no identical start,
    clipping on)."""
    names = [i.name for i in session.get_inputs()]
    heads = named.pop("heads", None)  # forward and evaluate read h from head_mask
    if heads is None and len(arrays) > N + 1 and "head_mask" in names:
        heads, arrays = arrays[N + 1], arrays[:N + 1] + arrays[N + 2:]
    feed = dict(zip(names, arrays), **named)
    h = len(heads) if heads is not None else 1
    kind = next(k for k, inputs in web_inputs.INPUTS.items()
                if names[len(names) - len(inputs):] == list(inputs))
    off = {**{k: v.numpy() for k, v in web_inputs._example_inputs(
        kind, tm.TinyConfig(h=h, d_k=2)).items()}, "heads": heads}
    feed = {n: np.asarray(feed[n] if n in feed else off[n]) for n in names}
    return session.run(outputs, feed)


ONNX_TYPES = {"float32": "tensor(float)", "float16": "tensor(float16)",
              "int64": "tensor(int64)"}


def test_the_graphs_inputs_are_the_declared_ones(graphs):
    """Every exported graph takes the weights (the step also AdamW's
    moments), then web_inputs.INPUTS' named inputs in order, each of its
    declared shape (h, d_model, L and N symbolic; P the pool's length) and
    type; the docstring's table is made from the same declaration."""
    pool = st.noise_pool().numel()
    for kind, session in graphs.items():
        declared = web_inputs.INPUTS[kind]
        inputs = session.get_inputs()
        assert len(inputs) - len(declared) == (N + 2 if kind == "step" else
                                               0 if kind == "init" else N), kind
        if kind == "step":  # AdamW's moments: one vector each, of every weight
            assert [(i.name, i.shape) for i in inputs[N:N + 2]] == \
                [(m, ["n_weights"]) for m in web_train.MOMENTS]
        got = [(i.name, i.shape, i.type) for i in inputs[len(inputs) - len(declared):]]
        assert got == [(name, [pool if s == "P" else s for s in shape], ONNX_TYPES[dtype])
                       for name, (shape, dtype, *_) in declared.items()], kind
    assert web_inputs.inputs_table() in web_train.__doc__
    for kind, inputs in web_inputs.INPUTS.items():
        for name, (shape, dtype, _, meaning) in inputs.items():
            assert f"``{kind}``" in web_train.__doc__ and meaning in web_train.__doc__


def test_the_examples_are_the_declared_shapes():
    """What a graph is traced with (web_inputs._example_inputs, and the Patch
    graphs' pairs) has the declared shapes at the example's sizes, and the
    export's dynamic axes are exactly the declared symbolic ones."""
    cfg = web_train.EXAMPLE
    for kind, (_, args, names, _) in web_train.graph_functions().items():
        declared = web_inputs.INPUTS[kind]
        assert names[len(names) - len(declared):] == list(declared), kind
        named = args[len(args) - len(declared):]
        sizes = {"P": st.noise_pool().numel(), "d_model": cfg.d_model, "h": cfg.h}
        for t, (name, (shape, dtype, *_)) in zip(named, declared.items(), strict=True):
            assert t.dtype == getattr(torch, dtype), (kind, name)
            assert len(t.shape) == len(shape) and all(
                s not in sizes and not isinstance(s, int) or n == sizes.get(s, s)
                for n, s in zip(t.shape, shape)), (kind, name, tuple(t.shape), shape)
        dynamic = web_train._dynamic_shapes(kind, args)[len(args) - len(declared):]
        for d, (name, (shape, *_)) in zip(dynamic, declared.items(), strict=True):
            want = {i: s for i, s in enumerate(shape) if isinstance(s, str) and s != "P"}
            assert {i: dim.__name__ for i, dim in (d or {}).items()} == want, (kind, name)


def numpy(ts):
    return [t.detach().numpy().copy() for t in ts]


def start(h, d_k, seed=0):
    """train()'s initial model, as tensors in param_names order."""
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed)
    return tuple(p.detach().clone() for p in model.state_dict().values())


def scalar(x):
    return np.array(x, dtype=np.float32)


def step_outputs(session, P, M, V, s, steps, x, h, **knobs):
    """One step of the graph. ``M`` and ``V`` per weight, as train_step takes
    them: joined into the graph's one vector each, and its new ones cut back."""
    r = run(session, *P, flat(M), flat(V), s=scalar(s), steps=scalar(steps), x=x.numpy(),
            heads=np.zeros(h, np.float32), **knobs)
    loss, norm, P = float(r[0]), float(r[1]), r[2:2 + N]
    return loss, norm, P, cut(r[2 + N], P), cut(r[3 + N], P), r[4 + N:4 + 2 * N]


def flat(arrays) -> np.ndarray:
    """step._flat in NumPy: every array's numbers, one after another."""
    return np.concatenate([np.asarray(a).reshape(-1) for a in arrays])


def cut(vector, like) -> list:
    """:func:`flat` undone: ``vector`` in the shapes of ``like``'s arrays."""
    ends = np.cumsum([a.size for a in like])
    return [part.reshape(a.shape) for part, a in
            zip(np.split(vector, ends[:-1]), like, strict=True)]


@pytest.mark.parametrize("h,d_k", SIZES)
def test_one_step_loss_and_gradients_equal_autograd(graphs, h, d_k):
    """One graph, every size: loss and every gradient within 1e-5 of
    PyTorch's autograd on the model's checked forward."""
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=1)
    x, y, kind = tasks.sample(32, seed=5)
    loss = tm.loss_fn(model(x), y, kind)
    loss.backward()
    P = numpy(model.state_dict().values())
    Z = [np.zeros_like(p) for p in P]
    got_loss, _, _, _, _, grads = step_outputs(graphs["step"], P, Z, Z, 0, 800, x, h)
    assert abs(got_loss - loss.item()) <= 1e-5, (got_loss, loss.item())
    for name, g, p in zip(st.param_names(), grads, model.parameters()):
        err = float(np.abs(g - p.grad.numpy()).max())
        assert err <= 1e-5, f"{name}: gradient differs by {err:.2e}"


def test_fifty_sgd_steps_of_the_graphs_gradients_match_pytorch(graphs):
    """Plain SGD (theta -= 0.05 g) with the exported gradients, 50 steps,
    against PyTorch's autograd and torch.optim.SGD: parameters within 1e-4."""
    h, d_k, lr = 4, 16, 0.05
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    P = numpy(model.state_dict().values())
    Z = [np.zeros_like(p) for p in P]
    g = torch.Generator().manual_seed(3)
    for _ in range(50):
        x, y, kind = tasks.sample(32, generator=g)
        *_, grads = step_outputs(graphs["step"], P, Z, Z, 0, 800, x, h)
        P = [p - lr * gr for p, gr in zip(P, grads)]
        opt.zero_grad()
        tm.loss_fn(model(x), y, kind).backward()
        opt.step()
    for name, p, q in zip(st.param_names(), P, model.state_dict().values()):
        err = float(np.abs(p - q.numpy()).max())
        assert err <= 1e-4, f"{name}: {err:.2e} after 50 SGD steps"


def test_adamw_steps_equal_train_and_reach_its_accuracy(graphs):
    """200 AdamW steps of the exported graph from train()'s initial weights
    and batches: the loss follows train()'s, and held-out accuracy (from the
    exported evaluation graph) is within 1 point of tm.train's."""
    h, d_k, steps = 4, 16, 200
    ref, metrics = tm.train(tm.TinyConfig(h=h, d_k=d_k), steps, seed=web_train.SEED)
    P = numpy(start(h, d_k, web_train.SEED))
    M = [np.zeros_like(p) for p in P]
    V = [np.zeros_like(p) for p in P]
    xs = web_train.batches(steps)
    losses = []
    for s in range(steps):
        loss, norm, P, M, V, _ = step_outputs(graphs["step"], P, M, V, s, steps, xs[s], h)
        losses.append(loss)
        assert np.isfinite(loss) and np.isfinite(norm)
    x_held = tm.heldout()[0]
    acc = run(graphs["evaluate"], *P, x_held.numpy(), np.zeros(h, np.float32))[0]
    assert abs(float(acc[0]) - metrics["accuracy"]) <= 0.01, (acc, metrics)
    tail = np.mean(losses[-max(1, steps // 20):])
    assert abs(tail - metrics["train_loss"]) <= 0.05, (tail, metrics["train_loss"])


def test_first_step_leaves_untouched_rows_alone(graphs):
    """Embedding rows no batch has touched have m = v = 0: AdamW's eps keeps
    their update 0, not 0/0 (the ONNX optimiser folds + 1e-8 away, so the
    export leaves it off; this catches it coming back)."""
    h, d_k = 3, 8
    P = numpy(start(h, d_k))
    Z = [np.zeros_like(p) for p in P]
    x, _, _ = tasks.sample(32, seed=9)
    _, _, P1, M1, V1, _ = step_outputs(graphs["step"], P, Z, Z, 0, 800, x, h)
    for arrays in (P1, M1, V1):
        assert all(np.isfinite(a).all() for a in arrays)
    unseen = sorted(set(range(tm.TinyConfig().vocab_size)) - set(x.unique().tolist()))
    assert unseen, "the batch used every word"
    np.testing.assert_array_equal(P1[0][unseen], P[0][unseen])


@pytest.mark.parametrize("h,d_k", [(3, 20), (16, 4)])
def test_a_hundred_steps_stay_finite(graphs, h, d_k):
    P = numpy(start(h, d_k))
    M = [np.zeros_like(p) for p in P]
    V = [np.zeros_like(p) for p in P]
    xs = web_train.batches(100)
    for s in range(100):
        loss, norm, P, M, V, _ = step_outputs(graphs["step"], P, M, V, s, 800, xs[s], h)
        assert np.isfinite(loss) and np.isfinite(norm), f"step {s}: {loss}, {norm}"
    assert all(np.isfinite(p).all() for p in P)
    assert loss < 5.0, f"h={h}, d_k={d_k}: loss {loss} after 100 steps"


@pytest.mark.parametrize("h,d_k", [(3, 20), (1, 2), (16, 16)])
def test_init_graph_equals_init_core(graphs, h, d_k):
    pool = st.noise_pool()
    for seed in (0, 7):
        want = st._init_core(pool, torch.zeros(h * d_k), torch.tensor(seed))
        got = run(graphs["init"], pool.half().numpy(), np.zeros(h * d_k, np.float32),
                  np.array(seed, np.int64), np.zeros(h, np.float32))
        assert len(got) == len(want)
        for name, a, b in zip(st.param_names(), got, want):
            assert a.shape == tuple(b.shape), name
            np.testing.assert_allclose(a, b.numpy(), rtol=0, atol=1e-7, err_msg=name)
        # the identical start: TinyTransformer(identical_heads=True)'s weights
        same = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed, identical_heads=True)
        got = run(graphs["init"], pool.half().numpy(), np.zeros(h * d_k, np.float32),
                  np.array(seed, np.int64), np.zeros(h, np.float32), scalar(1))
        for (name, b), a in zip(same.state_dict().items(), got, strict=True):
            np.testing.assert_allclose(a, b.numpy(), rtol=0, atol=1e-7, err_msg=name)


def test_init_follows_the_models_rule():
    """_init_core's tensors have TinyTransformer's shapes, zeros and ones, and
    the spread of its N(0, 1/fan_in) draws (within 5 %)."""
    pool = st.noise_pool()
    for h, d_k in [(4, 16), (16, 16)]:
        ref = start(h, d_k)
        got = st._init_core(pool, torch.zeros(h * d_k), torch.tensor(0))
        for name, a, b in zip(st.param_names(), got, ref):
            assert a.shape == b.shape, name
            if b.std() == 0:
                assert torch.equal(a, b), name
            else:
                assert abs(a.std() / b.std() - 1) < 0.05, (name, a.std(), b.std())
    seeds = [st._init_core(pool, torch.zeros(64), torch.tensor(s))[0] for s in (0, 1)]
    assert not torch.equal(*seeds), "another seed gives other weights"


@pytest.mark.parametrize("h,d_k", [(3, 20), (4, 16), (16, 4)])
def test_forward_graph_gives_the_models_attention(graphs, h, d_k):
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=2)
    P = numpy(model.state_dict().values())
    for sentence in ["the cat sat on the mat", "it", "a b c d e f g h i j k l m n o p"]:
        ids = torch.tensor([tasks.word_ids(sentence)[:16]])
        logits, attention = model(ids, return_attention=True)
        got = run(graphs["forward"], *P, ids.numpy(), np.zeros(h, np.float32))
        np.testing.assert_allclose(got[0], logits.detach().numpy(), atol=1e-4)
        for a, b in zip(got[1:], attention):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-5, rtol=0)


def test_evaluate_graph_equals_the_package(graphs):
    model = tm.load(Path(__file__).resolve().parents[2] / "assets" / "models"
                    / "h4_dk8.safetensors")
    P = numpy(model.state_dict().values())
    x = tm.heldout()[0]
    acc, stats, role, named = run(graphs["evaluate"], *P, x.numpy(), np.zeros(4, np.float32))
    want = tm.evaluate(model)
    np.testing.assert_allclose(acc, [want["accuracy"], want["previous"], want["lookup"]],
                               atol=1e-6)
    scores = tm.head_scores(model)
    np.testing.assert_allclose(
        stats, [[[s[k] for k in st.STATISTICS] for s in layer] for layer in scores],
        atol=1e-5)
    roles = tm.head_roles(scores)
    got = [[st.STATISTICS[i] if ok else "mixed" for i, ok in zip(r, n)]
           for r, n in zip(role.tolist(), named.tolist())]
    assert got == roles


@pytest.mark.parametrize("h,d_k", [(4, 16), (3, 20)])
def test_the_knobs_are_inputs_of_the_step(graphs, h, d_k):
    """Warm-up off, clipping off and layer 2 off, as inputs of the one step graph: five
    steps equal step._train_step_core's (loss, norm <= 1e-5 relative), and
    block 2's weights stay exactly as they were."""
    P0 = start(h, d_k)
    P, M, V = numpy(P0), [np.zeros_like(p.numpy()) for p in P0], None
    V = [m.copy() for m in M]
    Pt, Mt = P0, torch.zeros_like(st._flat(P0))  # the core's moments: one vector each
    Vt = Mt.clone()
    xs = web_train.batches(5)
    on = np.array([1, 0], np.float32)
    for s in range(5):
        loss, norm, P, M, V, _ = step_outputs(graphs["step"], P, M, V, s, 800, xs[s], h,
                                              warmup=scalar(0), layer_on=on,
                                              clip=scalar(0))
        lt, Pt, Mt, Vt, _, nt = st._train_step_core(
            Pt, Mt, Vt, torch.tensor(float(s)), torch.tensor(800.0), xs[s],
            torch.zeros(h), torch.tensor(0.0), torch.from_numpy(on), 0.0)
        assert abs(loss - lt.item()) <= 1e-5 * lt.item()
        assert abs(norm - nt.item()) <= 1e-5 * nt.item()
    for name, a, b in zip(st.param_names(), P, P0):
        if name.startswith("blocks.1."):
            np.testing.assert_array_equal(a, b.numpy(), err_msg=name)


@pytest.mark.parametrize("h,d_k", [(4, 16), (3, 20)])
def test_ablation_and_layer_knob_of_forward_and_evaluate(graphs, h, d_k):
    """head_mask and layer_on on the forward and evaluate graphs give the
    package's numbers (_forward_core with the same head_mask and layer_on)."""
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=4)
    P = numpy(model.state_dict().values())
    g = torch.Generator().manual_seed(0)
    mask = (torch.rand(2, h, generator=g) > 0.5).float()
    mask[0, 0] = 0
    x = tm.heldout(n=64)[0]
    for on in ([1.0, 1.0], [1.0, 0.0], [0.0, 1.0]):
        layer_on = torch.tensor(on)
        with torch.no_grad():
            logits, attention = st._forward_with(tuple(model.state_dict().values()), x[:1],
                                                torch.zeros(h), mask, layer_on)
            want = st._evaluate_with(tuple(model.state_dict().values()), x,
                                    torch.zeros(h), mask, layer_on)
        got = run(graphs["forward"], *P, x[:1].numpy(), np.zeros(h, np.float32),
                  head_mask=mask.numpy(), layer_on=layer_on.numpy())
        np.testing.assert_allclose(got[0], logits.numpy(), atol=1e-4)
        for a, b in zip(got[1:], attention):
            np.testing.assert_allclose(a, b.numpy(), atol=1e-5)
        got = run(graphs["evaluate"], *P, x.numpy(), np.zeros(h, np.float32),
                  head_mask=mask.numpy(), layer_on=layer_on.numpy())
        np.testing.assert_allclose(got[0], want[0].numpy(), atol=1e-6)
        np.testing.assert_allclose(got[1], want[1].numpy(), atol=1e-5)
    acc_all_off = run(graphs["evaluate"], *P, x.numpy(), np.zeros(h, np.float32),
                      head_mask=np.zeros((2, h), np.float32))[0]
    assert np.isfinite(acc_all_off).all()  # every head off: a model, no NaN


@pytest.mark.parametrize("h,d_k", [(4, 16), (3, 20)])
def test_circuits_graph_equals_the_package(graphs, h, d_k):
    """The exported circuits graph gives _circuits_core's read-outs (<= 1e-5)
    on a trained-looking and an untrained model, from the pool as the page
    loads it (float16)."""
    from mhacourse.circuits import GRAPH_READOUTS, READOUTS
    from mhacourse.circuits.core import _circuits_core
    pool = st.noise_pool().half().float()  # as the page loads it
    table = web_train.baseline_table()
    row = table[(table[:, 0] == h * d_k) & (table[:, 1] == d_k)]
    assert row.shape == (1, 5), row
    for seed in (0, 3):
        params = start(h, d_k, seed)
        with torch.no_grad():
            want = dict(zip(READOUTS, _circuits_core(params, torch.zeros(h), pool), strict=True))
        got = run(graphs["circuits"], *numpy(params), np.zeros(h, np.float32))
        assert [o.name for o in graphs["circuits"].get_outputs()] == list(GRAPH_READOUTS)
        got = dict(zip(GRAPH_READOUTS, got, strict=True), comp_baseline=row[0, 2:])
        for name, b in want.items():
            a = got[name]
            assert a.shape == tuple(b.shape), name
            np.testing.assert_allclose(a, b.numpy(), atol=1e-5, rtol=0, err_msg=name)


def test_baseline_table_covers_every_size_the_page_allows():
    """One row per (h, d_k) that check_sizes accepts, each the package's
    composition_baseline of random heads of that size (<= 1e-5)."""
    from mhacourse.circuits import composition_baseline
    table = web_train.baseline_table()
    sizes = {(int(r[0]), int(r[1])) for r in table}
    allowed = {(h * d_k, d_k) for h in range(1, 17) for d_k in range(1, 65)
               if ok_size(h, d_k)}
    assert sizes == allowed and len(table) == len(allowed) == 568
    pool = st.noise_pool().half().float()
    for d_model, d_k in [(4, 2), (64, 16), (256, 16), (64, 64)]:
        r = table[(table[:, 0] == d_model) & (table[:, 1] == d_k)][0]
        for i, kind in enumerate("qkv"):
            want = composition_baseline(d_model, d_k, kind, noise=pool)
            assert abs(r[2 + i] - want) < 1e-5, (d_model, d_k, kind)


def ok_size(h, d_k) -> bool:
    try:
        web_train.check_sizes(h, d_k)
    except ValueError:
        return False
    return True


def test_batches_are_trains():
    """The page's batches are train()'s: its generator, in its order."""
    g = torch.Generator().manual_seed(10_000 + web_train.SEED)
    xs = web_train.batches(3)
    for s in range(3):
        assert torch.equal(xs[s], tasks.sample(32, generator=g)[0])


def test_sizes_the_page_accepts():
    web_train.check_sizes(3, 20)
    web_train.check_sizes(16, 16)
    for h, d_k in [(17, 4), (0, 8), (4, 1), (4, 65), (8, 64), (2.5, 8)]:
        with pytest.raises(ValueError):
            web_train.check_sizes(h, d_k)


def test_every_input_of_every_graph_is_read():
    """An example input passed twice to the exporter becomes one input, and
    the other is silently ignored (AdamW's m was, once): every graph input
    must feed some node. The circuits graph reads only the weights its
    read-outs depend on (no layer-2 feed-forward, no final LayerNorm shift),
    so there every input but those must be read, and those are exactly the
    weights _circuits_core's outputs have no gradient for."""
    onnx = pytest.importorskip("onnx")
    folder = BUILT if (BUILT / "step.onnx").exists() else None
    if folder is None:
        pytest.skip("no built graphs (the graphs fixture's tests export their own)")
    for kind in web_train.STEP_NAMES:
        model = onnx.load(str(folder / f"{kind}.onnx"))
        used = {i for n in model.graph.node for i in n.input}
        unused = [i.name for i in model.graph.input if i.name not in used]
        if kind == "circuits":
            assert sorted(unused) == sorted(circuits_unread()), unused
            continue
        assert unused == [], f"{kind}.onnx ignores {unused}"


@pytest.mark.parametrize("core,twin,args", [
    (attention._softmax_core, attention._softmax_fused,
     lambda: [torch.randn(3, 4, 7, 7).masked_fill(torch.ones(7, 7).triu(1).bool(),
                                                  float("-inf"))]),
    (block._layer_norm_core, block._layer_norm_fused,
     lambda: [3 * torch.randn(5, 6, 21) + 2, torch.randn(21), torch.randn(21)]),
    (training._loss_core, training._loss_rows,
     lambda: [4 * torch.randn(6, 9, 40), torch.randint(0, 40, (6, 9)),
              torch.randint(0, 3, (6, 9))]),
    (block._feed_forward_core, block._feed_forward_fused,
     lambda: [torch.randn(5, 6, 12), torch.randn(12, 20), torch.randn(20),
              torch.randn(20, 12), torch.randn(12), "gelu"]),
    (block._feed_forward_core, block._feed_forward_fused,
     lambda: [torch.randn(5, 6, 12), torch.randn(12, 20), torch.randn(20),
              torch.randn(20, 12), torch.randn(12), "relu"]),
])
def test_the_fused_twins_equal_the_package_cores(core, twin, args):
    """web_train.FUSED and STEP_FUSED: the graphs trace each core as its
    twin (softmax and LayerNorm one operation each; the loss on rows with
    its gradient written out; GELU keeping its erf for the gradient); the
    values and the gradients agree to float rounding (a causal mask's -inf
    included)."""
    torch.manual_seed(0)
    a = [t.requires_grad_() if torch.is_tensor(t) and t.is_floating_point() else t
         for t in args()]
    b = [t.detach().clone().requires_grad_(t.requires_grad) if torch.is_tensor(t) else t
         for t in a]
    want, got = core(*a), twin(*b)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    w = torch.randn_like(want)
    grad = ([t for t in a if torch.is_tensor(t) and t.requires_grad],
            [t for t in b if torch.is_tensor(t) and t.requires_grad])
    for ga, gb in zip(torch.autograd.grad((want * w).sum(), grad[0]),
                      torch.autograd.grad((got * w).sum(), grad[1]), strict=True):
        torch.testing.assert_close(gb, ga, rtol=1e-4, atol=1e-5)
    assert (core, twin) in web_train.STEP_FUSED


def test_only_the_step_traces_the_gradient_twin_of_gelu():
    """GELU's twin pays for itself in a gradient; a graph with none keeps
    onnxruntime's one-kernel Gelu (the twin made evaluate ~5 % slower)."""
    def erfs(kind):
        gm = web_train.trace(kind)
        return sum(n.target is torch.ops.aten.erf.default for n in gm.graph.nodes)
    assert (erfs("step"), erfs("forward")) == (2, 0)


def test_the_step_graph_holds_the_fused_operations_and_the_package_is_restored():
    """Every softmax and LayerNorm of the step (2 attention layers, 5 norms)
    is one ONNX operation, GELU computes erf once, the loss's gradient is
    softmax minus the targets, no operand is copied to the shape it has,
    and the trace leaves the package's own cores
    bound where they were (model.py imports _layer_norm_core by name)."""
    from mhacourse.tiny_model import model
    gm = web_train.trace("step")
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    soft = [n for n in gm.graph.nodes if n.target is torch.ops.aten._softmax.default]
    assert [n.args[0].meta["val"].dim() for n in soft] == [4, 4, 2]  # 2 layers, the loss's gradient
    assert targets.count(torch.ops.aten.native_layer_norm.default) == 5
    # GELU: one erf a layer (the gradient reuses it), no gelu_backward
    assert targets.count(torch.ops.aten.erf.default) == 2
    assert torch.ops.aten.gelu_backward.default not in targets
    # the loss's log-softmax along the rows' last axis: no (B, V, L) transpose
    log_soft, = [n for n in gm.graph.nodes if n.target is torch.ops.aten._log_softmax.default]
    assert log_soft.args[1] in (-1, 1) and log_soft.args[0].meta["val"].dim() == 2
    # its gradient is the written-out one (_RowsCrossEntropy): softmax minus the targets
    assert torch.ops.aten._log_softmax_backward_data.default not in targets
    assert targets.count(torch.ops.aten.scatter_add.default) == 1
    # no copy of an operand to the shape it has (matmul's expands, onnx_program)
    assert not [n for n in gm.graph.nodes if n.target is torch.ops.aten.expand.default
                and list(map(str, n.args[0].meta["val"].shape))
                == list(map(str, n.meta["val"].shape))]
    assert model._layer_norm_core is block._layer_norm_core
    assert block._block_core.__globals__["_layer_norm_core"] is block._layer_norm_core
    assert attention.__dict__["_softmax_core"].__name__ == "_softmax_core"


def circuits_unread() -> list[str]:
    """The weights no output of _circuits_core depends on (zero gradient of
    the sum of every output, on random weights)."""
    from mhacourse.circuits.core import _circuits_core
    params = [p.clone().requires_grad_() for p in start(3, 8)]
    for p in params:
        p.data += 0.1 * torch.randn_like(p)  # no zero gamma or bias at a kink
    out = _circuits_core(params, torch.zeros(3), st.noise_pool())
    grads = torch.autograd.grad(sum(o.sum() for o in out), params, allow_unused=True)
    return [name.replace(".", "_") for name, g in zip(st.param_names(), grads)
            if g is None or not bool(g.abs().gt(0).any())]


@pytest.mark.parametrize("h,d_k,trained", [(1, 8, True), (4, 16, True),
                                           (16, 4, True), (2, 32, False)])
def test_tiny_weights_file_through_the_forward_graph_equals_the_package(
        graphs, tmp_path, h, d_k, trained):
    """The explorer's tiny models: a committed model written as one float32
    file (web_export.write_tiny_weights), cut with the manifest's shape rules
    (web_train.param_dims) as the page cuts it, and run through the one
    forward graph, gives the package's attention (<= 1e-5) and logits
    (<= 1e-5 of their largest)."""
    model = web_export.load_tiny(h, d_k, trained)
    path = web_export.write_tiny_weights(model, tmp_path / "m.f32")
    flat = np.frombuffer(path.read_bytes(), dtype="<f4")
    assert flat.size == tm.n_params(model)
    params, at, d = [], 0, h * d_k
    for dims in web_train.param_dims().values():
        shape = [a * d + b for a, b in dims]
        params.append(flat[at:at + int(np.prod(shape))].reshape(shape))
        at += int(np.prod(shape))
    assert at == flat.size
    worst, worst_logits = 0.0, 0.0
    for text in [*explorer.EXAMPLES, "cat", "it it it it it the the the cat cat", "x" * 40]:
        ids = tasks.word_ids(text)[: model.cfg.max_len] or [tasks.UNK_ID]
        out = run(graphs["forward"], *params, np.array([ids], np.int64),
                  np.zeros(h, np.float32))
        with torch.no_grad():
            logits, attention = model(torch.tensor([ids]), return_attention=True)
        worst_logits = max(worst_logits, float(np.abs(out[0] - logits.numpy()).max())
                           / float(logits.abs().max()))
        for A_onnx, A in zip(out[1:], attention, strict=True):
            assert A_onnx.shape == (1, h, len(ids), len(ids))
            worst = max(worst, float(np.abs(A_onnx - A.numpy()).max()))
    assert worst <= 1e-5, f"attention weights: largest difference {worst:.2e}"
    assert worst_logits <= 1e-5, f"logits: largest relative difference {worst_logits:.2e}"
