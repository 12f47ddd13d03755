"""mhacourse.circuits: every read-out against an independent NumPy
computation (float64, <= 1e-6), the page's traceable core against the
readable functions, and the composition scores on a hand-built induction
circuit and on random weights."""
import numpy as np
import pytest
import torch

from mhacourse import InputError
from mhacourse import circuits as C
from mhacourse import tiny_model as tm
from mhacourse.circuits import core
from mhacourse.circuits.planted import planted_induction_model
from mhacourse.tiny_model import step as st
from mhacourse.tiny_model.analysis import STATISTICS
from mhacourse.tiny_model.training import _role_names

TOL = 1e-6


@pytest.fixture(scope="module")
def model():
    """A model whose every parameter is random, LayerNorm gains and biases
    included (so folding the LayerNorm and the biases are exercised)."""
    m = tm.TinyTransformer(tm.TinyConfig(h=3, d_k=5), seed=1)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "gamma" in name:
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.split(".")[-1].startswith(("b_", "beta")):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return m.eval()


def arrays(m):
    return {k: v.detach().double().numpy() for k, v in m.state_dict().items()}


def np_fold(W, gamma):
    d = W.shape[0]
    P = np.eye(d) - np.ones((d, d)) / d
    return P @ np.diag(gamma) @ W


def np_head(a, layer, i, h, fold=True):
    """W_Q^i, W_K^i, W_V^i (d, d_k) and W_O^i (d_k, d) with explicit slices."""
    p = f"blocks.{layer}."
    d = a["W_E"].shape[1]
    k = d // h
    cols = slice(i * k, (i + 1) * k)
    out = []
    for W in ("W_Q", "W_K", "W_V"):
        M = a[p + "attn." + W]
        M = np_fold(M, a[p + "gamma_1"]) if fold else M
        out.append(M[:, cols])
    out.append(a[p + "attn.W_O"][cols, :])
    return out


