"""The Patch view's two graphs (mhacourse.web_patch: patch, then ablate),
run with onnxruntime on one thread, against the package: every map equals
patching_map and ablation_map (unit "head") within 1e-4 on the main run's
model (seen 1.8e-7), the clean and corrupted ends equal logit_diff, a
random model of another size agrees with _maps_core in PyTorch, and the
pairs the build writes are corrupt()'s."""
from pathlib import Path

import numpy as np
import pytest
import torch

import mhacourse as mc
from mhacourse import interventions as iv
from mhacourse import tiny_model as tm
from mhacourse import web_patch, web_train
from mhacourse.catalogue import assets_dir
from mhacourse.tiny_model import step as st

ort = pytest.importorskip("onnxruntime")
BUILT = Path(__file__).resolve().parents[2] / "_generated" / "explorer-data" / "train"
TOL = 1e-4  # the page-vs-Python bound on a fraction recovered
pytestmark = pytest.mark.usefixtures("one_thread")


class Both:
    """The patch and ablate graphs run one after the other, as the page
    does: ``run`` gives the ends and the five maps in MAPS order."""

    def __init__(self, sessions):
        self.sessions = sessions

    def run(self, _, feeds):
        out = [s.run(None, feeds) for s in self.sessions]
        assert np.array_equal(out[0][0], out[1][0])  # the same ends
        return out[0][0], np.concatenate([f for _, f in out])


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ort.set_default_logger_severity(3)
    out = []
    for kind in web_patch.GRAPHS:
        path = BUILT / f"{kind}.onnx"
        if not path.exists():  # no build yet: export it (a minute or two)
            path = web_train.export(kind, tmp_path_factory.mktemp(kind) / f"{kind}.onnx")
        out.append(ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]))
    return Both(out)


def feed(model, p) -> dict:
    w = dict(model.named_parameters())
    out = {k.replace(".", "_"): w[k].detach().numpy() for k in st.param_names()}
    return {**out, "clean": p.clean.numpy(), "corrupted": p.corrupted.numpy(),
            "answer": p.answer.numpy(), "rival": p.rival.numpy(),
            "positions": p.positions.numpy(),
            "heads": np.zeros(model.cfg.h, np.float32)}


@pytest.mark.parametrize("name", list(iv.CORRUPTIONS))
def test_the_graph_gives_the_packages_maps(session, name):
    model = tm.load(assets_dir() / "runs" / "main.safetensors")
    p = iv.corrupt(name, 64, seed=3)
    ends, fractions = session.run(None, feed(model, p))
    with torch.no_grad():
        want = [mc.logit_diff(model.forward_heads(ids)[0], *p[2:])
                for ids in (p.clean, p.corrupted)]
    assert np.allclose(ends, want, atol=1e-4)
    maps = ([mc.patching_map(model, p, d) for d in iv.DIRECTIONS]
            + [mc.ablation_map(model, p, m) for m in iv.METHODS])
    assert fractions.shape == (5, 2, 4) and list(web_patch.MAPS) == [
        *iv.DIRECTIONS, *iv.METHODS]
    for got, ref, what in zip(fractions, maps, web_patch.MAPS, strict=True):
        assert np.abs(got - ref.numpy()).max() < TOL, what


def test_another_size_agrees_with_maps_core(session):
    model = tm.TinyTransformer(tm.TinyConfig(h=3, d_k=8), seed=5)
    p = iv.corrupt("occurrence", 16, seed=0)
    ends, fractions = session.run(None, feed(model, p))
    params = tuple(model.state_dict().values())
    with torch.no_grad():
        e, f = web_patch._patch_core(params, p.clean, p.corrupted, p.answer, p.rival,
                                    p.positions, torch.zeros(3))
        _, heads = model.forward_heads(p.clean)
        _, mine = web_patch._heads_core(params, p.clean, torch.zeros(3))
    assert torch.equal(heads, mine)
    assert np.allclose(ends, e.numpy(), atol=1e-5)
    assert np.allclose(fractions, f.numpy(), atol=1e-3 * max(1, float(f.abs().max())))


def test_the_pairs_written_are_corrupts(tmp_path):
    entry = web_patch.manifest_entry(tmp_path)
    assert entry["maps"] == list(web_patch.MAPS) and entry["min_gap"] == iv.MIN_GAP
    assert entry["graphs"] == {"patch": list(iv.DIRECTIONS), "ablate": list(iv.METHODS)}
    assert [m for ms in entry["graphs"].values() for m in ms] == entry["maps"]
    assert [c["name"] for c in entry["corruptions"]] == list(iv.CORRUPTIONS)
    for c in entry["corruptions"]:
        table = np.fromfile(tmp_path / c["file"], np.uint16).reshape(c["shape"])
        p = iv.corrupt(c["name"], web_patch.N_PAIRS, seed=web_patch.SEED)
        assert table.shape == (web_patch.N_PAIRS, 35)
        assert (table[:, :16] == p.clean.numpy()).all()
        assert (table[:, 16:32] == p.corrupted.numpy()).all()
        assert (table[:, 32:].T == np.stack([p.answer, p.rival, p.positions])).all()


def test_bad_input_gets_one_line(tmp_path):
    for call in (lambda: web_patch.write_pairs(tmp_path / "none"),
                 lambda: web_patch.graph(["a"], (), 3),
                 lambda: web_patch.graph([], (), 3, "both")):
        with pytest.raises(mc.InputError) as e:
            call()
        assert "\n" not in str(e.value)
