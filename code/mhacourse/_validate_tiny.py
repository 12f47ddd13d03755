"""Input checks for :mod:`mhacourse.tiny_model`, :mod:`mhacourse.web_export`'s
loader and :mod:`mhacourse.tasks` (the rules: :mod:`mhacourse._validate_newer`):
each public entry point calls one function from here at its top.
"""
from __future__ import annotations

import json
import math
import numbers
import os
from pathlib import Path

import numpy as np
import torch

from ._validate import (
    InputError,
    InputFileError,
    InputTypeError,
    as_int,
    check_finite,
    check_positive_int,
    check_tensor,
    describe,
)
from ._validate_newer import (
    _one_line,
    check_bool,
    check_float_dtype,
    check_generator,
    check_id_tensor,
    check_nonneg_int,
    check_real,
    check_seed,
    check_size,
)


def check_tiny_model(model, name: str = "model") -> None:
    from .tiny_model.model import TinyTransformer

    if not isinstance(model, TinyTransformer):
        raise InputTypeError(f"{name} must be a tiny_model.TinyTransformer (made "
                             f"with TinyTransformer(cfg) or tiny_model.load); got "
                             f"{describe(model)}.")


# --- tiny_model -----------------------------------------------------------

def check_tiny_config(cfg) -> None:
    for name in ("h", "d_k", "n_layers", "ff_mult", "vocab_size", "max_len",
                 "batch"):
        check_positive_int(name, getattr(cfg, name))
    if cfg.lr is not None:
        check_real("lr", cfg.lr, low=0.0, low_open=True, high=1.0,
                   what="a learning rate > 0, or None")
    check_nonneg_int("warmup", cfg.warmup)
    check_real("weight_decay", cfg.weight_decay, low=0.0)
    d = cfg.h * cfg.d_k
    n = (2 * cfg.vocab_size + cfg.max_len) * d + cfg.n_layers * (
        4 * d * d + 2 * d * d * cfg.ff_mult)
    check_size("TinyConfig (parameters)", n)


def check_tiny_init(cfg, seed) -> None:
    from .tiny_model.model import TinyConfig

    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"cfg must be a TinyConfig (tiny_model.TinyConfig(h=4, "
                             f"d_k=8)); got {describe(cfg)}.")
    check_seed("seed", seed)


def check_tiny_ids(cfg, ids, return_attention) -> None:
    if not isinstance(ids, torch.Tensor):
        raise InputTypeError(f"ids must be a (B, L) torch.Tensor of word ids; got "
                             f"{describe(ids)}. Use torch.tensor([tasks.word_ids("
                             "text)]).")
    if ids.ndim != 2:
        raise InputError(f"ids must be (B, L) word ids; got shape "
                         f"{tuple(ids.shape)} (one sequence: ids[None]).")
    B, L = ids.shape
    if not 1 <= L <= cfg.max_len:
        raise InputError(f"sequence length must be 1..{cfg.max_len} (learned "
                         f"positions); got L = {L} (ids shape {tuple(ids.shape)}).")
    if B == 0:
        raise InputError("ids has no sequences (B = 0); give at least one.")
    check_id_tensor("ids", ids, cfg.vocab_size, what="word ids")
    check_bool("return_attention", return_attention)


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
                             f"strings, lists, dicts; no NaN): {_one_line(e)}.") from None
    if init_seed is not None:
        check_seed("init_seed", init_seed)
        return
    for k, v in model.state_dict().items():
        if not bool(torch.isfinite(v.detach().to(dtype)).all()):
            raise InputError(f"model weight {k} is not finite in {dtype} (NaN, inf, "
                             "or too large for the dtype): saving it would store "
                             "a broken model. Save in torch.float32 or fix the "
                             "weights.")


def check_path(name: str, path) -> Path:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"{name} must be a file path (str or pathlib.Path); "
                             f"got {describe(path)}.")
    if str(path) == "":
        raise InputError(f"{name} is empty; give a file name.")
    return Path(path)


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
                         f"(truncated or corrupt: {_one_line(e)}); save or "
                         "download it again.") from None
    if not meta or "config" not in meta:
        raise InputError(f"model file {path} has no tiny-model config in its "
                         "metadata: it was not written by tiny_model.save.")
    return meta, tensors


def model_config_from(path, meta):
    from .tiny_model.model import TinyConfig

    try:
        spec = json.loads(meta["config"])
        if not isinstance(spec, dict):
            raise TypeError("not a dict")
        cfg = TinyConfig(**spec)
    except InputError as e:
        raise InputError(f"model file {path} has an impossible config: "
                         f"{_one_line(e)}") from None
    except (TypeError, ValueError) as e:
        raise InputError(f"model file {path} has a broken config in its metadata "
                         f"({_one_line(e)}).") from None
    try:
        extra = json.loads(meta.get("extra", "{}"))
    except ValueError:
        raise InputError(f"model file {path} has broken 'extra' metadata (not "
                         "JSON).") from None
    if not isinstance(extra, dict):
        raise InputError(f"model file {path}: its 'extra' metadata is not a dict.")
    return cfg, extra


