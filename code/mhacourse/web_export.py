"""The course's models for the explorer that runs in the reader's browser.

At build time (``scripts/export_explorer.py``, run by ``make book``) this
module writes, for the static site:

- the tiny models (:mod:`mhacourse.tiny_model`, trained and untrained,
  every (h, d_k) the explorer offers) as **weights only**, one float32 file
  each (:func:`write_tiny_weights`). The page runs them through the one graph
  of the tiny model's forward pass that :mod:`mhacourse.web_train` exports for
  every (h, d_k) (:func:`~mhacourse.tiny_model.step._forward_with`, weights as
  inputs), the graph the in-browser training draws with: one graph instead of
  28, and a build that traces it once;
- one ONNX graph for all-MiniLM-L6-v2 (:mod:`mhacourse.bert`),
  ``torch.onnx.export`` of the package's own unchecked forward pass
  (:func:`bert._forward_core`) with **every layer's attention weights as graph
  outputs**. The page runs both graphs with onnxruntime-web: the browser
  computes with the package's models, not with a JavaScript copy of the
  mathematics;
- the tokenizers as ``tokenizer.json`` files, read in the page by the
  ``@huggingface/tokenizers`` library (:func:`tiny_tokenizer` builds the tiny
  models' word-level one with the ``tokenizers`` library; MiniLM's is the
  model's own file);
- ``manifest.json`` (what each model is: h, d_k, d_model, parameters,
  held-out accuracy, file size) and ``precomputed.js``, the example sentences'
  views computed by the package's public functions, which the page paints
  first, before (or without) the live engine.

Graph inputs and outputs (``L`` is dynamic):

=============  ==========================================  ====================
graph          inputs                                      outputs
=============  ==========================================  ====================
tiny model     (``train/forward.onnx``) the weights in     ``logits`` (1, L, V),
               ``step.param_names`` order, ``ids`` (1, L)  ``attn_1..attn_n``
               int64, L <= 16, ``heads`` (h,)              (1, h, L, L)
MiniLM         ``input_ids`` (1, L) int64, L <= 512;       ``embedding`` (1, 384)
               ``head_mask`` (6, 12) float32, 1 = keep     (mean-pooled, unit
                                                           norm), ``attn_1..6``
=============  ==========================================  ====================
"""
from __future__ import annotations

import base64
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import bert, catalogue, explorer, onnx_program, tasks, web_patch, web_train
from . import tiny_model as tm
from ._validate import (
    InputError,
    InputFileError,
    InputTypeError,
    check_bool,
    check_path,
    check_positive_int,
    check_texts,
    check_writable,
    describe,
    write_error,
)
from .bert_weights import check_bert, check_bert_model
from .block import BLOCK_PARAMS, BlockWeights
from .tiny_model import step as st
from .tiny_model.files import fingerprint
from .tiny_model.model import check_tiny_model

# --- input checks: the rules of this module's public functions -----------

def check_load_tiny(h, d_k, trained) -> None:
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


def check_precomputed(sentences) -> None:
    check_texts("sentences", sentences)


def check_export_minilm(path, model) -> None:
    check_path("path", path)
    check_bert_model(model)


def check_tiny_entry(model, trained, file) -> Path:
    check_tiny_model(model)
    check_bool("trained", trained)
    file = check_path("file", file)
    if not file.is_file():
        raise InputError(f"file {file} does not exist: export the model first.")
    return file


def check_build(out, minilm, log=print, workers: int = 1) -> None:
    check_path("out", out)
    check_bool("minilm", minilm)
    if not callable(log):
        raise InputTypeError(f"log must be a function that takes a line of text "
                             f"(print, or lambda line: None); got {describe(log)}.")
    check_positive_int("workers", workers, MAX_WORKERS,
                       "each worker is a process holding torch and a model")


#: The most processes an export pool may start (each holds a model and
#: torch: about 1 GB).
MAX_WORKERS = 32


def check_jobs(jobs, workers) -> None:
    """``jobs``: a list of ``(function, args tuple)`` pairs
    (:func:`export_jobs`); ``workers``: 1..:data:`MAX_WORKERS` processes."""
    if not isinstance(jobs, (list, tuple)) or not all(
            isinstance(j, tuple) and len(j) == 2 and callable(j[0])
            and isinstance(j[1], tuple) for j in jobs):
        raise InputTypeError(f"jobs must be a list of (function, args tuple) pairs, "
                             f"as export_jobs(out) makes them; got {describe(jobs)}.")
    check_positive_int("workers", workers, MAX_WORKERS,
                       "each worker is a process holding torch and a model")


