"""The page's lab modules (assets/site/explorer/lab/) against the package:
Node's own tests (tests/js), and the same grades from the page's grade.js
and mhacourse.checks.predictions on the records of real runs."""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import tempfile

import pytest

import mhacourse as mc
from mhacourse import tiny_model as tm
from mhacourse import web_patch
from mhacourse.catalogue import assets_dir
from mhacourse.checks import predictions as P
from site_browser import ROOT

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None,
                                reason="Node.js is not installed (README: Node >= 18)")


def node(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@needs_node
def test_node_tests_pass():
    out = node("--test", "tests/js/")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "# fail 0" in out.stdout and "# pass 0" not in out.stdout


def committed_records() -> dict:
    """Records of real runs at two sizes: chapter 11's main run (h 4, d_k
    16, read every 20 steps), its identical start, and the grid's h 8,
    d_k 8 model (its recorded history, every 50 steps)."""
    runs, models = assets_dir() / "runs", assets_dir() / "models"
    out = {}
    for name, same in (("main", False), ("identical", True)):
        run = json.loads((runs / f"{name}.json").read_text())
        metrics = {"steps": run["train"]["steps"], "seed": 0, "history": run["history"]}
        out[name] = P.run_record(tm.load(runs / f"{name}.safetensors"), metrics, same)
    grid = next(m for m in json.loads((models / "metrics.json").read_text())["models"]
                if m["name"] == "h8_dk8")
    out["h8_dk8"] = P.run_record(tm.load(models / "h8_dk8.safetensors"),
                                 {"steps": grid["steps"], "seed": 0, "history": grid["history"]})
    return out


def cases() -> list[dict]:
    """Every answer to every question, on each record finished and cut
    short (before and after its phase change), and two bad predictions."""
    bank = P.questions()["questions"]
    out = []
    for record in committed_records().values():
        steps = [e["step"] for e in record["history"]]
        cuts = [record] + [copy.deepcopy(record) for _ in range(2)]
        for cut, at in zip(cuts[1:], (steps[len(steps) // 4], steps[-3])):
            cut["step"] = at
            cut["history"] = [e for e in cut["history"] if e["step"] <= at]
        for r in cuts:
            for k in range(max(len(q["answers"]) for q in bank)):
                pred = {q["id"]: list(q["answers"])[k % len(q["answers"])] for q in bank}
                out.append({"predictions": pred, "record": r})
    out.append({"predictions": {"phase_step": "soon"}, "record": out[0]["record"]})
    out.append({"predictions": {"nope": "yes"}, "record": out[0]["record"]})
    return out


@needs_node
def test_page_and_package_give_the_same_grades(tmp_path):
    cs = cases()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"bank": P.questions(), "cases": cs, "knobs": page_knobs()}))
    out = node("tests/js/grade_cli.mjs", str(path))
    assert out.returncode == 0, out.stderr[-2000:]
    page = json.loads(out.stdout)
    assert len(page) == len(cs)
    statuses = set()
    for c, js in zip(cs, page):
        try:
            py = P.grade(c["predictions"], c["record"])
        except mc.InputError:
            assert "error" in js, js  # both refuse it
            continue
        assert [g["id"] for g in js] == [g["id"] for g in py]
        for a, b in zip(py, js):
            statuses.add(a["status"])
            for k in ("status", "answer", "prediction", "line", "link", "explain"):
                assert a[k] == b[k], (k, a, b)
            if isinstance(a["value"], float):
                assert abs(a["value"] - b["value"]) < 1e-12, (a, b)
            else:
                assert a["value"] == b["value"], (a, b)
    assert statuses == {"right", "wrong", "waiting", "not_applicable"}


def page_knobs() -> list[dict]:
    """The manifest's train.knobs, as the build exports them."""
    from mhacourse import web_train

    return json.loads(json.dumps([dict(k) for k in web_train.KNOBS]))


@needs_node
def test_the_node_tests_knobs_are_the_packages():
    """tests/js/knobs.mjs, the knobs and read-outs the Node tests run with
    (they run with no build), is web_train.KNOBS and READOUTS as the
    manifest carries them, and its PATCH is what the manifest's train.patch
    declares (web_patch.manifest_entry: names, default, n_pairs)."""
    from mhacourse import web_train

    out = node("--input-type=module", "-e",
               "import { KNOBS, READOUTS, PATCH } from './tests/js/knobs.mjs';"
               " process.stdout.write(JSON.stringify([KNOBS, READOUTS, PATCH]));")
    assert out.returncode == 0, out.stderr[-2000:]
    knobs, readouts, patch = json.loads(out.stdout)
    assert [knobs, readouts] == [page_knobs(),
                                 json.loads(json.dumps([dict(r) for r in web_train.READOUTS]))]
    assert patch == page_patch()


def page_patch() -> dict:
    """What link.js reads of the manifest's train.patch, as the package
    writes it (web_patch.manifest_entry, its pairs into a scratch folder)."""
    with tempfile.TemporaryDirectory() as folder:
        entry = web_patch.manifest_entry(folder)
    return {"corruptions": [{"name": c["name"]} for c in entry["corruptions"]],
            "default": entry["default"], "n_pairs": entry["n_pairs"]}


def page_limits() -> dict:
    """What the page passes link.js: the manifest's train limits, written
    by the package (web_train.manifest_entry's fields)."""
    from mhacourse import web_train
    from mhacourse.catalogue import BUDGET_D_MODEL, steps_for

    return {**{k: v for k, v in web_train.limits().items()}, "budget": BUDGET_D_MODEL,
            "max_steps": web_train.MAX_STEPS, "n_layers": 2,
            "steps_for": {str(d): steps_for(d) for d in range(1, web_train.D_MODEL_MAX + 1)},
            "knobs": [dict(k) for k in web_train.KNOBS]}


@needs_node
def test_a_link_and_its_python_line_describe_the_same_run(tmp_path):
    """Each link's Python line, run with a stand-in for tm.train, asks for
    the link's run; the smallest is run for real (20 steps at d_model 2)."""
    links = ["?h=1&dk=2&steps=20&seed=3", "?h=8&budget=1&seed=2&layers=1&warmup=0",
             "?h=4&dk=16&identical=1&off=1.1", "?h=16&dk=4&steps=60&warmup=1&layers=2"]
    path = tmp_path / "limits.json"
    path.write_text(json.dumps(page_limits()))
    out = node("tests/js/link_cli.mjs", str(path), *links)
    assert out.returncode == 0, out.stderr[-2000:]
    asked = []
    stand_in = type("tm", (), {"TinyConfig": tm.TinyConfig, "train": staticmethod(
        lambda cfg, steps, seed=0, identical_heads=False: asked.append(
            (cfg, steps, seed, identical_heads)) or (None, None))})
    for got in json.loads(out.stdout):
        e = got["experiment"]
        exec(got["line"], {"tm": stand_in})
        cfg, steps, seed, same = asked[-1]
        assert (cfg.h, cfg.d_k, cfg.n_layers, cfg.warmup > 0, steps, seed, same) == (
            e["h"], e["d_k"], e["layers"], e["warmup"], e["steps"], e["seed"], e["identical"])
        assert cfg == tm.TinyConfig(h=e["h"], d_k=e["d_k"], n_layers=e["layers"],
                                    warmup=100 if e["warmup"] else 0)
    first = json.loads(out.stdout)[0]
    scope = {"tm": tm}
    exec(first["line"], scope)
    assert scope["metrics"]["steps"] == 20 and scope["metrics"]["seed"] == 3


def model_spec() -> dict:
    """What the page passes model-file.js: the manifest's train entry's
    parameters and sizes (web_train.manifest_entry's fields)."""
    from mhacourse import web_train

    cfg = tm.TinyConfig()
    return {"params": [{"name": k, "dims": v} for k, v in web_train.param_dims().items()],
            "limits": {k: v for k, v in web_train.limits().items() if k != "budget"},
            "n_layers": cfg.n_layers, "vocab_size": cfg.vocab_size, "max_len": cfg.max_len,
            "batch": cfg.batch, "knobs": [dict(k) for k in web_train.KNOBS]}


def page_weights(model, spec) -> bytes:
    """``model``'s weights as the page holds them: float32, in the
    manifest's order, a one-layer model's second block as zeros."""
    import torch

    state, d = model.state_dict(), model.cfg.d_model
    parts = []
    for p in spec["params"]:
        shape = [a * d + b for a, b in p["dims"]]
        parts.append(state[p["name"]].float() if p["name"] in state else torch.zeros(shape))
    return b"".join(t.contiguous().numpy().tobytes() for t in parts)


@needs_node
@pytest.mark.parametrize("layers", [2, 1])
def test_a_page_written_file_loads_in_python(tmp_path, layers):
    """node writes the package's file from the page's float32 weights;
    ``tm.load`` reads it, evaluates to the same accuracy, and chapter 11's
    read-outs run on it unchanged."""
    spec = model_spec()
    if layers == 2:
        model = tm.load(assets_dir() / "runs" / "main.safetensors")
    else:
        model = tm.TinyTransformer(tm.TinyConfig(h=2, d_k=4, n_layers=1), seed=5)
    cfg = model.cfg
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "w.f32").write_bytes(page_weights(model, spec))
    run = {"h": cfg.h, "d_k": cfg.d_k, "layers": layers, "warmup": True, "identical": False,
           "seed": 0, "steps": 800, "step": 800, "courseVersion": "0.1.0", "accuracy": 0.9}
    (tmp_path / "run.json").write_text(json.dumps(run))
    out = node("tests/js/model_cli.mjs", "write", str(tmp_path / "spec.json"),
               str(tmp_path / "w.f32"), str(tmp_path / "run.json"), str(tmp_path / "m.safetensors"))
    assert out.returncode == 0, out.stderr[-2000:]
    back = tm.load(tmp_path / "m.safetensors")
    assert back.cfg == cfg
    # every knob of the manifest, at its default where the run does not set it
    defaults = {k["name"]: k["default"] for k in page_knobs()}
    assert back.extra["knobs"] == defaults | {"layers": layers}
    assert set(defaults) >= {"layers", "warmup", "identical", "clip"}
    assert back.extra["course_version"] == "0.1.0" and back.extra["trained_steps"] == 800
    assert tm.fingerprint(back) == tm.fingerprint(model)  # the same float32 weights
    a, b = tm.evaluate(model), tm.evaluate(back)
    assert abs(a["accuracy"] - b["accuracy"]) < 1e-3, (a, b)
    if layers == 2:
        from mhacourse import circuits as C

        assert tm.head_roles(tm.head_scores(back)) == tm.head_roles(tm.head_scores(model))
        assert float(C.read_circuits(back)["comp_k"].max()) == pytest.approx(
            float(C.read_circuits(model)["comp_k"].max()), abs=1e-9)


