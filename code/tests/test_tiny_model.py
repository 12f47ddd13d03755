"""The synthetic task, the tiny model, and the committed checkpoints."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from mhacourse import catalogue, explorer, tasks
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import step as st

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "assets" / "models"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


# --- the task ---------------------------------------------------------------------

def test_sample_is_deterministic():
    a = tasks.sample(64, seed=3)
    b = tasks.sample(64, seed=3)
    c = tasks.sample(64, seed=4)
    for u, v in zip(a, b):
        assert torch.equal(u, v)
    assert not torch.equal(a[0], c[0])
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    for _ in range(3):  # a stream of batches is reproducible too
        assert torch.equal(tasks.sample(8, generator=g1)[0],
                           tasks.sample(8, generator=g2)[0])


def test_targets_on_a_hand_made_example():
    words = "the cat sat the mat cat the".split()
    # t=1 cat: new -> previous word "the"      t=4 mat: new -> "the"
    # t=2 sat: new -> "cat"                    t=5 cat: seen at 1 -> x_2 "sat"
    # t=3 the: seen at 0 -> x_1 "cat"          t=6 the: last seen at 3 -> x_4 "mat"
    want_y = [None, "the", "cat", "cat", "the", "sat", "mat"]
    want_kind = ["not scored", "previous", "previous", "lookup", "previous",
                 "lookup", "lookup"]
    assert tasks.targets_reference(words) == list(zip(want_y, want_kind))
    y, kind = tasks.targets(torch.tensor([tasks.word_ids(words)]))
    assert tasks.decode(y[0, 1:]) == want_y[1:]
    assert [tasks.KIND_NAMES[k] for k in kind[0]] == want_kind


def test_vectorised_targets_match_the_loop():
    x, y, kind = tasks.sample(50, seed=11)
    for b in range(len(x)):
        ref = tasks.targets_reference(x[b].tolist())
        assert [r[0] for r in ref[1:]] == y[b, 1:].tolist()
        assert [r[1] for r in ref] == [tasks.KIND_NAMES[k] for k in kind[b]]


def test_sequences_follow_the_documented_distribution():
    cfg = tasks.TaskConfig()
    x, _, kind = tasks.sample(500, cfg, seed=0)
    assert x.shape == (500, cfg.L)
    assert bool((x[:, 1:] != x[:, :-1]).all())  # no word follows itself
    distinct = torch.tensor([len(set(row.tolist())) for row in x])
    assert int(distinct.max()) <= cfg.n_max
    assert 0.3 < float((kind == tasks.LOOKUP).float().mean()) < 0.7  # both parts common


def test_vocabulary_and_tokenizer():
    assert 100 <= len(tasks.VOCAB) <= 300
    assert len(set(tasks.VOCAB)) == len(tasks.VOCAB)
    assert tasks.split_words("The animal didn't cross.") == ["the", "animal", "didn't",
                                                          "cross", "."]
    for s in tasks.EXAMPLE_SENTENCES:
        assert tasks.UNK_ID not in tasks.word_ids(s), s
    assert tasks.word_ids("the zebra") == [tasks.WORD_TO_ID["the"], tasks.UNK_ID]


def test_baselines_are_what_the_docstring_says():
    b = tasks.baselines(*tasks.sample(200, seed=0))
    assert b["previous word"]["previous"] == 1.0
    assert b["uniform"]["all"] == pytest.approx(1 / len(tasks.VOCAB))
    assert b["random prefix word"]["lookup"] < b["previous word"]["lookup"] < 0.5


# --- the model ----------------------------------------------------------------------

def test_attention_rows_sum_to_one_and_are_causal():
    cfg = tm.TinyConfig(h=4, d_k=8)
    model = tm.TinyTransformer(cfg, seed=1)
    x, _, _ = tasks.sample(3, seed=0)
    logits, attention = model(x, return_attention=True)
    L = x.shape[1]
    assert logits.shape == (3, L, cfg.vocab_size)
    assert len(attention) == cfg.n_layers
    above = torch.ones(L, L, dtype=torch.bool).triu(1)
    for A in attention:
        assert A.shape == (3, cfg.h, L, L)
        assert torch.allclose(A.sum(-1), torch.ones(3, cfg.h, L))
        assert bool((A[..., above] == 0).all())
    # and no look-ahead: changing later words leaves earlier outputs alone
    x2 = x.clone()
    x2[:, 9:] = (x2[:, 9:] + 1) % cfg.vocab_size
    assert torch.allclose(model(x2)[:, :9], logits[:, :9])


def test_save_load_round_trip(tmp_path):
    cfg = tm.TinyConfig(h=2, d_k=8)
    model, _ = tm.train(cfg, steps=5, seed=0)
    x, _, _ = tasks.sample(4, seed=0)
    # float32 files: exactly the same outputs
    back = tm.load(tm.save(model, tmp_path / "m32.safetensors", dtype=torch.float32,
                           extra={"note": "hi"}))
    assert torch.equal(back(x), model(x))
    assert back.extra == {"note": "hi"} and back.cfg == cfg
    # float16 files: the outputs of the float16-rounded weights, and a second
    # save/load changes nothing
    back16 = tm.load(tm.save(model, tmp_path / "m16.safetensors"))
    rounded = tm.TinyTransformer(cfg)
    rounded.load_state_dict({k: v.half().float()
                             for k, v in model.state_dict().items()})
    assert torch.equal(back16(x), rounded(x))
    again = tm.load(tm.save(back16, tmp_path / "again.safetensors"))
    assert torch.equal(again(x), back16(x))


def test_untrained_models_are_stored_as_their_seed(tmp_path):
    cfg = tm.TinyConfig(h=4, d_k=8)
    init = tm.TinyTransformer(cfg, seed=5)
    path = tm.save(init, tmp_path / "init.safetensors", init_seed=5)
    assert path.stat().st_size < 1000
    x, _, _ = tasks.sample(2, seed=0)
    assert torch.equal(tm.load(path)(x), init(x))
    with pytest.raises(ValueError, match="not"):
        tm.save(init, tmp_path / "bad.safetensors", init_seed=6)


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="positive"):
        tm.TinyConfig(h=0)
    model = tm.TinyTransformer(tm.TinyConfig(h=1, d_k=8))
    with pytest.raises(ValueError, match="sequence length"):
        model(torch.zeros(1, model.cfg.max_len + 1, dtype=torch.long))


def test_short_training_beats_chance():
    """About 250 steps (a few seconds): the previous-word part is learned
    well past every baseline that ignores the previous word."""
    data = tm.heldout(n=256)
    _, m = tm.train(tm.TinyConfig(h=4, d_k=8), steps=250, seed=0, eval_data=data)
    b = tasks.baselines(*data)
    assert m["accuracy"] > 2 * b["random prefix word"]["all"]
    assert m["previous"] > 0.5
    assert m["accuracy"] > 50 * b["uniform"]["all"]


def test_attention_on_a_sentence():
    model = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=8))
    tokens, attention = tm.attention_on(model, "The zebra sat on the mat.")
    assert tokens == ["the", "[UNK]", "sat", "on", "the", "mat", "."]
    assert [tuple(A.shape) for A in attention] == [(2, 7, 7)] * 2
    with pytest.raises(ValueError, match="sequence length"):
        tm.attention_on(model, "the cat " * 20)


# --- one run, two engines ------------------------------------------------------------

def core_run(cfg, steps, seed=0, data_seed=0, run_steps=None, layer_on=None,
             identical=False, clip=st.CLIP):
    """``run_steps`` steps of a ``steps``-step run by iterating
    step._train_step_core (the function the page runs), from
    TinyTransformer(cfg, seed)'s weights on train()'s batches. Returns
    (losses, params)."""
    P = tuple(p.detach().clone() for p in
              tm.TinyTransformer(cfg, seed, identical_heads=identical).state_dict().values())
    M = torch.zeros_like(st._flat(P))  # AdamW's moments, one vector each (the core's)
    V = M.clone()
    g = torch.Generator().manual_seed(10_000 + data_seed)
    losses = []
    for s in range(steps if run_steps is None else run_steps):
        x = tasks.sample(cfg.batch, generator=g)[0]
        loss, P, M, V, _, _ = st._train_step_core(
            P, M, V, torch.tensor(float(s)), torch.tensor(float(steps)), x,
            torch.zeros(cfg.h), torch.tensor(float(cfg.warmup)), layer_on, clip)
        losses.append(loss.item())
    return losses, P


def test_the_model_starts_from_init_core():
    """TinyTransformer(cfg, seed) is the page's init graph's function, and a
    1-layer model starts as the 2-layer one without its second block."""
    for h, d_k, seed in [(4, 16, 0), (3, 20, 5)]:
        cfg = tm.TinyConfig(h=h, d_k=d_k)
        model = tm.TinyTransformer(cfg, seed)
        assert list(model.state_dict()) == st.param_names(2)
        want = st._init_core(st.noise_pool(), torch.zeros(cfg.d_model), torch.tensor(seed))
        for name, a, b in zip(st.param_names(), model.state_dict().values(), want):
            assert torch.equal(a, b), name
        one = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k, n_layers=1), seed)
        assert list(one.state_dict()) == st.param_names(1)
        for name, t in one.state_dict().items():
            assert torch.equal(t, model.state_dict()[name]), name
    a, b = (tm.TinyTransformer(tm.TinyConfig(), s).W_E for s in (0, 1))
    assert not torch.equal(a, b)


@pytest.mark.parametrize("h,d_k,seed", [(4, 16, 0), (3, 20, 1)])
def test_train_and_the_pages_step_give_the_same_losses(h, d_k, seed):
    """One run, two engines: train() (torch.optim) and 50 steps of
    step._train_step_core (the function the page runs, exported) from the same
    weights on the same batches: losses equal to 1e-4 (relative)."""
    cfg = tm.TinyConfig(h=h, d_k=d_k)
    core, _ = core_run(cfg, 50, seed)
    _, m = tm.train(cfg, 50, seed=seed, eval_every=1, eval_data=tm.heldout(n=8))
    ref = [e["loss"] for e in m["history"]]
    assert len(ref) == len(core) == 50
    worst = max(abs(a - b) / abs(b) for a, b in zip(core, ref))
    assert worst <= 1e-4, worst
    assert core[-1] < core[0] - 0.5  # and it trains


def hand_loop(cfg, steps, seed=0):
    """train()'s loop written out by hand with no clip_grad_norm_: AdamW,
    warm-up then cosine, train()'s batches. Returns the losses."""
    model = tm.TinyTransformer(cfg, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr,
                            weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    total = torch.tensor(steps, dtype=torch.float64)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: float(tm.training._lr_factor(
        torch.tensor(s, dtype=torch.float64), total, cfg.warmup)))
    g = torch.Generator().manual_seed(10_000)
    losses = []
    model.train()
    for _ in range(steps):
        x, y, kind = tasks.sample(cfg.batch, generator=g)
        loss = tm.loss_fn(model(x), y, kind)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_train_with_clipping_off_is_a_loop_without_clipping():
    """train(..., clip=None) is the hand-written loop with no
    clip_grad_norm_ (losses equal), and so is the page's step with clip 0
    (to 1e-4, relative); a bound the norms pass (0.05) gives other losses."""
    cfg = tm.TinyConfig(h=4, d_k=16)
    data = tm.heldout(n=8)
    _, off = tm.train(cfg, 30, seed=0, eval_every=1, eval_data=data, clip=None)
    _, on = tm.train(cfg, 30, seed=0, eval_every=1, eval_data=data, clip=0.05)
    got = [e["loss"] for e in off["history"]]
    assert got == hand_loop(cfg, 30)
    assert got != [e["loss"] for e in on["history"]]
    core, _ = core_run(cfg, 30, clip=0.0)
    worst = max(abs(a - b) / abs(b) for a, b in zip(core, got))
    assert worst <= 1e-4, worst