def check_extra(extra, workers) -> None:
    """``extra``: a tuple of ``(function, args tuple)`` pairs (``()``: none),
    as :func:`check_jobs` says."""
    if not isinstance(extra, tuple):
        raise InputTypeError(f"extra must be a tuple of (function, args tuple) pairs "
                             f"(() for none); got {describe(extra)}.")
    check_jobs(extra, workers)


# The models the browser explorer offers: mhacourse.catalogue's, in its two
# modes ("same budget": d_model fixed, h over its divisors; "wider heads": h
# fixed, d_k varies).
BUDGET_D_MODEL = catalogue.BUDGET_D_MODEL
BUDGET_H = catalogue.BUDGET_H
WIDE_H = catalogue.GRID_H
WIDE_DK = catalogue.GRID_DK
tiny_cells = catalogue.tiny_cells
OPSET = 18


def load_tiny(h: int, d_k: int, trained: bool) -> tm.TinyTransformer:
    """A tiny model from ``assets/models/`` (trained, or its untrained twin).

    Stricter than :func:`explorer.tiny_model_for`, which the notebook
    explorer uses: it takes every cell of :func:`tiny_cells` (the same-budget
    row lies outside the notebook's grid), it is not cached, and a missing
    file is an error rather than a freshly seeded model, so the browser always
    gets the committed weights."""
    check_load_tiny(h, d_k, trained)
    path = catalogue.tiny_model_path(h, d_k, trained)
    if not path.exists():
        raise InputFileError(
            f"{path} is missing: run `python scripts/train_tiny_models.py "
            f"--cells {h}x{d_k}`.")
    model = tm.load(path)
    check_loaded_tiny(path, model, h, d_k, trained)
    return model


#: What every tiny model of the page shares (the forward graph's sizes).
FIXED = ("n_layers", "ff_mult", "vocab_size", "max_len")


def check_loaded_tiny(path: Path, model: tm.TinyTransformer, h: int, d_k: int,
                      trained: bool) -> None:
    """Refuse a file that holds another model than its name says: another
    (h, d_k), other fixed sizes than the forward graph's, or (by its
    weights) a trained model under the untrained name or the reverse. The
    build would write it under the wrong name."""
    cfg, fix = model.cfg, f"rerun `python scripts/train_tiny_models.py --cells {h}x{d_k}`"
    if (cfg.h, cfg.d_k) != (h, d_k):
        raise InputError(f"{path.name} holds a model with h = {cfg.h}, d_k = "
                         f"{cfg.d_k}, not the h = {h}, d_k = {d_k} its name "
                         f"says: {fix}.")
    want = {k: getattr(st.CONFIG, k) for k in FIXED}
    got = {k: getattr(cfg, k) for k in FIXED}
    if got != want:
        raise InputError(f"{path.name} holds a model with {got}; the page's "
                         f"models have {want}: {fix}.")
    untrained = fingerprint(model) == fingerprint(tm.TinyTransformer(cfg, catalogue.SEED))
    if untrained == trained:
        raise InputError(
            f"{path.name} (trained = {trained}) holds "
            + ("the untrained seed-" if untrained else "weights other than the seed-")
            + f"{catalogue.SEED} initialisation: {fix}.")


# ------------------------------------------------------------------ graphs

class MiniLMGraph(nn.Module):
    """What is exported of MiniLM: ``(input_ids (1, L), head_mask (6, 12))``
    -> ``(embedding (1, 384), A_1, ..., A_6)``. The embedding is the mean of
    the last layer over the tokens, divided by its norm (one unpadded
    sentence: :func:`bert._mean_pool_core` with every token real)."""

    def __init__(self, model: bert.Bert):
        check_bert(model)
        super().__init__()
        self.bert = model

    def forward(self, input_ids, head_mask):
        hidden, attention = bert._forward_core(input_ids, self.bert, head_mask)
        mask = torch.ones_like(input_ids, dtype=torch.bool)  # (1, L): all real
        return (bert._mean_pool_core(hidden[-1], mask), *attention)


