"""Masks in real batches (mhacourse.batching): a padded batch gives each
sentence the numbers it gets alone; causal + padding; attention dropout."""
import pytest
import torch
from torch import nn

import mhacourse as mc
from mhacourse.batching import (
    attention_dropout,
    attention_with_dropout,
    batch_mask,
    pad_batch,
)
from mhacourse.checks import check_batch_mask

D, H = 16, 4


def _sentences(lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, D, generator=g, dtype=torch.float64) for n in lengths]


@pytest.mark.parametrize("causal", [False, True])
def test_padded_batch_gives_each_sentence_its_own_numbers(causal):
    sents = _sentences([3, 7, 1, 5])
    X, lengths = pad_batch(sents)
    assert X.shape == (4, 7, D) and lengths.tolist() == [3, 7, 1, 5]
    w = mc.random_weights(D, H, seed=1, dtype=torch.float64)
    mask = batch_mask(lengths, X.shape[1], causal=causal)          # (B, 1, L, L)
    out, A = mc.multi_head_attention(
        X, X, X, w, H, attn_mask=mask.expand(-1, H, -1, -1).reshape(-1, 7, 7))
    for b, x in enumerate(sents):
        n = x.shape[0]
        alone_mask = mc.causal_mask(n) if causal else None
        alone, A_alone = mc.multi_head_attention(x[None], x[None], x[None], w, H,
                                                 attn_mask=alone_mask)
        assert torch.allclose(out[b, :n], alone[0], atol=1e-12), b
        assert torch.allclose(A[b, :, :n, :n], A_alone[0], atol=1e-12), b
        assert torch.all(A[b, :, :n, n:] == 0), "a real token read padding"


def test_key_padding_mask_equals_batch_mask():
    sents = _sentences([2, 6, 4])
    X, lengths = pad_batch(sents)
    w = mc.random_weights(D, H, seed=2, dtype=torch.float64)
    kpm = mc.padding_mask(lengths, X.shape[1])
    a, _ = mc.multi_head_attention(X, X, X, w, H, key_padding_mask=kpm)
    m = batch_mask(lengths, X.shape[1]).expand(-1, H, -1, -1).reshape(-1, 6, 6)
    b, _ = mc.multi_head_attention(X, X, X, w, H, attn_mask=m)
    assert torch.allclose(a, b, atol=1e-12)


def test_pytorch_key_padding_and_causal_mask_agree():
    sents = _sentences([4, 6, 2])
    X, lengths = pad_batch(sents)
    w = mc.random_weights(D, H, seed=3, dtype=torch.float64)
    mha = mc.to_torch(w, H).double().eval()
    kpm = mc.padding_mask(lengths, 6)
    causal = mc.causal_mask(6)
    ref, _ = mha(X, X, X, key_padding_mask=kpm, attn_mask=causal)
    ours, _ = mc.multi_head_attention(X, X, X, w, H, attn_mask=causal,
                                      key_padding_mask=kpm)
    for b, n in enumerate(lengths.tolist()):
        assert torch.allclose(ours[b, :n], ref[b, :n], atol=1e-10)


def test_batch_mask_never_blocks_a_whole_row():
    m = batch_mask(torch.tensor([1, 3]), 4, causal=True)
    assert not m.all(-1).any()
    assert m.shape == (2, 1, 4, 4) and m.dtype == torch.bool


def test_dropout_eval_is_identity_and_train_keeps_expectation():
    g = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(2, 3, 5, 7, generator=g), -1)
    assert attention_dropout(A, 0.3, training=False) is A
    dropped = attention_dropout(A, 0.3, training=True, generator=g)
    kept = dropped != 0
    assert torch.allclose(dropped[kept], (A / 0.7)[kept])
    assert 0.5 < kept.double().mean() < 0.9
    mean = torch.stack([attention_dropout(A, 0.3, generator=g)
                        for _ in range(4000)]).mean(0)
    assert torch.allclose(mean, A, atol=0.03), "E[dropout(A)] must be A"
    row_sums = dropped.sum(-1)
    assert not torch.allclose(row_sums, torch.ones_like(row_sums)), \
        "a dropped row should not sum to 1"


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, "0.1"])
def test_dropout_rejects_bad_p(p):
    with pytest.raises(ValueError, match="dropout probability"):
        attention_dropout(torch.ones(2, 2) / 2, p)


