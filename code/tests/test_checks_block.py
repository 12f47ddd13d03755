"""The checkers of chapters 10 and 12 name each mistake they are built for."""
import pytest
import torch

import mhacourse as mc
from mhacourse.checks import (
    check_causal_mask,
    check_kv_cache,
    check_layer_norm,
    check_pre_ln_block,
)

# ----------------------------------------------------------- LayerNorm

def _ln(x, gamma, beta, eps, unbiased=False, eps_out=False, dim=-1):
    mean = x.mean(dim, keepdim=True)
    var = x.var(dim, keepdim=True, unbiased=unbiased)
    den = var.sqrt() + eps if eps_out else torch.sqrt(var + eps)
    return gamma * (x - mean) / den + beta


@pytest.mark.parametrize("fn, ok, words", [
    (lambda x, g, b, e: mc.layer_norm(x, g, b, e), True, "correct"),
    (lambda x, g, b, e: torch.nn.functional.layer_norm(x, x.shape[-1:], g, b, e),
     True, "correct"),
    (lambda x, g, b, e: _ln(x, g, b, e, unbiased=True), False, "unbiased variance"),
    (lambda x, g, b, e: _ln(x, g, b, e, eps_out=True), False, "inside the square root"),
    (lambda x, g, b, e: _ln(x, g, b, 1e-5), False, "ignored the eps argument"),
    (lambda x, g, b, e: _ln(x, g, b, 0.0), False, "NaN or inf"),
    (lambda x, g, b, e: _ln(x, 1.0, 0.0, e), False, "scale by gamma"),
    (lambda x, g, b, e: _ln(x, b, g, e), False, "swapped"),
    (lambda x, g, b, e: g * x / torch.sqrt((x * x).mean(-1, keepdim=True) + e) + b,
     False, "RMSNorm"),
    (lambda x, g, b, e: _ln(x, g, b, e, dim=0), False, "batch axis"),
    (lambda x, g, b, e: _ln(x, g, b, e, dim=1), False, "over the tokens"),
    (lambda x, g, b, e: _ln(x, g, b, e)[..., :3], False, "keeps the input's shape"),
    (lambda x, g, b, e: 2 * _ln(x, g, b, e), False, "not LayerNorm"),
    (lambda x, g, b, e: 1 / 0, False, "raised ZeroDivisionError"),
])
def test_check_layer_norm(fn, ok, words):
    v = check_layer_norm(fn)
    assert bool(v) is ok and words in v.message, v.message


# ----------------------------------------------------------- pre-LN block

def pre_ln(x, attn, ffn, n1, n2):
    x = x + attn(n1(x))
    return x + ffn(n2(x))


def post_ln(x, attn, ffn, n1, n2):
    x = n1(x + attn(x))
    return n2(x + ffn(x))


def no_attn_residual(x, attn, ffn, n1, n2):
    a = attn(n1(x))
    return a + ffn(n2(a))


def no_ffn_residual(x, attn, ffn, n1, n2):
    x = x + attn(n1(x))
    return ffn(n2(x))


def no_residuals(x, attn, ffn, n1, n2):
    return ffn(n2(attn(n1(x))))


def residual_from_normalised(x, attn, ffn, n1, n2):
    z = n1(x)
    z = z + attn(z)
    return z + ffn(n2(z))


def swapped_norms(x, attn, ffn, n1, n2):
    return pre_ln(x, attn, ffn, n2, n1)


def norm1_twice(x, attn, ffn, n1, n2):
    return pre_ln(x, attn, ffn, n1, n1)


def ffn_skips_norm(x, attn, ffn, n1, n2):
    x = x + attn(n1(x))
    return x + ffn(x)


def parallel(x, attn, ffn, n1, n2):
    return x + attn(n1(x)) + ffn(n2(x))


def final_norm(x, attn, ffn, n1, n2):
    return n2(pre_ln(x, attn, ffn, n1, n2))