def _export(module: nn.Module, args: tuple, path: Path, input_names, output_names,
            dynamic_shapes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), onnx_program.recorded_types():
            warnings.simplefilter("ignore")  # the exporter's own deprecation notes
            torch.onnx.export(module.eval(), args, str(path), dynamo=True,
                              dynamic_shapes=dynamic_shapes, opset_version=OPSET,
                              input_names=input_names, output_names=output_names,
                              external_data=False, optimize=True, verbose=False)
    finally:
        quiet.setLevel(level)
    return path


def write_tiny_weights(model: tm.TinyTransformer, path) -> Path:
    """Write ``model``'s parameters to ``path`` as one little-endian float32
    array: each tensor flattened row-major, in
    :func:`~mhacourse.tiny_model.step.param_names` order (the order of the
    ``forward`` graph's weight inputs). The page cuts it with the shapes of
    the manifest's ``train.params`` (each dimension ``a * d_model + b``).
    NaN or inf weights are refused (:func:`check_finite_weights`)."""
    check_tiny_model(model)
    path = check_writable("path", path)
    fixed = {k: getattr(st.CONFIG, k) for k in FIXED}
    if {k: getattr(model.cfg, k) for k in fixed} != fixed:
        raise InputError(f"model must have the forward graph's {fixed} (only h and d_k "
                         f"may vary); got {model.cfg}.")
    state = model.state_dict()
    shapes = st.param_shapes(model.cfg.d_model)
    assert list(state) == list(shapes), "a tiny model's parameters, in the graphs' order"
    for name, t in state.items():
        assert tuple(t.shape) == tuple(shapes[name]), f"{name}: {tuple(t.shape)}"
    check_finite_weights(state)
    flat = torch.cat([t.detach().reshape(-1) for t in state.values()])  # (n_params,)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(flat.numpy().astype("<f4").tobytes())
    except OSError as e:
        raise write_error("path", path, e) from None
    return path


def check_finite_weights(state: dict) -> None:
    """Refuse NaN or inf in a tiny model's weights (``state_dict``), naming
    the first tensor that holds one: the page would draw NaN for it."""
    for name, t in state.items():
        bad = ~torch.isfinite(t.detach().float())
        if bool(bad.any()):
            raise InputError(
                f"model weight {name} holds {int(bad.sum())} NaN or inf value(s) "
                "(a training run that diverged?): the page would compute NaN. "
                "Retrain the model, or load its last good file.")


def export_minilm(path, model: bert.Bert | None = None) -> Path:
    """Write all-MiniLM-L6-v2 as an ONNX graph (:class:`MiniLMGraph`), float32,
    with a dynamic sequence length up to the model's 512 positions."""
    check_export_minilm(path, model)
    model = bert.load_model() if model is None else model
    cfg = model.config
    L = torch.export.Dim("L", min=1, max=cfg.max_len)
    ids = torch.tensor([[model.cls_id, 2023, 2003, 1037, 3231, model.sep_id]])
    head_mask = torch.ones(cfg.n_layers, cfg.h)  # (n_layers, h)
    names = [f"attn_{i + 1}" for i in range(cfg.n_layers)]
    return _export(MiniLMGraph(model), (ids, head_mask), path,
                   ["input_ids", "head_mask"], ["embedding", *names],
                   {"input_ids": {1: L}, "head_mask": None})


# -------------------------------------------------------------- tokenizers

def tiny_tokenizer():
    """The tiny models' tokenizer as a ``tokenizers.Tokenizer``: lower-case,
    split into words and single punctuation marks (the regular expression of
    :func:`mhacourse.tasks.split_words`), look each word up in
    :data:`mhacourse.tasks.VOCAB`, unknown words -> ``[UNK]``.

    The model is a WordPiece vocabulary with no ``##`` continuation pieces:
    a word is either in the vocabulary whole or becomes ``[UNK]``, which is a
    word-level lookup that both the Python ``tokenizers`` library and
    ``@huggingface/tokenizers`` in the browser implement.
    """
    # optional dependency (notebook extra)
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    vocab = {w: i for i, w in enumerate(tasks.VOCAB)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token=tasks.UNK,
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(tasks._TOKEN_RE.pattern), behavior="isolated"),
    ])
    return tok


