"""Tiny models in ``.safetensors`` files: the weights (float16 halves the
size) or, for an untrained model, only its seed and a fingerprint.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from .._validate import InputError, check_path, check_writable, write_error
from ._checks import (
    check_init_meta,
    check_model_name,
    check_model_tensors,
    check_save,
    model_config_from,
    read_model_file,
)
from .model import TinyTransformer, check_tiny_model


def model_name(h: int, d_k: int, trained: bool = True) -> str:
    """File stem of the tiny model with ``h`` heads of width ``d_k`` in
    ``assets/models/``: ``h{h}_dk{d_k}``, and ``h{h}_dk{d_k}_init`` for its
    untrained twin (also its key in ``metrics.json``)."""
    check_model_name(h, d_k, trained)
    return f"h{h}_dk{d_k}" + ("" if trained else "_init")


def fingerprint(model: nn.Module) -> str:
    """SHA-256 of every parameter's float32 bytes, in ``state_dict`` order.
    ``model``: any ``torch.nn.Module``; a tiny model must agree with its
    config."""
    check_fingerprint(model)
    h = hashlib.sha256()
    for k, v in model.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()


def check_fingerprint(model) -> None:
    if isinstance(model, TinyTransformer) or not isinstance(model, nn.Module):
        check_tiny_model(model)


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

    path = check_writable("path", path)
    check_save(model, path, dtype, extra, init_seed)
    meta = {"config": json.dumps(asdict(model.cfg)),
            "extra": json.dumps(extra or {})}
    if init_seed is None:
        tensors = {k: v.detach().to(dtype).contiguous()
                   for k, v in model.state_dict().items()}
    else:
        if fingerprint(model) != fingerprint(TinyTransformer(model.cfg, init_seed)):
            raise InputError(f"init_seed={init_seed} given, but the model is not "
                             f"TinyTransformer(cfg, seed={init_seed}) (trained?).")
        tensors = {}
        meta.update(init_seed=str(init_seed), fingerprint=fingerprint(model))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(path), metadata=meta)
        path.chmod(0o644)  # safetensors writes 0600; these files are for readers
    except OSError as e:
        raise write_error("path", path, e) from None
    return path


def load(path) -> TinyTransformer:
    """Read a model written by :func:`save`; parameters come back as float32
    (the stored values, exactly). ``model.extra`` holds the saved ``extra``.
    A missing, empty, truncated, corrupt or mismatched file raises one
    :class:`~mhacourse.InputError` naming the file and what is wrong."""
    check_path("path", path)
    meta, tensors = read_model_file(path)  # one InputError naming the file
    cfg, extra = model_config_from(path, meta)
    if "init_seed" in meta:  # an untrained model, stored as its seed
        model = TinyTransformer(cfg, seed=check_init_meta(path, meta))
        if fingerprint(model) != meta["fingerprint"]:
            raise InputError(
                f"{path}: rebuilding the seed-{meta['init_seed']} initialisation "
                "gave different weights (a mismatched file, or has torch's random "
                "generator changed?); rerun scripts/train_tiny_models.py."
            )
    else:
        model = TinyTransformer(cfg)
        check_model_tensors(path, model, tensors)
        model.load_state_dict({k: v.float() for k, v in tensors.items()})
    model.extra = extra
    return model.eval()
