"""The browser explorer's exported models, checked in Python with onnxruntime:
MiniLM's ONNX graph gives the package's attention weights, and the tokenizer
files give the package's token ids. (The tiny models run through the training
export's forward graph: test_web_train.py. tests/test_explorer_live.py checks
both in Chromium.)"""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch

from mhacourse import bert, explorer, tasks, web_export, web_train
from mhacourse import tiny_model as tm

ort = pytest.importorskip("onnxruntime")

TEXTS = [
    *explorer.EXAMPLES,
    "cat",                                   # one word
    ".,;!?",                                 # punctuation only
    "Naïve café, über-straße — déjà vu.",     # accents
    "日本語のテキストと English mixed",         # non-Latin script
    "emoji 😀 and 🐱 here",                    # emoji
    "First paragraph.\n\nSecond one, after a blank line.\n\tThird.",
    "  leading and trailing spaces  ",
    "it it it it it the the the cat cat",     # repeats (the lookup task)
    "İstanbul and ß and ﬁ ligature",          # case-folding corner cases
    "don't won't rock'n'roll o'clock",
    "x" * 120,                                # one very long word
]


@pytest.fixture(scope="module")
def tmpdir_module(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


def test_tiny_tokenizer_file_gives_the_package_ids():
    tok = web_export.tiny_tokenizer()
    for text in TEXTS:
        got = tok.encode(text, add_special_tokens=False).ids
        assert got == tasks.word_ids(text), f"{text!r}: {got} != {tasks.word_ids(text)}"


def test_tiny_tokenizer_matches_on_random_text():
    """Random strings over letters, digits, punctuation, spaces and a few
    non-ASCII characters: the tokenizer file and tasks.word_ids agree."""
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 .,;:'!?-\n\t") + \
        ["é", "ü", "😀", "日", "İ", "ß", "\u00a0"]
    tok = web_export.tiny_tokenizer()
    for _ in range(300):
        text = "".join(rng.choice(alphabet, size=rng.integers(1, 40)))
        assert tok.encode(text, add_special_tokens=False).ids == tasks.word_ids(text), repr(text)


@pytest.fixture(scope="module")
def minilm_session(tmpdir_module):
    path = web_export.export_minilm(tmpdir_module / "minilm.onnx")
    return ort.InferenceSession(str(path))


def minilm_inputs(text, head_mask=None):
    enc = bert.encode(text, head_mask=head_mask)
    m = np.ones((6, 12), np.float32) if head_mask is None else np.asarray(head_mask, np.float32)
    return enc, {"input_ids": enc.input_ids.numpy(), "head_mask": m}


@pytest.mark.parametrize("text", TEXTS[:8] + ["word " * 140])
def test_minilm_graph_equals_the_package(minilm_session, text):
    enc, feed = minilm_inputs(text)
    out = minilm_session.run(None, feed)
    for l, A in enumerate(enc.attentions):
        assert float(np.abs(out[l + 1] - A.numpy()).max()) <= 1e-4, f"layer {l + 1}"
    e = bert.mean_pool(enc.hidden_states[-1], enc.attention_mask)  # (1, 384)
    assert float(np.abs(out[0] - e.numpy()).max()) <= 1e-5


def test_minilm_graph_removes_heads_as_the_package_does(minilm_session):
    mask = torch.ones(6, 12)
    mask[0, 3] = 0
    mask[2, 7] = 0
    text = explorer.EXAMPLES[0]
    enc, feed = minilm_inputs(text, mask)
    out = minilm_session.run(None, feed)
    for l, A in enumerate(enc.attentions):
        assert float(np.abs(out[l + 1] - A.numpy()).max()) <= 1e-4
    full = minilm_session.run(None, minilm_inputs(text)[1])
    # layer 1's weights come before any removed head acts; later layers change
    assert np.abs(out[1] - full[1]).max() == 0
    assert np.abs(out[2] - full[2]).max() > 1e-3
    e = bert.mean_pool(enc.hidden_states[-1], enc.attention_mask)
    assert float(np.abs(out[0] - e.numpy()).max()) <= 1e-5


def test_minilm_tokenizer_file_is_the_models_without_padding():
    spec = web_export.minilm_tokenizer_json()
    assert spec["padding"] is None and spec["truncation"] is None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(spec))
    for text in TEXTS:
        assert tok.encode(text).ids == bert.tokenize(text).input_ids[0].tolist()