@pytest.mark.parametrize("fn, ok, words", [
    (pre_ln, True, "correct"),
    (post_ln, False, "post-LN"),
    (no_attn_residual, False, "residual around attention is missing"),
    (no_ffn_residual, False, "residual around the feed-forward is missing"),
    (no_residuals, False, "both residual connections are missing"),
    (residual_from_normalised, False, "*normalised* x"),
    (swapped_norms, False, "swapped"),
    (norm1_twice, False, "used norm1 twice"),
    (ffn_skips_norm, False, "must read norm2(x), not x"),
    (parallel, False, "parallel block"),
    (final_norm, False, "drop the final LayerNorm"),
    (lambda x, attn, ffn, n1, n2: x, False, "not a pre-LN block"),
    (lambda x, attn, ffn, n1, n2: x[0], False, "input's shape"),
])
def test_check_pre_ln_block(fn, ok, words):
    v = check_pre_ln_block(fn)
    assert bool(v) is ok and words in v.message, v.message


def test_pre_ln_checker_agrees_with_the_package_block():
    """The checker's right answer is TransformerBlock(pre_ln=True)."""
    blk = mc.TransformerBlock(8, 2, 16, pre_ln=True, seed=4).double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        got = pre_ln(x, lambda z: blk.attn(z, z, z)[0], blk.ffn, blk.ln1, blk.ln2)
        assert torch.allclose(got, blk(x))


# ----------------------------------------------------------- causal mask

@pytest.mark.parametrize("fn, ok, words", [
    (mc.causal_mask, True, "correct"),
    (lambda L: torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1), True,
     "correct"),
    (lambda L: torch.tril(torch.ones(L, L, dtype=torch.bool)), False, "inverted"),
    (lambda L: torch.triu(torch.ones(L, L, dtype=torch.bool)), False,
     "blocked the diagonal"),
    (lambda L: torch.tril(torch.ones(L, L, dtype=torch.bool), diagonal=-1), False,
     "transposed"),
    (lambda L: torch.triu(torch.ones(L, L), diagonal=1), False, "0/1 numbers"),
    (lambda L: torch.triu(torch.full((L, L), float("-inf")), diagonal=1), False,
     "additive float form"),
    (lambda L: torch.zeros(L, L, dtype=torch.bool), False, "blocks nothing"),
    (lambda L: torch.zeros(L, L + 1, dtype=torch.bool), False, "shape (L, L)"),
    (lambda L: [[False] * L] * L, False, "torch.Tensor"),
    (lambda L: torch.eye(L, dtype=torch.bool), False, "wrong pattern"),
    (lambda L: torch.arange(L).int(), False, "shape (L, L)"),
])
def test_check_causal_mask(fn, ok, words):
    v = check_causal_mask(fn)
    assert bool(v) is ok and words in v.message, v.message


# ----------------------------------------------------------- KV cache

LLAMA_70B = dict(n_layers=80, h_kv=8, d_k=128, tokens=4096, h=64)
RIGHT = 2 * 80 * 8 * 128 * 4096 * 2


@pytest.mark.parametrize("answer, ok, words", [
    (RIGHT, True, "correct"),
    (float(RIGHT), True, "correct"),
    (RIGHT // 2, False, "only the keys"),
    (RIGHT // 80, False, "one layer's cache"),
    (RIGHT * 8, False, "you used the 64 query heads"),
    (RIGHT // 2 // 1, False, "only the keys"),
    (RIGHT * 4, False, "not "),
    ("a lot", False, "give a number of bytes"),
])
def test_check_kv_cache(answer, ok, words):
    v = check_kv_cache(answer, **LLAMA_70B)
    assert bool(v) is ok and words in v.message, v.message


def test_check_kv_cache_bytes_and_bits():
    kw = dict(n_layers=2, h_kv=3, d_k=5, tokens=7, bytes_per_number=4)
    want = 2 * 2 * 3 * 5 * 7 * 4
    assert "numbers, not bytes" in check_kv_cache(want // 4, **kw).message
    assert "bits" in check_kv_cache(want * 8, **kw).message


# ----------------------------------------------------------- diagrams

def test_block_and_kv_diagrams_draw():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mhacourse.plotting import block_diagram, kv_sharing_diagram

    fig, axes = plt.subplots(1, 2)
    for ax, pre in zip(axes, (False, True)):
        block_diagram(ax, pre_ln=pre, title="t")
        labels = [t.get_text() for t in ax.texts]
        assert labels.count("LayerNorm") == 2 and "Feed-forward" in labels
        assert labels.count("+") == 2  # two residual additions
    plt.close(fig)
    fig, ax = plt.subplots()
    kv_sharing_diagram(ax, 8, 2)
    assert len(ax.patches) == 8 + 2  # query heads + key/value heads
    assert len(ax.lines) == 8  # one line per query head
    plt.close(fig)
