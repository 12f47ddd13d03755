"""The checkers of chapters 2 and 3 name each mistake they claim to recognise."""
import math

import pytest
import torch

import mhacourse as mc
from mhacourse.checks import check_head_weights, check_multi_head, check_split_heads

# --- check_head_weights: head i's block of W ---------------------------------

def _cols(W, i, h):
    d_k = W.shape[1] // h
    return W[:, i * d_k:(i + 1) * d_k]


@pytest.mark.parametrize("fn, says", [
    (_cols, "correct"),
    (lambda W, i, h: mc.head_slice(W, None, i, h)[0], "correct"),
    (lambda W, i, h: W[i * (W.shape[0] // h):(i + 1) * (W.shape[0] // h), :],
     "you took rows"),
    (lambda W, i, h: W[i * (W.shape[0] // h):(i + 1) * (W.shape[0] // h), :].T,
     "nn.Linear's weight"),
    (lambda W, i, h: _cols(W, i, h)[i * (W.shape[0] // h):(i + 1) * (W.shape[0] // h)],
     "diagonal block"),
    (lambda W, i, h: _cols(W, i + 1, h), "head 2's columns, not head 1's"),
    (lambda W, i, h: _cols(W, i - 1, h), "head 0's columns, not head 1's"),
    (lambda W, i, h: W[:, i:i + W.shape[1] // h], "starts at column i"),
    (lambda W, i, h: W[:, :5], "expected (d_model, d_k)"),
    (lambda W, i, h: _cols(W, i, h) + 1, "right shape, wrong numbers"),
    (lambda W, i, h: None, "returned None"),
    (lambda W, i, h: W[:, 99][5], "raised IndexError"),
])
def test_check_head_weights_names_the_mistake(fn, says):
    verdict = check_head_weights(fn)
    assert says in verdict.message, verdict.message
    assert bool(verdict) == (says == "correct")


# --- check_split_heads (chapter 2's exercise starter and its fixes) ----------

def test_check_split_heads_on_the_chapter_starter_and_fix():
    def starter(x, h):                    # the bug the chapter's starter has
        B, L, d_model = x.shape
        return x.reshape(B, h, L, d_model // h)

    def fixed(x, h):
        B, L, d_model = x.shape
        return x.reshape(B, L, h, d_model // h).transpose(1, 2)

    assert "reshaping straight to (B, h, L, d_k)" in check_split_heads(starter).message
    assert check_split_heads(fixed)


# --- check_multi_head: multi-head attention as a loop ------------------------

def _loop(X, w, h, scale=None, slice_input=False, rows=False, avg=False,
          use_W_O=True, stack=False):
    """A loop-over-heads multi-head attention with switchable mistakes."""
    L, d_model = X.shape
    d_k = d_model // h
    heads, weights = [], []
    for i in range(h):
        s = slice(i * d_k, (i + 1) * d_k)
        if slice_input:
            Q, K, V = (X[:, s] @ W[s, s] for W in (w.W_Q, w.W_K, w.W_V))
        elif rows:
            Q, K, V = (X @ W[s, :].T for W in (w.W_Q, w.W_K, w.W_V))
        else:
            Q, K, V = (X @ W[:, s] for W in (w.W_Q, w.W_K, w.W_V))
        A = torch.softmax(Q @ K.T / math.sqrt(scale or d_k), dim=-1)
        heads.append(A @ V)
        weights.append(A)
    A = torch.stack(weights)
    if stack:
        concat = torch.stack(heads).reshape(L, d_model)
    else:
        concat = torch.cat(heads, dim=-1)
    out = concat @ w.W_O if use_W_O else concat
    return out, (A.mean(0) if avg else A)


@pytest.mark.parametrize("kwargs, says", [
    ({}, "correct"),
    ({"scale": 12}, "sqrt(d_model)"),
    ({"slice_input": True}, "only its own slice"),
    ({"rows": True}, "nn.Linear's layout"),
    ({"avg": True}, "average_attn_weights=True"),
    ({"use_W_O": False}, "forgot the output projection"),
    ({"stack": True}, "stacked"),
])
def test_check_multi_head_names_the_mistake(kwargs, says):
    verdict = check_multi_head(lambda X, w, h: _loop(X, w, h, **kwargs))
    assert says in verdict.message, verdict.message
    assert bool(verdict) == (says == "correct")


def test_check_multi_head_accepts_the_package_and_rejects_odd_returns():
    assert check_multi_head(lambda X, w, h: mc.multi_head_attention_loop(X, X, X, w, h))
    assert check_multi_head(lambda X, w, h: mc.multi_head_attention(X, X, X, w, h))
    v = check_multi_head(lambda X, w, h: _loop(X, w, h)[0])
    assert not v and "return a pair" in v.message
    v = check_multi_head(lambda X, w, h: (_loop(X, w, h)[0], _loop(X, w, h)[1][:2]))
    assert not v and "expected (h, L, L)" in v.message
    v = check_multi_head(lambda X, w, h: (_loop(X, w, h)[0].T, _loop(X, w, h)[1]))
    assert not v and "output has shape" in v.message
    v = check_multi_head(lambda X, w, h: (_loop(X, w, h)[0] + 1, _loop(X, w, h)[1]))
    assert not v and "output is not" in v.message
    v = check_multi_head(lambda X, w, h: (_loop(X, w, h)[0], _loop(X, w, h)[1] ** 2))
    assert not v and "weights differ" in v.message
    v = check_multi_head(lambda X, w, h: 1 / 0)
    assert not v and "ZeroDivisionError" in v.message


def test_the_mistakes_give_different_numbers():
    """Each recognised mistake must change the weights or the output, or the
    checker could not tell it apart from the right answer."""
    from mhacourse.checks import _mha_variants

    w = mc.random_weights(12, 3, bias=False, seed=7, dtype=torch.float64)
    X = torch.randn(5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    v = _mha_variants(X, w, 3)
    right_out, right_A = v.pop("right")
    for name, (out, A) in v.items():
        differs = (out - right_out).abs().max() > 1e-3 or (A - right_A).abs().max() > 1e-3
        assert differs, f"the mistake {name!r} gives the right numbers"


# --- the split pictures of chapter 2 (mhacourse.plotting) ---------------------

def test_head_split_figure_colours_entries_by_the_head_that_owns_their_column():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle

    from mhacourse.plotting import HEAD_COLORS, head_split_figure

    L, d_model, h = 3, 8, 2
    x = torch.arange(L * d_model).reshape(1, L, d_model)
    for blocks, mixed in [(mc.split_heads(x, h)[0], False),
                          (x.reshape(h, L, d_model // h), True)]:   # the bug
        fig = head_split_figure(x[0], blocks)
        cells = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
        assert len(cells) == 2 * L * d_model, "one cell per entry, top and bottom"
        bottom = cells[L * d_model:]                 # drawn head by head, row by row
        colours = [to_hex(c.get_facecolor()) for c in bottom]
        per_head = [set(colours[i * L * 4:(i + 1) * L * 4]) for i in range(h)]
        if mixed:
            assert any(len(c) > 1 for c in per_head), "the bug should mix colours"
        else:
            assert per_head == [{HEAD_COLORS[0]}, {HEAD_COLORS[1]}]
        plt.close(fig)


def test_head_split_pictures_refuse_what_they_cannot_show():
    from mhacourse.plotting import head_split_figure, head_split_html

    for draw in (head_split_figure, head_split_html):
        with pytest.raises(ValueError, match="distinct"):
            draw(torch.zeros(2, 4), torch.zeros(2, 2, 2))
        with pytest.raises(ValueError, match="do not hold"):
            draw(torch.arange(8.).reshape(2, 4), torch.zeros(2, 2, 3))
        with pytest.raises(ValueError, match="at most 8 heads"):
            draw(torch.arange(18.).reshape(1, 18), torch.zeros(9, 1, 2))


def test_head_split_html_puts_every_number_in_its_head_table():
    import re

    from mhacourse.plotting import head_split_html

    x = torch.arange(24).reshape(1, 3, 8)
    page = head_split_html(x[0], mc.split_heads(x, 4)[0], title="h = 4")
    tables = page.split("<table")[2:]                   # the 4 head tables
    assert len(tables) == 4
    for i, table in enumerate(tables):
        numbers = sorted(int(n) for n in re.findall(r">(\d+)</td>", table))
        want = sorted(t * 8 + i * 2 + c for t in range(3) for c in range(2))
        assert numbers == want, f"head {i + 1} holds {numbers}"
