"""Issue 48, finding 9: what the build reads and writes is checked. A
broken asset file gave book_runs a raw KeyError or JSONDecodeError,
web_train.export a raw FileExistsError, and manifest_entry took
"../../evil.onnx" as a graph's file; each is one line now."""
from __future__ import annotations

import json
import shutil

import pytest

import mhacourse as mc
from mhacourse import book_runs, web_train
from mhacourse.catalogue import assets_dir


@pytest.fixture
def assets(tmp_path):
    for folder in ("runs", "models"):
        (tmp_path / folder).mkdir()
        for f in (assets_dir() / folder).glob("*.json"):
            shutil.copy(f, tmp_path / folder / f.name)
    return tmp_path


def one_line(call, words):
    with pytest.raises(mc.InputError, match=words) as e:
        call()
    assert "\n" not in str(e.value) and len(str(e.value)) < 400
    return str(e.value)


def edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_book_runs_reads_a_good_copy(assets):
    assert book_runs.book_runs(assets) == book_runs.book_runs()


@pytest.mark.parametrize("rel, change, words", [
    ("runs/index.json", "text", r"runs/index.json cannot be read"),
    ("runs/main.json", "delete", r"runs/main.json is missing"),
    ("runs/main.json", lambda d: d.pop("history"), r"runs/main.json is not the object"),
    ("runs/main.json", lambda d: d["train"].pop("seed"), r"runs/main.json: the run is broken"),
    ("runs/main.json", lambda d: d["history"].reverse(), r"runs/main.json: the run is broken"),
    ("runs/index.json", lambda d: d["runs"].update({"../../etc/passwd": {}}), "plain file name"),
    ("models/metrics.json", lambda d: d["models"][0].pop("trained"),
     r"models/metrics.json: model 0 is broken"),
    ("models/metrics.json", lambda d: d.update(models=[3]), r"model 0 is broken"),
    ("models/heads_sweep.json", lambda d: d.update(runs=[{"h": 1}]), r"its runs is broken"),
    ("models/heads_sweep.json", "text", r"heads_sweep.json cannot be read"),
])
def test_a_broken_asset_file_is_one_line(assets, rel, change, words):
    path = assets / rel
    if change == "text":
        path.write_text('{"runs": [')
    elif change == "delete":
        path.unlink()
    else:
        edit(path, change)
    one_line(lambda: book_runs.book_runs(assets), words)


def test_book_runs_root_is_checked(tmp_path):
    one_line(lambda: book_runs.book_runs(tmp_path / "nowhere"), "not a folder")
    one_line(lambda: book_runs.book_runs(tmp_path), "index.json is missing")


def test_export_under_a_file_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    one_line(lambda: web_train.export("init", tmp_path / "notes.txt" / "init.onnx"),
             "is a file")


@pytest.mark.parametrize("name", ["../../evil.onnx", "/etc/evil.onnx", "a/b.onnx",
                                  "step.exe", "", None, "..onnx"])
def test_manifest_entry_takes_only_plain_graph_names(tmp_path, name):
    graphs = {k: {"file": f"{k}.onnx", "bytes": 10, "export_seconds": 1.0}
              for k in web_train.STEP_NAMES}
    graphs["step"]["file"] = name
    one_line(lambda: web_train.manifest_entry(graphs, tmp_path), "plain .onnx file name")
