"""The real causal LM's input checks, beside it (:mod:`.model`), built from
the package's ground floor (:mod:`mhacourse._validate`): each bad input
gets one line naming the argument, what was given and what is allowed."""
from __future__ import annotations

import torch

from .._validate import (
    InputError,
    InputTypeError,
    check_id_tensor,
    check_positive_int,
    check_real,
    check_text,
    describe,
)
from .weights import LMConfig, LMWeights

MAX_LEN = 512  # the longest input: 30 layers x 9 heads x L^2 attention weights
MAX_D_MODEL = 4096  # a random model's sizes (memory: a 4096-wide model is 1 GB)


def check_config(cfg):
    """``cfg`` if it is an :class:`~.model.LMConfig` whose sizes fit together:
    ``h_kv`` divides ``h``, ``h`` divides ``d_model`` into an even ``d_k``."""
    if not isinstance(cfg, LMConfig):
        raise InputTypeError(f"cfg must be an mc.real_lm.LMConfig; got {describe(cfg)}.")
    for name in ("n_layers", "d_model", "h", "h_kv", "d_ff", "vocab"):
        check_positive_int(f"cfg.{name}", getattr(cfg, name),
                           MAX_D_MODEL if name != "vocab" else 10**6)
    if cfg.d_model % cfg.h or (cfg.d_model // cfg.h) % 2 or cfg.h % cfg.h_kv:
        raise InputError(f"cfg: h = {cfg.h} must divide d_model = {cfg.d_model} into an "
                         f"even d_k, and h_kv = {cfg.h_kv} must divide h.")
    check_real("cfg.rope_base", cfg.rope_base, low=1.0, low_open=True, high=1e9)
    check_real("cfg.eps", cfg.eps, low=0.0, low_open=True, high=1.0)
    if cfg.n_layers * cfg.d_model * max(cfg.d_ff, cfg.vocab) > 2 * 10**9:
        raise InputError("cfg: over 2e9 weights; choose smaller sizes.")
    return cfg


def check_model(model) -> None:
    """``model`` is a :class:`~.model.CausalLM` whose weights have the
    shapes its ``cfg`` says (a config that lies about its weights would
    read heads that do not exist)."""
    if not (isinstance(getattr(model, "cfg", None), LMConfig)
            and isinstance(getattr(model, "w", None), LMWeights)):
        raise InputTypeError("model must be a causal LM from mc.real_lm.load_smollm2() "
                             f"or mc.real_lm.random_lm(); got {describe(model)}.")
    cfg, w = model.cfg, model.w
    want = {"E": (cfg.vocab, cfg.d_model), "W_Q": (cfg.d_model, cfg.h * cfg.d_k),
            "W_K": (cfg.d_model, cfg.h_kv * cfg.d_k), "W_down": (cfg.d_ff, cfg.d_model)}
    got = {"E": tuple(w.E.shape)}
    if len(w.layers) != cfg.n_layers:
        raise InputError(f"model.cfg says {cfg.n_layers} layers but its weights have "
                         f"{len(w.layers)}: load the model again.")
    for lw in w.layers:
        got.update(W_Q=tuple(lw.attn.W_Q.shape), W_K=tuple(lw.attn.W_K.shape),
                   W_down=tuple(lw.W_down.shape))
        bad = {k: got[k] for k in want if got[k] != want[k]}
        if bad:
            raise InputError(f"model.cfg (h {cfg.h}, h_kv {cfg.h_kv}, d_model "
                             f"{cfg.d_model}) disagrees with its weights {bad}; "
                             "load the model again.")


def check_ids(model, ids) -> torch.Tensor:
    """``ids`` (B, L) token ids of ``model``'s vocabulary, L <= 512."""
    check_model(model)
    check_id_tensor("ids", ids, model.cfg.vocab)
    if ids.shape[1] > MAX_LEN:
        raise InputError(f"ids has {ids.shape[1]} tokens; the course runs at most "
                         f"{MAX_LEN} at once (memory): shorten the input.")
    check_positive_int("ids' batch size", ids.shape[0], 256, "memory")
    return ids


def _head_axes(model, ids) -> tuple[int, int, int, int]:
    return model.cfg.n_layers, ids.shape[0], model.cfg.h, ids.shape[1]


def check_head_mask(model, ids, head_mask):
    """``head_mask`` as float, (n_layers, h) or (n_layers, B, h), numbers
    in [0, 1], or ``None``."""
    if head_mask is None:
        return None
    n, B, h, _ = _head_axes(model, ids)
    shapes = [(n, h), (n, B, h)]
    if not isinstance(head_mask, torch.Tensor) or head_mask.is_complex() \
            or tuple(head_mask.shape) not in shapes:
        raise InputError(f"head_mask must be a tensor of shape (n_layers, h) = {shapes[0]} "
                         f"or (n_layers, B, h) = {shapes[1]}; got {describe(head_mask)}.")
    m = head_mask.float()
    if not bool(((m >= 0) & (m <= 1)).all()):
        raise InputError("head_mask entries must be numbers from 0 (remove the head) "
                         "to 1 (keep it); got values outside [0, 1] or NaN.")
    return m


def check_head_values(model, ids, head_mask, head_values):
    """``head_values`` (n_layers, B or 1, h, L, d_k), finite float, given
    only with a ``head_mask`` (it fills what the mask removes)."""
    if head_values is None:
        return None
    n, B, h, L = _head_axes(model, ids)
    if head_mask is None:
        raise InputError("head_values replaces the heads that head_mask removes: give "
                         "head_mask too (0 where a head's output is replaced).")
    want = (n, B, h, L, model.cfg.d_k)
    if not isinstance(head_values, torch.Tensor) or not head_values.is_floating_point() \
            or head_values.ndim != 5 or tuple(head_values.shape[2:]) != want[2:] \
            or head_values.shape[0] != n or head_values.shape[1] not in (1, B):
        raise InputError(f"head_values must be a float tensor of shape (n_layers, B or 1, "
                         f"h, L, d_k) = {want}; got {describe(head_values)}.")
    if not bool(torch.isfinite(head_values).all()):
        raise InputError("head_values holds NaN or an infinity: every head output "
                         "put in must be finite.")
    return head_values.float()


def check_encoded(model, text) -> torch.Tensor:
    """``text`` encoded as (1, L) ids, 1 <= L <= 512; one line for an empty
    or over-long text or a model with no tokenizer."""
    check_model(model)
    check_text("text", text)
    if model.tokenizer is None:
        raise InputError("this model has no tokenizer (a random test model): pass "
                         "token ids to forward instead of text.")
    if not text.strip():
        raise InputError("text is empty: type a sentence.")
    if len(text) > 20 * MAX_LEN:
        raise InputError(f"text has {len(text):,} characters; at most {MAX_LEN} tokens "
                         "are run at once: shorten it.")
    ids = model.tokenizer.encode(text).ids
    if len(ids) > MAX_LEN:
        raise InputError(f"text is {len(ids)} tokens long; at most {MAX_LEN} are run at "
                         "once: shorten it.")
    return torch.tensor([ids], dtype=torch.long)  # (1, L)


def check_decode(model, ids) -> list[int]:
    """``ids`` as a list of ints of ``model``'s vocabulary."""
    check_model(model)
    if model.tokenizer is None:
        raise InputError("this model has no tokenizer (a random test model).")
    if isinstance(ids, torch.Tensor):
        ids = check_id_tensor("ids", ids.reshape(1, -1) if ids.ndim <= 1 else ids,
                              model.cfg.vocab, legend="(L,)").reshape(-1).tolist()
    if not isinstance(ids, (list, tuple)) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InputTypeError(f"ids must be a list of token ids (int) or a tensor; got "
                             f"{describe(ids)}.")
    bad = [i for i in ids if not 0 <= i < model.cfg.vocab]
    if bad:
        raise InputError(f"ids must be in 0..{model.cfg.vocab - 1}; got {bad[:3]}.")
    return list(ids)
