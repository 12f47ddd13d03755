"""Bad input gets a ValueError that says what was given and what is allowed."""
import numpy as np
import pytest
import torch

import mhacourse as mc
from mhacourse import reference_np as rnp


def x(B=2, L=4, D=8):
    return torch.randn(B, L, D)


@pytest.mark.parametrize("call, match", [
    (lambda: mc.MHAConfig(d_model=512, h=7), r"h = 7 heads cannot split d_model = 512.*1, 2, 4, 8"),
    (lambda: mc.random_weights(10, 3), r"cannot split d_model = 10"),
    (lambda: mc.split_heads(x(), 3), r"h = 3 heads cannot split d_model = 8"),
    (lambda: mc.MHAConfig(d_model=0, h=1), r"d_model must be a positive integer; got 0"),
    (lambda: mc.MHAConfig(d_model=8, h=-2), r"h \(num_heads\) must be a positive integer; got -2"),
    (lambda: mc.MultiHeadAttention(8, 0), r"must be a positive integer; got 0"),
    (lambda: mc.causal_mask(0), r"L \(query length\) must be a positive integer; got 0"),
    (lambda: mc.split_heads(torch.randn(4, 8), 2),
     r"must have 3 axes \(B, L, d_model\); got shape \(4, 8\)"),
    (lambda: mc.merge_heads(torch.randn(4, 8)), r"must have 4 axes"),
    (lambda: mc.padding_mask([3, 0], 4), r"between 1 and S = 4; got \[0\]"),
    (lambda: mc.TransformerBlock(8, 2, activation="tanh"), r"activation must be one of"),
])
def test_bad_sizes(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_shape_mismatches():
    Q, K, V = torch.randn(3, 4), torch.randn(5, 6), torch.randn(5, 6)
    with pytest.raises(ValueError, match=r"same last axis d_k.*Q \(3, 4\) and K \(5, 6\)"):
        mc.scaled_dot_product_attention(Q, K, V)
    with pytest.raises(ValueError, match=r"one row per key \(same S\)"):
        mc.scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 4), torch.randn(6, 4))
    w = mc.random_weights(8, 2)
    with pytest.raises(ValueError, match=r"must end in d_model = 8 .*got shape \(2, 4, 6\)"):
        mc.multi_head_attention(x(D=6), x(D=6), x(D=6), w, 2)
    with pytest.raises(ValueError, match=r"must share B"):
        mc.multi_head_attention(x(B=2), x(B=3), x(B=3), w, 2)
    with pytest.raises(ValueError, match=r"W_O must have shape \(8, 8\)"):
        mc.MHAWeights(torch.eye(8), torch.eye(8), torch.eye(8), torch.eye(6))
    with pytest.raises(ValueError, match=r"must be a torch.Tensor; got ndarray"):
        mc.scaled_dot_product_attention(np.ones((2, 2)), torch.ones(2, 2), torch.ones(2, 2))


def test_empty_sentence():
    w = mc.random_weights(8, 2)
    with pytest.raises(ValueError, match=r"query has no tokens"):
        mc.multi_head_attention(x(L=0), x(), x(), w, 2)
    with pytest.raises(ValueError, match=r"at least one query and one key"):
        mc.scaled_dot_product_attention(torch.randn(0, 4), torch.randn(0, 4), torch.randn(0, 4))
    with pytest.raises(ValueError, match=r"at least one query and one key"):
        rnp.scaled_dot_product_attention(np.ones((0, 4)), np.ones((2, 4)), np.ones((2, 4)))


def test_masks_of_the_wrong_shape():
    w = mc.random_weights(8, 2)
    with pytest.raises(ValueError,
                       match=r"attn_mask must have shape \(L, S\) = \(4, 4\) .*got \(3, 3\)"):
        mc.multi_head_attention(x(), x(), x(), w, 2, attn_mask=mc.causal_mask(3))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, S\) = \(2, 4\)"):
        mc.multi_head_attention(x(), x(), x(), w, 2,
                                key_padding_mask=torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask must end in \(L, S\) = \(3, 3\)"):
        mc.scaled_dot_product_attention(torch.randn(3, 2), torch.randn(3, 2), torch.randn(3, 2),
                                        mc.causal_mask(4))


def test_mask_that_blocks_a_whole_row_is_refused_not_nan():
    w = mc.random_weights(8, 2)
    mask = mc.causal_mask(4).clone()
    mask[2] = True  # query 2 may look at nothing
    for fn in (mc.multi_head_attention, mc.multi_head_attention_loop,
               mc.multi_head_attention_fast):
        with pytest.raises(ValueError, match=r"blocks every key for query.*\(0, 0, 2\).*NaN"):
            fn(x(), x(), x(), w, 2, attn_mask=mask)
    Q = torch.randn(4, 2)
    with pytest.raises(ValueError, match=r"blocks every key"):
        mc.scaled_dot_product_attention(Q, Q, Q, torch.full((4, 4), float("-inf")))
    with pytest.raises(ValueError, match=r"blocks every key"):
        rnp.scaled_dot_product_attention(Q.numpy(), Q.numpy(), Q.numpy(), np.ones((4, 4), bool))