def np_ln(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def np_full_ov(a, layer, i, h):
    _, _, V, O = np_head(a, layer, i, h)
    return a["W_E"] @ V @ O @ np_fold(a["W_U"], a["gamma_f"])


# ------------------------------------------------------- per-head matrices

@pytest.mark.parametrize("fold", [True, False])
def test_qk_and_ov_matrices_against_numpy(model, fold):
    a, h = arrays(model), model.cfg.h
    for layer in (0, 1):
        for i in range(h):
            Q, K, V, O = np_head(a, layer, i, h, fold)
            assert np.abs(C.qk_matrix(model, layer, i, fold).numpy() - Q @ K.T).max() < TOL
            assert np.abs(C.ov_matrix(model, layer, i, fold).numpy() - V @ O).max() < TOL


def test_singular_values_and_rank(model):
    d_k = model.cfg.d_k
    for M in (C.qk_matrix(model, 0, 1), C.ov_matrix(model, 1, 2)):
        sv = C.singular_values(M)
        want = np.linalg.svd(M.numpy(), compute_uv=False)
        assert np.abs(sv.numpy() - want).max() < TOL * want[0]
        assert C.rank(sv) == d_k, "a head's QK and OV matrices have rank d_k"
        assert sv[d_k:].max() < 1e-10 * sv[0] and sv[d_k - 1] > 1e-3 * sv[0]
    full = torch.randn(9, 7, generator=torch.Generator().manual_seed(0))
    assert C.rank(C.singular_values(full)) == 7
    assert C.rank(torch.tensor([1.0, 1e-3, 1e-9]), tol=1e-6) == 2
    assert C.rank(torch.tensor([1.0, 1e-3, 1e-9]), tol=1e-2) == 1


def test_positional_scores_and_band_against_numpy(model):
    a, h, k = arrays(model), model.cfg.h, model.cfg.d_k
    for layer in (0, 1):
        p = f"blocks.{layer}."
        X = np_ln(a["W_pos"], a[p + "gamma_1"], a[p + "beta_1"])
        for i in range(h):
            cols = slice(i * k, (i + 1) * k)
            Q = X @ a[p + "attn.W_Q"][:, cols] + a[p + "attn.b_Q"][cols]
            K = X @ a[p + "attn.W_K"][:, cols] + a[p + "attn.b_K"][cols]
            S = Q @ K.T / np.sqrt(k)
            got = C.positional_scores(model, layer, i)
            assert np.abs(got.numpy() - S).max() < TOL
            prev = []
            for t in range(1, S.shape[0]):
                e = np.exp(S[t, :t + 1] - S[t, :t + 1].max())
                prev.append(e[t - 1] / e.sum())
            assert abs(C.band_score(got) - np.mean(prev)) < TOL


def test_band_score_of_known_patterns():
    L = 6
    S = torch.full((L, L), -50.0)
    S[torch.arange(1, L), torch.arange(L - 1)] = 50.0  # previous position
    assert C.band_score(S) == pytest.approx(1.0)
    # on the diagonal only query 0, which can see nothing else
    assert C.band_score(S, offset=0) == pytest.approx(1 / L)
    flat = torch.zeros(L, L)
    assert C.band_score(flat) == pytest.approx(np.mean([1 / (t + 1) for t in range(1, L)]))


def test_copying_against_numpy_eigenvalues(model):
    a, h, k = arrays(model), model.cfg.h, model.cfg.d_k
    for layer, i in ((0, 0), (1, 2)):
        M = np_full_ov(a, layer, i, h)
        assert np.abs(C.full_ov_circuit(model, layer, i).numpy() - M).max() < TOL
        lam = np.linalg.eigvals(M)
        score = lam.real.sum() / np.abs(lam).sum()
        proxy = np.trace(M) / (np.sqrt(k) * np.linalg.norm(M))
        got, got_proxy = C.copying_score(model, layer, i), C.copying_proxy(model, layer, i)
        assert abs(got - score) < TOL and abs(got_proxy - proxy) < TOL
        assert abs(got_proxy) <= abs(got) + 1e-9 and np.sign(got_proxy) == np.sign(got)


def test_copying_of_a_pure_copier_is_one():
    """M a positive multiple of a rank-d_k projection: both scores are 1."""
    m = planted_induction_model()
    assert C.copying_score(m, 1, 0) == pytest.approx(1.0, abs=1e-9)
    assert C.copying_proxy(m, 1, 0) > 0.5


# ------------------------------------------------------------- composition

def test_composition_scores_against_numpy_in_the_papers_convention(model):
    """Elhage et al. write column vectors: W_QK = W_Qᵀ W_K, W_OV = W_O W_V
    with their (d_k, d_model) maps, i.e. our W_Q W_Kᵀ and (W_V W_O)ᵀ.
    Q: ||W_QK^jᵀ W_OV^i||, K: ||W_QK^j W_OV^i||, V: ||W_OV^j W_OV^i||."""
    a, h = arrays(model), model.cfg.h
    fro = np.linalg.norm

    def score(A, B):
        return fro(A @ B) / (fro(A) * fro(B))

    first = [np_head(a, 0, i, h) for i in range(h)]
    second = [np_head(a, 1, j, h) for j in range(h)]
    OV1 = [(V @ O).T for _, _, V, O in first]  # the paper's W_OV
    QK2 = [Q @ K.T for Q, K, _, _ in second]  # the paper's W_QK (= ours)
    OV2 = [(V @ O).T for _, _, V, O in second]
    want = {"q": [[score(QK2[j].T, OV1[i]) for j in range(h)] for i in range(h)],
            "k": [[score(QK2[j], OV1[i]) for j in range(h)] for i in range(h)],
            "v": [[score(OV2[j], OV1[i]) for j in range(h)] for i in range(h)]}
    for kind in "qkv":
        got = C.composition_scores(model, kind).numpy()
        assert np.abs(got - np.array(want[kind])).max() < TOL, kind


def test_composition_score_bounds():
    g = torch.Generator().manual_seed(3)
    A, B = torch.randn(6, 4, generator=g), torch.randn(4, 5, generator=g)
    s = C.composition_score(A, B)
    assert 0 < s <= 1
    assert C.composition_score(torch.eye(3)[:, :1], torch.eye(3)[:1]) == pytest.approx(1.0)
    writes = torch.diag(torch.tensor([1.0, 1, 0, 0]))
    reads = torch.diag(torch.tensor([0.0, 0, 1, 1]))
    assert C.composition_score(writes, reads) == 0.0  # disjoint subspaces
    # two identities on r dimensions: 1 / sqrt(r), the ceiling of flat maps
    assert C.composition_score(torch.eye(4), torch.eye(4)) == pytest.approx(0.5)


def test_planted_induction_circuit_is_read_correctly():
    """Block 0 head 0 (previous-token) and block 1 head 0 (induction):
    K-composition far above the random baseline, Q and V at zero; the band
    and the prefix-matching score name the two heads."""
    m = planted_induction_model()
    r = C.read_circuits(m)
    base_k = C.composition_baseline(m.cfg.d_model, m.cfg.d_k, "k")
    assert r["comp_k"][0, 0] > 0.3 and r["comp_k"][0, 0] > 2.5 * base_k
    assert r["comp_q"][0, 0] < 0.05 and r["comp_v"][0, 0] < 0.05
    others = r["comp_k"].flatten()[1:]
    assert others.max() < 1.5 * base_k
    assert r["prev_band"][0, 0] > 0.99 and r["prev_band"][0, 1:].max() < 0.3
    assert r["prefix"][1, 0] > 0.8 and r["prefix"][1, 1:].max() < 0.2
    assert r["copying"][1, 0] > 0.5


def test_random_weights_compose_at_the_baseline():
    m = tm.TinyTransformer(tm.TinyConfig(h=4, d_k=16), seed=3)
    for kind in "qkv":
        scores = C.composition_scores(m, kind)
        base = C.composition_baseline(64, 16, kind)
        assert abs(scores.mean().item() - base) < 0.15 * base, kind
        assert scores.max().item() < 1.6 * base
    # the baseline is about 1 / sqrt(d_model), whatever d_k
    for d, k in ((64, 16), (64, 4), (128, 8)):
        assert C.composition_baseline(d, k, "k") == pytest.approx(d**-0.5, rel=0.2)


def test_baseline_against_numpy_gaussians():
    """The pool's normals give the score of independent numpy Gaussians."""
    rng = np.random.default_rng(0)
    d, k, n = 48, 6, 10
    fro = np.linalg.norm

    def head():
        return [rng.standard_normal((d, k)) for _ in range(3)] + [rng.standard_normal((k, d))]

    vals = []
    for _ in range(n * n):
        (_, _, V1, O1), (Q2, K2, _, _) = head(), head()
        A, B = V1 @ O1, (Q2 @ K2.T).T
        vals.append(fro(A @ B) / (fro(A) * fro(B)))
    assert C.composition_baseline(d, k, "k") == pytest.approx(np.mean(vals), rel=0.05)


# ---------------------------------------------------------------- prefix

def test_prefix_matching_against_a_loop(model):
    ids = C.repeated_sequences(n=4, L=16, seed=2)
    assert torch.equal(ids[:, :8], ids[:, 8:])
    assert all(len(set(row[:8].tolist())) == 8 for row in ids) and (ids > 0).all()
    with torch.no_grad():
        _, attention = model.double()(ids, return_attention=True)
    model.float()
    want = np.zeros((2, model.cfg.h))
    for layer, A in enumerate(attention):
        for i in range(model.cfg.h):
            want[layer, i] = np.mean([A[b, i, t, t - 7].item() for b in range(4)
                                      for t in range(8, 16)])
    got = C.prefix_matching_scores(model, ids)
    assert np.abs(got.numpy() - want).max() < TOL


# ------------------------------------------------- the page's traced core

@pytest.mark.parametrize("which", ["random", "planted"])
def test_core_equals_the_readable_functions(model, which):
    m = model if which == "random" else planted_induction_model()
    h = m.cfg.h
    r = C.read_circuits(m)
    assert set(r) == set(C.READOUTS)
    for kind in "qkv":
        assert (r[f"comp_{kind}"] - C.composition_scores(m, kind)).abs().max() < TOL
        base = C.composition_baseline(m.cfg.d_model, m.cfg.d_k, kind)
        assert abs(r["comp_baseline"]["qkv".index(kind)] - base) < TOL
    for layer in (0, 1):
        for i in range(h):
            band = C.band_score(C.positional_scores(m, layer, i))
            assert abs(r["prev_band"][layer, i] - band) < TOL
            assert abs(r["copying"][layer, i] - C.copying_proxy(m, layer, i)) < TOL
    assert (r["prefix"] - C.prefix_matching_scores(m)).abs().max() < TOL
    x, y, kind = tm.heldout()
    probe = (x[:core.PROBE_N], y[:core.PROBE_N], kind[:core.PROBE_N])
    scores = tm.head_scores(m.double(), probe)
    m.float()
    table = torch.tensor([[[s[k] for k in STATISTICS] for s in layer] for layer in scores],
                         dtype=torch.float64)
    assert (r["probe_stats"] - table).abs().max() < TOL
    assert _role_names(r["probe_role"], r["probe_named"]) == tm.head_roles(scores)


def test_patterns_are_the_forward_passs(model):
    """_patterns_core skips the last feed-forward layer and the unembedding,
    and still gives _forward_core's attention exactly."""
    ids = tm.heldout()[0][:6]
    with torch.no_grad():
        _, want = tm.TinyTransformer.forward(model, ids, return_attention=True)
        got = core._patterns_core(ids, model.weights(), model.cfg.h)
    for A, B in zip(got, want, strict=True):
        assert torch.equal(A, B)


def test_probe_roles_agree_with_the_heldout_roles():
    """The quick read-out names every head of the committed trained models
    as the 1,024 held-out sequences do, from its first 24 (PROBE_N), and
    its statistics are within 0.07 of theirs (0.065 at most, measured)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "assets"
    files = sorted((root / "models").glob("h*_dk*[0-9].safetensors"))
    files += [root / "runs" / f"{n}.safetensors" for n in ("main", "seed1", "seed2")]
    assert len(files) >= 14, files
    heads = 0
    for f in files:
        m = tm.load(f)
        full = tm.head_scores(m)
        r = C.read_circuits(m)
        assert r["probe_named"].shape == (2, m.cfg.h)
        assert _role_names(r["probe_role"], r["probe_named"]) == tm.head_roles(full), f.name
        table = torch.tensor([[[s[k] for k in STATISTICS] for s in layer]
                              for layer in full], dtype=torch.float64)
        assert (r["probe_stats"] - table).abs().max() < 0.07, f.name
        heads += 2 * m.cfg.h
    assert heads >= 140  # 11 trained sizes and 3 recorded runs


def test_core_in_float32_as_the_page_runs_it(model):
    params = tuple(p.detach() for p in model.state_dict().values())
    out = core._circuits_core(params, torch.zeros(model.cfg.h), st.noise_pool())
    ref = C.read_circuits(model)
    for name, got in zip(C.READOUTS, out):
        if name in ("probe_role", "probe_named"):  # an index and a flag
            assert torch.equal(got, ref[name]), name
            continue
        assert got.dtype == torch.float32 and torch.isfinite(got).all()
        assert (got.double() - ref[name]).abs().max() < 1e-4, name


def test_core_traces_once_for_every_size():
    """Traced with symbolic sizes (as the page's export does), the graph
    gives the eager numbers at another h and d_k."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def fn(*a):
        return core._circuits_core(a[:-2], a[-2], a[-1])

    def inputs(h, d_k, seed):
        m = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k), seed=seed)
        return (*(p.detach() for p in m.state_dict().values()), torch.zeros(h),
                st.noise_pool())

    st.param_names()
    gm = make_fx(fn, tracing_mode="symbolic")(*inputs(3, 7, 0))
    names = {str(n.target) for n in gm.graph.nodes}
    assert not any("svd" in n or "eig" in n for n in names)
    for h, d_k in ((2, 8), (5, 4)):
        x = inputs(h, d_k, 1)
        for got, want in zip(gm(*x), fn(*x)):
            assert got.shape == want.shape and torch.allclose(got, want, atol=1e-5)


