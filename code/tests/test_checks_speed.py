"""Chapter 9: each checker names the mistake it claims to recognise, and the
bar chart of benchmark ratios draws what it is given."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import mhacourse as mc  # noqa: E402
from mhacourse import checks  # noqa: E402
from mhacourse.plotting import ratio_bars  # noqa: E402

# ------------------------------------------------------- check_batched_heads

def _batched(split="right", merge="right", scale_by_d_model=False, dim=-1,
             W_O=True, heads_only=False):
    """A learner's batched multi-head attention, right or with one mistake."""
    def fn(X, w, h):
        B, L, d_model = X.shape
        d_k = d_model // h

        def split_(M):
            if split == "no_transpose":
                return M.view(B, h, L, d_k)
            if split == "interleaved":
                return M.view(B, L, d_k, h).permute(0, 3, 1, 2)
            return M.view(B, L, h, d_k).transpose(1, 2)

        Q, K, V = (split_(X @ W) for W in (w.W_Q, w.W_K, w.W_V))
        scale = math.sqrt(d_model if scale_by_d_model else d_k)
        A = torch.softmax(Q @ K.transpose(-2, -1) / scale, dim=dim)
        H = A @ V  # (B, h, L, d_k)
        if heads_only:
            return H
        if merge == "no_transpose":
            concat = H.reshape(B, L, d_model)
        elif merge == "interleaved":
            concat = H.permute(0, 2, 3, 1).reshape(B, L, d_model)
        else:
            concat = H.transpose(1, 2).reshape(B, L, d_model)
        return concat @ w.W_O if W_O else concat
    return fn


def test_batched_heads_accepts_right_answers():
    assert checks.check_batched_heads(_batched())
    # the package's own forms, which return (output, weights) pairs
    assert checks.check_batched_heads(
        lambda X, w, h: mc.multi_head_attention(X, X, X, w, h))
    assert checks.check_batched_heads(
        lambda X, w, h: mc.multi_head_attention_fast(X, X, X, w, h))
    assert checks.check_batched_heads(
        lambda X, w, h: mc.multi_head_attention_loop(X, X, X, w, h))


@pytest.mark.parametrize("kwargs, words", [
    (dict(split="no_transpose"), "straight to (B, h, L, d_k)"),
    (dict(merge="no_transpose"), "merging reshaped"),
    (dict(split="no_transpose", merge="no_transpose"),
     "no transpose when splitting nor when merging"),
    (dict(split="interleaved", merge="interleaved"), "i+h"),
    (dict(scale_by_d_model=True), "sqrt(d_model)"),
    (dict(dim=-2), "over the queries"),
    (dict(W_O=False), "multiply it by W_O"),
    (dict(heads_only=True), "not merged back"),
])
def test_batched_heads_names_each_mistake(kwargs, words):
    v = checks.check_batched_heads(_batched(**kwargs))
    assert not v.ok, kwargs
    assert words in v.message, (kwargs, v.message)


def test_batched_heads_reports_a_raising_function_and_wrong_shapes():
    def boom(X, w, h):
        raise RuntimeError("boom")

    v = checks.check_batched_heads(boom)
    assert not v.ok and "RuntimeError" in v.message
    v = checks.check_batched_heads(lambda X, w, h: X[:, 0])
    assert not v.ok and "expected (B, L, d_model)" in v.message


# ------------------------------------------------------ check_weights_memory

@pytest.mark.parametrize("answer, words", [
    (8 * 32 * 4096**2 * 2, "correct"),
    (8 * 32 * 4096**2, "number of weights"),
    (8 * 32 * 4096**2 * 16, "bits"),
    (8 * 4096**2 * 2, "left out h"),
    (32 * 4096**2 * 2, "left out B"),
    (8 * 32 * 4096 * 2, "one factor L"),
    (8 * 32 * 4096**2 * 2 / 2**20, "in MiB"),
    (8 * 32 * 4096**2 * 2 / 1e9, "in GB"),
    (8 * 32 * 4096**2 * 2 / 2**30, "in GiB"),
    (12345, "expected B·h·L²·bytes"),
    ("lots", "give a number"),
])
def test_weights_memory_names_each_mistake(answer, words):
    v = checks.check_weights_memory(answer, B=8, h=32, L=4096,
                                    bytes_per_number=2)
    assert v.ok == (words == "correct"), (answer, v.message)
    assert words in v.message, (answer, v.message)


