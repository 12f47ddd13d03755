"""Chapter 8 (how many heads?): the score-rank checker names each mistake it
is built for and accepts the right answer written in several ways; the rank
bound holds on real score matrices; the sweep plot draws what it is given."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from mhacourse.checks import check_score_rank, score_rank_bound  # noqa: E402
from mhacourse.plotting import accuracy_vs_heads  # noqa: E402


def _numpy_answer(L, d_model, h):
    return np.int64(min(L, d_model // h))


def _raises(L, d_model, h):
    raise ZeroDivisionError("oops")


@pytest.mark.parametrize("fn, ok, words", [
    (lambda L, d, h: min(L, d // h), True, "correct"),
    (lambda L, d, h: min(L, d / h), True, "correct"),
    (lambda L, d, h: torch.tensor(min(L, d // h)), True, "correct"),
    (_numpy_answer, True, "correct"),
    (lambda L, d, h: min(L, d), False, "min(L, d_model) is the bound"),
    (lambda L, d, h: d // h, False, "rank is at most L as well"),
    (lambda L, d, h: L, False, "only one of the two caps"),
    (lambda L, d, h: d, False, "d_model is neither cap"),
    (lambda L, d, h: h * min(L, d // h), False, "adds up all h heads"),
    (lambda L, d, h: min(L, h), False, "not the width of one"),
    (lambda L, d, h: h, False, "not a rank"),
    (lambda L, d, h: min(L, d // h) - 1, False, "the largest rank is"),
    (lambda L, d, h: None, False, "returned None"),
    (lambda L, d, h: "sixteen", False, "return one number"),
    (lambda L, d, h: [L, d], False, "return one number"),
    (_raises, False, "raised ZeroDivisionError"),
])
def test_check_score_rank(fn, ok, words):
    v = check_score_rank(fn)
    assert bool(v) is ok and words in v.message, v.message


@pytest.mark.parametrize("L, d_model, h", [(16, 64, 64), (16, 64, 1),
                                            (6, 32, 4), (5, 12, 3)])
def test_score_rank_bound_is_reached_by_random_heads(L, d_model, h):
    g = torch.Generator().manual_seed(0)
    d_k = d_model // h
    Q = torch.randn(h, L, d_k, generator=g, dtype=torch.float64)
    K = torch.randn(h, L, d_k, generator=g, dtype=torch.float64)
    ranks = torch.linalg.matrix_rank(Q @ K.transpose(-1, -2) / math.sqrt(d_k))
    assert (ranks == score_rank_bound(L, d_model, h)).all(), ranks


def test_accuracy_vs_heads_draws_every_curve_and_baseline():
    h = [1, 2, 4, 8]
    mean = np.array([0.9, 0.8, 0.7, 0.6])
    fig, ax = plt.subplots()
    accuracy_vs_heads(ax, h, {"accuracy": (mean, mean - 0.05, mean + 0.05),
                              "lookup": (mean - 0.1, None, None)},
                      d_model=8, baselines={"chance": (0.1, "grey")})
    assert [c.get_label() for c in ax.containers] == ["accuracy", "lookup"]
    data_line = ax.containers[0].lines[0]           # the mean, joined by a line
    assert np.allclose(data_line.get_ydata(), mean)
    assert ax.containers[0].has_yerr and not ax.containers[1].has_yerr
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "accuracy", "chance", "lookup"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1\n8", "2\n4",
                                                             "4\n2", "8\n1"]
    assert any(np.allclose(l.get_ydata(), 0.1) for l in ax.get_lines())
    plt.close(fig)