def test_history_records_the_run():
    data = tm.heldout(n=128)
    _, m = tm.train(tm.TinyConfig(h=2, d_k=8), 40, seed=0, eval_every=20,
                    eval_data=data)
    hist = m["history"]
    assert [e["step"] for e in hist] == [20, 40]
    assert set(hist[0]) == {"step", "accuracy", "previous", "lookup", "loss", "roles"}
    assert hist[-1]["accuracy"] == pytest.approx(m["accuracy"], abs=1e-6)
    assert all(len(layer) == 2 and set(layer) <= {*tm.analysis.STATISTICS, "mixed"}
               for layer in hist[0]["roles"])
    assert hist[0]["loss"] > hist[1]["loss"]
    _, quiet = tm.train(tm.TinyConfig(h=2, d_k=8), 5, seed=0, eval_data=data)
    assert "history" not in quiet


def test_data_seed_chooses_the_batches_and_seed_the_start():
    cfg = tm.TinyConfig(h=2, d_k=8)
    data = tm.heldout(n=64)
    first = [tm.train(cfg, 1, eval_every=1, eval_data=data, **k)[1]["history"][0]["loss"]
             for k in ({"seed": 0}, {"seed": 0, "data_seed": 1}, {"seed": 1},
                       {"seed": 0})]
    assert len(set(first[:3])) == 3 and first[3] == first[0]