# ------------------------------------------------- check_blockwise_attention

def _online(Q, K, V, block):
    """The right online-softmax attention, written as a learner would."""
    L, d_k = Q.shape
    m = torch.full((L, 1), -math.inf, dtype=Q.dtype)
    l = torch.zeros(L, 1, dtype=Q.dtype)
    o = torch.zeros(L, V.shape[1], dtype=Q.dtype)
    for j in range(0, K.shape[0], block):
        s = Q @ K[j:j + block].T / math.sqrt(d_k)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        fix = torch.exp(m - m_new)
        l = fix * l + p.sum(-1, keepdim=True)
        o = fix * o + p @ V[j:j + block]
        m = m_new
    return o / l


def _no_max(Q, K, V, block):
    """Right in exact arithmetic, but exp() of raw scores overflows."""
    l = o = 0
    for j in range(0, K.shape[0], block):
        p = torch.exp(Q @ K[j:j + block].T / math.sqrt(Q.shape[1]))
        l = l + p.sum(-1, keepdim=True)
        o = o + p @ V[j:j + block]
    return o / l


def test_blockwise_accepts_the_online_softmax():
    v = checks.check_blockwise_attention(_online)
    assert v.ok, v.message


@pytest.mark.parametrize("fn, words", [
    (lambda Q, K, V, b: checks._ch09_blockwise(
        Q, K, V, b, rescale_acc=False, rescale_sum=False), "rescaled neither"),
    (lambda Q, K, V, b: checks._ch09_blockwise(Q, K, V, b, rescale_acc=False),
     "running output is not"),
    (lambda Q, K, V, b: checks._ch09_blockwise(Q, K, V, b, rescale_sum=False),
     "running sum is not"),
    (lambda Q, K, V, b: checks._ch09_blockwise(Q, K, V, b, per_block=True),
     "softmax inside each block"),
    (lambda Q, K, V, b: checks._ch09_blockwise(Q, K, V, b, drop_tail=True),
     "keys are missing"),
    (lambda Q, K, V, b: checks._ch09_blockwise(Q, K, V, b, scale=False),
     "sqrt(d_k)"),
    (_no_max, "overflow"),
    (lambda Q, K, V, b: mc.scaled_dot_product_attention(Q, K, V)[0],
     "full (3, 10) score matrix"),
    (lambda Q, K, V, b: torch.full((Q.shape[0], V.shape[1]), math.nan,
                                   dtype=Q.dtype), "NaN"),
    (lambda Q, K, V, b: V[: Q.shape[0]].T, "expected (L, d_v)"),
    (lambda Q, K, V, b: torch.zeros(Q.shape[0], V.shape[1],
                                    dtype=Q.dtype), "largest difference"),
])
def test_blockwise_names_each_mistake(fn, words):
    v = checks.check_blockwise_attention(fn)
    assert not v.ok
    assert words in v.message, v.message


# ------------------------------------------------------------- ratio_bars

def test_ratio_bars_draws_one_bar_per_value_and_marks_missing_ones():
    fig, ax = plt.subplots()
    ratio_bars(ax, ["L = 128", "L = 512"],
               {"loop": [1.2, 2.5], "fast": [1.0, float("nan")]},
               reference_label="fused = 1")
    heights = sorted(round(p.get_height(), 3) for p in ax.patches)
    assert heights == [1.0, 1.2, 2.5], heights     # the NaN draws no bar
    texts = [t.get_text() for t in ax.texts]
    assert "n/a" in texts and "2.50" in texts
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert set(labels) == {"fused = 1", "loop", "fast"}, labels
    plt.close(fig)


def test_ratio_bars_rejects_ragged_series():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="one per group"):
        ratio_bars(ax, ["a", "b"], {"x": [1.0]})
    with pytest.raises(ValueError, match="series is empty"):
        ratio_bars(ax, ["a"], {})
    plt.close(fig)
