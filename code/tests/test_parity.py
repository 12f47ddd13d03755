"""The course's code gives PyTorch's numbers, to 1e-5 (float32) / 1e-10 (float64)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mhacourse as mc
from mhacourse import reference_np as rnp
from mhacourse.masks import to_sdpa_mask
from tolerances import TOL, max_err

B, L, S, D, H = 3, 7, 5, 24, 4


def inputs(dtype, seed=0, S=S):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, L, D, generator=g, dtype=dtype)
    kv = torch.randn(B, S, D, generator=g, dtype=dtype)
    return q, kv, torch.randn(B, S, D, generator=g, dtype=dtype)


def test_sdpa_matches_torch_functional(dtype):
    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(B, H, n, 8, generator=g, dtype=dtype) for n in (L, S, S))
    out, w = mc.scaled_dot_product_attention(Q, K, V)
    ref = F.scaled_dot_product_attention(Q, K, V)
    assert max_err(out, ref) <= TOL[dtype]
    assert torch.allclose(w.sum(-1), torch.ones((), dtype=dtype), atol=TOL[dtype])


def test_sdpa_masked_matches_torch_functional(dtype):
    g = torch.Generator().manual_seed(2)
    Q, K, V = (torch.randn(B, H, L, 8, generator=g, dtype=dtype) for _ in range(3))
    mask = mc.causal_mask(L)
    out, _ = mc.scaled_dot_product_attention(Q, K, V, mask)
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=to_sdpa_mask(mask))
    assert max_err(out, ref) <= TOL[dtype]
    ref_causal = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    assert max_err(out, ref_causal) <= TOL[dtype]


@pytest.mark.parametrize("masks", ["none", "attn", "padding", "both", "float"])
@pytest.mark.parametrize("average", [True, False])
def test_mha_matches_nn_multiheadattention(dtype, masks, average):
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=dtype)
    with torch.no_grad():  # non-zero biases so they are checked too
        ref.in_proj_bias.normal_()
        ref.out_proj.bias.normal_()
    w = mc.from_torch(ref)
    q, k, v = inputs(dtype, S=L)  # self-attention-sized so causal masks fit
    attn_mask = mc.causal_mask(L) if masks in ("attn", "both") else None
    if masks == "float":
        attn_mask = torch.randn(L, L, dtype=dtype)
    kpm = mc.padding_mask([L, 4, 2], L) if masks in ("padding", "both") else None
    if masks == "both":
        kpm = mc.padding_mask([L, L, L], L)
        kpm[1, -1] = True
    ref_out, ref_w = ref(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask,
                         need_weights=True, average_attn_weights=average)
    mod = mc.MultiHeadAttention(D, H).to(dtype)
    with torch.no_grad():
        for name, t in vars(w).items():
            getattr(mod, name).copy_(t)
    out, A = mod(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask,
                 average_attn_weights=average)
    assert max_err(out, ref_out) <= TOL[dtype]
    assert max_err(A, ref_w) <= TOL[dtype]
    fast, none = mod(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask,
                     need_weights=False)
    assert none is None
    assert max_err(fast, ref_out) <= TOL[dtype]


def test_to_torch_round_trip(dtype):
    w = mc.random_weights(D, H, seed=3, dtype=dtype)
    ref = mc.to_torch(w, H)
    q, k, v = inputs(dtype)
    ref_out, _ = ref(q, k, v)
    out, _ = mc.multi_head_attention(q, k, v, w, H)
    assert max_err(out, ref_out) <= TOL[dtype]


def test_loop_equals_batched(dtype):
    w = mc.random_weights(D, H, seed=4, dtype=dtype)
    q, k, v = inputs(dtype)
    kpm = mc.padding_mask([S, 3, 1], S)
    a, wa = mc.multi_head_attention_loop(q, k, v, w, H, key_padding_mask=kpm)
    b, wb = mc.multi_head_attention(q, k, v, w, H, key_padding_mask=kpm)
    assert max_err(a, b) <= TOL[dtype]
    assert max_err(wa, wb) <= TOL[dtype]


def test_per_head_projections_equal_one_big_projection(dtype):
    w = mc.random_weights(D, H, seed=5, dtype=dtype)
    x = inputs(dtype)[0]
    big = mc.split_heads(x @ w.W_Q + w.b_Q, H)  # (B, h, L, d_k)
    for i in range(H):
        W_i, b_i = mc.head_slice(w.W_Q, w.b_Q, i, H)
        assert W_i.shape == (D, D // H)  # all d_model rows: reads every input dim
        assert max_err(x @ W_i + b_i, big[:, i]) <= TOL[dtype]


def test_concat_times_W_O_equals_sum_of_head_contributions(dtype):
    w = mc.random_weights(D, H, seed=6, dtype=dtype)
    q, k, v = inputs(dtype)
    out, _, concat = mc.multi_head_attention(q, k, v, w, H, return_concat=True)
    parts = mc.head_contributions(concat, w.W_O, H)  # (B, h, L, d_model)
    assert parts.shape == (B, H, L, D)
    assert max_err(parts.sum(1) + w.b_O, out) <= TOL[dtype]


def test_split_merge_inverse_and_layout():
    x = torch.arange(2 * 3 * 8.0).reshape(2, 3, 8)
    s = mc.split_heads(x, 4)
    assert s.shape == (2, 4, 3, 2)
    assert torch.equal(s[1, 2, 0], x[1, 0, 4:6])  # head 2 owns columns 4:6
    assert torch.equal(mc.merge_heads(s), x)


def test_numpy_equals_torch():
    w = mc.random_weights(D, H, seed=7, dtype=torch.float64)
    x = inputs(torch.float64)[0]
    mask = mc.causal_mask(L)
    out, A = mc.multi_head_attention(x, x, x, w, H, attn_mask=mask)
    W = rnp.MHAWeights(**{k: v.numpy() for k, v in vars(w).items()})
    xn = x.numpy()
    for fn in (rnp.multi_head_attention, rnp.multi_head_attention_loop):
        o, a = fn(xn, xn, xn, W, H, attn_mask=mask.numpy())
        assert np.abs(o - out.numpy()).max() <= 1e-10
        assert np.abs(a - A.numpy()).max() <= 1e-10
    assert np.array_equal(rnp.causal_mask(L), mask.numpy())
    assert np.array_equal(rnp.padding_mask([2, 5], 5),
                          mc.padding_mask([2, 5], 5).numpy())
    xs = x.numpy()
    assert np.array_equal(rnp.merge_heads(rnp.split_heads(xs, H)), xs)
    assert np.allclose(rnp.split_heads(xs, H), mc.split_heads(x, H).numpy())


def test_numpy_forms_read_every_tensor_dtype():
    """A bfloat16 tensor (NumPy has no bfloat16) is read as its float32 values,
    not refused from inside torch."""
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(3))
    xb = x.to(torch.bfloat16)
    assert np.array_equal(rnp.softmax(xb), rnp.softmax(xb.float()))
    q = xb[:, None]  # (B, 1, L, d_k)
    for got, want in zip(rnp.scaled_dot_product_attention(q, q, q),
                         rnp.scaled_dot_product_attention(*(q.float().numpy(),) * 3)):
        assert np.array_equal(got, want)
    xs = xb.float().numpy()
    assert np.array_equal(rnp.split_heads(xb, 2), rnp.split_heads(xs, 2))
    assert np.array_equal(rnp.merge_heads(q), xs)


@pytest.mark.parametrize("pre_ln", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_matches_nn_transformer_encoder_layer(dtype, pre_ln, activation):
    torch.manual_seed(1)
    ref = torch.nn.TransformerEncoderLayer(
        D, H, dim_feedforward=48, dropout=0.0, activation=activation,
        batch_first=True, norm_first=pre_ln, dtype=dtype).eval()
    block = mc.TransformerBlock.from_torch(ref)
    x = inputs(dtype)[0]
    kpm = mc.padding_mask([L, 5, 3], L)
    with torch.no_grad():
        want = ref(x, src_key_padding_mask=kpm)
        got = block(x, key_padding_mask=kpm)
    keep = ~kpm  # PyTorch's fast path may zero padded query rows; compare real ones
    assert max_err(got[keep], want[keep]) <= TOL[dtype]


@pytest.mark.parametrize("pre_ln", [False, True])
def test_block_numpy_equals_torch(pre_ln):
    block = mc.TransformerBlock(D, H, d_ff=40, pre_ln=pre_ln, seed=2).double()
    with torch.no_grad():
        for p in block.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = inputs(torch.float64)[0]
    p = {k.split(".")[-1]: v.detach().numpy() for k, v in block.named_parameters()}
    got = rnp.transformer_block(x.numpy(), p, H, pre_ln=pre_ln)
    with torch.no_grad():
        want = block(x).numpy()
    assert np.abs(got - want).max() <= 1e-10


@pytest.mark.parametrize("pre_ln", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_to_torch_round_trip(pre_ln, activation):
    """TransformerBlock.to_torch gives PyTorch's layer the same function, and
    from_torch(to_torch(block)) gives back every weight exactly."""
    block = mc.TransformerBlock(D, H, d_ff=40, pre_ln=pre_ln, activation=activation,
                                seed=3).double()
    with torch.no_grad():
        for p in block.parameters():  # non-trivial biases and gains
            p.add_(0.1 * torch.randn(p.shape, dtype=p.dtype))
    ref = block.to_torch()
    assert not ref.training and ref.norm_first == pre_ln
    x = inputs(torch.float64)[0]
    with torch.no_grad():
        assert max_err(block(x), ref(x)) <= TOL[torch.float64]
    back = mc.TransformerBlock.from_torch(ref)
    for (name, a), (_, b) in zip(block.named_parameters(), back.named_parameters()):
        assert torch.equal(a, b), name


def test_block_copy_weights_refuses_missing_names():
    block = mc.TransformerBlock(D, H)
    with pytest.raises(mc.InputError, match="W_1"):
        block.copy_weights_(block.attn.weights(), W_1=block.W_1)
