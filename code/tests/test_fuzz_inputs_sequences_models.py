"""Random arguments for the public functions of the sequence modules
(batching, positions, decoder, kv_cache) and the models' (tasks,
tiny_model, web_export):
each argument is drawn from good values and a pool of bad ones (None,
strings, bools, NaN/inf, negative and huge numbers, lists, NumPy arrays,
tensors of the wrong dtype or shape, with NaN).

Each call must return an answer with no NaN or inf in it, or raise the
package's own InputError from the package's code; never an exception from
inside torch, NumPy, safetensors or Python.
"""
from __future__ import annotations

import math
import traceback

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mhacourse as mc
from mhacourse import batching, decoder, kv_cache, positions, tasks
from mhacourse import tiny_model as tm
from mhacourse import web_export as wx

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
G = torch.Generator().manual_seed(5)
NAN, INF = float("nan"), float("inf")
COUNTS: dict = {}


def junk(good):
    """A strategy: mostly ``good`` (a list of good values), else something bad."""
    bad = [None, "3", "", True, False, 0, -1, 2**70, 1.5, NAN, INF, -INF, [1, 2],
           [[1.0]], (), {}, np.zeros(3), np.ones((2, 2)), torch.tensor(1.0),
           torch.zeros(0), torch.ones(2, 3, dtype=torch.long), torch.full((2, 4), NAN),
           torch.ones(1, 2, 3, 4, dtype=torch.bool), torch.ones(2, 2, dtype=torch.complex64),
           torch.float32, torch.long, b"x", object()]
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(bad))


def call(fn, *args, _nan_ok=False, **kwargs):
    """``fn(*args, **kwargs)``: an answer free of NaN/inf (unless ``_nan_ok``:
    NaN asked for with allow_nonfinite=True), or an InputError."""
    name = getattr(fn, "__qualname__", type(fn).__name__)
    tally = COUNTS.setdefault(name, [0, 0])
    try:
        result = fn(*args, **kwargs)
    except mc.InputError as e:
        tally[1] += 1
        frame = traceback.extract_tb(e.__traceback__)[-1]
        assert "/mhacourse/" in frame.filename, frame
        assert "\n" not in str(e), str(e)
        return None
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"{name}: {type(e).__name__} from inside: {e}\n"
                    + "".join(traceback.format_exception(e)))
    tally[0] += 1
    if not _nan_ok:
        _assert_finite(result, name)
    return result


def _assert_finite(result, name):
    if isinstance(result, torch.Tensor) and (result.is_floating_point()
                                             or result.is_complex()):
        assert bool(torch.isfinite(result).all()), f"{name} returned NaN/inf silently"
    elif isinstance(result, float):
        assert math.isfinite(result), f"{name} returned NaN silently"
    elif isinstance(result, (tuple, list)):
        for r in result:
            _assert_finite(r, name)
    elif isinstance(result, dict):
        for r in result.values():
            _assert_finite(r, name)


def ft(*shape):
    return torch.randn(*shape, generator=G)


SEQS = [[ft(3, 4), ft(2, 4)], [ft(1, 2)], [ft(2, 4), ft(2, 4).double()],
        [ft(2, 4), torch.ones(2, 4, dtype=torch.long)], [torch.full((2, 2), NAN)]]
LM = kv_cache.random_causal_lm(vocab=11, d_model=8, h=4, h_kv=2, n_layers=1, max_len=6)
CFG = tm.TinyConfig(h=2, d_k=4)
TINY = tm.TinyTransformer(CFG).eval()
IDS = [torch.tensor([[1, 2, 3]]), torch.tensor([[0]]), torch.tensor([[10, 11]]),
       torch.tensor([[-1, 2]]), torch.zeros(1, 7, dtype=torch.long),
       torch.tensor([1, 2]), torch.tensor([[1.0, 2.0]]), torch.tensor([[1, 2]]).int()]


@FUZZ
@given(seqs=junk(SEQS), pad=junk([0.0, -1.0, 2]), allow=junk([False]),
       lengths=junk([[1, 2], [3, 3], torch.tensor([2, 1])]), L=junk([3, 4]),
       causal=junk([True, False]))
def test_fuzz_batching(seqs, pad, allow, lengths, L, causal):
    call(batching.pad_batch, seqs, pad, allow_nonfinite=allow, _nan_ok=allow is True)
    call(batching.batch_mask, lengths, L, causal)


@FUZZ
@given(weights=junk([torch.softmax(ft(2, 3, 3), -1), torch.softmax(ft(3, 3), -1)]),
       p=junk([0.0, 0.1, 0.5, 0.99]), training=junk([True, False]),
       generator=junk([None, torch.Generator().manual_seed(1)]))
def test_fuzz_dropout(weights, p, training, generator):
    call(batching.attention_dropout, weights, p, training, generator)
    q = ft(1, 2, 3, 4)
    call(batching.attention_with_dropout, q, q, q, None, p, training, generator)


@FUZZ
@given(L=junk([1, 5, 16]), d=junk([2, 4, 8]), base=junk([10000.0, 500, 2.0]),
       dtype=junk([torch.float32, torch.float64, torch.float16]),
       x=junk([ft(5, 8), ft(2, 5, 4), ft(1, 2)]),
       pos=junk([None, torch.arange(5), torch.tensor([3.0, 1.0, 2.0, 0.0, 4.0]),
                 torch.arange(5) - 10]))