# --- knobs: one layer, warm-up, an identical start, ablation ---------------------------

def test_layer_2_off_trains_as_the_one_layer_model():
    """A 2-layer run with layer_on = [1, 0] (the page's one-layer knob) is
    train(TinyConfig(n_layers=1)): same start, same batches, same losses and
    weights to float rounding; block 2 is never changed."""
    h, d_k, steps = 2, 8, 30
    cfg = tm.TinyConfig(h=h, d_k=d_k)
    losses, P = core_run(cfg, steps, layer_on=torch.tensor([1.0, 0.0]))
    model, m = tm.train(tm.TinyConfig(h=h, d_k=d_k, n_layers=1), steps, eval_every=1,
                        eval_data=tm.heldout(n=8))
    ref = [e["loss"] for e in m["history"]]
    assert max(abs(a - b) / b for a, b in zip(losses, ref)) <= 1e-4
    got = dict(zip(st.param_names(2), P))
    for name, want in model.state_dict().items():
        if not name.endswith("b_K"):  # a softmax ignores b_K: its true gradient
            # is 0, and Adam turns rounding noise into lr-sized steps (issue 30)
            assert torch.allclose(got[name], want, atol=1e-4, rtol=0), name
    x = tasks.sample(8, seed=2)[0]
    logits, _ = st._forward_with(P, x, torch.zeros(h), layer_on=torch.tensor([1.0, 0.0]))
    assert torch.allclose(logits, model(x), atol=1e-4)
    start = tm.TinyTransformer(cfg).state_dict()
    for name in st.param_names(2):
        if name.startswith("blocks.1."):
            assert torch.equal(got[name], start[name]), name


