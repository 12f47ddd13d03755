"""The cache behind :mod:`mhacourse.head_analysis`'s ablations: the
sentences, sorted by length and padded in small groups, with every layer's
input and unmasked head outputs kept for the intact model, so that removing
a head reruns only what it changes. A module of its own so that
:mod:`mhacourse.head_analysis` and its input checks (``isinstance(cache,
AblationCache)``) both import it from below.
"""
from __future__ import annotations

import torch

from ._validate import check_positive_int, check_texts
from .bert import Bert, add_norm_ffn, bert_layer, embed, masked_output, mean_pool, tokenize
from .bert_weights import check_bert


class AblationCache:
    """For ablations: the sentences, sorted by length and padded in small groups (less
    padding), with every layer's input ``x^l`` and unmasked head outputs
    ``concat^l`` cached, first for the intact model.

    Removing a head of layer l leaves ``x^l`` and ``concat^l`` as they were,
    so that layer only redoes ``Concat(m_i head_i) W_O`` and what follows
    (:func:`mhacourse.bert.masked_output`), and layers l+1.. run again.
    """

    def __init__(self, texts, model: Bert, size: int = 8):
        check_texts("texts", texts)
        check_bert(model)
        check_positive_int("size", size, 1024)
        tok = tokenize(list(texts), model=model)
        order = sorted(range(len(tok.texts)), key=lambda s: tok.lengths[s])
        self.model, self.groups, self.intact, self.base = model, [], [], []
        for start in range(0, len(order), size):
            idx = order[start:start + size]
            L = max(tok.lengths[s] for s in idx)
            real = tok.attention_mask[idx, :L]  # (b, L), True = real
            pad = None if bool(real.all()) else ~real  # (b, L), True = padding
            self.groups.append((real, pad))
            with torch.no_grad():
                x = embed(tok.input_ids[idx, :L], model)  # (b, L, d_model)
            state = self.run(len(self.groups) - 1, x, None, 0, None)
            self.intact.append(state)
            self.base.append(self.embedding(state[0], real))

    @staticmethod
    def embedding(hidden, real):
        return mean_pool(hidden[-1], real, normalize=True)  # (b, d_model)

    @torch.no_grad()
    def run(self, g: int, x, head_mask, start: int, state):
        """Group g's ``(hidden, concat)`` lists with ``head_mask`` (n_layers, h),
        reusing ``state`` (the lists for a mask that differs only in layers
        ``>= start``) up to layer ``start``."""
        cfg = self.model.config
        hidden, concat = ([x], []) if state is None else (
            state[0][:start + 1], state[1][:start])
        for l in range(start, cfg.n_layers):
            layer = self.model.layers[l]
            m_l = None if head_mask is None or bool((head_mask[l] == 1).all()) \
                else head_mask[l]
            if state is not None and l == start:  # x^l and concat^l unchanged
                c = state[1][l]
                a = masked_output(c, layer.attn, cfg.h, m_l)
                x = add_norm_ffn(hidden[l], a, layer, cfg.eps)
            else:
                x, _, c = bert_layer(hidden[l], layer, cfg.h, cfg.eps,
                                     self.groups[g][1], m_l, return_concat=True)
            hidden.append(x)
            concat.append(c)
        return hidden, concat

    @torch.no_grad()
    def single_head_cosines(self, l: int) -> torch.Tensor:
        """Mean cosine to the intact embeddings without head i of layer l,
        for every i at once: (h,). The h ablations run as one batch of
        h * b sequences per group (bigger matrix products run faster)."""
        cfg = self.model.config
        layer, h = self.model.layers[l], cfg.h
        total, n = torch.zeros(h, dtype=torch.float64), 0
        for (real, pad), (hidden, concat), base in zip(
                self.groups, self.intact, self.base):
            b = real.shape[0]
            keep = (1 - torch.eye(h)).repeat_interleave(b, dim=0)  # (h*b, h)
            # variant i (rows i*b .. i*b+b-1) drops head i of layer l
            a = masked_output(concat[l].repeat(h, 1, 1), layer.attn, h, keep)
            x = add_norm_ffn(hidden[l].repeat(h, 1, 1), a, layer, cfg.eps)
            pad_h = None if pad is None else pad.repeat(h, 1)  # (h*b, L)
            for k in range(l + 1, cfg.n_layers):
                x, _ = bert_layer(x, self.model.layers[k], h, cfg.eps, pad_h)
            e = mean_pool(x, real.repeat(h, 1)).view(h, b, -1)  # (h, b, d_model)
            total += (e * base).sum(dim=(1, 2)).double()  # (h,)
            n += b
        return (total / n).float()

    def cosines(self, head_mask, start: int, states=None):
        """Mean cosine to the intact embeddings under ``head_mask``, redoing
        layers ``start..`` from ``states`` (default: the intact model's).
        Returns the cosine and the new states."""
        states = self.intact if states is None else states
        cos, n, new = 0.0, 0, []
        for g, (real, _) in enumerate(self.groups):
            state = self.run(g, None, head_mask, start, states[g])
            e = self.embedding(state[0], real)
            cos += float((e * self.base[g]).sum())
            n += len(e)
            new.append(state)
        return cos / n, new
