"""The rules of :mod:`mhacourse.tiny_model`'s functions: its files
(:mod:`~mhacourse.tiny_model.files`), training and evaluation
(:mod:`~mhacourse.tiny_model.training`) and the heads' statistics
(:mod:`~mhacourse.tiny_model.analysis`). Each public function there calls one
check from here first. The checks of a :class:`TinyConfig`, a
:class:`TinyTransformer` and its ids sit beside those classes, in
:mod:`~mhacourse.tiny_model.model`; the general rules (numbers, seeds, paths,
ids) in :mod:`mhacourse._validate`; the task's data ``(x, y, kind)`` in
:mod:`mhacourse.tasks` (``check_data``).
"""
from __future__ import annotations

import json
import math
import numbers

import torch

from .. import tasks
from .._validate import (
    InputError,
    InputFileError,
    InputTypeError,
    check_bool,
    check_finite,
    check_float_dtype,
    check_id_tensor,
    check_nonneg_int,
    check_path,
    check_positive_int,
    check_real,
    check_seed,
    check_tensor,
    describe,
    one_line,
)
from ..tasks import check_data, check_word_list
from .model import TinyConfig, check_tiny_model, param_shapes

# --- files ------------------------------------------------------------------

def check_model_name(h, d_k, trained) -> None:
    check_positive_int("h", h)
    check_positive_int("d_k", d_k)
    check_bool("trained", trained)