def test_fuzz_positions(L, d, base, dtype, x, pos):
    call(positions.sinusoidal_positions, L, d, base, dtype)
    call(positions.rotary_angles, pos, d, base)
    call(positions.rotary, x, pos, base)


@FUZZ
@given(y=junk([ft(2, 3, 8), ft(3, 8)]), memory=junk([ft(2, 5, 8), ft(5, 8)]),
       h=junk([1, 2, 4]), mask=junk([None, torch.zeros(2, 5, dtype=torch.bool)]),
       tgt=junk([None, mc.causal_mask(3)]))
def test_fuzz_decoder(y, memory, h, mask, tgt):
    w = mc.random_weights(8, 2)
    call(decoder.cross_attention, y, memory, w, h, mask)
    p = decoder.decoder_weights_from_torch(torch.nn.TransformerDecoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True).eval())
    call(decoder.decoder_layer, y, memory, p, h, tgt_mask=tgt)


@FUZZ
@given(sizes=st.tuples(junk([1, 2]), junk([1, 2]), junk([2, 4]), junk([3, 6])),
       dtype=junk([torch.float32, torch.float64]),
       K=junk(["fit", "fit", ft(1, 2, 3, 2), ft(1, 2, 7, 2), ft(1, 2, 1, 2).double()]),
       x=junk([ft(1, 2, 8), ft(1, 1, 8), ft(2, 1, 8)]), h_kv=junk([1, 2, 4]))
def test_fuzz_kv_cache(sizes, dtype, K, x, h_kv):
    cache = call(kv_cache.KVCache, *sizes, dtype)
    if cache is not None:
        if isinstance(K, str) and K == "fit":  # the cache's own shape and dtype
            B, h_kv_, _, d_k = cache.K.shape
            K = torch.randn(B, h_kv_, 1, d_k, generator=G).to(cache.K.dtype)
        call(cache.append, K, K)
    w = LM.attention_weights[0]
    call(kv_cache.attention_step, x, w, 4, h_kv, kv_cache.KVCache(1, 2, 2, 6))


@FUZZ
@given(ids=junk(IDS), n_new=junk([1, 2, 3]), use_cache=junk([True, False]),
       B=junk([1, 2]), cache_len=junk([None, 2, 6]))
def test_fuzz_causal_lm(ids, n_new, use_cache, B, cache_len):
    call(kv_cache.forward_full, LM, ids)
    caches = call(LM.new_caches, B, cache_len)
    if caches is not None:
        call(kv_cache.forward_cached, LM, ids, caches)
    call(kv_cache.generate, LM, ids, n_new, use_cache)


@FUZZ
@given(sizes=st.tuples(junk([1, 2]), junk([4, 8]), junk([1, 2])),
       lr=junk([None, 1e-3]), warmup=junk([0, 10]), decay=junk([0.0, 0.1]),
       seed=junk([0, 3]))
def test_fuzz_tiny_config(sizes, lr, warmup, decay, seed):
    h, d_k, n_layers = sizes
    cfg = call(tm.TinyConfig, h=h, d_k=d_k, n_layers=n_layers, lr=lr, warmup=warmup,
               weight_decay=decay)
    if cfg is not None:
        call(tm.TinyTransformer, cfg, seed)


@FUZZ
@given(ids=junk(IDS), flag=junk([True, False]),
       sentence=junk(["The cat sat.", ["the", "cat"], "the zebra", "the cat " * 9]),
       trained=junk([True, False]), h=junk([1, 2, 16]), d_k=junk([4, 8]))
def test_fuzz_tiny_model(ids, flag, sentence, trained, h, d_k):
    call(TINY, ids, return_attention=flag)
    call(tm.attention_on, TINY, sentence)
    call(tm.model_name, h, d_k, trained)
    call(wx.load_tiny, h, d_k, trained)


@FUZZ
@given(text=junk(["The cat sat.", "", "didn't"]),
       tokens=junk([["the", "cat"], [], ("a", "zebra")]),
       ids=junk([[1, 2], torch.tensor([3, 4]), np.array([5]), []]),
       n=junk([1, 3]), seed=junk([0, 7]), L=junk([4, 16]),
       x=junk([tasks.sample(2, seed=0)[0], torch.tensor([[1, 2, 1]])]),
       words=junk([["a", "b", "a"], (1, 2, 1)]))
def test_fuzz_tasks(text, tokens, ids, n, seed, L, x, words):
    call(tasks.split_words, text)
    call(tasks.word_ids, tokens)
    call(tasks.word_ids, text)
    call(tasks.decode, ids)
    cfg = call(tasks.TaskConfig, L=L, n_min=2, n_max=4)
    if cfg is not None:
        call(tasks.sample, n, cfg, seed=seed)
    call(tasks.targets, x)
    call(tasks.targets_reference, words)


@FUZZ
@given(weights=junk([np.array([0.0, 0.5, 1.0]), torch.rand(2, 3)]))
def test_fuzz_quantize(weights):
    call(wx.quantize, weights)


def test_fuzz_newer_reached_both_outcomes():
    """Every fuzzed function both answered and refused at least once."""
    assert COUNTS, "run with the other fuzz tests"
    one_sided = {k: v for k, v in COUNTS.items() if not all(v)}
    assert not one_sided, one_sided