def test_the_one_layer_control_stays_on_the_plateau():
    """No previous-token head below it, no induction head: a 1-layer model
    learns the previous word but not the lookup, in the steps the 2-layer
    model of its width trains for."""
    cfg = tm.TinyConfig(h=4, d_k=16, n_layers=1)
    data = tm.heldout(n=256)
    _, m = tm.train(cfg, catalogue.steps_for(cfg.d_model), eval_data=data)
    b = tasks.baselines(*data)["previous word"]
    assert m["previous"] > 0.8, m  # the previous word: learned
    assert m["lookup"] < 0.40, m  # the lookup: not
    assert m["lookup"] < b["lookup"] + 0.1, (m, b)  # about the previous-word rule's


def test_without_warm_up_the_schedule_starts_at_the_peak():
    s, steps = torch.tensor(0.0), torch.tensor(800.0)
    assert float(tm.training._lr_factor(s, steps, 0)) == 1.0
    assert float(tm.training._lr_factor(s, steps, torch.tensor(0.0))) == 1.0
    assert float(tm.training._lr_factor(s, steps, 100)) == pytest.approx(1 / 100)
    cfg = tm.TinyConfig(h=2, d_k=8, warmup=0)
    on, _ = core_run(tm.TinyConfig(h=2, d_k=8), 100, run_steps=3)
    off, _ = core_run(cfg, 100, run_steps=3)
    assert on[0] == off[0] and on[2] != off[2]


def one_head(w, i, h):
    """Head i's slices of MHAWeights w: W_Q, W_K, W_V columns and biases,
    W_O rows (d_k of each)."""
    d_k = w.W_Q.shape[1] // h
    cols = slice(i * d_k, (i + 1) * d_k)
    return {"W_Q": w.W_Q[:, cols], "W_K": w.W_K[:, cols], "W_V": w.W_V[:, cols],
            "W_O": w.W_O[cols], "b_Q": w.b_Q[cols], "b_K": w.b_K[cols],
            "b_V": w.b_V[cols]}


