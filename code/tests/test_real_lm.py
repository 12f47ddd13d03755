"""SmolLM2-135M through the course's code (mhacourse.real_lm).

Parity: the course's forward pass (its own attention: _mha_core with grouped
key/value heads and rotary positions) gives Hugging Face
``LlamaForCausalLM``'s logits to 1e-3 and attention weights to 1e-4 on the
same dequantized weights (float32, 30 blocks); the tokenizer rebuilt from
the GGUF file gives Hugging Face's GGUF tokenizer's ids. Then the file's
checks, the cache, the induction read-outs and bad input.
"""
import json
import os
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network

import pytest
import torch

import mhacourse as mc
from mhacourse import real_lm
from mhacourse.real_lm import files
from mhacourse.real_lm import induction as ind
from tolerances import max_err

LOGITS_TOL = 1e-3  # logits of size ~30 after 30 float32 blocks (seen: 6e-5)
ATTENTION_TOL = 1e-4  # weights in [0, 1] (seen: 4e-6)
SENTENCES = ["The cat sat on the mat. The cat sat on the",
             "In 2024, 12345 people paid $3.50 each!",
             "  spaces   and\ttabs\nnewline", "naïve café — 東京",
             "<|im_start|>user hi<|im_end|>"]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def lm():
    return real_lm.load_smollm2()


def hf_model(model):
    transformers = pytest.importorskip("transformers")
    c = model.cfg
    cfg = transformers.LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, intermediate_size=c.d_ff,
        num_hidden_layers=c.n_layers, num_attention_heads=c.h,
        num_key_value_heads=c.h_kv, rms_norm_eps=c.eps, rope_theta=c.rope_base,
        tie_word_embeddings=True, max_position_embeddings=8192,
        attn_implementation="eager")
    ref = transformers.LlamaForCausalLM(cfg).eval()
    ref.load_state_dict(real_lm.hf_state_dict(model))  # strict: every name matches
    return ref


def parity(model, ids):
    ref = hf_model(model)
    with torch.no_grad():
        out = ref(ids, output_attentions=True)
    logits, attention = model.forward(ids)
    return (max_err(logits, out.logits),
            max(max_err(a, b) for a, b in zip(attention, out.attentions)))


def test_smollm2_matches_transformers_llama(lm):
    g = torch.Generator().manual_seed(0)
    ids = torch.cat([torch.randint(17, lm.cfg.vocab, (1, 48), generator=g),
                     lm.encode(SENTENCES[0])[:, :48].repeat(1, 4)[:, :48]])  # (2, 48)
    e_logits, e_attention = parity(lm, ids)
    print(f"SmolLM2 parity: logits {e_logits:.2e}, attention {e_attention:.2e}")
    assert e_logits < LOGITS_TOL, e_logits
    assert e_attention < ATTENTION_TOL, e_attention


def test_a_random_model_of_the_same_architecture_matches_too():
    model = real_lm.random_lm(seed=3)
    ids = torch.randint(0, model.cfg.vocab, (3, 11), generator=torch.Generator().manual_seed(1))
    e_logits, e_attention = parity(model, ids)
    assert e_logits < 1e-5 and e_attention < 1e-6, (e_logits, e_attention)


def test_the_tokenizer_is_the_models(lm):
    transformers = pytest.importorskip("transformers")
    path = files.model_file()
    ref = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for s in SENTENCES:
        assert lm.encode(s)[0].tolist() == ref(s)["input_ids"], s
    assert "".join(lm.decode(lm.encode(SENTENCES[1])[0])) == SENTENCES[1]


def test_it_predicts_what_a_language_model_should(lm):
    logits, attention = lm.forward(lm.encode(SENTENCES[0]))
    assert lm.decode([int(logits[0, -1].argmax())]) == [" mat"]
    A = attention[0][0]  # (h, L, L)
    assert torch.allclose(A.sum(-1), torch.ones(A.shape[:-1]), atol=1e-5)
    assert float(A.triu(1).abs().max()) == 0.0  # causal: no weight on later tokens


# ------------------------------------------------------------------ the file

