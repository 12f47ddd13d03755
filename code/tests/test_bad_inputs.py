"""A table of bad inputs, as a new user would type them, across every public
entry point: each must raise the package's own error (mhacourse.InputError)
with a message that names the argument; after it, a good input must work.

Groups: attention, masks, heads, multihead, gqa, block, reference_np, bert,
explorer; the checkers' rows are in ``CHECKER_ROWS`` (a verdict, not an
error). ``test_table_size`` counts them (at least 200 in all).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from bad_input_checks import assert_the_packages_error

import mhacourse as mc
from mhacourse import bert, checks, gqa
from mhacourse import explorer as ex
from mhacourse import reference_np as rnp
from mhacourse._validate import InputError, InputTypeError
from mhacourse.widgets import AttentionExplorer

G = torch.Generator().manual_seed(0)


def t(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=G).to(dtype)


X = t(2, 4, 8)  # (B, L, d_model)
W = mc.random_weights(8, 2)  # d_model = 8, h = 2
Q2, K2, V2 = t(3, 4), t(5, 4), t(5, 6)  # (L, d_k), (S, d_k), (S, d_v)
CAUSAL = mc.causal_mask(4)
NAN = X.clone()
NAN[0, 1, 2] = float("nan")
INF = X.clone()
INF[1, 0, 0] = float("inf")
BLOCKED_ROW = CAUSAL.clone()
BLOCKED_ROW[2] = True
HF_KEEP = torch.ones(2, 4, dtype=torch.long)  # Hugging Face attention_mask, 1 = keep
HF_KEEP[1, 3] = 0
HF_FIX = "~attention_mask.bool()"

# Bad masks, each (label, mask for (L, S) = (4, 4), words the message must hold)
BAD_MASKS = [
    ("int64", CAUSAL.long(), HF_FIX),
    ("int32", CAUSAL.int(), HF_FIX),
    ("uint8", CAUSAL.to(torch.uint8), HF_FIX),
    ("float-keep-1/0", (~CAUSAL).float(), "0 and 1"),
    ("float-blocked-1/0", CAUSAL.float(), "0 and 1"),
    ("float-0/-1", -CAUSAL.float(), "0 and -1"),
    ("float-nan", torch.full((4, 4), float("nan")), "NaN"),
    ("float-posinf", torch.zeros(4, 4).masked_fill(CAUSAL, float("inf")), "+inf"),
    ("list", CAUSAL.tolist(), "torch.Tensor"),
    ("blocked-row", BLOCKED_ROW, "blocks every key"),
    ("blocked-row-float", torch.zeros(4, 4).masked_fill(BLOCKED_ROW, -1e9),
     "blocks every key"),
]

ATTENTION_FNS = {
    "loop": lambda m: mc.multi_head_attention_loop(X, X, X, W, 2, attn_mask=m),
    "batched": lambda m: mc.multi_head_attention(X, X, X, W, 2, attn_mask=m),
    "fast": lambda m: mc.multi_head_attention_fast(X, X, X, W, 2, attn_mask=m),
    "gqa": lambda m: gqa.grouped_query_attention(
        X, X, X, gqa.random_gqa_weights(8, 2, 1), 2, 1, attn_mask=m),
    "attention": lambda m: mc.scaled_dot_product_attention(X, X, X, m),
    "reference_np": lambda m: rnp.scaled_dot_product_attention(
        X.numpy(), X.numpy(), X.numpy(),
        m.numpy() if isinstance(m, torch.Tensor) else m),
}


def _rows():
    """(group, id, call, error class, argument the message must name)."""
    E, T = InputError, InputTypeError
    w64 = W.to(torch.float64)
    R = []

    def add(group, ident, call, err, arg):
        R.append(pytest.param(group, call, err, arg, id=f"{group}-{ident}"))

    # ---- attention: one head, scores, softmax
    sdpa = mc.scaled_dot_product_attention
    for name, bad in [("list", Q2.tolist()), ("numpy", Q2.numpy()), ("int", 3),
                      ("None", None), ("str", "Q")]:
        add("attention", f"Q-{name}", lambda b=bad: sdpa(b, K2, K2), T, "Q")
        add("attention", f"V-{name}", lambda b=bad: sdpa(Q2, K2, b), T, "V")
    for name, dt in [("int64", torch.long), ("bool", torch.bool),
                     ("complex", torch.complex64)]:
        add("attention", f"K-{name}", lambda d=dt: sdpa(Q2, K2.to(d), K2), E, "K")
    add("attention", "dtype-mix", lambda: sdpa(Q2.double(), K2, K2), E, "float64")
    add("attention", "Q-nan", lambda: sdpa(NAN, X, X), E, "Q holds 1 NaN")
    add("attention", "V-inf", lambda: sdpa(X, X, INF), E, "V holds")
    add("attention", "Q-1d", lambda: sdpa(t(4), K2, K2), E, "Q")
    add("attention", "d_k-mismatch", lambda: sdpa(t(3, 5), K2, K2), E, "d_k")
    add("attention", "S-mismatch", lambda: sdpa(Q2, K2, t(4, 6)), E, "same S")
    add("attention", "lead-mismatch", lambda: sdpa(t(2, 3, 4), t(3, 5, 4), t(3, 5, 4)),
        E, "leading axes")
    add("attention", "empty-L", lambda: sdpa(t(0, 4), K2, K2), E, "one query")
    add("attention", "empty-d", lambda: sdpa(t(3, 0), t(5, 0), K2), E, "Q (3, 0)")
    add("attention", "mask-shape", lambda: sdpa(Q2, K2, K2, mc.causal_mask(4)), E,
        "mask")
    add("attention", "mask-1d", lambda: sdpa(Q2, K2, K2, torch.zeros(5, dtype=torch.bool)),
        E, "mask")
    add("attention", "scores-list", lambda: mc.attention_scores([[1.0]], K2), T, "Q")
    add("attention", "scores-int", lambda: mc.attention_scores(Q2.long(), K2), E, "Q")
    add("attention", "scores-nan", lambda: mc.attention_scores(NAN, X), E, "Q")
    add("attention", "scores-d_k", lambda: mc.attention_scores(t(3, 5), K2), E, "d_k")
    add("attention", "scores-mix", lambda: mc.attention_scores(Q2, K2.double()), E,
        "float64")
    add("attention", "softmax-list", lambda: mc.softmax([1.0, 2.0]), T, "scores")
    add("attention", "softmax-int", lambda: mc.softmax(torch.arange(3)), E, "scores")
    add("attention", "softmax-nan", lambda: mc.softmax(torch.tensor([1.0, math.nan])),
        E, "scores")
    add("attention", "softmax-posinf", lambda: mc.softmax(torch.tensor([1.0, math.inf])),
        E, "scores")
    add("attention", "softmax-all-neginf",
        lambda: mc.softmax(torch.full((2, 3), -math.inf)), E, "blocks every key")
    add("attention", "softmax-0d", lambda: mc.softmax(torch.tensor(1.0)), E, "scores")
    add("attention", "softmax-empty-row", lambda: mc.softmax(torch.zeros(2, 0)), E,
        "scores")

    # ---- masks
    for name, bad in [("zero", 0), ("negative", -3), ("float", 4.0), ("str", "4"),
                      ("None-L", None), ("bool", True), ("huge", 10**5)]:
        add("masks", f"causal-{name}", lambda b=bad: mc.causal_mask(b),
            T if name in ("float", "str", "None-L", "bool") else E, "L")
    add("masks", "causal-S-0", lambda: mc.causal_mask(3, 0), E, "S")
    for name, bad in [("zero", [3, 0]), ("too-long", [5, 2]), ("str", ["a"]),
                      ("nested", [[1, 2]]), ("scalar", 3), ("empty", []),
                      ("2d", torch.ones(2, 2)), ("float", [2.5])]:
        add("masks", f"padding-{name}", lambda b=bad: mc.padding_mask(b, 4),
            T if name in ("str", "nested", "scalar", "float") else E, "length")
    add("masks", "padding-S", lambda: mc.padding_mask([1], "4"), T, "S")
    add("masks", "to_sdpa-int", lambda: mc.masks.to_sdpa_mask(CAUSAL.long()), E,
        HF_FIX)
    add("masks", "to_sdpa-list", lambda: mc.masks.to_sdpa_mask([[True]]), T, "mask")

    # ---- heads
    for name, bad in [("list", X.tolist()), ("numpy", X.numpy()), ("None", None)]:
        add("heads", f"split-{name}", lambda b=bad: mc.split_heads(b, 2), T, "x")
        add("heads", f"merge-{name}", lambda b=bad: mc.merge_heads(b), T, "x")
    add("heads", "split-2d", lambda: mc.split_heads(t(4, 8), 2), E, "x")
    add("heads", "split-h-3", lambda: mc.split_heads(X, 3), E, "h = 3")
    add("heads", "split-h-0", lambda: mc.split_heads(X, 0), E, "h")
    add("heads", "split-h-float", lambda: mc.split_heads(X, 2.0), T, "h")
    add("heads", "split-h-str", lambda: mc.split_heads(X, "2"), T, "h")
    add("heads", "name-layer-negative", lambda: mc.head_name(-1, 0), E, "layer = -1")
    add("heads", "name-head-float", lambda: mc.head_name(0, 1.0), T, "head")
    add("heads", "name-layer-bool", lambda: mc.head_name(True, 0), T, "layer")
    add("heads", "merge-3d", lambda: mc.merge_heads(X), E, "x")
    add("heads", "head_slice-i-h", lambda: mc.head_slice(W.W_Q, None, 2, 2), E,
        "i = 2")
    add("heads", "head_slice-i-neg", lambda: mc.head_slice(W.W_Q, None, -1, 2), E, "i")
    add("heads", "head_slice-i-str", lambda: mc.head_slice(W.W_Q, None, "0", 2), T, "i")
    add("heads", "head_slice-W-list", lambda: mc.head_slice(W.W_Q.tolist(), None, 0, 2),
        T, "W")
    add("heads", "head_slice-b", lambda: mc.head_slice(W.W_Q, t(3), 0, 2), E, "b")
    add("heads", "out_proj-shape", lambda: mc.output_projection(t(2, 4, 6), W.W_O), E,
        "concat")
    add("heads", "out_proj-W-list", lambda: mc.output_projection(X, W.W_O.tolist()), T,
        "W_O")
    add("heads", "out_proj-b", lambda: mc.output_projection(X, W.W_O, t(3)), E, "b_O")
    add("heads", "out_proj-mix", lambda: mc.output_projection(X.double(), W.W_O), E,
        "float64")
    add("heads", "contrib-h", lambda: mc.head_contributions(X, W.W_O, 3), E, "h = 3")
    add("heads", "contrib-nan", lambda: mc.head_contributions(NAN, W.W_O, 2), E,
        "concat")

    # ---- multi-head attention: three forms, the same checks
    forms = {"loop": mc.multi_head_attention_loop, "batched": mc.multi_head_attention,
             "fast": mc.multi_head_attention_fast}
    for form, fn in forms.items():
        cases = [
            ("query-list", lambda f=fn: f(X.tolist(), X, X, W, 2), T, "query"),
            ("key-numpy", lambda f=fn: f(X, X.numpy(), X, W, 2), T, "key"),
            ("value-int", lambda f=fn: f(X, X, X.long(), W, 2), E, "value"),
            ("query-nan", lambda f=fn: f(NAN, X, X, W, 2), E, "query"),
            ("key-inf", lambda f=fn: f(X, INF, INF, W, 2), E, "key"),
            ("dtype-mix", lambda f=fn: f(X.double(), X.double(), X.double(), W, 2), E,
             "float64"),
            ("w-mix", lambda f=fn: f(X, X, X, w64, 2), E, "float64"),
            ("w-int", lambda f=fn: f(X, X, X, 2, W), T, "w"),
            ("w-None", lambda f=fn: f(X, X, X, None, 2), T, "w"),
            ("h-0", lambda f=fn: f(X, X, X, W, 0), E, "h"),
            ("h-3", lambda f=fn: f(X, X, X, W, 3), E, "h = 3"),
            ("h-float", lambda f=fn: f(X, X, X, W, 2.0), T, "h"),
            ("d_model", lambda f=fn: f(t(2, 4, 6), t(2, 4, 6), t(2, 4, 6), W, 2), E,
             "d_model = 8"),
            ("rank-mix", lambda f=fn: f(t(4, 8), X, X, W, 2), E, "(4, 8)"),
            ("rank-4", lambda f=fn: f(t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8), W, 2),
             E, "query"),
            ("empty-L", lambda f=fn: f(t(2, 0, 8), X, X, W, 2), E, "query"),
            ("empty-B", lambda f=fn: f(t(0, 4, 8), t(0, 4, 8), t(0, 4, 8), W, 2), E,
             "query"),
            ("seq-first", lambda f=fn: f(t(5, 2, 8), t(3, 2, 8), t(3, 2, 8), W, 2), E,
             "batch-first"),
            ("key-value-S", lambda f=fn: f(X, X, t(2, 5, 8), W, 2), E, "value"),
            ("kpm-HF", lambda f=fn: f(X, X, X, W, 2, key_padding_mask=HF_KEEP), E,
             HF_FIX),
            ("kpm-transposed", lambda f=fn: f(X, X, X, W, 2, key_padding_mask=torch.zeros(
                4, 2, dtype=torch.bool)), E, "key_padding_mask.T"),
            ("kpm-list", lambda f=fn: f(X, X, X, W, 2, key_padding_mask=[[0] * 4] * 2), T,
             "key_padding_mask"),
            ("attn_mask-shape", lambda f=fn: f(X, X, X, W, 2, attn_mask=mc.causal_mask(3)),
             E, "attn_mask"),
            ("unbatched-kpm-2d", lambda f=fn: f(X[0], X[0], X[0], W, 2,
                                                key_padding_mask=HF_KEEP.bool()),
             E, "key_padding_mask"),
        ]
        for ident, call, err, arg in cases:
            add("multihead", f"{form}-{ident}", call, err, arg)
    add("multihead", "weights-W_O-shape",
        lambda: mc.MHAWeights(t(8, 8), t(8, 8), t(8, 8), t(6, 6)), E, "W_O")
    add("multihead", "weights-W_Q-list",
        lambda: mc.MHAWeights([[1.0]], t(8, 8), t(8, 8), t(8, 8)), T, "W_Q")
    add("multihead", "weights-int",
        lambda: mc.MHAWeights(t(8, 8), t(8, 8).long(), t(8, 8), t(8, 8)), E, "W_K")
    add("multihead", "weights-mix",
        lambda: mc.MHAWeights(t(8, 8), t(8, 8), t(8, 8).double(), t(8, 8)), E, "W_V")
    add("multihead", "random-d_model-huge", lambda: mc.random_weights(10**6, 1), E,
        "memory")
    add("multihead", "random-dtype-str", lambda: mc.random_weights(8, 2, dtype="float32"),
        T, "torch.float32")
    add("multihead", "random-seed-str", lambda: mc.random_weights(8, 2, seed="1"), T,
        "seed")
    add("multihead", "to-dtype-str", lambda: W.to("float64"), T, "dtype")
    add("multihead", "layer-h-0", lambda: mc.MultiHeadAttention(8, 0), E, "h")
    add("multihead", "layer-huge", lambda: mc.MultiHeadAttention(10**5, 1), E, "memory")
    add("multihead", "layer-forward-list",
        lambda: mc.MultiHeadAttention(8, 2, seed=0)(X.tolist()), T, "query")
    add("multihead", "from_torch-int", lambda: mc.from_torch(3), T, "mha")
    add("multihead", "to_torch-w", lambda: mc.to_torch("w", 2), T, "w")
    add("multihead", "to_torch-h", lambda: mc.to_torch(W, 3), E, "h = 3")
    add("multihead", "config-h", lambda: mc.MHAConfig(d_model=512, h=7), E, "h = 7")

    # ---- grouped-query attention
    Wg = gqa.random_gqa_weights(8, 2, 1)
    Wq, Wk, Wv, Wo = Wg.W_Q, Wg.W_K, Wg.W_V, Wg.W_O
    gq = gqa.grouped_query_attention
    add("gqa", "h_kv-3", lambda: gq(X, X, X, Wg, 2, 3), E, "h_kv")
    add("gqa", "h_kv-0", lambda: gq(X, X, X, Wg, 2, 0), E, "h_kv")
    add("gqa", "h-str", lambda: gq(X, X, X, Wg, "2", 1), T, "h")
    add("gqa", "W_K-shape", lambda: gq(X, X, X, mc.MHAWeights(Wq, Wq, Wq, Wo), 2, 1), E,
        "W_K")
    add("gqa", "W_Q-list", lambda: gq(X, X, X, mc.MHAWeights(Wq.tolist(), Wk, Wv, Wo),
                                      2, 1), T, "W_Q")
    add("gqa", "W_O-int", lambda: gq(X, X, X, mc.MHAWeights(Wq, Wk, Wv, Wo.long()),
                                     2, 1), E, "W_O")
    add("gqa", "w-tuple", lambda: gq(X, X, X, (Wq, Wk, Wv, Wo), 2, 1), T, "w")
    add("gqa", "query-list", lambda: gq(X.tolist(), X, X, Wg, 2, 1), T, "query")
    add("gqa", "query-nan", lambda: gq(NAN, X, X, Wg, 2, 1), E, "query")
    add("gqa", "dtype-mix", lambda: gq(X.double(), X.double(), X.double(), Wg, 2, 1), E,
        "float64")
    add("gqa", "rank-mix", lambda: gq(X[0], X, X, Wg, 2, 1), E, "(4, 8)")
    add("gqa", "seq-first", lambda: gq(t(5, 2, 8), t(3, 2, 8), t(3, 2, 8), Wg, 2, 1), E,
        "batch-first")
    add("gqa", "d_model", lambda: gq(t(2, 4, 6), X, X, Wg, 2, 1), E, "d_model = 8")
    add("gqa", "mask-shape", lambda: gq(X, X, X, Wg, 2, 1, attn_mask=torch.zeros(
        3, 2, 4, 4, dtype=torch.bool)), E, "mask")
    add("gqa", "mask-list", lambda: gq(X, X, X, Wg, 2, 1, attn_mask=[[0]]), T, "mask")
    add("gqa", "mask-positional", lambda: gq(X, X, X, Wg, 2, 1, CAUSAL), T,
        "positional")
    add("gqa", "random-dtype", lambda: gqa.random_gqa_weights(8, 2, 1, dtype="half"), T,
        "dtype")
    add("gqa", "kv-cache-0", lambda: gqa.kv_cache_per_token(0, 1, 1), E, "n_layers")
    add("gqa", "kv-cache-str", lambda: gqa.kv_cache_per_token(2, "1", 1), T, "h_kv")
    add("gqa", "mean_pool-W", lambda: gqa.mean_pool_kv([[1.0]], 2, 1), T, "W")
    add("gqa", "mean_pool-h_kv", lambda: gqa.mean_pool_kv(Wq, 2, 3), E, "h_kv")

    # ---- the transformer block
    block = mc.TransformerBlock(8, 2, seed=0)
    g1, b1 = torch.ones(8), torch.zeros(8)
    add("block", "layer_norm-list", lambda: mc.layer_norm(X.tolist(), g1, b1), T, "x")
    add("block", "layer_norm-int", lambda: mc.layer_norm(X.long(), g1, b1), E, "x")
    add("block", "layer_norm-gamma", lambda: mc.layer_norm(X, torch.ones(6), b1), E,
        "gamma")
    add("block", "layer_norm-beta-mix", lambda: mc.layer_norm(X, g1, b1.double()), E,
        "beta")
    add("block", "layer_norm-eps-neg", lambda: mc.layer_norm(X, g1, b1, -1.0), E, "eps")
    add("block", "layer_norm-eps-str", lambda: mc.layer_norm(X, g1, b1, "1e-5"), T, "eps")
    add("block", "ffn-activation", lambda: mc.feed_forward(X, t(8, 16), t(16), t(16, 8),
                                                           t(8), "tanh"), E, "activation")
    add("block", "ffn-W_1", lambda: mc.feed_forward(X, t(6, 16), t(16), t(16, 8), t(8)),
        E, "W_1")
    add("block", "ffn-W_2", lambda: mc.feed_forward(X, t(8, 16), t(16), t(8, 8), t(8)),
        E, "W_2")
    add("block", "ffn-b_1-list", lambda: mc.feed_forward(X, t(8, 16), [0.0], t(16, 8),
                                                         t(8)), T, "b_1")
    add("block", "init-h", lambda: mc.TransformerBlock(8, 3), E, "h = 3")
    add("block", "init-d_ff", lambda: mc.TransformerBlock(8, 2, d_ff=0), E, "d_ff")
    add("block", "init-eps", lambda: mc.TransformerBlock(8, 2, eps=0), E, "eps")
    add("block", "init-pre_ln", lambda: mc.TransformerBlock(8, 2, pre_ln="yes"), T,
        "pre_ln")
    add("block", "init-huge", lambda: mc.TransformerBlock(10**5, 1), E, "memory")
    add("block", "forward-list", lambda: block(X.tolist()), T, "x")
    add("block", "forward-d_model", lambda: block(t(2, 4, 6)), E, "d_model = 8")
    add("block", "forward-f64", lambda: block(X.double()), E, "float64")
    add("block", "forward-nan", lambda: block(NAN), E, "x")
    add("block", "forward-4d", lambda: block(t(1, 2, 4, 8)), E, "x")
    add("block", "forward-mask-int", lambda: block(X, attn_mask=CAUSAL.long()), E,
        HF_FIX)
    add("block", "forward-kpm-HF", lambda: block(X, key_padding_mask=HF_KEEP), E, HF_FIX)

    # ---- the NumPy reference
    Xn = X.numpy()
    Wn = {k: v.numpy() for k, v in vars(W).items()}
    attn = ("W_Q", "W_K", "W_V", "W_O")
    add("reference_np", "sdpa-str", lambda: rnp.scaled_dot_product_attention(
        [["a"]], Xn, Xn), T, "Q")
    add("reference_np", "sdpa-ragged", lambda: rnp.scaled_dot_product_attention(
        [[1.0], [1.0, 2.0]], Xn, Xn), E, "Q")
    add("reference_np", "sdpa-nan", lambda: rnp.scaled_dot_product_attention(
        NAN.numpy(), Xn, Xn), E, "Q")
    add("reference_np", "sdpa-1d", lambda: rnp.scaled_dot_product_attention(
        np.ones(3), Xn, Xn), E, "Q")
    add("reference_np", "sdpa-d_k", lambda: rnp.scaled_dot_product_attention(
        np.ones((3, 5)), Xn, Xn), E, "Q")
    add("reference_np", "sdpa-lead", lambda: rnp.scaled_dot_product_attention(
        np.ones((3, 4, 8)), Xn, Xn), E, "Q, K and V")
    add("reference_np", "sdpa-mask-shape", lambda: rnp.scaled_dot_product_attention(
        Xn, Xn, Xn, np.zeros((3, 3), bool)), E, "mask")
    add("reference_np", "softmax-nan", lambda: rnp.softmax(np.array([1.0, np.nan])), E,
        "scores")
    add("reference_np", "softmax-blocked", lambda: rnp.softmax(np.full((2, 2), -np.inf)),
        E, "blocks every key")
    add("reference_np", "causal-0", lambda: rnp.causal_mask(0), E, "L")
    add("reference_np", "padding-0", lambda: rnp.padding_mask([0], 3), E, "length")
    add("reference_np", "split-h", lambda: rnp.split_heads(Xn, 3), E, "h = 3")
    add("reference_np", "merge-3d", lambda: rnp.merge_heads(Xn), E, "x")
    wn = rnp.MHAWeights(**{k: Wn[k] for k in attn})
    add("reference_np", "mha-W", lambda: rnp.multi_head_attention(
        Xn, Xn, Xn, rnp.MHAWeights(Wn["W_Q"], Wn["W_K"], Wn["W_V"], np.ones((6, 6))),
        2), E, "W_O")
    add("reference_np", "mha-X", lambda: rnp.multi_head_attention(
        Xn[0], Xn, Xn, wn, 2), E, "(4, 8)")
    add("reference_np", "mha-X-4d", lambda: rnp.multi_head_attention(
        Xn[None], Xn[None], Xn[None], wn, 2), E, "query")
    add("reference_np", "mha-w", lambda: rnp.multi_head_attention(
        Xn, Xn, Xn, [Wn[k] for k in attn], 2), T, "w")
    add("reference_np", "loop-h", lambda: rnp.multi_head_attention_loop(
        Xn, Xn, Xn, wn, 3), E, "h = 3")
    add("reference_np", "mha-mask-int", lambda: rnp.multi_head_attention(
        Xn, Xn, Xn, wn, 2, attn_mask=CAUSAL.long().numpy()), E, HF_FIX)
    add("reference_np", "mha-b", lambda: rnp.multi_head_attention(
        Xn, Xn, Xn, rnp.MHAWeights(**{k: Wn[k] for k in attn}, b_Q=np.ones(3)), 2), E,
        "b_Q")
    add("reference_np", "layer_norm-gamma", lambda: rnp.layer_norm(
        Xn, np.ones(6), np.zeros(8)), E, "gamma")
    add("reference_np", "block-p", lambda: rnp.transformer_block(Xn, {"W_Q": 1}, 2), E,
        "p lacks")
    add("reference_np", "block-p-list", lambda: rnp.transformer_block(Xn, [1], 2), T,
        "p must")
    return R


def _bert_rows():
    E, T = InputError, InputTypeError
    R = []

    def add(ident, call, err, arg):
        R.append(pytest.param("bert", call, err, arg, id=f"bert-{ident}"))

    def out():
        return _encoded()

    add("load-dtype-str", lambda: bert.load_model(dtype="float32"), T, "torch.float32")
    add("load-dtype-int", lambda: bert.load_model(dtype=torch.int64), T, "dtype")
    add("load-name", lambda: bert.load_model("minilm"), E, "path")
    add("load-path-int", lambda: bert.load_model(3), T, "path")
    add("load-missing", lambda: bert.load_model("/no/such/folder"), E, "path")
    add("encode-model-str", lambda: bert.encode("a cat", model="minilm"), T, "model")
    add("encode-texts-int", lambda: bert.encode(3), T, "texts")
    add("encode-texts-none", lambda: bert.encode(None), T, "texts")
    add("encode-empty", lambda: bert.encode(""), E, "text 0")
    add("encode-empty-list", lambda: bert.encode([]), E, "texts")
    add("encode-list-int", lambda: bert.encode(["a", 2]), T, "text 1")
    add("encode-max_length", lambda: bert.encode("a cat", max_length=2), E, "max_length")
    add("encode-max_length-str", lambda: bert.encode("a cat", max_length="10"), T,
        "max_length")
    add("encode-head_mask-2", lambda: bert.encode("a cat", head_mask=2 * torch.ones(6, 12)),
        E, "head_mask")
    add("encode-head_mask-neg", lambda: bert.encode("a cat", head_mask=-torch.ones(6, 12)),
        E, "head_mask")
    add("encode-head_mask-shape", lambda: bert.encode("a cat", head_mask=torch.ones(6, 8)),
        E, "head_mask")
    add("encode-head_mask-str", lambda: bert.encode("a cat", head_mask="all"), T,
        "head_mask")
    add("encode-head_mask-nan", lambda: bert.encode(
        "a cat", head_mask=torch.full((6, 12), math.nan)), E, "head_mask")
    add("embedding-normalize", lambda: bert.sentence_embedding("a cat", normalize="yes"),
        T, "normalize")
    add("tokenize-model", lambda: bert.tokenize("a cat", model=5), T, "model")
    add("out-attention-6", lambda: out().attention(6), E, "layer = 6")
    add("out-attention-neg", lambda: out().attention(-7), E, "layer")
    add("out-attention-str", lambda: out().attention("1"), T, "layer")
    add("out-attention-sentence", lambda: out().attention(0, sentence=1), E, "sentence")
    add("out-hidden-7", lambda: out().hidden(7), E, "layer = 7")
    add("out-hidden-float", lambda: out().hidden(1.5), T, "layer")
    add("embed-list", lambda: bert.embed([[1, 2]], bert.load_model()), T, "input_ids")
    add("embed-float", lambda: bert.embed(torch.ones(1, 3), bert.load_model()), E,
        "input_ids")
    add("embed-1d", lambda: bert.embed(torch.ones(3, dtype=torch.long), bert.load_model()),
        E, "input_ids")
    add("embed-vocab", lambda: bert.embed(torch.tensor([[10**6]]), bert.load_model()), E,
        "input_ids")
    add("embed-long", lambda: bert.embed(torch.ones(1, 600, dtype=torch.long),
                                         bert.load_model()), E, "512")
    add("layer-type", lambda: bert.bert_layer(torch.ones(1, 3, 384), "layer0", 12, 1e-12),
        T, "layer")
    add("layer-x", lambda: bert.bert_layer(torch.ones(1, 3, 380),
                                           bert.load_model().layers[0], 12, 1e-12),
        E, "d_model = 384")
    add("layer-head_mask", lambda: bert.bert_layer(
        torch.ones(1, 3, 384), bert.load_model().layers[0], 12, 1e-12,
        head_mask=torch.full((12,), 3.0)), E, "head_mask")
    add("run_layers-start", lambda: bert.run_layers(torch.ones(1, 3, 384),
                                                    bert.load_model(), start=9), E,
        "start")
    add("mean_pool-mask", lambda: bert.mean_pool(torch.ones(1, 3, 4), torch.ones(1, 4)),
        E, "attention_mask")
    add("mean_pool-hidden", lambda: bert.mean_pool([[1.0]], torch.ones(1, 1)), T, "hidden")
    add("masked_output-w", lambda: bert.masked_output(torch.ones(1, 3, 384), None, 12), T,
        "w")
    add("masked_output-mask", lambda: bert.masked_output(
        torch.ones(1, 3, 384), bert.load_model().layers[0].attn, 12, torch.ones(5)), E,
        "head_mask")
    return R


def _explorer_rows():
    E, T = InputError, InputTypeError
    R = []

    def add(ident, call, err, arg):
        R.append(pytest.param("explorer", call, err, arg, id=f"explorer-{ident}"))

    s = ex.EXAMPLES[0]
    add("tiny-h-0", lambda: ex.tiny_view(s, 0, 8), E, "h")
    add("tiny-h-str", lambda: ex.tiny_view(s, "4", 8), T, "h")
    add("tiny-h-40", lambda: ex.tiny_view(s, 40, 8, trained=False), E, "at most 16")
    add("tiny-d_k-huge", lambda: ex.tiny_view(s, 2, 10**6, trained=False), E, "memory")
    add("tiny-d_model-huge", lambda: ex.tiny_view(s, 2, 8, trained=False, d_model=10**6),
        E, "memory")
    add("tiny-d_model-split", lambda: ex.tiny_view(s, 3, 8, trained=False, d_model=16),
        E, "d_model = 16")
    add("tiny-d_model-trained", lambda: ex.tiny_view(s, 4, 16, d_model=32), E, "d_model")
    add("tiny-layer-6", lambda: ex.tiny_view(s, 4, 16, layer=6), E, "layer")
    add("tiny-layer-0", lambda: ex.tiny_view(s, 4, 16, layer=0), E, "layer")
    add("tiny-layer-str", lambda: ex.tiny_view(s, 4, 16, layer="2"), T, "layer")
    add("tiny-trained-str", lambda: ex.tiny_view(s, 4, 16, trained="yes"), T, "trained")
    add("tiny-sentence-None", lambda: ex.tiny_view(None, 4, 16), T, "sentence")
    add("tiny-sentence-empty", lambda: ex.tiny_view("  ", 4, 16), E, "sentence")
    add("tiny-no-grid", lambda: ex.tiny_view(s, 3, 16), E, "h = 3")
    add("tiny-long", lambda: ex.tiny_view("word " * 40, 4, 16), E, "at most 16")
    add("tiny-unknown", lambda: ex.tiny_view("zyxq wvut", 4, 16), E, "vocabulary")
    add("model-h-list", lambda: ex.tiny_model_for([4], 16, True), T, "h")
    add("model-d_k-huge", lambda: ex.tiny_model_for(4, 10**6, False), E, "memory")
    add("model-trained-none", lambda: ex.tiny_model_for(4, 16, None), T, "trained")
    add("minilm-layer-0", lambda: ex.minilm_view(s, 0), E, "layer")
    add("minilm-layer-7", lambda: ex.minilm_view(s, 7), E, "layer")
    add("minilm-layer-float", lambda: ex.minilm_view(s, 2.5), T, "layer")
    add("minilm-long", lambda: ex.minilm_view("word " * 40), E, "longer than 32")
    add("widget-source", lambda: AttentionExplorer(source="GPT-2"), E, "source")
    add("widget-layer-6-tiny", lambda: AttentionExplorer(source="trained", layer=6), E,
        "layer")
    add("widget-h-str", lambda: AttentionExplorer(h="4"), T, "h")
    add("layers_of", lambda: ex.layers_of("bert"), E, "source")
    return R


ROWS = _rows() + _bert_rows() + _explorer_rows()


@pytest.fixture(scope="module")
def encoded():
    return _encoded()


_CACHE = {}


def _encoded():
    if "out" not in _CACHE:
        _CACHE["out"] = bert.encode("The cat sat.")
    return _CACHE["out"]


def _good(group):
    """A good call of the group, checked against an independent result."""
    if group in ("attention", "multihead", "heads", "gqa", "block", "masks"):
        out, A = mc.multi_head_attention(X, X, X, W, 2, attn_mask=CAUSAL)
        ref = mc.to_torch(W, 2)(X, X, X, attn_mask=CAUSAL,
                                average_attn_weights=False)
        assert torch.allclose(out, ref[0], atol=1e-5)
        assert torch.allclose(A, ref[1], atol=1e-5)
        o, _ = mc.scaled_dot_product_attention(Q2, K2, V2)
        assert torch.allclose(o, F.scaled_dot_product_attention(Q2, K2, V2), atol=1e-5)
    elif group == "reference_np":
        o, _ = rnp.scaled_dot_product_attention(Q2.numpy(), K2.numpy(), V2.numpy())
        assert np.allclose(o, F.scaled_dot_product_attention(Q2, K2, V2).numpy(),
                           atol=1e-5)
    elif group == "bert":
        out = _encoded()
        assert out.attention(5).shape[0] == 12
        assert torch.allclose(out.attention(5).sum(-1), torch.ones(1), atol=1e-5)
    elif group == "explorer":
        v = ex.tiny_view(ex.EXAMPLES[0], 4, 16, layer=2)
        assert v.weights.shape[0] == 4
        assert torch.allclose(v.weights.sum(-1), torch.ones(1), atol=1e-5)


@pytest.mark.parametrize("group, call, err, arg", ROWS)
def test_bad_input_raises_the_packages_error_naming_the_argument(group, call, err, arg):
    with pytest.raises(err) as info:
        call()
    assert_the_packages_error(info, arg)
    # recovery: a good input works right after
    _good(group)


@pytest.mark.parametrize("fn", list(ATTENTION_FNS), ids=list(ATTENTION_FNS))
@pytest.mark.parametrize("label, mask, words", BAD_MASKS, ids=[m[0] for m in BAD_MASKS])
def test_every_attention_function_refuses_the_same_bad_masks(fn, label, mask, words):
    if fn == "reference_np" and label == "list":  # NumPy code takes lists
        got = ATTENTION_FNS[fn](mask)[0]
        assert np.allclose(got, ATTENTION_FNS[fn](CAUSAL)[0])
        return
    with pytest.raises(InputError, match="mask") as info:
        ATTENTION_FNS[fn](mask)
    assert words in str(info.value), str(info.value)
    if label == "list":
        assert isinstance(info.value, TypeError)


def test_the_int_mask_message_gives_both_fixes():
    with pytest.raises(InputError) as info:
        mc.multi_head_attention_loop(X, X, X, W, 2, attn_mask=CAUSAL.long())
    assert str(info.value) == (
        "attn_mask is int64: pass a bool mask, True = blocked (`mask.bool()`); a "
        "Hugging Face attention_mask has 1 = keep, so pass `~attention_mask.bool()`.")


def test_good_masks_still_work_everywhere():
    additive = torch.zeros(4, 4).masked_fill(CAUSAL, float("-inf"))
    big_negative = torch.zeros(4, 4).masked_fill(CAUSAL, -1e9)
    ref = ATTENTION_FNS["batched"](CAUSAL)[0]
    for m in (CAUSAL, additive, big_negative):
        for name in ("loop", "batched", "fast"):
            assert torch.allclose(ATTENTION_FNS[name](m)[0], ref, atol=1e-5), name
    bias = 0.3 * torch.randn(4, 4, generator=G)  # a score bias (ALiBi-like) is fine
    a = ATTENTION_FNS["batched"](bias)[0]
    b = ATTENTION_FNS["fast"](bias)[0]
    assert torch.allclose(a, b, atol=1e-5)


def test_nan_can_be_allowed_on_purpose():
    out, A = mc.scaled_dot_product_attention(NAN, X, X, allow_nonfinite=True)
    assert torch.isnan(out).any()
    assert torch.isnan(mc.softmax(torch.tensor([1.0, math.nan]), allow_nonfinite=True)).all()
    out, _ = mc.multi_head_attention(NAN, NAN, NAN, W, 2, allow_nonfinite=True)
    assert torch.isnan(out).any()


def test_fully_masked_rows_are_refused_the_same_way_everywhere():
    row = torch.full((1, 4), -math.inf)
    calls = [
        lambda: mc.softmax(row),
        lambda: rnp.softmax(row.numpy()),
        lambda: mc.scaled_dot_product_attention(X, X, X, BLOCKED_ROW),
        lambda: rnp.scaled_dot_product_attention(X.numpy(), X.numpy(), X.numpy(),
                                                 BLOCKED_ROW.numpy()),
        lambda: mc.multi_head_attention_loop(X, X, X, W, 2, attn_mask=BLOCKED_ROW),
        lambda: mc.multi_head_attention(X, X, X, W, 2, attn_mask=BLOCKED_ROW),
        lambda: mc.multi_head_attention_fast(X, X, X, W, 2, attn_mask=BLOCKED_ROW),
        lambda: gqa.grouped_query_attention(X, X, X, gqa.random_gqa_weights(8, 2, 1),
                                            2, 1, attn_mask=BLOCKED_ROW),
        lambda: rnp.multi_head_attention(X.numpy(), X.numpy(), X.numpy(), W, 2,
                                         attn_mask=BLOCKED_ROW.numpy()),
    ]
    for call in calls:
        with pytest.raises(InputError, match=r"blocks every key .*0/0 = NaN"):
            call()


# ---- the checkers: every problem with the learner's result is a verdict ----

def _ok_attention(Q, K, V):
    return mc.scaled_dot_product_attention(Q, K, V)


CHECKER_FNS = {
    "attention": checks.check_attention, "split_heads": checks.check_split_heads,
    "merge_heads": checks.check_merge_heads, "remove_head": checks.check_remove_head,
    "mha_flops": checks.check_mha_flops, "multi_head": checks.check_multi_head,
    "head_weights": checks.check_head_weights, "layer_norm": checks.check_layer_norm,
    "pre_ln_block": checks.check_pre_ln_block, "causal_mask": checks.check_causal_mask,
    "previous_token": checks.check_previous_token_score,
    "row_entropy": checks.check_row_entropy, "batched_heads": checks.check_batched_heads,
    "blockwise": checks.check_blockwise_attention, "score_rank": checks.check_score_rank,
}
LEARNER_RESULTS = {
    "None": (lambda *a: None, ("None", "return")),
    "str": (lambda *a: "done", ("str", "string", "return")),
    "ragged": (lambda *a: [[1.0, 2.0], [3.0]], ("ragged", "return", "pair", "list")),
    "not-callable": (42, ("pass your function itself",)),
}
CHECKER_ROWS = [pytest.param(c, r, id=f"checkers-{c}-{r}")
                for c in CHECKER_FNS for r in LEARNER_RESULTS]


@pytest.mark.parametrize("checker, result", CHECKER_ROWS)
def test_checker_turns_a_bad_result_into_a_verdict(checker, result):
    fn, words = LEARNER_RESULTS[result]
    v = CHECKER_FNS[checker](fn)
    assert isinstance(v, checks.Verdict) and not v.ok
    assert any(w in v.message for w in words), v.message
    assert "Traceback" not in v.message


NUMBER_ROWS = [
    ("param_count", lambda a: checks.check_param_count(a, 512, 8), 4 * 512**2 + 4 * 512),
    ("weights_memory", lambda a: checks.check_weights_memory(a, 2, 8, 100),
     2 * 8 * 100 * 100 * 4),
    ("kv_cache", lambda a: checks.check_kv_cache(a, 6, 2, 64), 2 * 6 * 2 * 64 * 2),
]


@pytest.mark.parametrize("name, check, want", NUMBER_ROWS, ids=[r[0] for r in NUMBER_ROWS])
@pytest.mark.parametrize("kind", ["int", "float", "np.int64", "np.float32",
                                  "torch-0d", "torch-1"])
def test_checkers_accept_numpy_and_torch_numbers(name, check, want, kind):
    answer = {"int": want, "float": float(want), "np.int64": np.int64(want),
              "np.float32": np.float64(want), "torch-0d": torch.tensor(want),
              "torch-1": torch.tensor([want])}[kind]
    assert check(answer).ok, check(answer).message


@pytest.mark.parametrize("name, check, want", NUMBER_ROWS, ids=[r[0] for r in NUMBER_ROWS])
@pytest.mark.parametrize("answer, words", [
    ("1000", "without quotes"), (None, "NoneType"), ([1, 2], "list"),
    (True, "bool"), (float("nan"), "nan"), (torch.ones(3), "shape (3,)"),
])
def test_checkers_give_a_verdict_for_answers_that_are_not_numbers(name, check, want,
                                                                   answer, words):
    v = check(answer)
    assert not v.ok and words in v.message, v.message


@pytest.mark.parametrize("call, arg", [
    (lambda: checks.check_param_count(10, 512, 0), "h"),
    (lambda: checks.check_param_count(10, "512", 8), "d_model"),
    (lambda: checks.check_param_count(10, None, 8), "d_model"),
    (lambda: checks.check_weights_memory(10, 0, 8, 100), "B"),
    (lambda: checks.check_kv_cache(10, 6, "2", 64), "h_kv"),
    (lambda: checks.mha_flops(1, 0, 8, 2), "L"),
], ids=["pc-h-0", "pc-d-str", "pc-d-None", "wm-B-0", "kv-h_kv-str", "flops-L-0"])
def test_bad_checker_arguments_raise_input_error(call, arg):
    with pytest.raises(InputError, match=arg):
        call()


def test_table_size():
    """At least 200 bad inputs in all (the issue's floor), per group."""
    groups = {}
    for p in ROWS:
        groups[p.values[0]] = groups.get(p.values[0], 0) + 1
    groups["masks x 6 functions"] = len(BAD_MASKS) * len(ATTENTION_FNS)
    groups["checkers"] = len(CHECKER_ROWS) + 3 * 6 + 6
    total = sum(groups.values())
    print(groups, total)
    assert total >= 200 and all(n >= 6 for n in groups.values()), groups


# ---- the explorer recovers after every bad input -----------------------------

def n_heads_drawn(html: str) -> int:
    return html.count("<figure")


EXPLORER_BAD = [
    ({"text": ""}, "Type a sentence"),
    ({"h": 0}, "h (number of heads)"),
    ({"d_k": 10**6}, "at most 256 (memory"),
    ({"h": 1000}, "at most 16"),
    ({"d_model": 10**6}, "memory"),
    ({"h": 3, "d_model": 16}, "h = 3 heads cannot split d_model = 16"),
    ({"d_k": -5}, "d_k (width of one head) must be a positive integer"),
    ({"source": "trained", "h": 3}, "No trained model for h = 3"),
    ({"source": "MiniLM", "text": "word " * 40}, "longer than 32 word pieces"),
]


@pytest.mark.parametrize("setting, message", EXPLORER_BAD,
                         ids=[str(s) for s, _ in EXPLORER_BAD])
def test_explorer_replaces_stale_heatmaps_and_recovers(setting, message):
    e = AttentionExplorer(source="untrained", h=2, d_k=8, layer=1)
    assert n_heads_drawn(e.output.value) == 2
    for name, value in setting.items():
        getattr(e, name).value = value
    html = e.output.value
    assert n_heads_drawn(html) == 0 and "role='status'" in html, html[:300]
    assert message in html.replace("&#x27;", "'"), html
    e.source.value, e.h.value, e.d_k.value, e.d_model.value = "untrained", 3, 8, 0
    e.text.value = ex.EXAMPLES[1]
    assert n_heads_drawn(e.output.value) == 3
    view = ex.tiny_view(ex.EXAMPLES[1], 3, 8, trained=False, layer=e.layer.value)
    assert view.header.replace("'", "&#x27;") in e.output.value


def test_explorer_offers_each_source_only_its_layers():
    e = AttentionExplorer(source="MiniLM", layer=6)
    assert list(e.layer.options) == [1, 2, 3, 4, 5, 6]
    assert "layer 6 of 6" in e.output.value
    e.source.value = "trained"
    assert list(e.layer.options) == [1, 2] and e.layer.value == 2
    assert "layer 2 of 2" in e.output.value
    e.layer.value = 1
    e.source.value = "MiniLM"
    assert list(e.layer.options) == [1, 2, 3, 4, 5, 6] and e.layer.value == 1
    assert "layer 1 of 6" in e.output.value


def test_explorer_shows_an_unexpected_error_as_one_line(monkeypatch):
    e = AttentionExplorer(source="untrained", h=2, d_k=8, layer=1)

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ex, "tiny_view", boom)
    e.h.value = 4
    assert n_heads_drawn(e.output.value) == 0
    assert "disk on fire" in e.output.value and "Traceback" not in e.output.value
    monkeypatch.undo()
    e.h.value = 2
    assert n_heads_drawn(e.output.value) == 2


