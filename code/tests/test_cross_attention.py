"""Cross-attention and the decoder layer (mhacourse.decoder) against
nn.MultiheadAttention, nn.TransformerDecoderLayer and nn.Transformer."""
import pytest
import torch
from torch import nn

import mhacourse as mc
from mhacourse.decoder import (
    cross_attention,
    decoder_layer,
    decoder_weights_from_torch,
)

D, H = 16, 4


def _xy(L=5, S=9, B=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randn(B, L, D, generator=g, dtype=torch.float64)
    m = torch.randn(B, S, D, generator=g, dtype=torch.float64)
    return y, m


def test_cross_attention_shapes_and_parity():
    y, m = _xy()
    w = mc.random_weights(D, H, seed=0, dtype=torch.float64)
    out, A = cross_attention(y, m, w, H)
    assert out.shape == (2, 5, D) and A.shape == (2, H, 5, 9)
    assert torch.allclose(A.sum(-1), torch.ones(2, H, 5, dtype=torch.float64))
    mha = mc.to_torch(w, H).double().eval()
    with torch.no_grad():
        ref, A_ref = mha(y, m, m, average_attn_weights=False)
    assert torch.allclose(out, ref, atol=1e-10)
    assert torch.allclose(A, A_ref, atol=1e-10)


def test_cross_attention_output_does_not_depend_on_other_queries():
    y, m = _xy()
    w = mc.random_weights(D, H, seed=1, dtype=torch.float64)
    out, _ = cross_attention(y, m, w, H)
    one, _ = cross_attention(y[:, 2:3], m, w, H)        # one query alone
    assert torch.allclose(out[:, 2:3], one, atol=1e-12)


def test_memory_padding_is_ignored():
    y, m = _xy()
    w = mc.random_weights(D, H, seed=2, dtype=torch.float64)
    pad = mc.padding_mask(torch.tensor([6, 9]), 9)
    out, A = cross_attention(y, m, w, H, memory_key_padding_mask=pad)
    alone, _ = cross_attention(y[:1], m[:1, :6], w, H)
    assert torch.allclose(out[:1], alone, atol=1e-12)
    assert torch.all(A[0, :, :, 6:] == 0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_pytorch(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=32, dropout=0.0,
                                       batch_first=True, norm_first=norm_first)
    layer = layer.double().eval()
    y, m = _xy(L=6, S=4)
    causal = mc.causal_mask(6)
    with torch.no_grad():
        ref = layer(y, m, tgt_mask=causal)
    p = decoder_weights_from_torch(layer)
    ours = decoder_layer(y, m, p, H, tgt_mask=causal)
    assert torch.allclose(ours, ref, atol=1e-10)


def test_whole_nn_transformer_matches():
    torch.manual_seed(1)
    model = nn.Transformer(d_model=D, nhead=H, num_encoder_layers=2,
                           num_decoder_layers=2, dim_feedforward=32,
                           dropout=0.0, batch_first=True).double().eval()
    src, tgt = _xy(L=7, S=5, seed=3)[::-1]              # src (2,5,D), tgt (2,7,D)
    causal = mc.causal_mask(7)
    with torch.no_grad():
        ref = model(src, tgt, tgt_mask=causal)
    x = src
    for enc in model.encoder.layers:
        x = mc.TransformerBlock.from_torch(enc).double()(x)
    memory = nn.functional.layer_norm(x, (D,), model.encoder.norm.weight,
                                      model.encoder.norm.bias, model.encoder.norm.eps)
    y = tgt
    for dec in model.decoder.layers:
        y = decoder_layer(y, memory, decoder_weights_from_torch(dec), H,
                          tgt_mask=causal)
    y = nn.functional.layer_norm(y, (D,), model.decoder.norm.weight,
                                 model.decoder.norm.bias, model.decoder.norm.eps)
    assert torch.allclose(y.detach(), ref, atol=1e-10)


def _xattn(Y, M, W_Q, W_K, W_V, q_from="Y", kv_from="M", scale=True, causal=False):
    src = {"Y": Y, "M": M}
    Q, K, V = src[q_from] @ W_Q, src[kv_from] @ W_K, src[kv_from] @ W_V
    s = Q @ K.T / (Q.shape[-1] ** 0.5 if scale else 1.0)
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    A = torch.softmax(s, -1)
    return A @ V, A


@pytest.mark.parametrize("fn, ok, words", [
    (_xattn, True, "correct"),
    (lambda *a: _xattn(*a, q_from="M", kv_from="Y"), False,
     "queries came from the memory"),
    (lambda *a: _xattn(*a, kv_from="Y"), False, "self-attention"),
    (lambda *a: _xattn(*a, scale=False), False, "sqrt(d_k)"),
    (lambda *a: _xattn(*a, causal=True), False, "causal mask"),
    (lambda Y, M, W_Q, W_K, W_V: (_xattn(Y, M, W_Q, W_K, W_V)[1] @ (M @ W_Q),
                                  _xattn(Y, M, W_Q, W_K, W_V)[1]), False,
     "values come from the memory"),
    (lambda *a: _xattn(*a)[1], False, "pair"),
    (lambda *a: 1 / 0, False, "ZeroDivisionError"),
])
def test_check_cross_attention(fn, ok, words):
    from mhacourse.checks import check_cross_attention
    v = check_cross_attention(fn)
    assert bool(v) is ok and words in v.message, v.message
