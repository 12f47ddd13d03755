"""A two-layer tiny model whose induction circuit is written by hand, so the
read-outs of :mod:`mhacourse.circuits` can be checked against a known
answer (and chapter 11 can show one before any training).

The residual stream (d_model = 64) is split into named subspaces::

    T   dims  0..7    the token: W_E puts word v at a random vector e_v
    Pos dims  8..23   the position: W_pos[t] = POS_SCALE * unit vector 8 + t
    R   dims 24..31   "the previous token", empty until block 0 writes it

Block 0, head 0 (previous-token head): its query reads position t, its key
position s shifted by one, so it scores ``t = s + 1``; its value reads T and
``W_O`` writes into R. Block 1, head 0 (induction head): its query reads T
(the current word), its key reads R (the word before each earlier
position): it attends to the position after an earlier copy of the current
word; its value reads T and writes T, and ``W_U = W_Eᵀ`` on T, so it
copies. Every other head has random, small weights; the feed-forward
networks are zero.
"""
from __future__ import annotations

import torch

from .._validate_newer import check_seed
from ..tiny_model.model import TinyConfig, TinyTransformer

T, POS, R = slice(0, 8), slice(8, 24), slice(24, 32)
POS_SCALE = 3.0  # size of a position embedding
SHARP = 4.0  # per-dimension gain of the planted queries and keys


def planted_induction_model(seed: int = 0) -> TinyTransformer:
    """The hand-built model of this module's docstring: ``h = 4``,
    ``d_k = 16``, 2 blocks; block 0 head 0 is a previous-token head, block 1
    head 0 an induction head that K-composes with it. ``seed`` draws the
    word vectors and the other heads' weights."""
    seed = check_seed("seed", seed)
    cfg = TinyConfig(h=4, d_k=16)
    model = TinyTransformer(cfg, seed=seed)
    g = torch.Generator().manual_seed(seed)
    d, k, V, L = cfg.d_model, cfg.d_k, cfg.vocab_size, cfg.max_len
    eye8 = torch.eye(8)
    state = {name: torch.zeros_like(p) for name, p in model.state_dict().items()}
    for name in state:
        if "gamma" in name:
            state[name] = torch.ones(d)
    E = torch.randn(V, 8, generator=g)
    state["W_E"][:, T] = 3.0 * E / E.norm(dim=1, keepdim=True)  # (V, 8): |e_v| = 3
    state["W_pos"][:, POS] = POS_SCALE * torch.eye(L)  # (L, 16)
    state["W_U"][T, :] = state["W_E"][:, T].T  # (8, V): logit of v = x . e_v
    for layer in (0, 1):
        p = f"blocks.{layer}.attn."
        for W in ("W_Q", "W_K", "W_V"):  # heads 1..3: small random maps
            state[p + W][:, k:] = 0.05 * torch.randn(d, d - k, generator=g)
        state[p + "W_O"][k:, :] = 0.05 * torch.randn(d - k, d, generator=g)
    b0, b1 = "blocks.0.attn.", "blocks.1.attn."
    state[b0 + "W_Q"][POS, :L] = SHARP * torch.eye(L)  # query of t: unit t
    state[b0 + "W_K"][POS, :L] = SHARP * torch.eye(L).roll(1, dims=1)  # key of s: t = s + 1
    state[b0 + "W_K"][8 + L - 1, 0] = 0.0  # no wrap-around: the last key matches no query
    state[b0 + "W_V"][T, :8] = eye8  # value: the token
    state[b0 + "W_O"][:8, R] = eye8  # written into R
    state[b1 + "W_Q"][T, :8] = SHARP * eye8  # query: the current token
    state[b1 + "W_K"][R, :8] = SHARP * eye8  # key: the previous token
    state[b1 + "W_V"][T, :8] = eye8  # value: the token
    state[b1 + "W_O"][:8, T] = 4.0 * eye8  # written back into T: copying
    model.load_state_dict(state)
    return model.eval()
