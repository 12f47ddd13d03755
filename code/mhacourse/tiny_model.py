"""A tiny causal transformer, trained on :mod:`mhacourse.tasks`, whose heads
the attention explorer shows.

Built from the course's own parts::

    X_0     = W_E[ids] + W_pos[:L]                    (B, L, d_model)
    X_l     = TransformerBlock_l(X_{l-1}, causal mask)  l = 1..n_layers (pre-LN)
    logits  = LayerNorm(X_n) W_U                        (B, L, vocab_size)

Each block's attention is :class:`mhacourse.MultiHeadAttention`, so its
per-head weights (B, h, L, L) are the ones the chapters derive. Everything
runs on the CPU in seconds; sizes are chosen for ``torch.set_num_threads(1)``.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import tasks
from ._validate import check_heads, check_positive_int
from .block import TransformerBlock, layer_norm_core
from .cost import n_params  # noqa: F401  (tm.n_params: chapter 8, web_export)
from .masks import causal_core, causal_mask


@dataclass(frozen=True)
class TinyConfig:
    """Sizes of the tiny model and how it is trained.

    ``d_model = h * d_k``; the explorer varies ``h`` and ``d_k``.
    PyTorch names: ``h`` ↔ ``num_heads``, ``d_model`` ↔ ``embed_dim``,
    ``d_k`` ↔ ``head_dim``, ``d_ff`` ↔ ``dim_feedforward``.
    """

    h: int = 4  # heads per layer
    d_k: int = 8  # width of one head; d_model = h * d_k
    n_layers: int = 2  # an induction head needs a previous-token head below it
    ff_mult: int = 1  # d_ff = ff_mult * d_model (4 in the 2017 paper); the
    #     task needs little but attention, and files stay small
    vocab_size: int = len(tasks.VOCAB)  # the task's word list, [UNK] = 0
    max_len: int = tasks.TaskConfig.L  # learned positions; the task's L
    # training
    lr: float | None = None  # AdamW peak rate; None: 1e-2 * sqrt(32 / d_model),
    #     tuned on this task (at d_model 256, 1e-2 never learns the lookup)
    warmup: int = 100  # warm-up steps
    batch: int = 32  # sequences per step
    weight_decay: float = 0.0  # none: the models are tiny and data is unlimited

    def __post_init__(self) -> None:
        for name in ("h", "d_k", "n_layers", "ff_mult", "vocab_size", "max_len",
                     "batch"):
            check_positive_int(name, getattr(self, name))
        check_heads(self.d_model, self.h)

    @property
    def d_model(self) -> int:
        return self.h * self.d_k

    @property
    def d_ff(self) -> int:
        return self.ff_mult * self.d_model

    @property
    def peak_lr(self) -> float:
        return 1e-2 * (32 / self.d_model) ** 0.5 if self.lr is None else self.lr


class TinyTransformer(nn.Module):
    """Token embedding + learned positions, ``n_layers`` pre-LN
    :class:`~mhacourse.TransformerBlock` s with a causal mask, final LayerNorm,
    unembedding ``W_U``. Initialisation is fixed by ``seed``."""

    def __init__(self, cfg: TinyConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        d, V = cfg.d_model, cfg.vocab_size
        g = torch.Generator().manual_seed(seed)
        self.W_E = nn.Parameter(torch.randn(V, d, generator=g))  # (V, d_model)
        self.W_pos = nn.Parameter(torch.randn(cfg.max_len, d, generator=g))  # (L, d)
        self.blocks = nn.ModuleList(
            TransformerBlock(d, cfg.h, cfg.d_ff, pre_ln=True, activation="gelu",
                             seed=seed * 100 + 2 * (i + 1))
            for i in range(cfg.n_layers)
        )
        self.gamma_f = nn.Parameter(torch.ones(d))  # final LayerNorm
        self.beta_f = nn.Parameter(torch.zeros(d))
        self.W_U = nn.Parameter(torch.randn(d, V, generator=g) / d**0.5)  # (d, V)

    def forward(self, ids: torch.Tensor, return_attention: bool = False):
        """Shapes: ``ids`` (B, L) long -> logits (B, L, vocab_size).

        With ``return_attention=True`` returns ``(logits, [A_1, ..., A_n])``,
        one (B, h, L, L) tensor per layer, rows summing to 1, zero above the
        diagonal (the causal mask).
        """
        if ids.ndim != 2:
            raise ValueError(f"ids must be (B, L) word ids; "
                             f"got shape {tuple(ids.shape)}.")
        B, L = ids.shape
        if not 1 <= L <= self.cfg.max_len:
            raise ValueError(f"sequence length must be 1..{self.cfg.max_len} "
                             f"(learned positions); got L = {L}.")
        if ids.dtype in (torch.bool,) or ids.is_floating_point() or ids.is_complex():
            raise ValueError(f"ids must be integer word ids; got dtype {ids.dtype}.")
        if bool(((ids < 0) | (ids >= self.cfg.vocab_size)).any()):
            raise ValueError(f"ids must be word ids 0..{self.cfg.vocab_size - 1}; "
                             f"got values {int(ids.min())}..{int(ids.max())}.")
        logits, attention = self.core(ids)
        return (logits, attention) if return_attention else logits

    def core(self, ids: torch.Tensor, return_inputs: bool = False):
        """:meth:`forward` with no input checks, for ``torch.onnx.export``
        (the in-browser explorer runs the exported graph).

        Shapes: ``ids`` (B, L) -> ``(logits (B, L, vocab_size),
        [A_1, ..., A_n])``, each ``A_l`` (B, h, L, L). With
        ``return_inputs=True`` also ``[Z_1, ..., Z_n]``, what each layer's
        attention reads (B, L, d_model): ``LayerNorm(x)`` in these pre-LN
        blocks. The blocks run :meth:`TransformerBlock.core`, so hooks on the
        attention modules are not called; use these inputs instead.
        """
        L = ids.shape[1]
        x = self.W_E[ids] + self.W_pos[:L]  # (B, L, d_model)
        mask = causal_core(L, L, device=ids.device)  # (L, L), True = blocked
        attention, inputs = [], []
        for block in self.blocks:
            if return_inputs:
                z = layer_norm_core(x, block.gamma_1, block.beta_1, block.eps)
                inputs.append(z if block.pre_ln else x)  # (B, L, d_model)
            x, A = block.core(x, mask)  # A: (B, h, L, L)
            attention.append(A)
        x = layer_norm_core(x, self.gamma_f, self.beta_f)  # (B, L, d_model)
        logits = x @ self.W_U  # (B, L, V)
        return (logits, attention, inputs) if return_inputs else (logits, attention)


# --- saving ------------------------------------------------------------------

def fingerprint(model: nn.Module) -> str:
    """SHA-256 of every parameter's float32 bytes, in ``state_dict`` order."""
    h = hashlib.sha256()
    for k, v in model.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()


