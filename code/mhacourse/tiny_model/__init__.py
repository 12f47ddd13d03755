"""Tiny causal transformers, trained on :mod:`mhacourse.tasks`, whose heads
the attention explorer shows.

- :mod:`~mhacourse.tiny_model.model` — :class:`TinyConfig` and
  :class:`TinyTransformer`, built from the course's own parts
- :mod:`~mhacourse.tiny_model.files` — :func:`save` and :func:`load`
  (``.safetensors``), :func:`fingerprint`, :func:`model_name` (the file names)
- :mod:`~mhacourse.tiny_model.training` — the held-out set, :func:`evaluate`,
  :func:`train`
- :mod:`~mhacourse.tiny_model.analysis` — what the heads do:
  :func:`head_scores`, :func:`head_roles`, :func:`attention_on`
- :mod:`~mhacourse.tiny_model.decoding` — :func:`from_tiny_model`, the model
  as a :class:`~mhacourse.kv_cache.CausalLM` to decode with a cache

Chapters and scripts use them through this package
(``from mhacourse import tiny_model as tm``; ``tm.train(...)``).
"""
from ..cost import n_params
from .analysis import (
    attention_on,
    head_roles,
    head_scores,
    task_attention_statistics,
    uniform_statistics,
)
from .decoding import from_tiny_model
from .files import fingerprint, load, model_name, save
from .model import TinyConfig, TinyTransformer
from .training import HELDOUT_N, HELDOUT_SEED, evaluate, heldout, loss_fn, train

__all__ = [
    "TinyConfig", "TinyTransformer", "n_params",
    "model_name", "fingerprint", "save", "load",
    "HELDOUT_SEED", "HELDOUT_N", "heldout", "evaluate", "loss_fn", "train",
    "task_attention_statistics", "uniform_statistics", "head_scores", "head_roles",
    "attention_on", "from_tiny_model",
]
