"""Tiny models in ``.safetensors`` files: the weights (float16 halves the
size) or, for an untrained model, only its seed and a fingerprint.

Every file carries a ``digest`` in its metadata: SHA-256 over its config,
extra, seed and fingerprint and every tensor's name, dtype, shape and stored
bytes (:func:`_digest`; the page's ``lab/model-file.js`` computes the same).
It ties the config to the weights: h 4 x d_k 4 and h 2 x d_k 8 have the same
shapes, so a config edited in the header would otherwise open silently.
A trained model's file without a digest (written before 2026-11-29) is
refused in one line; an untrained one (seed and fingerprint, no weights)
is rebuilt and checked against its fingerprint, so it is still read.
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
    check_digest,
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


#: Names of safetensors' dtypes, as stored in a file's header.
_DTYPES = {torch.float16: "F16", torch.float32: "F32", torch.bfloat16: "BF16",
           torch.float64: "F64"}
#: The metadata the digest covers, in this order (each where the file has it).
DIGESTED = ("config", "extra", "init_seed", "fingerprint")


def _digest(meta: dict, tensors: dict) -> str:
    """``"sha256:" + hex`` of a model file's content (no checks: ``meta``
    {str: str}, ``tensors`` {name: torch tensor as stored}): the text
    ``mhacourse-model-digest-1\\n``, then each metadata key of
    :data:`DIGESTED` the file has as ``key\\nN\\nvalue\\n`` (N its UTF-8
    bytes), then each tensor in name order as
    ``name\\ndtype\\nd0,d1\\nN\\n`` and its N little-endian bytes, then
    ``\\n``. The page's lab/model-file.js is the same recipe."""
    h = hashlib.sha256(b"mhacourse-model-digest-1\n")
    for key in DIGESTED:
        if key in meta:
            value = meta[key].encode("utf-8")
            h.update(f"{key}\n{len(value)}\n".encode() + value + b"\n")
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        dtype = _DTYPES.get(t.dtype, str(t.dtype))
        shape = ",".join(map(str, t.shape))
        h.update(f"{name}\n{dtype}\n{shape}\n{len(raw)}\n".encode() + raw + b"\n")
    return "sha256:" + h.hexdigest()


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
    meta["digest"] = _digest(meta, tensors)
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
    A missing, empty, truncated, corrupt or mismatched file, or one whose
    ``digest`` does not match its config and weights (module docstring),
    raises one :class:`~mhacourse.InputError` naming the file and what is
    wrong, before any model is built."""
    check_path("path", path)
    meta, tensors = read_model_file(path)  # one InputError naming the file
    check_digest(path, meta, tensors, _digest)
    cfg, extra = model_config_from(path, meta)
    if "init_seed" in meta:  # an untrained model, stored as its seed
        model = TinyTransformer(cfg, seed=check_init_meta(path, meta, tensors))
        if fingerprint(model) != meta["fingerprint"]:
            raise InputError(
                f"{path}: rebuilding the seed-{meta['init_seed']} initialisation "
                "gave different weights (a mismatched file, or has torch's random "
                "generator changed?); rerun scripts/train_tiny_models.py."
            )
    else:
        check_model_tensors(path, cfg, tensors)  # before a model is built
        model = TinyTransformer(cfg)
        model.load_state_dict({k: v.float() for k, v in tensors.items()})
    model.extra = extra
    return model.eval()