def save(model: TinyTransformer, path, dtype: torch.dtype = torch.float16,
         extra: dict | None = None, init_seed: int | None = None) -> Path:
    """Write ``model`` to a ``.safetensors`` file: the weights in ``dtype``
    (float16 halves the size) and the config (and ``extra``) as JSON metadata.

    With ``init_seed``, ``model`` must be the untrained
    ``TinyTransformer(cfg, init_seed)``: then no weights are written, only
    the seed and a :func:`fingerprint`; :func:`load` rebuilds the model from
    the seed and checks the fingerprint (a file of a few hundred bytes instead
    of megabytes of random numbers).
    """
    from safetensors.torch import save_file  # optional dependency (notebook extra)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"config": json.dumps(asdict(model.cfg)),
            "extra": json.dumps(extra or {})}
    if init_seed is None:
        tensors = {k: v.detach().to(dtype).contiguous()
                   for k, v in model.state_dict().items()}
    else:
        if fingerprint(model) != fingerprint(TinyTransformer(model.cfg, init_seed)):
            raise ValueError(f"init_seed={init_seed} given, but the model is not "
                             f"TinyTransformer(cfg, seed={init_seed}) (trained?).")
        tensors = {}
        meta.update(init_seed=str(init_seed), fingerprint=fingerprint(model))
    save_file(tensors, str(path), metadata=meta)
    path.chmod(0o644)  # safetensors writes 0600; these files are for readers
    return path


def load(path) -> TinyTransformer:
    """Read a model written by :func:`save`; parameters come back as float32
    (the stored values, exactly). ``model.extra`` holds the saved ``extra``."""
    from safetensors import safe_open  # optional dependency (notebook extra)

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    cfg = TinyConfig(**json.loads(meta["config"]))
    if "init_seed" in meta:  # an untrained model, stored as its seed
        model = TinyTransformer(cfg, seed=int(meta["init_seed"]))
        if fingerprint(model) != meta["fingerprint"]:
            raise RuntimeError(
                f"{path}: rebuilding the seed-{meta['init_seed']} initialisation "
                "gave different weights (has torch's random generator changed?); "
                "rerun scripts/train_tiny_models.py."
            )
    else:
        model = TinyTransformer(cfg)
        model.load_state_dict({k: v.float() for k, v in tensors.items()})
    model.extra = json.loads(meta.get("extra", "{}"))
    return model.eval()