def _api_examples():
    """The (code, message) pairs of the API page's list of errors."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "chapters" / "api.md"
    text = page.read_text().split("(api-errors)=", 1)[1]
    return re.findall(r"```python\n(.*?)\n```\n\n```text\n(.*?)\n```", text, re.S)


@pytest.mark.parametrize("code, message", _api_examples())
def test_api_page_examples(code, message):
    """Every example message on the API page is what the package says."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, 4, 8, generator=g)
    X_nan = X.clone()
    X_nan[0, 1, 2] = float("nan")
    names = dict(torch=torch, mc=mc, bert=bert, checks=checks, explorer=ex, X=X,
                 X_nan=X_nan, w=mc.random_weights(8, 2), causal=mc.causal_mask(4),
                 X_seq_first=torch.randn(5, 2, 8, generator=g), out=_encoded())
    try:
        got = repr(eval(code, names))
    except mc.InputError as e:
        got = f"{type(e).__name__}: {e}"
    assert got == message


def test_api_page_lists_enough_examples():
    assert len(_api_examples()) >= 20


def test_weights_changed_in_place_are_checked_again():
    """Finite weights are remembered (checked once), until changed in place."""
    w = mc.random_weights(8, 2)
    mc.multi_head_attention(X, X, X, w, 2)
    w.W_V[1, 1] = float("inf")
    with pytest.raises(InputError,
                       match=r"w.W_V holds 1 inf value\(s\) \(first at index \(1, 1\)\)"):
        mc.multi_head_attention(X, X, X, w, 2)
    layer = mc.MultiHeadAttention(8, 2, seed=0)
    layer(X)
    with torch.no_grad():
        layer.W_Q.mul_(float("nan"))  # as an optimizer step that diverged
    with pytest.raises(InputError, match=r"w.W_Q holds 64 NaN"):
        layer(X)