def check_model_tensors(path, model, tensors) -> None:
    """The file's tensors against ``model`` (built from the file's config)."""
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(want) - set(tensors))
    unknown = sorted(set(tensors) - set(want))
    if missing or unknown:
        raise InputError(
            f"model file {path} does not match its config (h={model.cfg.h}, "
            f"d_k={model.cfg.d_k}, n_layers={model.cfg.n_layers}): missing "
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


def check_init_meta(path, meta) -> int:
    try:
        seed = int(meta["init_seed"])
    except ValueError:
        raise InputError(f"model file {path}: init_seed {meta['init_seed']!r} is "
                         "not a whole number.") from None
    if not 0 <= seed <= 2**40 or "fingerprint" not in meta:
        raise InputError(f"model file {path}: broken untrained-model metadata "
                         "(init_seed out of range or no fingerprint).")
    return seed


def check_data(name, data, cfg=None, *, need_parts=False):
    """``(x, y, kind)`` from :func:`tasks.sample` (N, L) each, or raise."""
    from . import tasks

    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise InputTypeError(f"{name} must be (x, y, kind) from tasks.sample(n, "
                             f"seed=...) or tiny_model.heldout(); got "
                             f"{describe(data)}.")
    x, y, kind = data
    vocab = len(tasks.VOCAB) if cfg is None else cfg.vocab_size
    check_id_tensor(f"{name}: x", x, vocab, legend="(N, L)", what="word ids")
    if cfg is not None and x.shape[1] > cfg.max_len:
        raise InputError(f"{name}: x has L = {x.shape[1]} positions; the model "
                         f"reads at most max_len = {cfg.max_len}.")
    check_id_tensor(f"{name}: y", y, max(vocab, int(x.max()) + 1), legend="(N, L)",
                    what="word ids")
    check_id_tensor(f"{name}: kind", kind, 3, legend="(N, L)",
                    what="parts (0 not scored, 1 previous, 2 lookup)")
    if not (x.shape == y.shape == kind.shape):
        raise InputError(f"{name}: x, y and kind must have one shape (N, L); got "
                         f"{tuple(x.shape)}, {tuple(y.shape)}, {tuple(kind.shape)}.")
    y_ref, kind_ref = tasks.targets(x)
    if not torch.equal(kind, kind_ref) or (y is not x and not torch.equal(
            y[kind != tasks.NOT_SCORED], y_ref[kind != tasks.NOT_SCORED])):
        raise InputError(f"{name}: y and kind are not the task's targets of x; the "
                         "scores would be silently wrong. Use (x, *tasks.targets(x)) "
                         "or tasks.sample(n, seed=...).")
    if need_parts:
        for k in (tasks.PREVIOUS, tasks.LOOKUP):
            if not bool((kind == k).any()):
                raise InputError(
                    f"{name} has no '{tasks.KIND_NAMES[k]}' positions: the "
                    "accuracy on that part would be 0/0 = NaN. Use more "
                    "sequences (tasks.sample) or the held-out set.")
    return x, y, kind


def check_evaluate(model, data, batch) -> None:
    check_tiny_model(model)
    check_positive_int("batch", batch)
    if data is not None:
        check_data("data", data, model.cfg, need_parts=True)


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
    from . import tasks

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


def check_train(cfg, steps, seed, task, log_every, eval_data) -> None:
    from . import tasks
    from .tiny_model.model import TinyConfig

    if not isinstance(cfg, TinyConfig):
        raise InputTypeError(f"cfg must be a TinyConfig; got {describe(cfg)}.")
    check_positive_int("steps", steps, 10**6)
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
    from . import tasks

    if not isinstance(task, tasks.TaskConfig):
        raise InputTypeError(f"task must be a tasks.TaskConfig; got {describe(task)}.")
    check_positive_int("n", n, 10**6)


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


def check_model_name(h, d_k, trained) -> None:
    check_positive_int("h", h)
    check_positive_int("d_k", d_k)
    check_bool("trained", trained)


# --- web_export -----------------------------------------------------------

def check_load_tiny(h, d_k, trained) -> None:
    from .web_export import tiny_cells

    h = check_positive_int("h", h)
    d_k = check_positive_int("d_k", d_k)
    check_bool("trained", trained)
    cells = tiny_cells()
    if (h, d_k) not in cells:
        shown = ", ".join(f"{a}x{b}" for a, b in cells)
        raise InputError(f"there is no tiny model with h = {h}, d_k = {d_k}; the "
                         f"explorer's models (h x d_k) are: {shown}.")


def check_quantize(weights) -> np.ndarray:
    if (isinstance(weights, torch.Tensor) and weights.is_complex()) or (
            isinstance(weights, np.ndarray) and weights.dtype.kind == "c"):
        raise InputError(f"weights must be real numbers in [0, 1]; got "
                         f"{describe(weights)}.")
    try:
        w = np.asarray(weights.detach().cpu().float() if isinstance(
            weights, torch.Tensor) else weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(f"weights must be an array of numbers in [0, 1]; got "
                             f"{describe(weights)}.") from None
    if w.size and not np.isfinite(w).all():
        raise InputError("weights hold NaN or inf: attention weights must lie in "
                         "[0, 1] to quantize them.")
    if w.size and (w.min() < -1e-6 or w.max() > 1 + 1e-6):
        raise InputError(f"attention weights must lie in [0, 1] to quantize them; "
                         f"got values {w.min():g}..{w.max():g}.")
    return w


# --- tasks ----------------------------------------------------------------

def check_text(name: str, text) -> None:
    if not isinstance(text, str):
        raise InputTypeError(f"{name} must be text (a str); got {describe(text)}.")


def check_word_list(name: str, words) -> None:
    if isinstance(words, (str, bytes)) or not isinstance(words, (list, tuple)):
        raise InputTypeError(f"{name} must be a str or a list of word strings; got "
                             f"{describe(words)}.")
    bad = [(i, w) for i, w in enumerate(words) if not isinstance(w, str)]
    if bad:
        i, w = bad[0]
        fix = (" For word ids use tasks.decode(ids)." if isinstance(
            w, (numbers.Integral, torch.Tensor)) else "")
        raise InputTypeError(f"{name} must hold strings (words); {name}[{i}] is "
                             f"{describe(w)}.{fix}")


def check_text_or_tokens(text_or_tokens) -> None:
    if not isinstance(text_or_tokens, str):
        check_word_list("text_or_tokens", text_or_tokens)


def check_decode_ids(ids) -> None:
    from . import tasks

    n = len(tasks.VOCAB)
    if isinstance(ids, (torch.Tensor, np.ndarray)):
        bad_dtype = (ids.dtype == torch.bool or ids.is_floating_point()
                     or ids.is_complex()) if isinstance(ids, torch.Tensor) else \
            ids.dtype.kind not in "iu"
        if bad_dtype:
            raise InputError(f"ids must be whole-number word ids; got "
                             f"{describe(ids)}. Pass ids.long().")
        if ids.ndim != 1:
            raise InputError(f"ids must be one sequence (1-D); got shape "
                             f"{tuple(ids.shape)}. For a batch, decode each row.")
        values = [int(i) for i in ids.tolist()]
    elif isinstance(ids, (list, tuple)):
        values = []
        for i, v in enumerate(ids):
            values.append(as_int(f"ids[{i}]", v, "a whole-number word id"))
    else:
        raise InputTypeError(f"ids must be a list or 1-D tensor of word ids; got "
                             f"{describe(ids)}.")
    bad = [v for v in values if not 0 <= v < n]
    if bad:
        raise InputError(f"ids must be word ids in 0..{n - 1}; got {bad[:3]} "
                         "(negative ids would wrap around).")


def check_task_config(c) -> None:
    check_positive_int("L", c.L, 10**5)
    check_positive_int("n_min", c.n_min)
    if c.n_min < 2:
        raise InputError(f"n_min must be at least 2 (a word never follows itself, so "
                         f"a sequence needs two distinct words); got n_min = {c.n_min}.")
    check_positive_int("n_max", c.n_max)
    check_positive_int("vocab_size", c.vocab_size, 10**6)
    if not c.n_min <= c.n_max <= c.vocab_size:
        raise InputError(
            f"need n_min <= n_max <= vocab_size; got n_min = {c.n_min}, "
            f"n_max = {c.n_max}, vocab_size = {c.vocab_size}.")


def check_targets(x) -> None:
    check_id_tensor("x", x, 2**62, legend="(B, L)", what="word ids")


def check_targets_reference(words) -> None:
    if not isinstance(words, (list, tuple)):
        raise InputTypeError(f"words must be a list (or tuple) of items; got "
                             f"{describe(words)}.")
    try:
        for w in words:
            hash(w)
    except TypeError:
        raise InputTypeError("words must hold hashable items (words, numbers); got "
                             f"{describe(w)}.") from None


def check_sample(n, cfg, seed, generator) -> None:
    from . import tasks

    check_positive_int("n", n, 10**6)
    if not isinstance(cfg, tasks.TaskConfig):
        raise InputTypeError(f"cfg must be a tasks.TaskConfig; got {describe(cfg)}.")
    check_size("sample (n x vocab_size)", n * max(cfg.vocab_size, cfg.L))
    if (seed is None) == (generator is None):
        raise InputError("pass exactly one of seed= and generator=; got "
                         + ("both." if seed is not None else "neither."))
    if seed is not None:
        check_seed("seed", seed)
    check_generator("generator", generator)


def check_baselines(x, y, kind) -> None:
    from . import tasks

    check_data("(x, y, kind)", (x, y, kind), need_parts=True)
    if int(y.max()) > int(x.max()):
        raise InputError("y holds a word that is not in x: baselines need the "
                         "targets of tasks.targets(x).")
    del tasks