def minilm_tokenizer_json(model: bert.Bert | None = None) -> dict:
    """MiniLM's own ``tokenizer.json``, with its padding and truncation to 128
    tokens switched off, as :func:`bert.load_model` does (the explorer pads
    nothing and truncates itself, as :func:`bert.tokenize` does)."""
    check_bert(model, none_ok=True)
    model = bert.load_model() if model is None else model
    spec = json.loads((model.path / "tokenizer.json").read_text())
    spec["padding"] = None
    spec["truncation"] = None
    return spec


# ------------------------------------------------------------ precomputed

def quantize(weights: np.ndarray) -> str:
    """Attention weights in [0, 1] as base64 of little-endian uint16
    ``round(w * 65535)``: 2 bytes a weight, error at most 1 / 131070
    (7.6e-6). The page decodes them with ``q / 65535``."""
    w = check_quantize(weights)  # float64, finite, in [0, 1]
    q = np.round(np.clip(w, 0, 1) * 65535).astype("<u2")
    return base64.b64encode(q.tobytes()).decode("ascii")


def precomputed_views(sentences=explorer.EXAMPLES) -> dict:
    """Every view of the example sentences that the page can show before its
    live engine runs, computed by the package's public functions
    (:func:`tiny_model.attention_on`, :func:`bert.encode`).

    ``{"tiny": {name: {sentence_index: {"tokens", "attn": [layer, ...]}}},
    "minilm": {sentence_index: {...}}}``; each layer's (h, L, L) weights
    :func:`quantize`-d.
    """
    check_precomputed(sentences)
    out: dict = {"sentences": list(sentences), "tiny": {}, "minilm": {}}
    for h, d_k in tiny_cells():
        for trained in (True, False):
            model = load_tiny(h, d_k, trained)
            views = {}
            for i, s in enumerate(sentences):
                tokens, attention = tm.attention_on(model, s)
                views[i] = {"tokens": tokens,
                            "attn": [quantize(A.numpy()) for A in attention]}
            out["tiny"][tm.model_name(h, d_k, trained)] = views
    for i, s in enumerate(sentences):
        enc = bert.encode(s)
        out["minilm"][i] = {"tokens": enc.tokens[0],
                            "attn": [quantize(enc.attention(l).numpy())
                                     for l in range(len(enc.attentions))]}
    return out


# ----------------------------------------------------------------- manifest

def tiny_entry(model: tm.TinyTransformer, trained: bool, file: Path) -> dict:
    """What the page prints about one tiny model."""
    file = check_tiny_entry(model, trained, file)
    h, d_k = model.cfg.h, model.cfg.d_k
    name = tm.model_name(h, d_k, trained)
    m = explorer.metrics().get(name, {})
    return {"name": name, "h": h, "d_k": d_k, "d_model": h * d_k,
            "trained": trained, "layers": model.cfg.n_layers,
            "max_len": model.cfg.max_len, "params": tm.n_params(model),
            "accuracy": m.get("accuracy"), "file": file.name,
            "bytes": file.stat().st_size, "dtype": "float32"}


def model_table() -> list[dict]:
    """One row per (h, d_k) the browser explorer offers, in the two modes:
    ``{"mode", "h", "d_k", "d_model", "params", "accuracy", "untrained"}``
    (held-out accuracy of the trained model and of its untrained twin)."""
    rows, m = [], explorer.metrics()
    for mode, cells in (("same budget", catalogue.budget_cells()),
                        ("wider heads", catalogue.grid_cells())):
        for h, d_k in cells:
            rows.append({"mode": mode, "h": h, "d_k": d_k, "d_model": h * d_k,
                         "params": tm.n_params(load_tiny(h, d_k, True)),
                         "accuracy": m.get(tm.model_name(h, d_k, True), {}).get("accuracy"),
                         "untrained": m.get(tm.model_name(h, d_k, False), {}).get("accuracy")})
    return rows


# ------------------------------------------------------------------- build
#
# The export is a list of independent jobs (one ONNX graph each, and the
# precomputed views), run by a pool of worker processes: each torch.onnx.export
# is single-threaded Python work (about 2-5 CPU seconds for a tiny model), so
# two workers on two cores take about half the time of one. A job is a
# module-level function and its arguments (picklable), returning
# ``(manifest key, value)``; to export one more graph, append one more job
# in :func:`export_jobs`.

def _tiny_weights(out: Path, h: int, d_k: int, trained: bool) -> dict:
    model = load_tiny(h, d_k, trained)
    path = write_tiny_weights(model, out / "models" / f"{tm.model_name(h, d_k, trained)}.f32")
    return tiny_entry(model, trained, path)


