"""Properties that hold for any shapes (hypothesis draws them)."""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mhacourse as mc

sizes = st.integers(1, 6)
heads = st.sampled_from([1, 2, 4])


def make(B, L, S, h, d_k, seed):
    g = torch.Generator().manual_seed(seed)
    D = h * d_k
    q = torch.randn(B, L, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, S, D, generator=g, dtype=torch.float64)
    v = torch.randn(B, S, D, generator=g, dtype=torch.float64)
    return q, k, v, mc.random_weights(D, h, seed=seed, dtype=torch.float64)


@settings(max_examples=40, deadline=None)
@given(B=sizes, L=sizes, S=sizes, h=heads, d_k=sizes, seed=st.integers(0, 999))
def test_rows_sum_to_one(B, L, S, h, d_k, seed):
    q, k, v, w = make(B, L, S, h, d_k, seed)
    _, A = mc.multi_head_attention(q, k, v, w, h)
    assert A.shape == (B, h, L, S)
    assert torch.allclose(A.sum(-1), torch.ones(B, h, L, dtype=A.dtype))
    assert bool((A >= 0).all())


@settings(max_examples=30, deadline=None)
@given(L=st.integers(2, 8), h=heads, d_k=sizes, t=st.integers(0, 7),
       seed=st.integers(0, 999))
def test_causal_mask_means_no_look_ahead(L, h, d_k, t, seed):
    t = t % L
    x, _, _, w = make(1, L, L, h, d_k, seed)
    mask = mc.causal_mask(L)
    out, A = mc.multi_head_attention(x, x, x, w, h, attn_mask=mask)
    x2 = x.clone()
    x2[:, t:] += torch.randn_like(x2[:, t:])  # change token t and later ones
    out2, _ = mc.multi_head_attention(x2, x2, x2, w, h, attn_mask=mask)
    assert torch.allclose(out[:, :t], out2[:, :t])  # earlier outputs unchanged
    assert bool((A[..., mask] == 0).all())


@settings(max_examples=30, deadline=None)
@given(B=sizes, L=sizes, S=st.integers(2, 8), h=heads, d_k=sizes,
       seed=st.integers(0, 999), data=st.data())
def test_padded_keys_get_zero_weight_and_do_not_matter(B, L, S, h, d_k, seed, data):
    q, k, v, w = make(B, L, S, h, d_k, seed)
    lengths = data.draw(st.lists(st.integers(1, S), min_size=B, max_size=B))
    pad = mc.padding_mask(lengths, S)
    out, A = mc.multi_head_attention(q, k, v, w, h, key_padding_mask=pad)
    assert bool((A.permute(0, 3, 1, 2)[pad] == 0).all())  # (B, S, h, L) at padded keys
    k2, v2 = k.clone(), v.clone()
    k2[pad] = 1e3 * torch.randn_like(k2[pad])
    v2[pad] = 1e3 * torch.randn_like(v2[pad])
    out2, _ = mc.multi_head_attention(q, k2, v2, w, h, key_padding_mask=pad)
    assert torch.allclose(out, out2)


@settings(max_examples=30, deadline=None)
@given(B=sizes, L=sizes, S=sizes, h=heads, d_k=sizes, seed=st.integers(0, 999))
def test_permuting_keys_and_values_together_changes_nothing(B, L, S, h, d_k, seed):
    q, k, v, w = make(B, L, S, h, d_k, seed)
    perm = torch.randperm(S, generator=torch.Generator().manual_seed(seed))
    out, A = mc.multi_head_attention(q, k, v, w, h)
    out_p, A_p = mc.multi_head_attention(q, k[:, perm], v[:, perm], w, h)
    assert torch.allclose(out, out_p)
    assert torch.allclose(A[..., perm], A_p)
