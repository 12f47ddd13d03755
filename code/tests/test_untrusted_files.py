"""Issue 48, finding 5: model files are not believed. A file's metadata is
tied to its weights by a digest (tiny_model/files.py); each case below
opened silently, or slowly, before it."""
from __future__ import annotations

import json
import time

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import mhacourse as mc
from mhacourse import tiny_model as tm
from mhacourse.catalogue import assets_dir


def parts(path):
    with safe_open(str(path), "pt") as f:
        return dict(f.metadata()), {k: f.get_tensor(k) for k in f.keys()}


def refused(path, words):
    with pytest.raises(mc.InputError, match=words) as e:
        tm.load(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=8), seed=1)
    return model, tm.save(model, tmp_path_factory.mktemp("m") / "a.safetensors")


def test_save_writes_a_digest_and_load_checks_it(saved):
    model, path = saved
    meta, _ = parts(path)
    assert meta["digest"].startswith("sha256:") and len(meta["digest"]) == 71
    back = tm.load(path)
    for a, b in zip(model.state_dict().values(), back.state_dict().values()):
        assert torch.equal(a.half().float(), b)


def test_same_shapes_other_heads_are_refused(saved, tmp_path):
    # h 2 x d_k 8 relabelled h 4 x d_k 4: the same 16 columns; it opened
    # silently, and its logits were off
    _, path = saved
    meta, tensors = parts(path)
    cfg = json.loads(meta["config"])
    cfg.update(h=4, d_k=4)
    save_file(tensors, str(tmp_path / "lie.safetensors"),
              metadata={**meta, "config": json.dumps(cfg)})
    refused(tmp_path / "lie.safetensors", "does not match its digest")
    save_file(tensors, str(tmp_path / "extra.safetensors"),
              metadata={**meta, "extra": '{"seed": 9}'})
    refused(tmp_path / "extra.safetensors", "does not match its digest")


def test_a_trained_file_without_a_digest_is_refused(saved, tmp_path):
    _, path = saved
    meta, tensors = parts(path)
    del meta["digest"]
    save_file(tensors, str(tmp_path / "old.safetensors"), metadata=meta)
    refused(tmp_path / "old.safetensors", "no digest")


def test_an_untrained_file_without_a_digest_is_rebuilt(saved, tmp_path):
    model, _ = saved
    path = tm.save(model, tmp_path / "init.safetensors", init_seed=1)
    meta, _ = parts(path)
    del meta["digest"]
    save_file({}, str(tmp_path / "old_init.safetensors"), metadata=meta)
    back = tm.load(tmp_path / "old_init.safetensors")
    assert tm.fingerprint(back) == tm.fingerprint(model)


def test_a_seed_with_weights_beside_it_is_refused(saved, tmp_path):
    # tm.load used to rebuild from the seed and drop the weights silently
    model, path = saved
    _, tensors = parts(path)
    meta, _ = parts(tm.save(model, tmp_path / "init.safetensors", init_seed=1))
    del meta["digest"]
    save_file(tensors, str(tmp_path / "both.safetensors"), metadata=meta)
    refused(tmp_path / "both.safetensors", "both an untrained model's seed")


def test_a_lying_config_is_refused_before_a_build(saved, tmp_path):
    # a 38M-parameter config over a 2 x 8 model's weights, with a digest
    # that matches (written by hand): refused from the shapes, not after
    # building the big model (7.7 s before, for 49M)
    from mhacourse.tiny_model.files import _digest
    _, path = saved
    meta, tensors = parts(path)
    cfg = json.loads(meta["config"])
    cfg.update(h=16, d_k=112)
    meta["config"] = json.dumps(cfg)
    meta["digest"] = _digest(meta, tensors)
    save_file(tensors, str(tmp_path / "big.safetensors"), metadata=meta)
    t0 = time.process_time()
    refused(tmp_path / "big.safetensors", "has shape|does not match its config")
    assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize("folder", ["models", "runs"])
def test_the_committed_files_carry_digests(folder):
    files = sorted((assets_dir() / folder).glob("*.safetensors"))
    assert files
    for path in files:
        assert "digest" in parts(path)[0], path