# ------------------------------------------------------------- bad input

def test_bad_inputs_get_one_clear_line(model):
    with pytest.raises(InputError, match="is not a head"):
        C.qk_matrix(model, 0, 3)
    with pytest.raises(InputError, match="not a block"):
        C.ov_matrix(model, 2, 0)
    with pytest.raises(InputError, match="TinyTransformer"):
        C.qk_matrix("model", 0, 0)
    with pytest.raises(InputError, match="'q', 'k' or 'v'"):
        C.composition_scores(model, "x")
    with pytest.raises(InputError, match="tol must be > 0 and < 1"):
        C.rank(torch.tensor([1.0, 0.5]), tol=0)
    with pytest.raises(InputError, match="0 / 0"):
        C.composition_score(torch.zeros(3, 3), torch.eye(3))
    with pytest.raises(InputError, match="columns"):
        C.composition_score(torch.eye(3), torch.eye(4))
    with pytest.raises(InputError, match="repeats the first"):
        C.prefix_matching_scores(model, torch.arange(1, 17)[None])
    one = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=4, n_layers=1))
    with pytest.raises(InputError, match="second layer"):
        C.composition_scores(one, "k")
    diverged = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=4))
    with torch.no_grad():
        diverged.W_E[3, 1] = float("nan")
    with pytest.raises(InputError, match="not finite"):
        C.read_circuits(diverged)
    with pytest.raises(InputError, match="even"):
        C.repeated_sequences(L=7)