def check_save(model, path, dtype, extra, init_seed) -> None:
    check_tiny_model(model)
    path = check_path("path", path)
    if path.is_dir():
        raise InputError(f"path {path} is a folder; give a file name such as "
                         f"{path / 'model.safetensors'}.")
    check_float_dtype("dtype", dtype)
    if extra is not None:
        if not isinstance(extra, dict):
            raise InputTypeError(f"extra must be a dict (or None); got "
                                 f"{describe(extra)}.")
        try:
            json.dumps(extra, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InputError(f"extra must be JSON-serialisable (str keys; numbers, "
                             f"strings, lists, dicts; no NaN): {one_line(e)}.") from None
    if init_seed is not None:
        check_seed("init_seed", init_seed)
        return
    for k, v in model.state_dict().items():
        if not bool(torch.isfinite(v.detach().to(dtype)).all()):
            raise InputError(f"model weight {k} is not finite in {dtype} (NaN, inf, "
                             "or too large for the dtype): saving it would store "
                             "a broken model. Save in torch.float32 or fix the "
                             "weights.")


def read_model_file(path):
    """``(metadata, tensors)`` of a tiny model's ``.safetensors`` file, or one
    InputError naming the file and what is wrong with it."""
    from safetensors import safe_open

    path = check_path("path", path)
    if not path.exists():
        raise InputFileError(f"model file {path} does not exist; check the name, "
                             "or write it with tiny_model.save(model, path).")
    if not path.is_file():
        raise InputError(f"model file {path} is not a file (a folder?); give the "
                         ".safetensors file itself.")
    if path.stat().st_size == 0:
        raise InputError(f"model file {path} is empty (0 bytes): it was not "
                         "written completely; save or download it again.")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata()
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # noqa: BLE001  (safetensors' own errors vary)
        raise InputError(f"model file {path} is not a readable .safetensors file "
                         f"(truncated or corrupt: {one_line(e)}); save or "
                         "download it again.") from None
    if not meta or "config" not in meta:
        raise InputError(f"model file {path} has no tiny-model config in its "
                         "metadata: it was not written by tiny_model.save.")
    return meta, tensors


def model_config_from(path, meta):
    try:
        spec = json.loads(meta["config"])
        if not isinstance(spec, dict):
            raise TypeError("not a dict")
        cfg = TinyConfig(**spec)
    except InputError as e:
        raise InputError(f"model file {path} has an impossible config: "
                         f"{one_line(e)}") from None
    except (TypeError, ValueError) as e:
        raise InputError(f"model file {path} has a broken config in its metadata "
                         f"({one_line(e)}).") from None
    try:
        extra = json.loads(meta.get("extra", "{}"))
    except ValueError:
        raise InputError(f"model file {path} has broken 'extra' metadata (not "
                         "JSON).") from None
    if not isinstance(extra, dict):
        raise InputError(f"model file {path}: its 'extra' metadata is not a dict.")
    return cfg, extra


def check_model_tensors(path, cfg, tensors) -> None:
    """The file's tensors against the shapes its config ``cfg`` needs
    (nothing is built: a lying config costs no memory)."""
    want = param_shapes(cfg.d_model, cfg)
    missing = sorted(set(want) - set(tensors))
    unknown = sorted(set(tensors) - set(want))
    if missing or unknown:
        raise InputError(
            f"model file {path} does not match its config (h={cfg.h}, "
            f"d_k={cfg.d_k}, n_layers={cfg.n_layers}): missing "
            f"{missing[:3]}, unexpected {unknown[:3]}.")
    for k, v in tensors.items():
        if tuple(v.shape) != want[k]:
            raise InputError(f"model file {path}: {k} has shape {tuple(v.shape)}, "
                             f"but its config needs {want[k]} (wrong sizes for "
                             "the config).")
        if not v.is_floating_point():
            raise InputError(f"model file {path}: {k} is stored as {v.dtype}, not "
                             "a floating dtype: the weights were truncated; save "
                             "the model again in float16 or float32.")
        if not bool(torch.isfinite(v).all()):
            raise InputError(f"model file {path}: {k} holds NaN or inf; the "
                             "weights are broken, save the model again.")


def check_digest(path, meta, tensors, digest) -> None:
    """The file's ``digest`` against ``digest(meta, tensors)`` (files.py's
    recipe); a trained model's file without one is refused."""
    if "digest" not in meta:
        if "init_seed" in meta:  # rebuilt from its seed, checked by fingerprint
            return
        raise InputError(
            f"model file {path} has no digest in its metadata (written before "
            "2026-11-29, or by another program): nothing ties its config to its "
            "weights; save the model again with tiny_model.save, or download "
            "it again from the page.")
    if digest(meta, tensors) != meta["digest"]:
        raise InputError(
            f"model file {path} does not match its digest: its config, extra or "
            "weights were changed after it was saved (an edited header?); save "
            "or download the model again.")


def check_init_meta(path, meta, tensors=()) -> int:
    if len(tensors):
        raise InputError(f"model file {path} holds both an untrained model's seed "
                         f"and {len(tensors)} weights: an edited file; save it "
                         "again (tiny_model.save, with or without init_seed).")
    try:
        seed = int(meta["init_seed"])
    except ValueError:
        raise InputError(f"model file {path}: init_seed {meta['init_seed']!r} is "
                         "not a whole number.") from None
    if not 0 <= seed <= 2**40 or "fingerprint" not in meta:
        raise InputError(f"model file {path}: broken untrained-model metadata "
                         "(init_seed out of range or no fingerprint).")
    return seed


# --- training and evaluation -----------------------------------------------

#: The longest run train() starts: at 0.05-0.3 s a step, over an hour.
MAX_TRAIN_STEPS = 20_000


def check_train(cfg, steps, seed, task, log_every, eval_data) -> None:
    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"cfg must be a TinyConfig; got {describe(cfg)}.")
    check_positive_int("steps", steps, MAX_TRAIN_STEPS,
                       "hours on a CPU; train in parts, saving the model between")
    check_seed("seed", seed)
    if not isinstance(task, tasks.TaskConfig):
        raise InputTypeError(f"task must be a tasks.TaskConfig; got {describe(task)}.")
    if task.L > cfg.max_len or task.vocab_size > cfg.vocab_size:
        raise InputError(f"task (L = {task.L}, vocab_size = {task.vocab_size}) does "
                         f"not fit the model (max_len = {cfg.max_len}, vocab_size = "
                         f"{cfg.vocab_size}); make them agree.")
    check_nonneg_int("log_every", log_every)
    if eval_data is not None:
        check_data("eval_data", eval_data, cfg, need_parts=True)