# --- training and evaluation ----------------------------------------------------

HELDOUT_SEED = 20240  # the held-out set: tasks.sample(HELDOUT_N, seed=HELDOUT_SEED)
HELDOUT_N = 1024  # sequences; 1024 * (L - 1) = 15 360 scored positions


def heldout(task: tasks.TaskConfig = tasks.TaskConfig(), n: int = HELDOUT_N):
    """The fixed held-out set ``(x, y, kind)``; training never draws it
    (training batches come from a generator seeded differently)."""
    return tasks.sample(n, task, seed=HELDOUT_SEED)


@torch.no_grad()
def evaluate(model: TinyTransformer, data=None, batch: int = 256) -> dict:
    """Accuracy of the arg-max prediction on scored positions: overall and per
    part (``"previous"``, ``"lookup"``). ``data`` defaults to :func:`heldout`."""
    x, y, kind = heldout() if data is None else data
    model.eval()
    correct = torch.cat([model(x[i:i + batch]).argmax(-1) == y[i:i + batch]
                         for i in range(0, len(x), batch)])  # (N, L)
    out = {"accuracy": float(correct[kind != tasks.NOT_SCORED].float().mean())}
    for k in (tasks.PREVIOUS, tasks.LOOKUP):
        out[tasks.KIND_NAMES[k]] = float(correct[kind == k].float().mean())
    return out


def loss_fn(logits, y, kind):
    """Cross-entropy on scored positions. Shapes: logits (B, L, V), y (B, L)."""
    scored = kind != tasks.NOT_SCORED  # (B, L)
    return F.cross_entropy(logits[scored], y[scored])