@needs_node
def test_node_reads_the_package_files_as_python_does(tmp_path):
    """assets/models/h4_dk16.safetensors (float16) read by model-file.js
    gives the tensors tm.load gives, exactly."""
    import numpy as np

    spec = model_spec()
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    path = assets_dir() / "models" / "h4_dk16.safetensors"
    out = node("tests/js/model_cli.mjs", "read", str(tmp_path / "spec.json"), str(path),
               str(tmp_path / "out.f32"))
    assert out.returncode == 0, out.stderr[-2000:]
    meta = json.loads(out.stdout)
    model = tm.load(path)
    assert meta["config"] == json.loads(json.dumps(model.cfg.__dict__))
    assert meta["layers"] == 2 and meta["init"] is None
    got = np.frombuffer((tmp_path / "out.f32").read_bytes(), dtype=np.float32)
    want = np.frombuffer(page_weights(model, spec), dtype=np.float32)
    assert got.shape == want.shape and np.array_equal(got, want)


@needs_node
def test_runs_compared_with_the_books_table(tmp_path):
    """The build's table (book_runs.write_lab_data) and compare.js: the main
    run's own history matches it; seed 1's history, claimed as seed 0,
    differs most in its phase change; a size the book lacks gets the sweep's
    nearest size."""
    from mhacourse.book_runs import write_lab_data

    sizes = write_lab_data(tmp_path)
    assert set(sizes) == {"questions.json", "book_runs.json", "lab.js"}
    table = json.loads((tmp_path / "lab" / "book_runs.json").read_text())
    assert json.loads((tmp_path / "lab" / "questions.json").read_text()) == P.questions()
    # the page's copy of both, as the classic script it loads
    script = (tmp_path / "lab" / "lab.js").read_text()
    both = re.search(r"^window\.mhaLabData = (\{.*\});$", script, re.M)
    assert both and json.loads(both.group(1)) == {"questions": P.questions(),
                                                   "book_runs": table}
    main = next(r for r in table["runs"] if r["name"] == "main")
    seed1 = next(r for r in table["runs"] if r["name"] == "seed1")
    grid = {r["name"]: r for r in table["runs"] if r["source"].endswith("metrics.json")}
    assert main["page_run"] and grid["h4_dk16"]["page_run"] and len(grid) == 14
    settings = {"h": 4, "d_k": 16, "seed": 0, "steps": 800, "layers": 2, "warmup": True,
                "identical": False}
    mine = [{"settings": settings, "step": 800, "history": main["history"]},
            {"settings": settings, "step": 800, "history": seed1["history"]},
            {"settings": {**settings, "h": 3, "d_k": 20, "steps": 1200}, "step": 1200,
             "history": seed1["history"]}]
    (tmp_path / "mine.json").write_text(json.dumps(mine))
    out = node("tests/js/compare_cli.mjs", str(tmp_path / "lab" / "book_runs.json"),
               str(tmp_path / "mine.json"))
    assert out.returncode == 0, out.stderr[-2000:]
    same, other, size = json.loads(out.stdout)
    assert same["faint"] == ["main"] and same["line"].startswith("Within 0.02")
    assert other["line"] == (f"phase change at step {seed1['phase_step']}; the book's run with "
                             f"these settings: phase change at step {main['phase_step']}.")
    assert size["ref"] is None and size["sweep"] == [4, 16]
    assert "nearest size, h = 4, d_k = 16" in size["line"]