def test_pytorch_dropout_sits_between_softmax_and_values():
    """nn.MultiheadAttention(dropout=p) in training: its output equals its own
    returned (dropped) weights times the values, and each returned weight is
    either 0 or the eval weight / (1 - p)."""
    torch.manual_seed(0)
    p, L = 0.4, 6
    mha = nn.MultiheadAttention(D, H, dropout=p, batch_first=True).double()
    w = mc.from_torch(mha)
    x = torch.randn(2, L, D, dtype=torch.float64)
    mha.eval()
    _, A_eval = mha(x, x, x, average_attn_weights=False)
    mha.train()
    out, A_drop = mha(x, x, x, average_attn_weights=False)
    zero = A_drop == 0
    assert zero.any() and (~zero).any()
    assert torch.allclose(A_drop[~zero], (A_eval / (1 - p))[~zero])
    V = mc.split_heads(x @ w.W_V + w.b_V, H)                   # (B, h, L, d_k)
    ours = mc.merge_heads(A_drop @ V) @ w.W_O + w.b_O
    assert torch.allclose(out, ours, atol=1e-10)
    # and the course's function, fed the same kept entries, agrees in eval
    Q = mc.split_heads(x @ w.W_Q + w.b_Q, H)
    K = mc.split_heads(x @ w.W_K + w.b_K, H)
    o_eval, A_c = attention_with_dropout(Q, K, V, p=p, training=False)
    assert torch.allclose(A_c, A_eval, atol=1e-10)


def test_pad_batch_errors():
    with pytest.raises(ValueError, match="at least one sequence"):
        pad_batch([])
    with pytest.raises(ValueError, match="same width"):
        pad_batch([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="at least one token"):
        pad_batch([torch.zeros(0, 3)])


def _inverted(lengths, L, causal):
    return ~batch_mask(lengths, L, causal)


def _rows(lengths, L, causal):
    i = torch.arange(L)[:, None].expand(L, L)
    m = i[None] >= lengths[:, None, None]
    if causal:
        m = m | mc.causal_mask(L)[None]
    return m[:, None]


def _past(lengths, L, causal):
    m = batch_mask(lengths, L, False)
    if causal:
        m = m | mc.causal_mask(L).T[None, None]
    return m


def _no_pad(lengths, L, causal):
    m = torch.zeros(len(lengths), 1, L, L, dtype=torch.bool)
    return m | mc.causal_mask(L)[None, None] if causal else \
        batch_mask(lengths, L, False)


def _off_by_one(lengths, L, causal):
    return batch_mask(lengths - 1, L, causal) if causal else \
        (torch.arange(L)[None, None, None, :] >= (lengths - 1)[:, None, None, None]
         ).expand(-1, 1, L, L)


@pytest.mark.parametrize("fn, ok, words", [
    (batch_mask, True, "correct"),
    (_inverted, False, "inverted"),
    (_rows, False, "queries"),
    (_past, False, "blocked the past"),
    (_no_pad, False, "padding is missing"),
    (_off_by_one, False, "off by one"),
    (lambda lengths, L, causal: batch_mask(lengths, L, causal).float(), False,
     "boolean"),
    (lambda lengths, L, causal: batch_mask(lengths, L, causal)[:, :, :2], False,
     "shape"),
    (lambda lengths, L, causal: 1 / 0, False, "ZeroDivisionError"),
])
def test_check_batch_mask(fn, ok, words):
    v = check_batch_mask(fn)
    assert bool(v) is ok and words in v.message, v.message