def test_the_second_load_reads_the_cache_not_the_file(monkeypatch):
    files.load_weights()  # made by the build, or now
    monkeypatch.setattr(files, "_read_gguf", lambda path: pytest.fail("file read again"))
    meta, tensors = files.load_weights()
    assert tensors["token_embd.weight"].shape == (49152, 576)
    assert meta["fields"]["llama.block_count"] == 30


def test_a_cache_made_from_another_file_is_made_again(tmp_path, monkeypatch):
    (tmp_path / "meta.json").write_text(json.dumps({"source": {"size": 1}}))
    torch.save({"x": torch.zeros(1)}, tmp_path / "weights.pt")
    calls = []

    def fake(path):
        calls.append(path)
        return {"llama.block_count": 30}, {"y": torch.ones(2)}, ["a"], []

    monkeypatch.setattr(files, "_read_gguf", fake)
    meta, tensors = files.load_weights(cache=tmp_path)
    assert len(calls) == 1 and list(tensors) == ["y"]
    assert json.loads((tmp_path / "meta.json").read_text())["source"]["size"] > 1
    assert not list(tmp_path.glob("*.part"))  # written whole, then renamed
    files.load_weights(cache=tmp_path)
    assert len(calls) == 1  # the new cache is read


def test_two_first_loads_at_once_dequantize_once(tmp_path, monkeypatch):
    """Two loads at once (two notebooks, two test workers) on an empty cache:
    the second waits for the first's and reads it (one dequantization,
    not two). The first holds the file open until the second has had 2 s
    to reach it: without the lock the second would dequantize too."""
    calls, second = [], threading.Thread(
        target=lambda: got.append(files.load_weights(cache=tmp_path)))
    got = []

    def slow(path):
        calls.append(path)
        if len(calls) == 1:
            second.start()
            t0 = time.perf_counter()
            while len(calls) == 1 and time.perf_counter() - t0 < 2:
                time.sleep(0.02)
        return {"llama.block_count": 30}, {"y": torch.arange(3.0)}, ["a"], []

    monkeypatch.setattr(files, "_read_gguf", slow)
    first = files.load_weights(cache=tmp_path)
    second.join(timeout=60)
    assert len(calls) == 1, "the second load dequantized too"
    assert len(got) == 1 and torch.equal(got[0][1]["y"], first[1]["y"])
    assert got[0][0]["source"] == first[0]["source"]


def bad_files(tmp_path):
    real = files.model_file().read_bytes()[:2_000_000]
    (tmp_path / "cut.gguf").write_bytes(real)
    (tmp_path / "text.gguf").write_text("not a model")
    (tmp_path / "empty.gguf").write_bytes(b"")
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(tmp_path / "other.gguf"), "llama")
    w.add_block_count(2)
    w.add_embedding_length(8)
    w.add_tensor("token_embd.weight", torch.zeros(4, 8).numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"cut short": "cut short", "text": "not a GGUF", "empty": "not a GGUF",
            "other": "not SmolLM2-135M", "missing": "is not a file"}


@pytest.mark.parametrize("name", ["cut", "text", "empty", "other", "missing"])
def test_a_damaged_or_foreign_file_gets_one_line(tmp_path, name):
    expected = bad_files(tmp_path)
    key = {"cut": "cut short"}.get(name, name)
    with pytest.raises(mc.InputError) as e:
        files.load_weights(tmp_path / f"{name}.gguf", cache=tmp_path / "cache")
    assert expected[key] in str(e.value) and "\n" not in str(e.value), str(e.value)


# ---------------------------------------------------------------- induction

def test_induction_heads_are_found_and_switching_them_off_removes_copying(lm):
    ids = ind.repeated_tokens(lm, n=3, half=30, seed=1)  # (3, 60)
    clean = ind.copy_losses(lm, ids)  # (3, 2)
    assert bool((clean[:, 1] < clean[:, 0] - 5).all()), clean  # the copy is predicted
    scores = ind.head_scores(lm, ids).mean(0)  # (30, 9, 2)
    top = ind.top_heads(scores[..., 1], 5)
    assert scores[top[0]][1] > 0.5  # a head puts most of its weight on the next token
    off = ind.copy_losses(lm, ids, ind.without(lm, top))[:, 1]
    rand = [ind.copy_losses(lm, ids, ind.without(lm, ind.random_heads(
        lm, 5, s, exclude=top)))[:, 1].mean() for s in range(3)]
    assert float(off.mean()) > 2 * max(map(float, rand)), (off, rand)