def _minilm_job(out: Path) -> tuple[str, dict]:
    model = bert.load_model()
    path = export_minilm(out / "models" / "minilm.onnx", model)
    (out / "tokenizers" / "minilm.json").write_text(json.dumps(minilm_tokenizer_json(model)))
    (out / "tokenizers" / "minilm_config.json").write_text(
        (model.path / "tokenizer_config.json").read_text())
    cfg = model.config
    return "minilm", {
        "file": path.name, "bytes": path.stat().st_size, "layers": cfg.n_layers,
        "h": cfg.h, "d_k": cfg.d_k, "d_model": cfg.d_model,
        "max_len": cfg.max_len, "dtype": "float32",
        "tokenizer": "minilm.json", "config": "minilm_config.json",
        "params": int(sum(t.numel() for t in (model.E_tok, model.E_pos, model.E_type))
                      + sum(t.numel() for layer in model.layers
                            for t in _layer_tensors(layer))),
    }


def _precomputed_job() -> tuple[str, dict]:
    return "precomputed", precomputed_views()


#: Each job's seconds on one core, quiet, a process each (before recorded_types
#: took 1-4 s off each graph): :func:`export_jobs` puts the longest first.
JOB_SECONDS = {"circuits": 16.8, "ablate": 14.4, "minilm": 13.8, "patch": 11.6,
               "step": 10.8, "evaluate": 8.5, "forward": 7.1, "init": 5.9,
               "data": 3.5, "precomputed": 0.8}
#: Where :func:`build`'s extra jobs go: before the jobs shorter than this.
#: SmolLM2's export takes 9.2 s alone but 25-50 s in a build, the pool's last
#: to end when placed by its 9.2 s; third, chapter 17 has made its cache.
EXTRA_SECONDS = 14.0


def export_jobs(out: Path, minilm: bool = True, extra: tuple = ()) -> list[tuple]:
    """The export's jobs, ``(function, args)``, longest first
    (:data:`JOB_SECONDS`), so that a pool ends with short jobs and its
    workers finish together: the training graphs (:mod:`mhacourse.web_train`),
    MiniLM's graph, the training data's files (:func:`web_train.data_job`),
    the precomputed views, and ``extra`` among them at
    :data:`EXTRA_SECONDS`. (The tiny models are weight files, written in the
    main process: :func:`build`.)"""
    check_build(out, minilm)
    check_extra(extra, 1)
    out = Path(out)
    named = [(kind, (web_train.export_job, (out / "train", kind)))
             for kind in web_train.STEP_NAMES]
    named += [("minilm", (_minilm_job, (out,)))] if minilm else []
    named.append(("data", (web_train.data_job, (out / "train",))))
    named.append(("precomputed", (_precomputed_job, ())))
    named.sort(key=lambda pair: -JOB_SECONDS[pair[0]])
    at = sum(JOB_SECONDS[name] > EXTRA_SECONDS for name, _ in named)
    jobs = [job for _, job in named]
    return jobs[:at] + list(extra) + jobs[at:]


def _worker_init() -> None:
    torch.set_num_threads(1)  # one core a worker: the pool is the parallelism


def _run_job(job: tuple):
    fn, args = job
    return fn(*args)