def train(cfg: TinyConfig, steps: int, seed: int = 0,
          task: tasks.TaskConfig = tasks.TaskConfig(), log_every: int = 0,
          eval_data=None) -> tuple[TinyTransformer, dict]:
    """Train a fresh ``TinyTransformer(cfg, seed)`` for ``steps`` AdamW steps
    on batches from ``tasks.sample`` (generator seeded by ``seed``), with a
    linear warm-up then cosine decay to 0.

    Returns ``(model, metrics)``: the model (float32, eval mode) and its
    held-out accuracy (overall and per part), final training loss (mean of the
    last 5 % of steps), parameter count, wall-clock and CPU seconds.
    Deterministic on the CPU for a given torch version and thread count.
    """
    check_positive_int("steps", steps)
    model = TinyTransformer(cfg, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr,
                            weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    warm = min(cfg.warmup, steps // 4 + 1)

    def lr_at(s):  # linear warm-up, then cosine to 0
        if s < warm:
            return (s + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    g = torch.Generator().manual_seed(10_000 + seed)  # not HELDOUT_SEED's stream
    t0, c0 = time.perf_counter(), time.process_time()
    losses = []
    model.train()
    for s in range(steps):
        x, y, kind = tasks.sample(cfg.batch, task, generator=g)
        loss = loss_fn(model(x), y, kind)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if log_every and (s + 1) % log_every == 0:
            print(f"  step {s + 1:5d}  loss {sum(losses[-log_every:]) / log_every:.3f}",
                  flush=True)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.eval()
    metrics = evaluate(model, heldout(task) if eval_data is None else eval_data)
    tail = losses[-max(1, steps // 20):]
    metrics.update(train_loss=sum(tail) / len(tail), params=n_params(model),
                   steps=steps, seed=seed, train_seconds=round(seconds, 2),
                   cpu_seconds=round(cpu, 2))
    return model, metrics


# --- what the heads do ------------------------------------------------------------

def task_attention_statistics(x: torch.Tensor, kind: torch.Tensor,
                         attention: list[torch.Tensor]) -> list[list[dict]]:
    """Average attention of every head to the positions the task cares about.

    Shapes: ``x``, ``kind`` (N, L) from :func:`tasks.sample`; ``attention``
    one (N, h, L, L) tensor per layer. For each layer and head, the mean of:

    * ``"previous"``: weight from ``t`` to ``t - 1``, over ``t >= 1``, leaving
      out lookups whose answer sits at ``t - 1`` (``j + 1 == t - 1``);
    * ``"induction"``: weight from ``t`` to ``j + 1``, where ``j`` is the most
      recent earlier occurrence of ``x_t``, over lookups with
      ``j + 1 <= t - 2`` (so it never counts a previous-token head);
    * ``"duplicate"``: total weight from ``t`` to every earlier ``j`` with
      ``x_j == x_t``, over lookups;
    * ``"self"``: weight from ``t`` to ``t``, over ``t >= 1``;
    * ``"first"``: weight from ``t`` to position 0, over ``t >= 2``.

    Returns ``scores[layer][head] = {name: value}``.
    :func:`uniform_statistics` gives the values of a head that spreads its
    weight evenly, to compare with.
    """
    N, L = x.shape
    t = torch.arange(L)[:, None]  # (L, 1) queries
    s = torch.arange(L)[None, :]  # (1, L) keys
    match = (x[:, :, None] == x[:, None, :]) & (s < t)  # (N, L, L): x_s == x_t
    last = torch.where(match, s, -1).amax(-1)  # (N, L): most recent j, or -1
    after = (last + 1).clamp(min=0)  # (N, L): j + 1
    lookup = kind == tasks.LOOKUP  # (N, L)
    t_ = torch.arange(L)[None, :]  # (1, L)
    sets = {  # (N, L) bool: which queries each statistic averages over
        "previous": (t_ >= 1) & ~(lookup & (after == t_ - 1)),
        "induction": lookup & (after <= t_ - 2),
        "duplicate": lookup,
        "self": (t_ >= 1).expand(N, L),
        "first": (t_ >= 2).expand(N, L),
    }
    keys = {  # (N, L, L) weights of the keys each statistic sums
        "previous": (s == t - 1).expand(N, L, L),
        "induction": s == after[..., None],
        "duplicate": match,
        "self": (s == t).expand(N, L, L),
        "first": (s == 0).expand(N, L, L),
    }
    out = []
    for A in attention:
        layer = []
        for i in range(A.shape[1]):
            a = A[:, i]  # (N, L, L): query t, key s
            layer.append({name: float((a * keys[name]).sum(-1)[sets[name]].mean())
                          for name in sets})
        out.append(layer)
    return out


def uniform_statistics(data=None) -> dict:
    """:func:`task_attention_statistics` of a head that gives each of the ``t + 1``
    visible positions weight ``1 / (t + 1)``: the level "no preference"."""
    x, _, kind = heldout() if data is None else data
    L = x.shape[1]
    A = (~causal_mask(L)).float()  # (L, L)
    A = (A / A.sum(-1, keepdim=True)).expand(len(x), 1, L, L)  # (N, 1, L, L)
    return task_attention_statistics(x, kind, [A])[0][0]


@torch.no_grad()
def head_scores(model: TinyTransformer, data=None) -> list[list[dict]]:
    """:func:`task_attention_statistics` of ``model``'s heads on ``data`` (default:
    the held-out set): ``scores[layer][head] = {name: value}``."""
    x, _, kind = heldout() if data is None else data
    _, attention = model(x, return_attention=True)  # n_layers x (N, h, L, L)
    return task_attention_statistics(x, kind, attention)


def head_roles(scores: list[list[dict]], threshold: float = 0.5) -> list[list[str]]:
    """Name each head by its largest statistic from :func:`head_scores` if
    that is at least ``threshold`` (over 3 times the uniform level of every
    statistic), else ``"mixed"``."""
    return [[max(s, key=s.get) if max(s.values()) >= threshold else "mixed"
             for s in layer] for layer in scores]


@torch.no_grad()
def attention_on(model: TinyTransformer,
                 sentence) -> tuple[list[str], list[torch.Tensor]]:
    """Run ``model`` on an English sentence (a string, or a list of tokens).

    Returns ``(tokens, attention)``: the tokens as the model saw them (words
    not in the vocabulary shown as ``[UNK]``), and one (h, L, L) tensor per
    layer. Sentences longer than ``max_len`` tokens raise ``ValueError``.
    """
    words = tasks.split_words(sentence) if isinstance(sentence, str) else list(sentence)
    if not words:
        raise ValueError("the sentence has no tokens.")
    ids = tasks.word_ids(words)
    tokens = tasks.decode(ids)
    model.eval()
    _, attention = model(torch.tensor([ids]), return_attention=True)
    return tokens, [A[0] for A in attention]  # n_layers x (h, L, L)