def test_the_detectors_are_the_tiny_models():
    """On the tiny model's own planted induction model, the real-LM read-out
    gives the circuits module's prefix-matching score: one definition."""
    model = real_lm.random_lm(seed=0)
    ids = ind.repeated_tokens(model, n=2, half=5, seed=0)
    scores = ind.head_scores(model, ids)  # (2, 2, 4, 2)
    _, attention, _ = real_lm.model._forward_core(ids, model.w, model.cfg)
    from mhacourse.circuits.core import _prefix_of_core
    assert torch.allclose(scores.mean(0)[..., 1], _prefix_of_core(attention).float(),
                          atol=1e-6)


def test_kv_groups_and_masks(lm):
    assert [ind.kv_group(lm, i) for i in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    m = ind.without(lm, [(0, 1), (29, 8)])
    assert m.sum() == 268 and m[0, 1] == 0 and m[29, 8] == 0


def test_replacing_heads_by_their_own_values_changes_nothing():
    model = real_lm.random_lm(seed=2)
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(0))
    logits, heads = model.forward_heads(ids)
    mask = torch.zeros(2, 4)
    same, _ = model.forward_heads(ids, mask, heads)
    zero, _ = model.forward_heads(ids, mask)
    assert max_err(same, logits) < 1e-5
    assert max_err(zero, logits) > 1e-3


BAD = {
    "ids past the vocabulary": lambda m: m.forward(torch.tensor([[0, 49152]])),
    "float ids": lambda m: m.forward(torch.zeros(1, 3)),
    "too long": lambda m: m.forward(torch.zeros(1, 513, dtype=torch.long)),
    "empty text": lambda m: m.encode("   "),
    "text not str": lambda m: m.encode(3),
    "head mask shape": lambda m: m.forward(torch.zeros(1, 3, dtype=torch.long),
                                           torch.ones(30, 8)),
    "head mask NaN": lambda m: m.forward(torch.zeros(1, 3, dtype=torch.long),
                                         torch.full((30, 9), float("nan"))),
    "head out of range": lambda m: ind.without(m, [(0, 9)]),
    "layer out of range": lambda m: ind.without(m, [(30, 0)]),
    "head twice": lambda m: ind.without(m, [(0, 1), (0, 1)]),
    "not repeated": lambda m: ind.copy_losses(m, torch.arange(20, 30)[None]),
    "half too small": lambda m: ind.repeated_tokens(m, half=2),
    "values without mask": lambda m: m.forward_heads(
        torch.zeros(1, 3, dtype=torch.long), None, torch.zeros(30, 1, 9, 3, 64)),
    "values NaN": lambda m: m.forward_heads(
        torch.zeros(1, 3, dtype=torch.long), torch.zeros(30, 9),
        torch.full((30, 1, 9, 3, 64), float("nan"))),
    "k too large": lambda m: ind.random_heads(m, 271),
    "scores with NaN": lambda m: ind.top_heads(torch.full((30, 9), float("nan")), 3),
    "decode out of range": lambda m: m.decode([49152]),
    "exclude not a list": lambda m: ind.random_heads(m, 3, exclude=None),
}


@pytest.mark.parametrize("label", list(BAD))
def test_bad_input_gets_one_line(lm, label):
    with pytest.raises(mc.InputError) as e:
        BAD[label](lm)
    assert "\n" not in str(e.value), str(e.value)


def test_a_config_that_lies_about_its_weights_is_refused():
    import dataclasses

    model = real_lm.random_lm(seed=0)
    model.cfg = dataclasses.replace(model.cfg, h_kv=1)  # W_K is (16, 8), not (16, 4)
    with pytest.raises(mc.InputError, match="disagrees with its weights"):
        model.forward(torch.zeros(1, 3, dtype=torch.long))


def test_int32_ids_give_the_same_losses_as_int64():
    """Found by the fuzz test: int32 ids passed the id check, then
    cross_entropy refused them with a raw RuntimeError."""
    model = real_lm.random_lm(seed=1)
    ids = torch.tensor([[5, 6, 7, 5, 6, 7]])
    assert torch.equal(ind.copy_losses(model, ids.int()), ind.copy_losses(model, ids))
