"""Issue 36's list for the read-outs, each as the package's one-line error:
a model whose config lies about its weights, heads that write nothing,
noise pools that are not the course's, three layers, a list for ``kind``,
sizes that would take half a minute, int32 ids for a training step.
(The fuzz test, test_fuzz_public_api.py, finds such inputs by itself; these
rows pin the ones the issue names.)"""
from __future__ import annotations

import dataclasses
import time

import pytest
import torch
from bad_input_checks import assert_the_packages_error

import mhacourse as mc
from mhacourse import circuits as C
from mhacourse import tasks
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import step as st

pytestmark = pytest.mark.usefixtures("one_thread")


def model(h=4, d_k=8, n_layers=2, **cfg):
    m = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k, n_layers=n_layers))
    if cfg:
        m.cfg = dataclasses.replace(m.cfg, **cfg)
    return m


def relabelled():
    return model(h=8, d_k=4)


READERS = {
    "read_circuits": lambda m: C.read_circuits(m),
    "composition_scores": lambda m: C.composition_scores(m, "k"),
    "copying_proxy": lambda m: C.copying_proxy(m, 0, 0),
    "copying_score": lambda m: C.copying_score(m, 0, 0),
    "qk_matrix": lambda m: C.qk_matrix(m, 0, 0),
    "prefix_matching_scores": lambda m: C.prefix_matching_scores(m),
    "forward": lambda m: m(tasks.sample(1, seed=0)[0]),
    "head_scores": lambda m: tm.head_scores(m),
    "from_tiny_model": lambda m: tm.from_tiny_model(m),
}


@pytest.mark.parametrize("lie", [dict(h=8, d_k=4), dict(h=5), dict(n_layers=3)],
                         ids=["h8-d_k4", "h5", "n_layers3"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_config_that_lies_about_the_weights_is_refused(reader, lie):
    m = model()
    m.cfg = dataclasses.replace(m.cfg, **lie)
    with pytest.raises(mc.InputError) as info:
        READERS[reader](m)
    assert_the_packages_error(info, "model.cfg")


def test_heads_that_write_nothing_are_refused_not_nan():
    m = model()
    with torch.no_grad():
        m.blocks[0].attn.W_O[:8].zero_()  # head 0 of block 0
    for read in (lambda: C.read_circuits(m), lambda: C.copying_score(m, 0, 0),
                 lambda: C.copying_proxy(m, 0, 0), lambda: C.composition_scores(m, "v")):
        with pytest.raises(mc.InputError) as info:
            read()
        assert_the_packages_error(info, "L1H1")
    assert torch.isfinite(torch.tensor(C.copying_proxy(m, 0, 1)))  # the others read


@pytest.mark.parametrize("noise, arg", [
    (torch.full((2**18,), float("nan")), "NaN"),
    (torch.arange(2**18), "noise"),
    (torch.ones(1), "power of 2"),
    (torch.zeros(0), "noise"),
    (torch.zeros(2**18), "standard deviation"),
], ids=["nan", "int", "one-entry", "empty", "zeros"])
def test_noise_pools_are_checked(noise, arg):
    for read in (lambda: C.composition_baseline(32, 8, "k", noise=noise),
                 lambda: C.read_circuits(model(), noise=noise)):
        with pytest.raises(mc.InputError) as info:
            read()
        assert_the_packages_error(info, arg)


def test_three_layers_and_a_list_kind_are_refused():
    with pytest.raises(mc.InputError) as info:
        C.read_circuits(model(n_layers=3))
    assert_the_packages_error(info, "n_layers = 3")
    with pytest.raises(mc.InputError) as info:
        C.composition_scores(model(), ["k"])
    assert_the_packages_error(info, "kind")


def test_composition_score_of_extreme_entries_is_finite_and_unchanged():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(6, 4, dtype=torch.float64, generator=g)
    B = torch.randn(4, 5, dtype=torch.float64, generator=g)
    want = C.composition_score(A, B)
    for scale in (1e200, 1e-200):
        assert C.composition_score(A * scale, B) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("call, arg", [
    (lambda m: C.composition_scores(m, "k"), "read_circuits"),
    (lambda m: C.composition_baseline(1024, 16, "k", samples=64), "fewer samples"),
], ids=["scores-d_model-1024", "baseline-64-samples"])
def test_sizes_that_take_half_a_minute_are_refused_in_a_second(call, arg):
    m = model(h=4, d_k=256)  # d_model 1024
    t = time.process_time()  # CPU time: a machine busy with other work stretches the wall clock
    with pytest.raises(mc.InputError) as info:
        call(m)
    assert_the_packages_error(info, arg)
    assert time.process_time() - t < 5


def test_train_step_refuses_int32_ids():
    P = tuple(p.detach() for p in model().parameters())
    zeros = tuple(torch.zeros_like(p) for p in P)
    x = tasks.sample(2, seed=0)[0]
    with pytest.raises(mc.InputError) as info:
        st.train_step(P, zeros, zeros, 0, 10, x.int(), torch.zeros(4))
    assert_the_packages_error(info, "x.long()")
