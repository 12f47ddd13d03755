"""Input checks for :mod:`mhacourse.head_analysis`, the rest of
:mod:`mhacourse.web_export` and :func:`mhacourse.decoder.decoder_weights_from_torch`
(the rules: :mod:`mhacourse._validate_newer`):
each public entry point calls one function from here at its top.
"""
from __future__ import annotations

import numbers

import torch

from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_finite,
    check_positive_int,
    check_tensor,
    describe,
)
from ._validate_newer import check_bool, check_real


def _check_model(model) -> None:
    from .bert_weights import Bert

    if model is not None and not isinstance(model, Bert):
        raise InputTypeError(f"model must be a model loaded with mc.load_model(), or "
                             f"None for the course's model; got {describe(model)}.")


def check_texts(name: str, texts) -> None:
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
        raise InputTypeError(f"{name} must be a non-empty list of sentences (str); "
                             f"got {describe(texts)}.")
    for i, s in enumerate(texts):
        if not isinstance(s, str) or not s.strip():
            raise InputTypeError(f"{name}[{i}] must be a sentence (a non-empty str); "
                                 f"got {describe(s)}.")


def check_bert(model, none_ok: bool = False) -> None:
    if model is None and none_ok:
        return
    if model is None:
        raise InputTypeError("model must be a model loaded with mc.load_model(); got None.")
    _check_model(model)


# --- head_analysis ------------------------------------------------------

def check_attention_statistics(attentions, tokens) -> None:
    for name, v in (("attentions", attentions), ("tokens", tokens)):
        if not isinstance(v, (list, tuple)):
            raise InputTypeError(f"{name} must be a list, one entry per sentence; got "
                                 f"{describe(v)}.")
    for s, A in enumerate(attentions):
        check_tensor(f"attentions[{s}]", A, legend="(n_layers, h, n, n)")
        check_finite(f"attentions[{s}]", A, option=False)
    for s, toks in enumerate(tokens):
        if isinstance(toks, str) or not isinstance(toks, (list, tuple)) or not all(
                isinstance(x, str) for x in toks):
            raise InputTypeError(f"tokens[{s}] must be a list of token strings; got "
                                 f"{describe(toks)}.")


def check_head_statistics(texts, model) -> None:
    check_texts("texts", texts)
    _check_model(model)


def check_classify_heads(stats, threshold, broad) -> None:
    from .head_analysis import HeadStats

    if not isinstance(stats, HeadStats):
        raise InputTypeError(f"stats must be a HeadStats (head_statistics() or "
                             f"attention_statistics()); got {describe(stats)}.")
    check_real("threshold", threshold, low=0.0, high=1.0)
    check_real("broad", broad, low=0.0, high=1.0)


def check_class_counts(labels) -> None:
    if not isinstance(labels, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) and all(isinstance(c, str) for c in row)
            for row in labels):
        raise InputTypeError(f"labels must be classify_heads()'s list of lists of "
                             f"class names; got {describe(labels)}.")


def check_word_attention(A, spans) -> None:
    check_tensor("A", A, min_ndim=2, legend="(..., n, n)")
    n = A.shape[-1]
    ok = isinstance(spans, (list, tuple)) and spans and all(
        isinstance(s, (list, tuple)) and s and all(
            isinstance(p, numbers.Integral) and not isinstance(p, bool) and 0 <= p < n
            for p in s) for s in spans)
    if not ok:
        raise InputError(f"spans must be a non-empty list of non-empty lists of token "
                         f"positions 0..{n - 1}; got {describe(spans)}.")


def check_claim_args(claim, model, top) -> None:
    from .head_analysis import Claim

    if not isinstance(claim, Claim):
        raise InputTypeError(f"claim must be a head_analysis.Claim(sentence, source, "
                             f"target, alternative); got {describe(claim)}.")
    for field in ("sentence", "source", "target", "alternative"):
        if not isinstance(getattr(claim, field), str):
            raise InputTypeError(f"claim.{field} must be a str; got "
                                 f"{describe(getattr(claim, field))}.")
    _check_model(model)
    check_positive_int("top", top)


def check_claims_args(claims, model, top) -> None:
    if isinstance(claims, str) or not isinstance(claims, (list, tuple)):
        raise InputTypeError(f"claims must be a list of head_analysis.Claim; got "
                             f"{describe(claims)}.")
    _check_model(model)
    check_positive_int("top", top)


def check_ablation_args(texts, model, cache) -> None:
    from .head_analysis import AblationCache

    check_texts("texts", texts)
    _check_model(model)
    if cache is not None and not isinstance(cache, AblationCache):
        raise InputTypeError(f"cache must be an AblationCache or None; got "
                             f"{describe(cache)}.")


def check_order(order) -> None:
    if order is None:
        return
    if isinstance(order, (str, torch.Tensor)) or not isinstance(order, (list, tuple)):
        raise InputTypeError(f"order must be a list of (layer, head) pairs; got "
                             f"{describe(order)}.")
    for k, p in enumerate(order):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise InputTypeError(f"order[{k}] must be a (layer, head) pair; got "
                                 f"{describe(p)}.")
        as_int(f"order[{k}][0] (layer)", p[0])
        as_int(f"order[{k}][1] (head)", p[1])


def check_pruning_args(order, texts, model, cache, ablation) -> None:
    from .head_analysis import Ablation

    check_order(order)
    check_ablation_args(texts, model, cache)
    if ablation is not None and not isinstance(ablation, Ablation):
        raise InputTypeError(f"ablation must be an Ablation (ablation_ranking()) or "
                             f"None; got {describe(ablation)}.")


def check_report(a, top) -> None:
    from .head_analysis import HeadAnalysis

    if not isinstance(a, HeadAnalysis):
        raise InputTypeError(f"a must be analyse()'s HeadAnalysis; got {describe(a)}.")
    check_positive_int("top", top)


# --- web_export -----------------------------------------------------------

def check_precomputed(sentences) -> None:
    check_texts("sentences", sentences)


def check_export_minilm(path, model) -> None:
    from ._validate_tiny import check_path

    check_path("path", path)
    _check_model(model)


def check_tiny_entry(model, trained, file) -> None:
    from ._validate_tiny import check_path, check_tiny_model

    check_tiny_model(model)
    check_bool("trained", trained)
    file = check_path("file", file)
    if not file.is_file():
        raise InputError(f"file {file} does not exist: export the model first.")


def check_build(out, minilm) -> None:
    from ._validate_tiny import check_path

    check_path("out", out)
    check_bool("minilm", minilm)


# --- decoder ------------------------------------------------------------

def check_decoder_torch_layer(layer) -> None:
    import torch.nn.functional as F
    from torch import nn

    if not isinstance(layer, nn.TransformerDecoderLayer):
        raise InputTypeError(f"layer must be an nn.TransformerDecoderLayer; got "
                             f"{describe(layer)}.")
    if layer.linear1.bias is None or layer.norm1.bias is None:
        raise InputError("layer was made with bias=False; the course's decoder_layer "
                         "has biases: make the layer with bias=True.")
    act = layer.activation
    ok = act is F.relu or isinstance(act, nn.ReLU) or act is F.gelu or (
        isinstance(act, nn.GELU) and act.approximate == "none")
    if not ok:
        raise InputError(f"layer.activation must be relu or gelu (exact) for the "
                         f"course's decoder_layer; got {describe(act)}.")