def single_head(z, p, b_O, scale_out):
    """One causal attention head of width d_k, written out:
    softmax(Q K^T / sqrt(d_k)) V (scale_out W_O) + b_O."""
    Q, K, V = (z @ p[f"W_{c}"] + p[f"b_{c}"] for c in "QKV")  # (B, L, d_k)
    scores = Q @ K.transpose(-1, -2) / Q.shape[-1] ** 0.5  # (B, L, L)
    L = z.shape[1]
    scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    A = scores.softmax(-1)
    return (A @ V) @ (scale_out * p["W_O"]) + b_O, A


def test_an_identical_start_stays_identical():
    """Every head a copy of head 0 at the start stays one after training
    (equal gradients, elementwise AdamW), and the layer then computes what
    one head of width d_k computes, written h times (W_O's h equal rows)."""
    from mhacourse.masks import _causal_core
    from mhacourse.multihead import _mha_core
    h, d_k = 4, 8
    cfg = tm.TinyConfig(h=h, d_k=d_k)
    model, _ = tm.train(cfg, 60, identical_heads=True, eval_data=tm.heldout(n=8))
    x = tasks.sample(4, seed=3)[0]
    _, _, inputs = model.core(x, return_inputs=True)
    mask = _causal_core(x.shape[1], x.shape[1])
    for block, z in zip(model.blocks, inputs):
        w = block.attn.weights()
        heads = [one_head(w, i, h) for i in range(h)]
        for other in heads[1:]:
            for name, t in other.items():
                assert (heads[0][name] - t).abs().max() <= 1e-6, name
        out, A, _ = _mha_core(z, z, z, w, h, mask)
        out_1, A_1 = single_head(z, heads[0], w.b_O, h)
        assert torch.allclose(out, out_1, atol=1e-5)
        assert torch.allclose(A, A_1[:, None].expand_as(A), atol=1e-6)
    start = tm.TinyTransformer(cfg, 0, identical_heads=True)
    assert torch.equal(start.blocks[1].attn.W_O[:d_k], start.blocks[1].attn.W_O[-d_k:])
    assert not torch.equal(start.W_E, tm.TinyTransformer(cfg, 1).W_E)


def test_head_mask_is_chapter_4s_ablation():
    """head_mask zeroes a head's output before W_O: the model's output with
    head i off equals the one with W_O's rows of head i zeroed."""
    cfg = tm.TinyConfig(h=4, d_k=8)
    model = tm.TinyTransformer(cfg, 3)
    x = tasks.sample(2, seed=1)[0]
    mask = torch.ones(2, 4)
    mask[0, 1] = mask[1, 3] = 0
    got = model(x, head_mask=mask)
    zeroed = tm.TinyTransformer(cfg, 3)
    with torch.no_grad():
        zeroed.blocks[0].attn.W_O[8:16] = 0
        zeroed.blocks[1].attn.W_O[24:32] = 0
    assert torch.allclose(got, zeroed(x), atol=1e-5)
    assert torch.equal(model(x, head_mask=torch.ones(2, 4)), model(x))
    for bad in (torch.ones(4), torch.ones(2, 3), torch.full((2, 4), 2.0), [[1] * 4] * 2,
                torch.full((2, 4), float("nan"))):
        with pytest.raises(ValueError, match="head_mask"):
            model(x, head_mask=bad)


def test_removing_the_previous_token_heads_undoes_the_induction_pattern():
    """Causal, not correlational: with layer 1's previous-token heads off,
    layer 2's induction heads no longer attend to the token after the
    earlier occurrence: their induction statistic falls to about the
    untrained model's."""
    e = {m["name"]: m for m in committed()["models"]}["h4_dk16"]
    model = tm.load(MODELS / e["file"])
    data = tm.heldout(n=256)
    scores = tm.head_scores(model, data)
    roles = tm.head_roles(scores)
    assert "previous" in roles[0] and "induction" in roles[1], roles
    mask = torch.ones(2, 4)
    mask[0] = torch.tensor([r != "previous" for r in roles[0]], dtype=torch.float32)
    ablated = tm.head_scores(model, data, head_mask=mask)
    untrained = tm.head_scores(tm.TinyTransformer(model.cfg), data)

    def induction(sc):
        return max(s["induction"] for s in sc[1])
    assert induction(scores) > 0.7
    assert induction(ablated) < induction(untrained) + 0.1, (induction(ablated),
                                                             induction(untrained))
    assert tm.evaluate(model, data, head_mask=mask)["lookup"] < e["lookup"] - 0.5


