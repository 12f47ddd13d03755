"""The checkers of chapter 11 (how heads form) name each mistake they are
built for, and accept the right answers written in several ways."""
import numpy as np
import pytest
import torch

from mhacourse.checks._verdict import Verdict
from mhacourse.checks.head_formation import (
    _ch11_repeat_attention,
    check_composition_score,
    check_prefix_score,
    check_qk_matrix,
)


def _cols(W, i, h):
    d_k = W.shape[1] // h
    return W[:, i * d_k:(i + 1) * d_k]


@pytest.mark.parametrize("fn, ok, words", [
    (lambda Q, K, i, h: _cols(Q, i, h) @ _cols(K, i, h).T, True, "correct"),
    (lambda Q, K, i, h: (Q.reshape(Q.shape[0], h, -1)[:, i]
                         @ K.reshape(K.shape[0], h, -1)[:, i].T).numpy(), True, "correct"),
    (lambda Q, K, i, h: _cols(K, i, h) @ _cols(Q, i, h).T, False, "transpose"),
    (lambda Q, K, i, h: Q[i * 2:(i + 1) * 2].T @ K[i * 2:(i + 1) * 2], False, "COLUMNS"),
    (lambda Q, K, i, h: Q @ K.T, False, "whole layer"),
    (lambda Q, K, i, h: _cols(Q, i, h) @ _cols(K, i, h).T / 2**0.5, False, "1/sqrt(d_k)"),
    (lambda Q, K, i, h: _cols(Q, i + 1, h) @ _cols(K, i + 1, h).T, False, "head 2"),
    (lambda Q, K, i, h: _cols(Q, i - 1, h) @ _cols(K, i - 1, h).T, False, "head 0"),
    (lambda Q, K, i, h: _cols(Q, i, h).T @ _cols(K, i, h), False, "W_Q^iᵀ W_K^i"),
    (lambda Q, K, i, h: 2 * _cols(Q, i, h) @ _cols(K, i, h).T, False, "largest difference"),
    (lambda Q, K, i, h: None, False, "returned None"),
    (lambda Q, K, i, h: Q.foo, False, "raised AttributeError"),
])
def test_check_qk_matrix(fn, ok, words):
    v = check_qk_matrix(fn)
    assert isinstance(v, Verdict) and bool(v) is ok and words in v.message, v.message


fro = torch.linalg.matrix_norm


@pytest.mark.parametrize("fn, ok, words", [
    (lambda A, B: fro(A @ B) / (fro(A) * fro(B)), True, "correct"),
    (lambda A, B: float(np.linalg.norm(A.numpy() @ B.numpy())
                        / (np.linalg.norm(A.numpy()) * np.linalg.norm(B.numpy()))),
     True, "correct"),
    (lambda A, B: fro(B @ A) / (fro(A) * fro(B)), False, "order matters"),
    (lambda A, B: fro(A @ B), False, "divide by"),
    (lambda A, B: fro(A @ B) ** 2 / (fro(A) ** 2 * fro(B) ** 2), False, "squared"),
    (lambda A, B: fro(A @ B, ord=2) / (fro(A, ord=2) * fro(B, ord=2)), False, "spectral"),
    (lambda A, B: (A @ B).norm(dim=1), False, "one number"),
    (lambda A, B: 0.5, False, "not ||W_A W_B||"),
    (lambda A, B: "0.3", False, "string"),
    (lambda A, B: None, False, "return"),
])
def test_check_composition_score(fn, ok, words):
    v = check_composition_score(fn)
    assert bool(v) is ok and words in v.message, v.message


def _diag(A, back):
    L = A.shape[-1]
    t = torch.arange(L // 2, L)
    return A[:, t, t - back]


@pytest.mark.parametrize("fn, ok, words", [
    (lambda A: _diag(A, A.shape[-1] // 2 - 1).mean(-1), True, "correct"),
    (lambda A: torch.stack([torch.diagonal(A[i], -(A.shape[-1] // 2 - 1))[1:].mean()
                            for i in range(A.shape[0])]), True, "correct"),
    (lambda A: _diag(A, A.shape[-1] // 2).mean(-1), False, "duplicate-token"),
    (lambda A: _diag(A, 1).mean(-1), False, "previous token"),
    (lambda A: torch.diagonal(A, -(A.shape[-1] // 2 - 1), -2, -1).mean(-1), False,
     "only the second copy"),
    (lambda A: _diag(A, A.shape[-1] // 2 - 2).mean(-1), False, "off by one"),
    (lambda A: _diag(A, A.shape[-1] // 2 - 1), False, "per-query"),
    (lambda A: _diag(A, A.shape[-1] // 2 - 1).mean(), False, "one number for all"),
    (lambda A: A[:, 0, :2], False, "one number per head"),
    (lambda A: A.sum((1, 2)), False, "expected"),
    (lambda A: None, False, "returned None"),
])
def test_check_prefix_score(fn, ok, words):
    v = check_prefix_score(fn)
    assert bool(v) is ok and words in v.message, v.message


def test_the_prefix_input_tells_the_mistakes_apart():
    A = _ch11_repeat_attention()
    L = A.shape[-1]
    rows = [_diag(A, b).mean(-1) for b in (L // 2 - 1, L // 2, 1, L // 2 - 2)]
    for i in range(len(rows)):
        for j in range(i):
            assert not np.allclose(rows[i], rows[j], atol=1e-4), (i, j)
    assert torch.allclose(A.sum(-1), torch.ones(A.shape[:2], dtype=A.dtype))
