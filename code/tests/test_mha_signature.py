"""One multi-head attention signature: the batched, loop and fused forms,
grouped-query attention (which adds only ``h_kv``) and the NumPy twins take
the same arguments, and give the same numbers on the same input."""
import inspect

import numpy as np
import pytest
import torch

import mhacourse as mc
from mhacourse import gqa
from mhacourse import reference_np as rnp

MHA = mc.multi_head_attention
FORMS = {
    "loop": mc.multi_head_attention_loop,
    "fast": mc.multi_head_attention_fast,
    "gqa": gqa.grouped_query_attention,
    "numpy": rnp.multi_head_attention,
    "numpy-loop": rnp.multi_head_attention_loop,
}
#: what a form may add to multi_head_attention's parameters: only what its
#: mathematics needs
EXTRA = {"gqa": ["h_kv"]}


def params(fn):
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(fn).parameters.values()]


def test_the_shared_signature_is_the_one_the_docstring_gives():
    assert [p[0] for p in params(MHA)] == [
        "query", "key", "value", "w", "h", "attn_mask", "key_padding_mask",
        "return_concat", "allow_nonfinite"]
    kinds = {name: kind for name, kind, _ in params(MHA)}
    assert all(kinds[n] == inspect.Parameter.POSITIONAL_OR_KEYWORD
               for n in ("query", "key", "value", "w", "h"))
    assert all(kinds[n] == inspect.Parameter.KEYWORD_ONLY
               for n in ("attn_mask", "key_padding_mask", "return_concat",
                         "allow_nonfinite"))


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_shares_the_signature(form):
    """Same names, order, kinds and defaults for the parameters a form shares
    with multi_head_attention; it adds only ``EXTRA[form]``, and leaves out
    only ``return_concat`` (the loop and the fused path have no concat)."""
    ours = params(FORMS[form])
    ref = {p[0]: p for p in params(MHA)}
    shared = [p for p in ours if p[0] in ref]
    assert shared == [ref[name] for name in
                      [p[0] for p in params(MHA)] if name in dict(
                          (p[0], p) for p in ours)]
    assert [p[0] for p in ours if p[0] not in ref] == EXTRA.get(form, [])
    assert set(ref) - {p[0] for p in ours} <= {"return_concat"}
    if form == "gqa":  # h_kv comes right after h, positional like h
        names = [p[0] for p in ours]
        assert names.index("h_kv") == names.index("h") + 1
        assert ours[names.index("h_kv")][1] == inspect.Parameter.POSITIONAL_OR_KEYWORD
    if form.startswith("numpy"):  # a NumPy twin differs only in taking arrays
        twin = mc.multi_head_attention_loop if form == "numpy-loop" else MHA
        assert ours == params(twin)


def setting(seed=0, B=2, L=5, S=7, d_model=24, h=4):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, L, d_model, generator=g, dtype=torch.float64)
    kv = torch.randn(B, S, d_model, generator=g, dtype=torch.float64)
    w = mc.random_weights(d_model, h, seed=seed, dtype=torch.float64)  # biases
    attn_mask = torch.rand(L, S, generator=g) < 0.3
    attn_mask[:, 0] = False  # no row blocks every key
    kpm = mc.padding_mask([S, S - 2], S)  # (B, S), True = padded
    return q, kv, w, h, dict(attn_mask=attn_mask, key_padding_mask=kpm)


@pytest.mark.parametrize("masked", [False, True])
def test_gqa_with_h_kv_equal_h_is_multi_head_attention(masked):
    q, kv, w, h, masks = setting()
    kw = masks if masked else {}
    out, A, concat = MHA(q, kv, kv, w, h, return_concat=True, **kw)
    g_out, g_A, g_concat = gqa.grouped_query_attention(
        q, kv, kv, w, h, h, return_concat=True, **kw)
    assert (g_out - out).abs().max() <= 1e-12
    assert (g_A - A).abs().max() <= 1e-12
    assert (g_concat - concat).abs().max() <= 1e-12
    if masked:  # the masks did something: blocked keys get weight 0
        assert torch.all(A[1, :, :, -2:] == 0) and torch.all(g_A[1, :, :, -2:] == 0)
    # unbatched (tokens, d_model) input, as for nn.MultiheadAttention
    o1, A1 = gqa.grouped_query_attention(q[0], kv[0], kv[0], w, h, h)
    r1, R1 = MHA(q[0], kv[0], kv[0], w, h)
    assert (o1 - r1).abs().max() <= 1e-12 and (A1 - R1).abs().max() <= 1e-12


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("form", ["numpy", "numpy-loop"])
def test_numpy_equals_multi_head_attention_in_float64(form, masked):
    q, kv, w, h, masks = setting(seed=1)
    kw = masks if masked else {}
    out, A = MHA(q, kv, kv, w, h, **kw)
    wn = rnp.MHAWeights(**{k: v.numpy() for k, v in vars(w).items()})
    qn, kvn = q.numpy(), kv.numpy()
    nkw = {k: v.numpy() for k, v in kw.items()}
    o, a = FORMS[form](qn, kvn, kvn, wn, h, **nkw)
    assert isinstance(o, np.ndarray) and o.shape == tuple(out.shape)
    assert np.abs(o - out.numpy()).max() <= 1e-6
    assert np.abs(a - A.numpy()).max() <= 1e-6
    # the PyTorch weights are read as NumPy too; unbatched input works
    o1, a1 = FORMS[form](qn[0], kvn[0], kvn[0], w, h)
    r1, R1 = MHA(q[0], kv[0], kv[0], w, h)
    assert np.abs(o1 - r1.numpy()).max() <= 1e-6
    assert np.abs(a1 - R1.numpy()).max() <= 1e-6
    if form == "numpy":
        _, _, c = rnp.multi_head_attention(qn, kvn, kvn, wn, h, return_concat=True,
                                           **nkw)
        _, _, ref_c = MHA(q, kv, kv, w, h, return_concat=True, **kw)
        assert np.abs(c - ref_c.numpy()).max() <= 1e-6


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_gives_the_same_message_for_the_same_mistake(form):
    """The shared checks: an h that does not divide d_model, a mask passed
    by position and inputs of mixed rank get one InputError saying so."""
    q, kv, w, h, masks = setting()
    fn = FORMS[form]
    if form.startswith("numpy"):
        q, kv = q.numpy(), kv.numpy()
    head = (q, kv, kv, w, 5) + ((1,) if form == "gqa" else ())
    with pytest.raises(mc.InputError, match=r"h = 5 heads cannot split d_model = 24"):
        fn(*head)
    good = (q, kv, kv, w, h) + ((h,) if form == "gqa" else ())
    with pytest.raises(mc.InputTypeError, match=r"keyword-only"):
        fn(*good, masks["attn_mask"])
    with pytest.raises(mc.InputError, match=r"query, key and value must all be"):
        fn(q[0], kv, kv, w, h, *((h,) if form == "gqa" else ()))