def run_jobs(jobs: list[tuple], workers: int = 2) -> list:
    """Each job's result, in the order of ``jobs``: in this process if
    ``workers`` is 1, else in a pool of ``workers`` fresh (spawned) processes."""
    check_jobs(jobs, workers)
    if workers <= 1 or len(jobs) <= 1:
        return [_run_job(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                             mp_context=multiprocessing.get_context("spawn"),
                             initializer=_worker_init) as pool:
        return list(pool.map(_run_job, jobs))


def build(out: Path, minilm: bool = True, log=print, workers: int = 2,
          extra: tuple = ()) -> dict:
    """Write everything the browser explorer loads into ``out``; return the
    manifest. ``workers`` processes run :func:`export_jobs` (1: all in this
    process), with the jobs ``extra`` (``(function, args)`` pairs whose
    results are not the explorer's: ``scripts/export_explorer.py`` puts
    SmolLM2's export there, so that it runs beside the graphs rather than
    after them; not first: it loads the model chapter 17 loads, and the
    first of the two to load it dequantizes it for both while the other
    waits (``real_lm.files``' lock): started first, at nice 10, the export
    did it slowly while the chapter, which the build waits for, waited).
    An ``out`` that is, or lies under, a
    regular file is refused before anything is exported; a manifest with a
    graph missing (:func:`check_train_graphs`) before the weights and the
    manifest are written."""
    check_build(out, minilm, log, workers)
    check_extra(extra, workers)
    out = check_writable("out", out, folder=True)
    try:
        (out / "models").mkdir(parents=True, exist_ok=True)
        (out / "tokenizers").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error("out", out, e) from None
    jobs = export_jobs(out, minilm, extra)
    results = [r for job, r in zip(jobs, run_jobs(jobs, workers)) if job not in extra]
    graphs = {value["kind"]: value for key, value in results if key == "train"}
    check_train_graphs(graphs)
    done = {key: value for key, value in results if key != "train"}
    entries = [_tiny_weights(out, h, d_k, trained)
               for h, d_k in tiny_cells() for trained in (True, False)]
    log(f"wrote {len(entries)} tiny models' weights "
        f"({sum(e['bytes'] for e in entries) / 1e6:.1f} MB)")

    tiny_tok = out / "tokenizers" / "tiny.json"
    tiny_tok.write_text(tiny_tokenizer().to_str())
    (out / "tokenizers" / "tiny_config.json").write_text(json.dumps(
        {"model_max_length": tm.TinyConfig().max_len, "do_lower_case": True,
         "unk_token": tasks.UNK}))
    manifest = {
        "tiny": entries,
        "tiny_tokenizer": {"file": tiny_tok.name, "config": "tiny_config.json",
                           "unk": tasks.UNK, "max_len": tm.TinyConfig().max_len},
        "budget": {"d_model": BUDGET_D_MODEL, "h": list(BUDGET_H)},
        "wide": {"h": list(WIDE_H), "d_k": list(WIDE_DK)},
        "train": web_train.manifest_entry(graphs, out / "train", done["data"]),
    }
    manifest["train"]["patch"] = web_patch.manifest_entry(out / "train")  # the Patch view
    if minilm:
        manifest["minilm"] = done["minilm"]
        log(f"exported MiniLM ({done['minilm']['bytes'] / 1e6:.1f} MB)")
    pre = done["precomputed"]
    (out / "precomputed.js").write_text(
        "// Written by scripts/export_explorer.py: the example sentences' views,\n"
        "// computed by the mhacourse package, painted before the live engine runs.\n"
        f"window.mhaExplorerPrecomputed = {json.dumps(pre, separators=(',', ':'))};\n"
        f"window.mhaExplorerManifest = {json.dumps(manifest, separators=(',', ':'))};\n")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    log(f"precomputed views: {(out / 'precomputed.js').stat().st_size / 1e6:.2f} MB")
    return manifest


def check_train_graphs(graphs) -> None:
    """Refuse to write a manifest whose ``"train"`` entry lacks a graph of
    :data:`web_train.STEP_NAMES` (``graphs``: ``{kind: export_job's dict}``,
    each with ``"file"``, ``"bytes"`` and ``"export_seconds"``): the page
    would start, then fail to load the missing one."""
    if not isinstance(graphs, dict):
        raise InputTypeError(f"graphs must be a dict {{kind: export_job's dict}}; "
                             f"got {describe(graphs)}.")
    missing = [k for k in web_train.STEP_NAMES if k not in graphs]
    if missing:
        raise InputError(f"graphs has no {missing} graph (of {list(web_train.STEP_NAMES)}): "
                         "the page could not train; export every graph "
                         "(web_export.export_jobs).")
    extra = sorted(set(graphs) - set(web_train.STEP_NAMES), key=str)
    if extra:
        raise InputError(f"graphs has graphs the page does not load: {extra}.")
    for kind, v in graphs.items():
        keys = ("file", "bytes", "export_seconds")
        if not isinstance(v, dict) or any(k not in v for k in keys):
            raise InputError(f"graphs[{kind!r}] must be export_job's dict with "
                             f"{list(keys)}; got {describe(v)}.")


def _layer_tensors(layer: BlockWeights):
    yield from (t for t in vars(layer.attn).values() if t is not None)
    yield from (getattr(layer, name) for name in BLOCK_PARAMS)