def check_heldout(task, n) -> None:
    if not isinstance(task, tasks.TaskConfig):
        raise InputTypeError(f"task must be a tasks.TaskConfig; got {describe(task)}.")
    check_positive_int("n", n, 10**6)


def check_evaluate(model, data, batch) -> None:
    check_tiny_model(model)
    check_positive_int("batch", batch)
    if data is not None:
        check_data("data", data, model.cfg, need_parts=True)


def check_loss_fn(logits, y, kind) -> None:
    check_tensor("logits", logits, ndim=3, legend="(B, L, V)")
    B, L, V = logits.shape
    check_id_tensor("y", y, V, legend="(B, L)", what="word ids")
    check_id_tensor("kind", kind, 3, legend="(B, L)", what="parts 0..2")
    if tuple(y.shape) != (B, L) or tuple(kind.shape) != (B, L):
        raise InputError(f"y and kind must have shape (B, L) = ({B}, {L}); got "
                         f"{tuple(y.shape)} and {tuple(kind.shape)}.")
    if not bool((kind != 0).any()):
        raise InputError("kind has no scored positions: the loss would be 0/0 = NaN.")
    check_finite("logits", logits, option=False)


# --- the heads' statistics -------------------------------------------------

def check_head_scores(model, data) -> None:
    check_tiny_model(model)
    if data is not None:
        check_data("data", data, model.cfg)


def check_statistics_inputs(x, kind, attention) -> None:
    check_data("(x, x, kind)", (x, x, kind))
    N, L = x.shape
    if not isinstance(attention, (list, tuple)) or not attention:
        raise InputTypeError(f"attention must be a list of (N, h, L, L) tensors, "
                             f"one per layer; got {describe(attention)}.")
    for i, A in enumerate(attention):
        check_tensor(f"attention[{i}]", A, ndim=4, legend="(N, h, L, L)")
        if A.shape[0] != N or A.shape[2:] != (L, L) or A.shape[1] == 0:
            raise InputError(f"attention[{i}] must have shape (N, h, L, L) = "
                             f"({N}, h, {L}, {L}); got {tuple(A.shape)}.")
        check_finite(f"attention[{i}]", A, option=False)


def check_scores_defined(scores) -> list:
    """Refuse a statistic that averaged over no positions (0/0 = NaN)."""
    for layer in scores:
        for head in layer:
            empty = [k for k, v in head.items() if not math.isfinite(v)]
            if empty:
                raise InputError(
                    f"the data has no positions for the statistic(s) {empty} "
                    "(0/0 = NaN): use sequences of length >= 3 with repeated "
                    "words, e.g. tasks.sample(n, seed=0).")
    return scores


def check_head_roles(scores, threshold) -> None:
    ok = isinstance(scores, (list, tuple)) and all(
        isinstance(layer, (list, tuple)) and all(
            isinstance(s, dict) and s and all(
                isinstance(v, numbers.Real) for v in s.values()) for s in layer)
        for layer in scores)
    if not ok:
        raise InputTypeError(f"scores must be head_scores(model)'s list of lists "
                             f"of {{name: value}} dicts; got {describe(scores)}.")
    check_real("threshold", threshold)


def check_attention_on(model, sentence) -> list:
    check_tiny_model(model)
    if isinstance(sentence, str):
        words = tasks.split_words(sentence)
    else:
        check_word_list("sentence", sentence)
        words = list(sentence)
    if not words:
        raise InputError(f"sentence has no tokens; got {describe(sentence)}. Type "
                         "a sentence, e.g. 'The cat sat on the mat.'")
    if len(words) > model.cfg.max_len:
        raise InputError(f"sentence has {len(words)} tokens, but the model's "
                         f"sequence length is at most {model.cfg.max_len} (learned "
                         "positions); shorten it.")
    return words


def check_uniform_statistics(data) -> None:
    if data is not None:
        check_data("data", data)
