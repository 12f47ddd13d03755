"""The key/value cache (mhacourse.kv_cache): step-by-step decoding equals full
recomputation for MHA, GQA and MQA, on random models and on the course's
trained tiny model; memory per token equals chapter 12's formula."""
import pytest
import torch

import mhacourse as mc
from mhacourse import gqa
from mhacourse.kv_cache import (
    KVCache,
    attention_step,
    forward_cached,
    forward_full,
    generate,
    random_causal_lm,
)
from mhacourse.tiny_model import from_tiny_model


@pytest.mark.parametrize("h_kv", [8, 2, 1], ids=["MHA", "GQA", "MQA"])
@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-6)],
                         ids=["f64", "f32"])
def test_cached_decoding_equals_full_recomputation(h_kv, dtype, tol):
    model = random_causal_lm(vocab=50, d_model=32, h=8, h_kv=h_kv, n_layers=3,
                             max_len=40, seed=0, dtype=dtype)
    ids = torch.randint(0, 50, (2, 30), generator=torch.Generator().manual_seed(1))
    full = forward_full(model, ids)                          # (B, L, vocab)
    caches = model.new_caches(2)
    prompt = forward_cached(model, ids[:, :7], caches)       # 7 tokens at once
    steps = [forward_cached(model, ids[:, t:t + 1], caches) for t in range(7, 30)]
    cached = torch.cat([prompt, *steps], dim=1)
    scale = full.abs().max()
    assert float((cached - full).abs().max() / scale) <= tol
    assert caches[0].length == 30


def test_tiny_model_cached_equals_its_own_forward():
    from mhacourse import explorer as ex
    from mhacourse import tasks
    tiny = ex.tiny_model_for(4, 8, trained=True)
    tiny = type(tiny)(tiny.cfg).double().eval()  # a float64 copy
    tiny.load_state_dict({k: v.double() for k, v in
                          ex.tiny_model_for(4, 8, trained=True).state_dict().items()})
    lm = from_tiny_model(tiny)
    ids = tasks.sample(3, generator=torch.Generator().manual_seed(0))[0]
    with torch.no_grad():
        ref = tiny(ids)                                      # the course's forward
        full = forward_full(lm, ids)
        caches = lm.new_caches(ids.shape[0])
        cached = torch.cat([forward_cached(lm, ids[:, t:t + 1], caches)
                            for t in range(ids.shape[1])], dim=1)
    assert float((full - ref).abs().max()) <= 1e-10
    assert float((cached - ref).abs().max()) <= 1e-10


def test_generate_same_tokens_with_and_without_cache():
    model = random_causal_lm(vocab=40, d_model=32, h=4, h_kv=2, n_layers=2,
                             max_len=32, seed=3, dtype=torch.float64)
    prompt = torch.randint(0, 40, (2, 5), generator=torch.Generator().manual_seed(2))
    a = generate(model, prompt, 20, use_cache=True)
    b = generate(model, prompt, 20, use_cache=False)
    assert a.shape == (2, 25) and torch.equal(a, b)


@pytest.mark.parametrize("h_kv", [8, 2, 1])
def test_memory_per_token_is_chapter_11s_formula(h_kv):
    model = random_causal_lm(vocab=20, d_model=64, h=8, h_kv=h_kv, n_layers=3,
                             max_len=64, seed=0, dtype=torch.float32)
    caches = model.new_caches(1)
    forward_cached(model, torch.zeros(1, 37, dtype=torch.long), caches)
    used = sum(c.nbytes_used() for c in caches)
    held = sum(c.K.untyped_storage().nbytes() + c.V.untyped_storage().nbytes()
               for c in caches)
    formula = gqa.kv_cache_per_token(3, h_kv, 8, bytes_per_number=4)
    assert used == 37 * formula
    assert held == 64 * formula                              # max_len slots


def test_attention_step_one_token_needs_no_mask_and_matches_gqa():
    g = torch.Generator().manual_seed(0)
    W = gqa.random_gqa_weights(16, 4, 2, seed=0, dtype=torch.float64)
    x = torch.randn(1, 6, 16, generator=g, dtype=torch.float64)
    ref, _ = gqa.grouped_query_attention(x, x, x, W, 4, 2, attn_mask=mc.causal_mask(6))
    cache = KVCache(1, 2, 4, 6, torch.float64)
    out = torch.cat([attention_step(x[:, t:t + 1], W, 4, 2, cache)
                     for t in range(6)], dim=1)
    assert torch.allclose(out, ref, atol=1e-12)


def test_cache_errors():
    c = KVCache(1, 2, 4, 3)
    with pytest.raises(ValueError, match="at most max_len = 3"):
        c.append(torch.zeros(1, 2, 4, 4), torch.zeros(1, 2, 4, 4))
    with pytest.raises(ValueError, match="must have shape"):
        c.append(torch.zeros(1, 3, 1, 4), torch.zeros(1, 3, 1, 4))
    model = random_causal_lm(10, 8, 2, 1, 1, max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        forward_full(model, torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        forward_full(model, torch.zeros(1, 3))


def _step(q, k, v, K, V, order="after", append_v=True, before=False, scale=True):
    K_all = torch.cat([K, k]) if order == "after" else torch.cat([k, K])
    V_all = torch.cat([V, v]) if append_v else torch.cat([V, k])  # k by mistake
    Ks, Vs = (K, V) if before else (K_all, V_all)
    s = q @ Ks.T / (q.shape[-1] ** 0.5 if scale else 1.0)
    return torch.softmax(s, -1) @ Vs, K_all, V_all


@pytest.mark.parametrize("fn, ok, words", [
    (_step, True, "correct"),
    (lambda *a: _step(*a, order="before"), False, "new key first"),
    (lambda *a: _step(*a, append_v=False), False, "append the new value"),
    (lambda *a: _step(*a, before=True), False, "before appending"),
    (lambda *a: _step(*a, scale=False), False, "sqrt(d)"),
    (lambda *a: _step(*a)[:2], False, "three tensors"),
    (lambda *a: 1 / 0, False, "ZeroDivisionError"),
])
def test_check_cached_step(fn, ok, words):
    from mhacourse.checks import check_cached_step
    v = check_cached_step(fn)
    assert bool(v) is ok and words in v.message, v.message
