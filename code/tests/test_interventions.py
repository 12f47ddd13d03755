"""mhacourse.interventions: ablation and activation patching.

Parity: every intervention equals the same intervention done the plain
PyTorch way, with forward pre-hooks on each layer's ``W_O`` (an
``nn.Linear``) of a re-implementation of the tiny model in ``torch.nn`` /
``F`` (``F.scaled_dot_product_attention``, ``F.layer_norm``, ``F.gelu``).
Tolerance (:func:`tol`): ``TOL[dtype]`` times the logits' scale
``max(1, max |logit|)``: 1e-5 relative in float32 (the main model's logits
reach about 20; observed about 1e-6 relative), 1e-10 in float64 (observed
about 1e-14). Then: both patching directions
at their end points, the three ablations giving different numbers, the
fraction recovered, the corruptions' definitions, and the bad inputs (one
line each, never NaN).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mhacourse as mc
from mhacourse import interventions as I
from mhacourse import tasks
from mhacourse import tiny_model as tm
from mhacourse.catalogue import assets_dir
from tolerances import TOL, max_err

pytestmark = pytest.mark.usefixtures("one_thread")
F32 = TOL[torch.float32]  # 1e-5


def main_model(dtype=torch.float32):
    """The main run's trained model (h 4, d_k 16, two layers): chapter 11's."""
    return tm.load(assets_dir() / "runs" / "main.safetensors").to(dtype)


@pytest.fixture(scope="module")
def model():
    return main_model()


def tol(dtype, reference) -> float:
    """What parity allows: ``TOL[dtype]`` (1e-5 in float32, 1e-10 in
    float64) relative to the logits' scale."""
    return TOL[dtype] * max(1.0, float(reference.abs().max()))


@pytest.fixture(scope="module")
def pairs():
    return {name: I.corrupt(name, 64, seed=1) for name in I.CORRUPTIONS}


# --- the plain PyTorch version, with hooks -----------------------------------

