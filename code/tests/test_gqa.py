"""Grouped-query attention (mhacourse.gqa): MHA and MQA as its two ends."""
import pytest
import torch
import torch.nn.functional as F

import mhacourse as mc
from mhacourse.gqa import (
    check_kv_heads,
    grouped_query_attention,
    kv_cache_per_token,
    mean_pool_kv,
    random_gqa_weights,
)
from tolerances import TOL, max_err


def inputs(B=2, L=5, S=None, d_model=24, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    S = L if S is None else S
    q = torch.randn(B, L, d_model, generator=g, dtype=dtype)
    kv = torch.randn(B, S, d_model, generator=g, dtype=dtype)
    return q, kv


def test_h_kv_equal_h_is_multi_head_attention(dtype):
    d_model, h = 24, 6
    q, kv = inputs(dtype=dtype)
    w = mc.random_weights(d_model, h, bias=False, seed=3, dtype=dtype)
    out, A = grouped_query_attention(q, kv, kv, w, h, h)
    ref, A_ref = mc.multi_head_attention(q, kv, kv, w, h)
    assert max_err(out, ref) < TOL[dtype]
    assert max_err(A, A_ref) < TOL[dtype]
    mask = mc.causal_mask(5)
    out_m, _ = grouped_query_attention(q, q, q, w, h, h, attn_mask=mask)
    ref_m, _ = mc.multi_head_attention(q, q, q, w, h, attn_mask=mask)
    assert max_err(out_m, ref_m) < TOL[dtype]


@pytest.mark.parametrize("h_kv", [1, 2, 3])
def test_gqa_equals_repeated_key_value_heads(h_kv):
    """GQA is MHA whose key/value heads are copies within each group."""
    d_model, h = 24, 6
    d_k, g = d_model // h, h // h_kv
    q, kv = inputs(S=7)
    W = random_gqa_weights(d_model, h, h_kv, seed=1, dtype=torch.float64)
    W_Q, W_K, W_V, W_O = W.W_Q, W.W_K, W.W_V, W.W_O
    out, A = grouped_query_attention(q, kv, kv, W, h, h_kv)

    def repeat(W):  # (d_model, h_kv*d_k) -> (d_model, h*d_k), head i // g
        return W.reshape(d_model, h_kv, 1, d_k).expand(-1, -1, g, -1).reshape(
            d_model, h * d_k)

    w = mc.MHAWeights(W_Q, repeat(W_K), repeat(W_V), W_O)
    ref, A_ref = mc.multi_head_attention(q, kv, kv, w, h)
    assert max_err(out, ref) < 1e-10
    assert max_err(A, A_ref) < 1e-10
    # and PyTorch's fused kernel with enable_gqa
    Q = mc.split_heads(q @ W_Q, h)
    K, V = mc.split_heads(kv @ W_K, h_kv), mc.split_heads(kv @ W_V, h_kv)
    heads = F.scaled_dot_product_attention(Q, K, V, enable_gqa=True)
    assert max_err(mc.merge_heads(heads) @ W_O, out) < 1e-10


def test_shapes_rows_sum_to_one_and_unbatched():
    d_model, h, h_kv = 16, 8, 2
    q, kv = inputs(B=3, L=4, S=6, d_model=d_model)
    W = random_gqa_weights(d_model, h, h_kv, dtype=torch.float64)
    out, A = grouped_query_attention(q, kv, kv, W, h, h_kv)
    assert out.shape == (3, 4, d_model) and A.shape == (3, h, 4, 6)
    assert torch.allclose(A.sum(-1), torch.ones(3, h, 4, dtype=torch.float64))
    out1, A1 = grouped_query_attention(q[1], kv[1], kv[1], W, h, h_kv)
    assert max_err(out1, out[1]) < 1e-12 and max_err(A1, A[1]) < 1e-12


def test_mqa_heads_share_keys_and_a_mask_per_head():
    d_model, h = 16, 4
    q, _ = inputs(B=2, L=5, d_model=d_model)
    W = random_gqa_weights(d_model, h, 1, dtype=torch.float64)
    mask = mc.causal_mask(5)
    out, A = grouped_query_attention(q, q, q, W, h, 1, attn_mask=mask)
    assert torch.all(A.masked_select(mask.expand(2, h, 5, 5)) == 0)
    # the same mask given per head, (B*h, L, S), gives the same numbers
    out4, _ = grouped_query_attention(q, q, q, W, h, 1,
                                      attn_mask=mask.expand(2 * h, 5, 5))
    assert max_err(out4, out) < 1e-12
    # no output depends on a later token
    q2 = q.clone()
    q2[:, 3:] += 1.0
    out2, _ = grouped_query_attention(q2, q2, q2, W, h, 1, attn_mask=mask)
    assert max_err(out2[:, :3], out[:, :3]) < 1e-12


@pytest.mark.parametrize("h_kv", [1, 2, 4, 8])
def test_key_value_parameters_and_cache_shrink_by_h_over_h_kv(h_kv):
    d_model, h, n_layers = 64, 8, 3
    d_k = d_model // h
    W = random_gqa_weights(d_model, h, h_kv)
    W_K, W_V = W.W_K, W.W_V
    mha = 2 * d_model * d_model
    assert W_K.numel() + W_V.numel() == mha * h_kv // h
    full = kv_cache_per_token(n_layers, h, d_k)
    assert kv_cache_per_token(n_layers, h_kv, d_k) * (h // h_kv) == full
    assert full == 2 * n_layers * d_model * 2  # K and V, 2 bytes each


def test_llama_2_70b_cache():
    """Llama 2 70B: 80 layers, 64 query heads of d_k = 128, 8 key/value heads."""
    mha = kv_cache_per_token(80, 64, 128)
    gqa = kv_cache_per_token(80, 8, 128)
    assert gqa == 327_680 and mha // gqa == 8


def test_mean_pool_kv():
    W = torch.arange(2 * 12, dtype=torch.float64).reshape(2, 12)  # h=6, d_k=2
    P = mean_pool_kv(W, 6, 2)  # groups of 3 heads
    assert P.shape == (2, 4)
    assert torch.equal(P[0], torch.tensor([2.0, 3.0, 8.0, 9.0], dtype=torch.float64))
    assert torch.equal(mean_pool_kv(W, 6, 6), W)


@pytest.mark.parametrize("call, match", [
    (lambda: check_kv_heads(12, 5),
     r"h_kv = 5 key/value heads cannot be shared evenly by h = 12 .*"
     r"allowed for h = 12: 1, 2, 3, 4, 6, 12"),
    (lambda: check_kv_heads(8, 0), r"h_kv \(key/value heads\) must be a positive"),
    (lambda: random_gqa_weights(16, 4, 3), r"h_kv = 3 .*cannot be shared evenly"),
    (lambda: kv_cache_per_token(0, 8, 128), r"n_layers must be a positive integer"),
    (lambda: mean_pool_kv(torch.ones(4, 8), 4, 3), r"cannot be shared evenly"),
])
def test_bad_sizes(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_inputs():
    d_model, h, h_kv = 16, 4, 2
    q, kv = inputs(B=2, L=3, d_model=d_model)
    W = random_gqa_weights(d_model, h, h_kv, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"h_kv = 3 key/value heads cannot"):
        grouped_query_attention(q, q, q, W, h, 3)
    with pytest.raises(ValueError,
                       match=r"W_K must have shape \(d_model, h_kv\*d_k\) = "
                             r"\(16, 4\) for h_kv = 1; got \(16, 8\)"):
        grouped_query_attention(q, q, q, W, h, 1)
    with pytest.raises(ValueError, match=r"cannot split d_model = 16"):
        grouped_query_attention(q, q, q, W, 5, 1)
    with pytest.raises(ValueError, match=r"query must end in d_model = 16"):
        grouped_query_attention(q[..., :8], q, q, W, h, h_kv)
    with pytest.raises(ValueError, match=r"must share B"):
        grouped_query_attention(q, kv[:1], kv[:1], W, h, h_kv)
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(L, S\) = "
                                         r"\(3, 3\)"):
        grouped_query_attention(q, q, q, W, h, h_kv,
                                attn_mask=torch.zeros(2, 3, 3, dtype=torch.bool))
    full = torch.zeros(3, 3, dtype=torch.bool)
    full[1] = True
    with pytest.raises(ValueError, match=r"blocks every key"):
        grouped_query_attention(q, q, q, W, h, h_kv, attn_mask=full)
    # grouped-query weights given to multi-head attention: told which to call
    with pytest.raises(ValueError, match=r"grouped-query weights \(2 key/value "
                                         r"heads of d_k = 4\).*h_kv=2"):
        mc.multi_head_attention(q, q, q, W, h)
