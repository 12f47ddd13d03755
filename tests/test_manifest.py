"""The explorer's manifest has one written format,
``assets/site/explorer/manifest.schema.json``: the manifest that the build
writes (Python) must match it, and every manifest field the page's
JavaScript reads must be in it. A rename on either side fails here."""
from __future__ import annotations

import json
import re

import jsonschema
import pytest

from site_browser import ROOT

SCHEMA = json.loads((ROOT / "assets" / "site" / "explorer" / "manifest.schema.json").read_text())
BUILT = ROOT / "_generated" / "explorer-data"
JS = sorted((ROOT / "assets" / "site" / "explorer").glob("*.js"))
# how each file names the manifest, or a part of it: MAN / manifest (the
# whole), T (its "train" entry, in the worker)
ROOTS = {"MAN": (), "manifest": (), "T": ("train",)}


def schema_at(path: tuple[str, ...]):
    """The schema of the field at ``path``, or None if the schema has none."""
    node = SCHEMA
    for key in path:
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        props = dict(node.get("properties", {}))
        for part in node.get("allOf", []):  # a graph: $defs/graph, and its names
            part = SCHEMA["$defs"][part["$ref"].rsplit("/", 1)[-1]] if "$ref" in part else part
            props = {**part.get("properties", {}), **props}
        if key in props:
            node = props[key]
            continue
        pattern = next((v for p, v in node.get("patternProperties", {}).items()
                        if re.fullmatch(p, key)), None)
        if pattern is None:
            return None
        node = pattern
    return node


def js_reads() -> set[tuple[str, tuple[str, ...]]]:
    """(file, path) for every ``MAN.a.b``, ``manifest.a`` and ``T.a`` in the
    page's JavaScript (array methods such as ``.find`` end a path)."""
    found = set()
    for f in JS:
        text = f.read_text()
        for m in re.finditer(r"\b(MAN|manifest|T)((?:\.[A-Za-z_]\w*)+)", text):
            keys = m.group(2).split(".")[1:]
            path = list(ROOTS[m.group(1)])
            for k in keys:
                if k in ("find", "map", "filter", "forEach", "length", "some", "every", "indexOf",
                         "reduce"):
                    break
                path.append(k)
            found.add((f.name, tuple(path)))
    return found


def test_the_built_manifest_matches_the_schema():
    path = BUILT / "manifest.json"
    if not path.exists():
        pytest.fail("the explorer data is not built: run `make book` first")
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)
    js = (BUILT / "manifest.js").read_text()
    start = js.index("window.mhaExplorerManifest = ") + len("window.mhaExplorerManifest = ")
    jsonschema.validate(json.loads(js[start:js.index(";\n", start)]), SCHEMA)


def test_every_field_the_javascript_reads_is_in_the_schema():
    reads = js_reads()
    assert len(reads) > 20, reads  # the scan finds the page's reads
    missing = sorted(f"{f}: {'.'.join(p)}" for f, p in reads if p and schema_at(p) is None)
    assert missing == [], f"read by the JavaScript, not in manifest.schema.json: {missing}"


def test_the_schema_catches_a_rename():
    path = BUILT / "manifest.json"
    if not path.exists():
        pytest.fail("the explorer data is not built: run `make book` first")
    manifest = json.loads(path.read_text())
    manifest["train"]["limit"] = manifest["train"].pop("limits")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, SCHEMA)


def _train_schema():
    """The schema with only the "train" entry required (no build needed)."""
    return {**SCHEMA, "required": ["train"]}


def test_the_schema_names_every_training_graphs_inputs_and_outputs():
    """The knobs and read-outs the page feeds and reads by name are the
    exported graphs' (web_train.graph_io), graph by graph."""
    from mhacourse import web_train

    graphs = SCHEMA["properties"]["train"]["properties"]["graphs"]
    assert sorted(graphs["required"]) == sorted(web_train.STEP_NAMES)
    for kind in web_train.STEP_NAMES:
        io = web_train.graph_io(kind)
        spec = graphs["properties"][kind]["properties"]
        assert spec["inputs"]["const"] == io["inputs"], kind
        assert spec["outputs"]["const"] == io["outputs"], kind


def test_the_train_entry_matches_the_schema():
    """web_train.manifest_entry's output, as the build wrote it into the
    manifest, fits the schema, carries the size limits' words, and a graph
    that lost a knob is refused. (The built entry, not a fresh one: making
    one computes the baseline table of every size, which
    code/tests/test_web_train.py checks, a minute on a busy machine.)"""
    from mhacourse import web_train

    path = BUILT / "manifest.json"
    if not path.exists():
        pytest.fail("the explorer data is not built: run `make book` first")
    entry = json.loads(path.read_text())["train"]
    assert sorted(entry["graphs"]) == sorted(web_train.STEP_NAMES)
    jsonschema.validate({"train": entry}, _train_schema())
    assert entry["limits"]["messages"] == web_train.SIZE_MESSAGES
    for key in ("h", "budget", "d_k", "d_model"):
        assert key in schema_at(("train", "limits", "messages"))["required"]
    broken = json.loads(json.dumps(entry))
    broken["graphs"]["step"]["inputs"].remove("warmup")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"train": broken}, _train_schema())


def test_the_built_manifest_carries_the_knobs_and_readouts_as_written():
    """The page builds its controls and drawings from the manifest's
    train.knobs and train.readouts: the build wrote web_train's entries."""
    from mhacourse import web_train

    path = BUILT / "manifest.json"
    if not path.exists():
        pytest.fail("the explorer data is not built: run `make book` first")
    train = json.loads(path.read_text())["train"]
    assert train["knobs"] == json.loads(json.dumps(web_train.KNOBS))
    assert train["readouts"] == json.loads(json.dumps(web_train.READOUTS))
    assert train["data"]["baseline"]["columns"] == list(web_train.BASELINE_COLUMNS)
