"""circuits.composition_max_baseline: the level the largest of h x h
composition scores is read against."""
from __future__ import annotations

import pytest
import torch

from mhacourse import InputError
from mhacourse import circuits as C


def test_it_is_the_mean_of_the_largest_readable_score_of_each_draw():
    """Redraw the same factors and score every pair with the readable
    composition_score: the mean of each draw's largest must agree."""
    d_model, d_k, h, draws = 12, 3, 3, 2
    for kind in C.KINDS:
        g = torch.Generator().manual_seed(5)
        best = []
        for _ in range(draws):
            (Q1, K1, V1, O1), (Q2, K2, V2, O2) = [
                (*(torch.randn(h, d_model, d_k, generator=g, dtype=torch.float64)
                   for _ in range(3)),
                 torch.randn(h, d_k, d_model, generator=g, dtype=torch.float64))
                for _ in range(2)]
            reader = {"q": lambda j: Q2[j] @ K2[j].T, "k": lambda j: K2[j] @ Q2[j].T,
                      "v": lambda j: V2[j] @ O2[j]}[kind]
            best.append(max(C.composition_score(V1[i] @ O1[i], reader(j))
                            for i in range(h) for j in range(h)))
        got = C.composition_max_baseline(d_model, d_k, kind, h, draws=draws, seed=5)
        assert got == pytest.approx(sum(best) / draws, rel=1e-9), kind


def test_the_largest_of_many_pairs_lies_above_one_pair():
    """One pair (h = 1) scores about the one-pair baseline; the largest of
    16 x 16 pairs lies well above it."""
    for h in (1, 16):
        one = C.composition_baseline(64, 64 // h, "k")
        top = C.composition_max_baseline(64, 64 // h, "k", h, draws=16)
        assert 0 < top < 1
        assert (abs(top - one) < 0.1 * one) if h == 1 else (top > 1.3 * one), (h, top, one)


@pytest.mark.parametrize("args, words", [
    ((64, 16, "x", 4), "kind"),
    ((64, 16, "k", 0), "h"),
    ((64, 16, "k", 4.5), "h"),
    ((64, 65, "k", 4), "d_k"),
    ((4096, 16, "k", 4), "d_model"),
    ((64, 16, "k", 4, 10_000), "draws"),
    ((64, 16, "k", 32), "h"),
    ((256, 256, "k", 1, 64), "fewer draws"),
    ((64, 16, ["k"], 4), "kind"),
    ((64, 16, "k", 4, 8, 1.5), "seed"),
    ((64, 16, "k", 4, 8, -1), "seed"),
])
def test_bad_input_gets_one_line(args, words):
    with pytest.raises(InputError, match=words) as e:
        C.composition_max_baseline(*args)
    assert "\n" not in str(e.value)


def test_whole_numbers_of_other_types_are_read_as_ints():
    want = C.composition_max_baseline(64, 16, "q", 4, draws=2, seed=3)
    assert C.composition_max_baseline(torch.tensor(64), 16, "q", 4, draws=2,
                                      seed=torch.tensor(3)) == want