def odd_records(n: int, seed: int = 1) -> list[dict]:
    """``n`` cases: a small finished record with one to three fields set to
    odd values (wrong types, 20.0 for 20, huge numbers, out of range), and
    random predictions."""
    import random

    rng = random.Random(seed)
    roles = [["previous", "mixed"], ["mixed", "induction"]]
    base = {"settings": {"h": 2, "d_k": 8, "seed": 0, "steps": 40, "layers": 2,
                         "warmup": True, "identical": False},
            "step": 40, "rule_lookup": 0.29,
            "history": [{"step": 20, "lookup": 0.3, "roles": roles},
                        {"step": 40, "lookup": 0.5, "roles": roles}],
            "final": {"step": 40, "stats": [[[0.1] * 5, [0.2] * 5], [[0.1] * 5, [0.3] * 5]],
                      "composition": {"q": 0.1, "k": 0.2, "v": 0.1},
                      "baseline": {"q": 0.12, "k": 0.12, "v": 0.12}},
            "ablations": [{"step": 40, "off": [[1, 1], [1, 2]], "lookup": 0.1}]}
    odd = [None, True, 0, 1, -1, 2, 39, 41, 0.5, 1.5, -0.1, 2**60, "x", "induction", [],
           {}, [[1, 1]], {"q": 1, "k": 1, "v": 1}, 1e300, 20.0, 40.0]

    def paths(o, pre=()):
        if pre:
            yield pre
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            yield from paths(v, (*pre, k))

    where = list(paths(base))
    bank = P.questions()["questions"]
    out = []
    for _ in range(n):
        r = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            path, node = rng.choice(where), r
            try:
                for k in path[:-1]:
                    node = node[k]
                node[path[-1]] = copy.deepcopy(rng.choice(odd))
            except (KeyError, IndexError, TypeError):
                pass
        pred = {q["id"]: rng.choice(list(q["answers"])) for q in bank if rng.random() < 0.7}
        out.append({"predictions": pred, "record": r})
    return out


@needs_node
def test_odd_records_get_the_same_answer_from_page_and_package(tmp_path):
    """grade.js and the package refuse the same odd records (one line each)
    and grade the rest alike."""
    cs = odd_records(600)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"bank": P.questions(), "cases": cs, "knobs": page_knobs()}))
    out = node("tests/js/grade_cli.mjs", str(path))
    assert out.returncode == 0, out.stderr[-2000:]
    graded = 0
    for c, js in zip(cs, json.loads(out.stdout), strict=True):
        try:
            py = P.grade(c["predictions"], c["record"])
        except mc.InputError as e:
            assert "\n" not in str(e) and isinstance(js, dict) and "\n" not in js["error"], (e, js)
            continue
        graded += 1
        assert isinstance(js, list), (js, c)
        assert [(g["status"], g["answer"], g["line"]) for g in py] == [
            (g["status"], g["answer"], g["line"]) for g in js]
    assert 20 < graded < 590  # both kinds occur
