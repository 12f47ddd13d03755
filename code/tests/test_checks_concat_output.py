"""The checkers of chapters 5-7 name each mistake they claim to recognise."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

import mhacourse as mc  # noqa: E402
from mhacourse import checks  # noqa: E402

# ---------------------------------------------------------- check_merge_heads

def _merge_no_flatten(x):
    return x.transpose(1, 2)  # (B, L, h, d_k)


def _merge_no_transpose(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


def _merge_interleaved(x):
    B, h, L, d_k = x.shape
    return x.permute(0, 2, 3, 1).reshape(B, L, h * d_k)


def _merge_reversed(x):
    return mc.merge_heads(x.flip(1))


def _merge_wrong_axis(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, h * L, d_k)


def _merge_raises(x):
    raise RuntimeError("boom")


@pytest.mark.parametrize("fn, words", [
    (mc.merge_heads, "correct"),
    (lambda x: torch.cat(x.unbind(1), dim=-1), "correct"),
    (_merge_no_flatten, "not joined"),
    (_merge_no_transpose, "Transpose"),
    (_merge_interleaved, "interleaved"),
    (_merge_reversed, "reverse order"),
    (_merge_wrong_axis, "expected (B, L, h*d_k)"),
    (_merge_raises, "raised RuntimeError"),
])
def test_check_merge_heads(fn, words):
    v = checks.check_merge_heads(fn)
    assert words in v.message, v.message
    assert bool(v) == (words == "correct")


def test_check_merge_heads_other_wrong_numbers():
    v = checks.check_merge_heads(lambda x: mc.merge_heads(x) + 1)
    assert not v and "wrong numbers" in v.message


# ---------------------------------------------------------- check_remove_head

def _right(concat, W_O, b_O, h, i):
    d_k = concat.shape[-1] // h
    c = concat.clone()
    c[..., i * d_k:(i + 1) * d_k] = 0
    return c @ W_O + b_O


def _off_by_one(concat, W_O, b_O, h, i):
    return _right(concat, W_O, b_O, h, i + 1)


def _in_place(concat, W_O, b_O, h, i):
    d_k = concat.shape[-1] // h
    concat[..., i * d_k:(i + 1) * d_k] = 0
    return concat @ W_O + b_O


def _no_bias(concat, W_O, b_O, h, i):
    return _right(concat, W_O, b_O, h, i) - b_O


def _columns_of_W_O(concat, W_O, b_O, h, i):
    d_k = concat.shape[-1] // h
    W = W_O.clone()
    W[:, i * d_k:(i + 1) * d_k] = 0
    return concat @ W + b_O


def _output_slice(concat, W_O, b_O, h, i):
    d_k = concat.shape[-1] // h
    out = concat @ W_O + b_O
    out[..., i * d_k:(i + 1) * d_k] = 0
    return out


def _keep_only(concat, W_O, b_O, h, i):
    d_k = concat.shape[-1] // h
    c = torch.zeros_like(concat)
    c[..., i * d_k:(i + 1) * d_k] = concat[..., i * d_k:(i + 1) * d_k]
    return c @ W_O + b_O


@pytest.mark.parametrize("fn, words", [
    (_right, "correct"),
    (lambda c, W, b, h, i: c @ W + b, "did not change"),
    (_off_by_one, "you removed head 3"),
    (_in_place, "in place"),
    (_no_bias, "dropped the bias"),
    (_columns_of_W_O, "*columns* of W_O"),
    (_output_slice, "coordinates i*d_k:(i+1)*d_k of the output"),
    (_keep_only, "kept only head i"),
    (lambda c, W, b, h, i: None, "returned None"),
    (lambda c, W, b, h, i: (c @ W)[0], "output shape"),
    (lambda c, W, b, h, i: 2 * (c @ W + b), "not the output without head i"),
])
def test_check_remove_head(fn, words):
    v = checks.check_remove_head(fn)
    assert words in v.message, v.message
    assert bool(v) == (words == "correct")


def test_remove_head_is_subtracting_its_contribution():
    """What the checker's 'correct' message claims, on the package's layer."""
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    w = mc.random_weights(12, 3, dtype=torch.float64)
    out, _, concat = mc.multi_head_attention(x, x, x, w, 3, return_concat=True)
    contrib = mc.head_contributions(concat, w.W_O, 3)  # (B, h, L, d_model)
    for i in range(3):
        assert torch.allclose(_right(concat, w.W_O, w.b_O, 3, i),
                              out - contrib[:, i])


# ------------------------------------------------------- mha_flops and checker

def test_mha_flops_formula_and_h_independence():
    f = checks.mha_flops(2, 10, 16, 4)
    assert f["projections"] == 8 * 2 * 10 * 16 ** 2
    assert f["attention"] == 4 * 2 * 10 ** 2 * 16
    assert f["total"] == f["projections"] + f["attention"]
    assert all(checks.mha_flops(1, 32, 64, h) == checks.mha_flops(1, 32, 64, 1)
               for h in (2, 4, 8, 64))
    # the two terms are equal at L = 2 d_model
    g = checks.mha_flops(1, 2 * 48, 48, 4)
    assert g["projections"] == g["attention"]
    with pytest.raises(ValueError, match="cannot split"):
        checks.mha_flops(1, 4, 10, 3)


def test_mha_flops_matches_torch_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode

    B, L, d, h = 2, 9, 16, 4
    layer = mc.MultiHeadAttention(d, h, seed=0)
    with FlopCounterMode(display=False) as counter:
        layer(torch.randn(B, L, d))
    assert counter.get_total_flops() == checks.mha_flops(B, L, d, h)["total"]


def _flops_right(B, L, d, h):
    return 8 * B * L * d * d + 4 * B * L * L * d


@pytest.mark.parametrize("fn, words", [
    (_flops_right, "correct"),
    (lambda B, L, d, h: _flops_right(B, L, d, h) // 2, "multiply-adds"),
    (lambda B, L, d, h: 6 * B * L * d * d + 4 * B * L * L * d, "W_O"),
    (lambda B, L, d, h: 8 * B * L * d * d + 2 * B * L * L * d, "only one"),
    (lambda B, L, d, h: 8 * B * L * d * d + 4 * h * B * L * L * d,
     "multiplied the attention term by h"),
    (lambda B, L, d, h: 8 * B * L * d * d + 4 * B * L * L * (d // h),
     "used d_k"),
    (lambda B, L, d, h: 8 * L * d * d + 4 * L * L * d, "left out the batch"),
    (lambda B, L, d, h: 8 * B * L * d * d, "left out the attention products"),
    (lambda B, L, d, h: 8 * B * L * d * (d // h) + 4 * B * L * L * d,
     "one head"),
    (lambda B, L, d, h: 1, "expected"),
    (lambda B, L, d, h: "many", "return a number"),
    (lambda B, L, d, h: 1 / 0, "raised ZeroDivisionError"),
])
def test_check_mha_flops(fn, words):
    v = checks.check_mha_flops(fn)
    assert words in v.message, v.message
    assert bool(v) == (words == "correct")


# ------------------------------------------------- plotting.head_blocks (ch. 5, 6)

def test_head_blocks_draws_one_outline_per_head():
    import matplotlib.pyplot as plt

    from mhacourse.plotting import head_blocks

    fig, (a, b) = plt.subplots(1, 2)
    head_blocks(a, torch.arange(12.).reshape(2, 6), h=3, row_labels=["x", "y"])
    head_blocks(b, torch.zeros(4, 3), h=2, axis=0, fmt="")
    # cells + one outline per head; labels "head 1".."head 3"
    assert len(a.patches) == 12 + 3 and len(b.patches) == 12 + 2
    texts = [t.get_text() for t in a.texts]
    assert {"head 1", "head 2", "head 3"} <= set(texts) and "11.0" in texts
    with pytest.raises(ValueError, match="dividing axis 1"):
        head_blocks(a, torch.zeros(2, 5), h=2)
    plt.close(fig)