# --- committed checkpoints ----------------------------------------------------------

def committed():
    path = MODELS / "metrics.json"
    assert path.exists(), f"{path} missing: run scripts/train_tiny_models.py"
    return json.loads(path.read_text())


def test_committed_checkpoints_reproduce_their_accuracy():
    metrics = committed()
    assert not metrics["quick"]
    data = tm.heldout()
    # trained + untrained: the 4 h x 3 d_k grid, and the explorer's
    # "same budget" row at d_model 64 (h = 1, d_k = 64 and h = 16, d_k = 4)
    cells = {(h, d_k) for h in (1, 2, 4, 8) for d_k in (8, 16, 32)} | {(1, 64), (16, 4)}
    assert sorted((m["h"], m["d_k"], m["trained"]) for m in metrics["models"]) == \
        sorted((h, d_k, t) for h, d_k in cells for t in (True, False))
    for entry in metrics["models"]:
        model = tm.load(MODELS / entry["file"])
        assert (model.cfg.h, model.cfg.d_k) == (entry["h"], entry["d_k"])
        got = tm.evaluate(model, data)
        for key in ("accuracy", "previous", "lookup"):
            assert got[key] == pytest.approx(entry[key], abs=1e-3), (entry["name"], key)


def test_one_name_for_each_model_file():
    """metrics.json, the files in assets/models/ and the explorer's paths all
    come from tm.model_name: each entry's name and file are the ones it gives."""
    entries = committed()["models"]
    for e in entries:
        name = tm.model_name(e["h"], e["d_k"], e["trained"])
        assert e["name"] == name, (e["name"], name)
        assert e["file"] == f"{name}.safetensors", e["file"]
        assert explorer.tiny_model_path(e["h"], e["d_k"], e["trained"]) == MODELS / e["file"]
    on_disk = {p.name for p in MODELS.glob("*.safetensors")}
    assert on_disk == {e["file"] for e in entries}, on_disk ^ {e["file"] for e in entries}
    assert tm.model_name(4, 8) == "h4_dk8" and tm.model_name(4, 8, False) == "h4_dk8_init"


def test_committed_models_learned_the_task():
    by_name = {e["name"]: e for e in committed()["models"]}
    for name, e in by_name.items():
        if e["trained"]:
            assert e["accuracy"] > by_name[name + "_init"]["accuracy"] + 0.3, name
        else:
            assert e["accuracy"] < 0.02, name  # untrained: about 1 / vocab_size


def test_committed_heads_do_what_metrics_json_says():
    """Layer 1 of the trained models holds previous-token heads and layer 2
    induction heads wherever the lookup is solved; re-measured for one model."""
    by_name = {e["name"]: e for e in committed()["models"]}
    for e in by_name.values():
        if e["trained"] and e["lookup"] > 0.8:
            assert max(s["previous"] for s in e["head_scores"][0]) > 0.9, e["name"]
            assert max(s["induction"] for s in e["head_scores"][1]) > 0.7, e["name"]
    e = by_name["h2_dk16"]
    scores = tm.head_scores(tm.load(MODELS / e["file"]))
    for layer, want_layer in zip(scores, e["head_scores"]):
        for got, want in zip(layer, want_layer):
            assert got == pytest.approx(want, abs=1e-3)


def test_quick_script_run(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "train_tiny_models", ROOT / "scripts" / "train_tiny_models.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--quick", "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["quick"] and len(metrics["models"]) == 4
    for entry in metrics["models"]:
        got = tm.evaluate(tm.load(tmp_path / entry["file"]))
        assert got["accuracy"] == pytest.approx(entry["accuracy"], abs=1e-3)