def test_quantize_round_trip_error_is_below_its_bound():
    w = torch.softmax(torch.randn(4, 9, 9), -1).numpy()
    q = np.frombuffer(base64.b64decode(web_export.quantize(w)), dtype="<u2")
    assert q.size == w.size
    assert float(np.abs(q / 65535 - w.ravel()).max()) <= 0.5 / 65535 + 1e-12
    with pytest.raises(ValueError, match="must lie in"):
        web_export.quantize(np.array([1.5]))


def test_model_table_covers_both_modes():
    rows = web_export.model_table()
    budget = [r for r in rows if r["mode"] == "same budget"]
    assert [r["h"] for r in budget] == list(web_export.BUDGET_H)
    assert {r["d_model"] for r in budget} == {web_export.BUDGET_D_MODEL}
    assert len({r["params"] for r in budget}) == 1, "same d_model, same parameters"
    wide = [r for r in rows if r["mode"] == "wider heads"]
    assert len(wide) == len(web_export.WIDE_H) * len(web_export.WIDE_DK)
    for r in rows:
        assert r["accuracy"] > 0.3 and r["untrained"] < 0.02, r
        assert r["params"] == tm.n_params(web_export.load_tiny(r["h"], r["d_k"], True))


def test_export_jobs_cover_every_graph_once_longest_first(tmp_path):
    """One job per graph (the training graphs and MiniLM's), one for the
    training data's files and one for the precomputed views, longest first
    by JOB_SECONDS; the extra jobs (the build's SmolLM2) before those
    shorter than EXTRA_SECONDS. The tiny models are weight files, not jobs
    (test_web_train checks them)."""
    jobs = web_export.export_jobs(tmp_path)
    train = [args[1] for fn, args in jobs if fn is web_train.export_job]
    assert sorted(train) == sorted(web_train.STEP_NAMES)
    assert set(web_export.JOB_SECONDS) == {*web_train.STEP_NAMES, "minilm", "data",
                                            "precomputed"}
    names = [args[1] if fn is web_train.export_job else fn.__name__.strip("_").split("_")[0]
             for fn, args in jobs]
    seconds = [web_export.JOB_SECONDS[n] for n in names]
    assert seconds == sorted(seconds, reverse=True), names
    assert names[0] == "circuits" and names[-1] == "precomputed"
    assert (web_export._minilm_job, (tmp_path,)) in jobs and len(jobs) == len(train) + 3
    assert (web_train.data_job, (tmp_path / "train",)) in jobs
    assert web_export._minilm_job not in [fn for fn, _ in web_export.export_jobs(tmp_path, False)]
    extra = ((pow, (2, 3)),)
    with_extra = web_export.export_jobs(tmp_path, extra=extra)
    at = with_extra.index(extra[0])
    assert with_extra[:at] + with_extra[at + 1:] == jobs
    assert min(seconds[:at]) > web_export.EXTRA_SECONDS >= max(seconds[at:])


def test_run_jobs_keeps_the_order_of_the_jobs_in_a_pool():
    jobs = [(pow, (2, k)) for k in range(6)]
    assert web_export.run_jobs(jobs, workers=2) == [2 ** k for k in range(6)]
    assert web_export.run_jobs(jobs, workers=1) == [2 ** k for k in range(6)]


def test_the_pools_data_job_writes_the_files_the_manifest_names(tmp_path):
    """web_train.data_job (a job of the export's pool) writes write_data's
    files and returns their entries; manifest_entry given them writes
    nothing again."""
    key, entries = web_train.data_job(tmp_path / "train")
    assert key == "data" and set(entries) == set(web_train.DATA_FILES)
    for k, e in entries.items():
        assert e["file"] == web_train.DATA_FILES[k]
        assert (tmp_path / "train" / e["file"]).stat().st_size == e["bytes"] > 0
    graphs = {k: {"file": f"{k}.onnx", "bytes": 1, "export_seconds": 1.0}
              for k in web_train.STEP_NAMES}
    entry = web_train.manifest_entry(graphs, tmp_path / "empty", entries)
    assert entry["data"] == entries and list((tmp_path / "empty").iterdir()) == []