class HookedTiny(nn.Module):
    """The tiny model in ``torch.nn``: each layer's ``W_O`` is the
    ``nn.Linear`` ``o``, whose input is the heads side by side (B, L,
    d_model); a forward pre-hook on it reads or replaces them."""

    def __init__(self, model: tm.TinyTransformer):
        super().__init__()
        self.h, self.d = model.cfg.h, model.cfg.d_model
        s = {k: v.detach() for k, v in model.state_dict().items()}
        self.top = s
        self.layers = nn.ModuleList()
        for i in range(model.cfg.n_layers):
            layer = nn.Module()
            for name in ("Q", "K", "V", "O"):
                lin = nn.Linear(self.d, self.d)
                lin.weight.data = s[f"blocks.{i}.attn.W_{name}"].T.clone()
                lin.bias.data = s[f"blocks.{i}.attn.b_{name}"].clone()
                setattr(layer, name.lower(), lin)
            layer.p = {k: s[f"blocks.{i}.{k}"] for k in (
                "W_1", "b_1", "W_2", "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2")}
            self.layers.append(layer)

    def forward(self, ids):
        B, L = ids.shape
        x = self.top["W_E"][ids] + self.top["W_pos"][:L]  # (B, L, d)
        for layer in self.layers:
            p = layer.p
            z = F.layer_norm(x, (self.d,), p["gamma_1"], p["beta_1"])

            def heads(lin):  # (B, L, d) -> (B, h, L, d_k)
                return lin(z).view(B, L, self.h, -1).transpose(1, 2)

            o = F.scaled_dot_product_attention(heads(layer.q), heads(layer.k),
                                               heads(layer.v), is_causal=True)
            x = x + layer.o(o.transpose(1, 2).reshape(B, L, self.d))  # (B, L, d)
            f = F.layer_norm(x, (self.d,), p["gamma_2"], p["beta_2"])
            x = x + F.gelu(f @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"]
        x = F.layer_norm(x, (self.d,), self.top["gamma_f"], self.top["beta_f"])
        return x @ self.top["W_U"]  # (B, L, V)


def hooked(ref: HookedTiny, ids, replace=None):
    """``(logits, heads (n_layers, B, h, L, d_k))`` with hooks: each
    ``replace[(l, i)]`` (B or 1, L, d_k) is written over head i of layer l."""
    replace, seen, handles = replace or {}, [], []
    for l, layer in enumerate(ref.layers):
        def hook(module, args, l=l):
            (z,) = args  # (B, L, d_model): the heads side by side
            B, L, _ = z.shape
            seen.append(z.view(B, L, ref.h, -1).transpose(1, 2).clone())
            z = z.clone().view(B, L, ref.h, -1)  # (B, L, h, d_k)
            for (ll, i), v in replace.items():
                if ll == l:
                    z[:, :, i] = v
            return (z.view(B, L, -1),)
        handles.append(layer.o.register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            logits = ref(ids)
    finally:
        for h in handles:
            h.remove()
    return logits, torch.stack(seen)


def hooked_values(H, heads):
    """``{(l, i): H[l, :, i]}``: (B or 1, L, d_k) per chosen head."""
    return {(l, i): H[l, :, i] for l, i in heads}


# --- parity ------------------------------------------------------------------

def test_plain_reference_is_the_model(pairs, dtype):
    model = main_model(dtype)
    ids = pairs["successor"].clean
    ref_logits, ref_heads = hooked(HookedTiny(model), ids)
    logits, heads = model.forward_heads(ids)
    err = max(max_err(logits, ref_logits), max_err(heads, ref_heads))
    print(f"largest |model - plain torch| on logits and heads: {err:.2e}")
    assert err <= tol(dtype, ref_logits), err
    assert heads.shape == (2, 64, 4, 16, 16) and heads.dtype == dtype


@pytest.mark.parametrize("method", I.METHODS)
@pytest.mark.parametrize("heads", [[(0, 1)], [(1, 0), (1, 3)], [(0, 2), (1, 2)]])
def test_ablate_equals_hooks(pairs, method, heads, dtype):
    model = main_model(dtype)
    ids = pairs["successor"].clean
    ref = HookedTiny(model)
    if method == "zero":
        H = torch.zeros(2, 1, 4, 16, 16, dtype=dtype)
    elif method == "mean":
        H = hooked(ref, ids)[1].mean(dim=1, keepdim=True)
    else:  # each row gets the next row's outputs: ids rolled by one
        H = hooked(ref, ids.roll(1, dims=0))[1]
    want = hooked(ref, ids, hooked_values(H, heads))[0]
    got = I.ablate(model, ids, heads, method)
    assert max_err(got, want) <= tol(dtype, want), (method, heads, max_err(got, want))


@pytest.mark.parametrize("method", ["mean", "resample"])
def test_ablate_with_a_reference_batch_equals_hooks(model, pairs, method):
    ids, other = pairs["successor"].clean, pairs["occurrence"].clean
    ref = HookedTiny(model)
    H = hooked(ref, other)[1]
    H = H.mean(dim=1, keepdim=True) if method == "mean" else H
    want = hooked(ref, ids, hooked_values(H, [(0, 3)]))[0]
    got = I.ablate(model, ids, [(0, 3)], method, reference=other)
    assert max_err(got, want) <= tol(torch.float32, want)


@pytest.mark.parametrize("direction", I.DIRECTIONS)
@pytest.mark.parametrize("heads", [[(0, 0)], [(1, 2)], [(0, 1), (1, 1), (1, 3)]])
def test_patch_heads_equals_hooks(pairs, direction, heads, dtype):
    model = main_model(dtype)
    p = pairs["successor"]
    ref = HookedTiny(model)
    source, target = ((p.clean, p.corrupted) if direction == "denoise"
                      else (p.corrupted, p.clean))
    want = hooked(ref, target, hooked_values(hooked(ref, source)[1], heads))[0]
    got = I.patch_heads(model, p.clean, p.corrupted, heads, direction)
    assert max_err(got, want) <= tol(dtype, want), max_err(got, want)


@pytest.mark.parametrize("direction", I.DIRECTIONS)
def test_patching_map_equals_hooks_head_by_head(model, pairs, direction):
    p = pairs["occurrence"]
    ref = HookedTiny(model)
    score = p[2:]
    clean = I.logit_diff(hooked(ref, p.clean)[0], *score)
    corrupted = I.logit_diff(hooked(ref, p.corrupted)[0], *score)
    source, target = ((p.clean, p.corrupted) if direction == "denoise"
                      else (p.corrupted, p.clean))
    H = hooked(ref, source)[1]
    want = torch.tensor([[
        (I.logit_diff(hooked(ref, target, hooked_values(H, [(l, i)]))[0], *score)
         - corrupted) / (clean - corrupted) for i in range(4)] for l in range(2)])
    got = I.patching_map(model, p, direction)
    assert got.shape == (2, 4)
    assert max_err(got, want) <= 1e-4, max_err(got, want)  # a ratio of logit means


def test_ablation_map_by_layer_is_ablate_of_the_layer(model, pairs):
    p = pairs["successor"]
    score = p[2:]
    clean = I.logit_diff(model.forward_heads(p.clean)[0].detach(), *score)
    corrupted = I.logit_diff(model.forward_heads(p.corrupted)[0].detach(), *score)
    for method in I.METHODS:
        got = I.ablation_map(model, p, method, unit="layer")
        for l in range(2):
            ld = I.logit_diff(I.ablate(model, p.clean, [(l, i) for i in range(4)],
                                       method), *score)
            assert abs(float(got[l]) - (ld - corrupted) / (clean - corrupted)) < 1e-5


def test_forward_heads_per_row_mask_is_each_row_alone(model, pairs):
    ids = pairs["query"].clean[:3]
    mask = torch.ones(2, 3, 4)
    mask[0, 1, 2] = 0.0  # row 1 loses L1H3; the other rows keep every head
    got = model.forward_heads(ids, head_mask=mask)[0]
    for b in range(3):
        alone = model.forward_heads(ids[b:b + 1], head_mask=mask[:, b])[0]
        assert max_err(got[b], alone[0]) <= F32
    assert max_err(got[1], model(ids[1:2])[0]) > 1e-3  # the removal shows


# --- both directions at their end points ----------------------------------------

@pytest.mark.parametrize("name", ["successor", "occurrence"])
def test_patching_every_head_gives_the_other_run(model, pairs, name):
    """The scored position's token is unchanged by these corruptions, so
    with every head's output patched in, the scored logits are the source
    run's: denoising gives the clean metric, noising the corrupted one."""
    p = pairs[name]
    every = I.all_heads(model)
    clean = I.logit_diff(model.forward_heads(p.clean)[0].detach(), *p[2:])
    corrupted = I.logit_diff(model.forward_heads(p.corrupted)[0].detach(), *p[2:])
    denoised = I.logit_diff(I.patch_heads(model, p.clean, p.corrupted, every,
                                          "denoise"), *p[2:])
    noised = I.logit_diff(I.patch_heads(model, p.clean, p.corrupted, every,
                                        "noise"), *p[2:])
    assert abs(denoised - clean) <= F32 * max(1.0, abs(clean)), (denoised, clean)
    assert abs(noised - corrupted) <= F32 * max(1.0, abs(corrupted))
    assert abs(I.fraction_recovered(denoised, clean, corrupted) - 1) < 1e-5
    assert abs(I.fraction_recovered(noised, clean, corrupted)) < 1e-5
    assert clean - corrupted > 5  # the trained model tells the answers apart


def test_the_query_corruption_is_not_undone_by_patching_heads(model, pairs):
    """Replacing the query token changes the scored position itself: its
    embedding and feed-forwards still read the corrupted token, so patching
    every head recovers most of the difference, not all of it."""
    p = pairs["query"]
    assert bool((p.clean[torch.arange(64), p.positions]
                 != p.corrupted[torch.arange(64), p.positions]).all())
    clean = I.logit_diff(model.forward_heads(p.clean)[0].detach(), *p[2:])
    corrupted = I.logit_diff(model.forward_heads(p.corrupted)[0].detach(), *p[2:])
    denoised = I.logit_diff(I.patch_heads(model, p.clean, p.corrupted,
                                          I.all_heads(model), "denoise"), *p[2:])
    frac = I.fraction_recovered(denoised, clean, corrupted)
    assert 0.5 < frac < 1 - 1e-3, frac  # most of the difference, not all


def test_single_head_denoising_in_layer_1_does_little_under_the_query_corruption(
        model, pairs):
    """Under "query", a layer-1 head's output differs only at the changed
    position: patching one recovers almost nothing."""
    got = I.patching_map(model, pairs["query"], "denoise")
    assert float(got[0].abs().max()) < 0.05, got
    assert float(got[1].min()) > 0.05, got  # layer 2's heads carry the lookup


# --- the three ablations ------------------------------------------------------

def test_zero_mean_and_resample_give_different_numbers(model, pairs):
    p = pairs["successor"]
    maps = {m: I.ablation_map(model, p, m) for m in I.METHODS}
    for a, b in [("zero", "mean"), ("zero", "resample"), ("mean", "resample")]:
        assert max_err(maps[a], maps[b]) > 1e-3, (a, b)
    # the mean output is not zero, so mean ablation writes something else
    H = model.forward_heads(p.clean)[1].detach()
    assert float(H.mean(dim=1).abs().max()) > 1e-2
    # resample with the batch itself as reference changes nothing
    same = I.ablate(model, p.clean, [(1, 0)], "resample", reference=p.clean)
    assert max_err(same, model(p.clean)) <= F32


def test_mean_ablation_over_one_sequence_is_that_sequence(model, pairs):
    ids = pairs["successor"].clean[:1]
    got = I.ablate(model, ids, I.all_heads(model), "mean")
    assert max_err(got, model(ids)) <= F32


def test_zero_ablation_equals_the_models_head_mask(model, pairs):
    ids = pairs["occurrence"].clean
    mask = torch.ones(2, 4)
    mask[1, 1] = 0.0
    assert max_err(I.ablate(model, ids, [(1, 1)], "zero"),
                   model(ids, head_mask=mask)) <= F32


# --- the metric and the fraction ----------------------------------------------

def test_logit_diff_by_hand():
    logits = torch.zeros(2, 3, 5)
    logits[0, 2, 1], logits[0, 2, 4] = 3.0, 1.0  # pair 0: 3 - 1 = 2
    logits[1, 1, 0], logits[1, 1, 2] = -1.0, 2.0  # pair 1: -1 - 2 = -3
    got = I.logit_diff(logits, torch.tensor([1, 0]), torch.tensor([4, 2]),
                       torch.tensor([2, 1]))
    assert got == pytest.approx(-0.5)


def test_fraction_recovered_end_points_and_line():
    assert I.fraction_recovered(4.0, 4.0, -2.0) == pytest.approx(1.0)
    assert I.fraction_recovered(-2.0, 4.0, -2.0) == pytest.approx(0.0)
    assert I.fraction_recovered(1.0, 4.0, -2.0) == pytest.approx(0.5)
    assert I.fraction_recovered(7.0, 4.0, -2.0) == pytest.approx(1.5)  # overshoot
    got = I.fraction_recovered(torch.tensor([4.0, 1.0]), 4.0, -2.0)
    assert torch.allclose(got, torch.tensor([1.0, 0.5]))


def test_patching_maps_stay_near_zero_to_one(model, pairs):
    for p in pairs.values():
        for d in I.DIRECTIONS:
            got = I.patching_map(model, p, d)
            assert bool(torch.isfinite(got).all())
            assert -0.5 < float(got.min()) and float(got.max()) < 1.5, (d, got)


# --- the corruptions ------------------------------------------------------------

@pytest.mark.parametrize("name", list(I.CORRUPTIONS))
def test_corruptions_do_what_they_say(name):
    p = I.corrupt(name, 50, seed=3)
    again = I.corrupt(name, 50, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(p, again, strict=True))
    assert not torch.equal(p.clean, I.corrupt(name, 50, seed=4).clean)
    rows = torch.arange(50)
    y, kind = tasks.targets(p.clean)
    y_bad, kind_bad = tasks.targets(p.corrupted)
    assert bool((kind[rows, p.positions] == tasks.LOOKUP).all())
    assert torch.equal(y[rows, p.positions], p.answer)
    assert torch.equal(y_bad[rows, p.positions], p.rival)
    assert bool((p.answer != p.rival).all())
    changed = p.clean != p.corrupted  # (N, L)
    assert bool((changed.sum(1) == 1).all())  # one word per pair
    at_t = changed[rows, p.positions]
    assert bool(at_t.all()) if name == "query" else not bool(at_t.any())
    if name == "occurrence":  # nothing left to look up: the previous word
        assert bool((kind_bad[rows, p.positions] == tasks.PREVIOUS).all())
    description = I.CORRUPTIONS[name][1]
    assert "keeps" in description and description.count(".") == 0


# --- bad input: one line, the package's error, never NaN -------------------------

def one_layer():
    return tm.TinyTransformer(tm.TinyConfig(h=4, d_k=16, n_layers=1))


def bad_cases(model, p):
    ids = p.clean
    nan_logits = model(ids[:2]).detach().clone()
    nan_logits[0, 3, 5] = float("nan")
    unchanged = I.Pairs(p.clean, p.clean, p.answer, p.rival, p.positions)
    return {
        "empty batch": lambda: I.ablate(model, ids[:0], [(0, 0)], "zero"),
        "empty batch, patching": lambda: I.patch_heads(
            model, ids[:0], ids[:0], [(0, 0)], "noise"),
        "layer out of range": lambda: I.ablate(model, ids, [(2, 0)], "zero"),
        "head out of range": lambda: I.patch_heads(model, ids, p.corrupted,
                                                   [(0, 4)], "denoise"),
        "negative layer": lambda: I.ablate(model, ids, [(-1, 0)], "mean"),
        "no heads": lambda: I.ablate(model, ids, [], "zero"),
        "a head that is not a pair": lambda: I.ablate(model, ids, [3], "zero"),
        "a one-layer model asked for layer 2": lambda: I.ablate(
            one_layer(), ids, [(1, 0)], "zero"),
        "a one-layer model patched at layer 2": lambda: I.patch_heads(
            one_layer(), ids, p.corrupted, [(1, 3)], "noise"),
        "method misspelled": lambda: I.ablate(model, ids, [(0, 0)], "zeros"),
        "method misspelled in the map": lambda: I.ablation_map(model, p, "Mean"),
        "direction misspelled": lambda: I.patch_heads(
            model, ids, p.corrupted, [(0, 0)], "denoising"),
        "unit misspelled": lambda: I.patching_map(model, p, "noise", unit="heads"),
        "mismatched shapes": lambda: I.patch_heads(
            model, ids, p.corrupted[:, :8], [(0, 0)], "noise"),
        "resample with one sequence": lambda: I.ablate(
            model, ids[:1], [(0, 0)], "resample"),
        "reference of another length": lambda: I.ablate(
            model, ids, [(0, 0)], "mean", reference=ids[:, :8]),
        "near-zero denominator": lambda: I.fraction_recovered(0.5, 1.0, 1.0 + 1e-5),
        "a corruption that changes nothing": lambda: I.patching_map(
            model, unchanged, "denoise"),
        "answer equals rival": lambda: I.logit_diff(
            model(ids[:2]).detach(), p.answer[:2], p.answer[:2], p.positions[:2]),
        "NaN logits": lambda: I.logit_diff(nan_logits, p.answer[:2], p.rival[:2],
                                           p.positions[:2]),
        "NaN patched": lambda: I.fraction_recovered(float("nan"), 1.0, 0.0),
        "inf clean": lambda: I.fraction_recovered(0.5, float("inf"), 0.0),
        "inf head_values": lambda: model.forward_heads(
            ids[:1], torch.zeros(2, 4), torch.full((2, 1, 4, 16, 16), float("inf"))),
        "head_values without a mask": lambda: model.forward_heads(
            ids[:1], None, torch.zeros(2, 1, 4, 16, 16)),
        "head_values of the wrong shape": lambda: model.forward_heads(
            ids[:1], torch.zeros(2, 4), torch.zeros(2, 1, 4, 16, 8)),
        "positions past L": lambda: I.logit_diff(
            model(ids[:2]).detach(), p.answer[:2], p.rival[:2], p.positions[:2] + 16),
        "unknown corruption": lambda: I.corrupt("swap", 8),
        "no pairs": lambda: I.corrupt("successor", 0),
        "not a model": lambda: I.ablate(nn.Linear(2, 2), ids, [(0, 0)], "zero"),
        "pairs not a tuple": lambda: I.patching_map(model, [p.clean], "noise"),
    }


def test_bad_inputs_get_one_line_each(model, pairs):
    cases = bad_cases(model, pairs["successor"])
    assert len(cases) >= 25
    for label, call in cases.items():
        with pytest.raises(mc.InputError) as e:
            out = call()
            assert not bool(torch.isnan(torch.as_tensor(out)).any()), label
        msg = str(e.value)
        assert "\n" not in msg and 20 < len(msg) < 400, (label, msg)


def test_near_zero_denominator_names_the_numbers(model, pairs):
    p = pairs["successor"]
    unchanged = I.Pairs(p.clean, p.clean, p.answer, p.rival, p.positions)
    with pytest.raises(mc.InputError, match="leaves nothing to recover"):
        I.ablation_map(model, unchanged, "zero")
