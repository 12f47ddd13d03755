"""The checkers of chapter 4 (what heads learn) name each mistake they are
built for, and accept the right answers written in several ways."""
import math

import numpy as np
import pytest
import torch

from mhacourse.checks import check_previous_token_score, check_row_entropy

# ------------------------------------------------- previous-token score

def _sub(A, offset=-1):
    return torch.diagonal(A, offset=offset, dim1=-2, dim2=-1)  # (h, L-|offset|)


def _prev_loop(A):
    h, L, _ = A.shape
    return torch.tensor([sum(float(A[i, q, q - 1]) for q in range(1, L)) / (L - 1)
                         for i in range(h)])


def _prev_roll(A):
    L = A.shape[-1]
    idx = torch.arange(L)
    return A[:, idx, torch.roll(idx, 1)].mean(-1)  # query 0 -> key L-1


@pytest.mark.parametrize("fn, ok, words", [
    (lambda A: _sub(A).mean(-1), True, "correct"),
    (_prev_loop, True, "correct"),
    (lambda A: A[:, 1:, :-1].diagonal(dim1=-2, dim2=-1).mean(-1).numpy(), True,
     "correct"),
    (lambda A: _sub(A, 0).mean(-1), False, "main diagonal"),
    (lambda A: _sub(A, 1).mean(-1), False, "NEXT token"),
    (lambda A: _sub(A.transpose(-1, -2)).mean(-1), False, "NEXT token"),
    (lambda A: _sub(A).sum(-1) / A.shape[-1], False, "divide by L - 1"),
    (_prev_roll, False, "wrapped around"),
    (lambda A: _sub(A), False, "per-query weights"),
    (lambda A: A.mean(-1), False, "averaged each row over the keys"),
    (lambda A: A.mean(-2), False, "how much attention each key receives"),
    (lambda A: _sub(A).mean(0), False, "averaged over the heads"),
    (lambda A: _sub(A).mean(), False, "one number for all heads"),
    (lambda A: A.sum((-1, -2)), False, "not the mean of A[q, q-1]"),
    (lambda A: A[:2, 0, 0], False, "one number per head"),
    (lambda A: "half", False, "return a tensor"),
    (lambda A: None, False, "returned None"),
    (lambda A: A.foo, False, "raised AttributeError"),
])
def test_check_previous_token_score(fn, ok, words):
    v = check_previous_token_score(fn)
    assert bool(v) is ok and words in v.message, v.message


# ------------------------------------------------------ row entropy

def _H(A):
    return -torch.xlogy(A, A).sum(-1)  # (h, L) nats


@pytest.mark.parametrize("fn, ok, words", [
    (lambda A: _H(A) / math.log(A.shape[-1]), True, "correct"),
    (lambda A: torch.special.entr(A).sum(-1) / math.log(A.shape[-1]), True,
     "correct"),
    (lambda A: -(A * torch.log2(A.clamp_min(1e-30))).sum(-1) / math.log2(A.shape[-1]),
     True, "correct"),
    (lambda A: (-(A * A.log()).sum(-1) / math.log(A.shape[-1])), False, "NaN"),
    (lambda A: -_H(A) / math.log(A.shape[-1]), False, "negative"),
    (lambda A: _H(A), False, "in nats"),
    (lambda A: _H(A) / A.shape[-1], False, "not by L"),
    (lambda A: _H(A) / math.log(2) / math.log(A.shape[-1]), False, "base 2"),
    (lambda A: _H(A) / math.log(10) / math.log(A.shape[-1]), False, "base 10"),
    (lambda A: -torch.xlogy(A, A).sum(-2) / math.log(A.shape[-1]), False,
     "entropy of each column"),
    (lambda A: (_H(A) / math.log(A.shape[-1])).mean(-1), False, "you averaged"),
    (lambda A: _H(A)[:, :3], False, "one value per query row"),
    (lambda A: 2 * _H(A) / math.log(A.shape[-1]), False, "largest difference"),
    (lambda A: None, False, "returned None"),
    (lambda A: "x", False, "return a"),
    (lambda A: 1 / 0, False, "raised ZeroDivisionError"),
])
def test_check_row_entropy(fn, ok, words):
    v = check_row_entropy(fn)
    assert bool(v) is ok and words in v.message, v.message


def test_the_checkers_inputs_tell_the_mistakes_apart():
    """The fixed inputs must separate every diagnosis from the right answer."""
    from mhacourse.checks import _ch04_attention, _ch04_entropy_attention

    A = _ch04_attention()
    rows = [_sub(A).mean(-1), _sub(A, 0).mean(-1), _sub(A, 1).mean(-1),
            _sub(A).sum(-1) / A.shape[-1], _prev_roll(A)]
    for i in range(len(rows)):
        for j in range(i):
            assert not np.allclose(rows[i], rows[j], atol=1e-4), (i, j)
    E = _ch04_entropy_attention()
    assert torch.allclose(E.sum(-1), torch.ones(E.shape[:2], dtype=E.dtype))
    assert (E == 0).any(), "the entropy input needs exact zeros (0 ln 0)"
