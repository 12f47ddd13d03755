"""The page's JavaScript is read as the package is (issue "The page's code as
readable as the package"), every file of the site's (assets/site: the
explorer, its lab, the class page, the book theme's helpers): each is an ES
module that imports what it uses (but the few classic scripts, named here);
no file defines a global but the page's one entry point (page.js:
window.mha) or reads the build's data but data.js; no file is over 500 lines
as Prettier formats them (`make lint`); no import circle, and the folders'
imports go one way (class/ may import explorer/, never the reverse);
onnxruntime is set up in one file. And the knobs and read-outs are written
once (mhacourse.web_train.KNOBS and READOUTS): the manifest carries them,
the schema checks them, the page builds its controls and drawings from them,
and no page file spells one out. No build needed."""
from __future__ import annotations

import json
import posixpath
import re

import jsonschema

from mhacourse import web_patch, web_train
from site_browser import ROOT

SITE = ROOT / "assets" / "site"
EXPLORER = SITE / "explorer"
# every JavaScript file of the site, by its path under assets/site
JS = {f.relative_to(SITE).as_posix(): f.read_text() for f in sorted(SITE.rglob("*.js"))}
CODE = {f: re.sub(r"//.*", "", t) for f, t in JS.items()}  # less the comments
SITE_JS = sorted((ROOT / "assets" / "site").rglob("*.js"))
SITE_CODE = {str(f.relative_to(ROOT)): re.sub(r"//.*", "", f.read_text()) for f in SITE_JS}
ENTRY, DATA = "explorer/page.js", "explorer/data.js"  # the one entry; the one data reader
FALLBACK = "explorer/fallback.js"  # a page opened from disk runs no module
THEME = ("a11y.js", "chapter-links.js", "widgets-config.js")  # the book theme's helpers
CLASSIC = (FALLBACK, *THEME)  # the classic scripts; every other file is a module
WORKERS = ("explorer/train-worker.js", "explorer/readout-worker.js")
CLASS_PAGE = ("class/class.js", "class/rerun.js")  # what chapters/class.md imports
SCHEMA = json.loads((EXPLORER / "manifest.schema.json").read_text())
IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"(\.\.?/[\w./-]+)";', re.M)
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function|class|const|let)\s+(\w+)", re.M)
EXPORT_LIST = re.compile(r"^export\s*\{([^}]*)\};", re.M)


def imports(name: str) -> dict[str, list[str]]:
    """{file (its path under assets/site): [names]} that ``name`` imports."""
    here = posixpath.dirname(name)
    return {posixpath.normpath(posixpath.join(here, src)):
            [n.strip().split(" as ")[0] for n in names.split(",") if n.strip()]
            for names, src in IMPORT.findall(JS[name])}


def exports(name: str) -> set[str]:
    listed = [n.strip().split(" as ")[-1] for names in EXPORT_LIST.findall(JS[name])
              for n in names.split(",") if n.strip()]
    return set(EXPORT.findall(JS[name])) | set(listed)


def test_every_file_is_a_module_that_imports_what_it_uses():
    modules = [f for f in JS if f not in CLASSIC]
    reached, todo = set(), [ENTRY, *WORKERS, *CLASS_PAGE]
    while todo:  # what the entry, the workers and the class page load, as modules
        f = todo.pop()
        if f not in reached:
            assert f in JS, f"a module imports {f}, which is not a file of the site"
            reached.add(f)
            todo.extend(imports(f))
    assert sorted(reached) == sorted(modules), "site files no page loads: " \
        f"{sorted(set(modules) - reached)}"
    for f in modules:
        classic = re.search(r"^\(function \(\) \{|use strict", JS[f], re.M)
        assert not classic, f"{f}: a classic script"
        for src, names in imports(f).items():
            missing = set(names) - exports(src)
            assert not missing, f"{f} imports {missing} that {src} does not export"
    for f in CLASSIC:
        assert not IMPORT.search(JS[f]) and not EXPORT.search(JS[f]), f"{f}: a module"
    # the pages load the entry as a module, and no other explorer file by a script tag
    for page in ("explorer.md", "08_how_many_heads.md"):
        text = (ROOT / "chapters" / page).read_text()
        tags = re.findall(r'<script([^>]*)src="\.\./_static/(explorer/[\w.-]+)"', text)
        assert sorted(tags) == sorted([(' type="module" ', ENTRY), (" ", FALLBACK)]), (page, tags)
    class_md = (ROOT / "chapters" / "class.md").read_text()
    loaded = re.findall(r'from "\.\./_static/([\w./-]+)"', class_md)
    assert sorted(loaded) == sorted(CLASS_PAGE), loaded


def test_one_global_the_entry_and_no_hand_written_loader():
    for f, text in CODE.items():
        if f in THEME:  # the book theme's: chapter-links.js loads the decks' lists by tag
            continue
        assigned = re.findall(r"\b(?:window|globalThis|self)\.(\w+)\s*=[^=]", text)
        assert assigned == (["mha"] if f == ENTRY else
                            ["onmessage"] if f in WORKERS else []), (f, assigned)
        reads = set(re.findall(r"\b(?:window|globalThis)\.(mha\w+)", text))
        if f not in (DATA, FALLBACK):
            assert not reads, f"{f} reads the build's data as globals: {reads} (import data.js)"
        assert "createElement(\"script\")" not in text, f"{f}: a hand-written script loader"


#: The most lines a file of the site may have, formatted by Prettier (one
#: statement a line, lines of at most 100 characters). Before the formatter
#: the limit was 300 dense lines; formatting the same code took 81 % more
#: lines (4,168 -> 7,541 over the 32 files first formatted).
MAX_LINES = 500


def test_no_file_over_500_lines():
    long = {f: t.count("\n") + 1 for f, t in JS.items() if t.count("\n") + 1 > MAX_LINES}
    assert long == {}, long


def test_no_import_circle():
    graph = {f: set(imports(f)) for f in JS}

    def visit(f, path):
        assert f not in path, "import circle: " + " -> ".join([*path, f])
        for g in graph[f]:
            visit(g, [*path, f])
    for f in graph:
        visit(f, [])


def test_knobs_and_readouts_are_written_once():
    """The manifest's entries are web_train's; the schema accepts them and
    refuses a broken one; every knob feeds an input of a graph, every graph
    input is a knob's or the page's own, every read-out is an output of the
    circuits graph with a baseline column; and no page file spells out a
    knob's or a read-out's name or graph name."""
    train = SCHEMA["properties"]["train"]["properties"]
    knobs = [dict(k) for k in web_train.KNOBS]
    readouts = [dict(r) for r in web_train.READOUTS]
    for key, entries in (("knobs", knobs), ("readouts", readouts)):
        jsonschema.validate(entries, {**train[key], "$defs": SCHEMA["$defs"]})
        broken = json.loads(json.dumps(entries))
        del broken[0]["label"]
        try:
            jsonschema.validate(broken, {**train[key], "$defs": SCHEMA["$defs"]})
            raise AssertionError(f"the schema took a {key} entry without a label")
        except jsonschema.ValidationError:
            pass
    inputs = {k: web_train.graph_io(k)["inputs"] for k in web_train.STEP_NAMES}
    own = {"s", "steps", "x", "heads", "ids", "head_mask", "noise", "width", "seed",
           *web_patch.INPUTS}  # not knobs (web_patch's: the Patch view's pairs)
    fed = {k["input"] for k in knobs}
    assert all(any(k["input"] in i for i in inputs.values()) for k in knobs)
    assert set().union(*inputs.values()) - own == fed, "a graph input no knob declares"
    outputs = web_train.graph_io("circuits")["outputs"]
    assert all(r["output"] in outputs for r in readouts)
    assert all(r["baseline"] in web_train.BASELINE_COLUMNS for r in readouts if r["draw"] == "map")
    names = {k["name"] for k in knobs} | {r["name"] for r in readouts}  # as strings
    graph_names = fed | {r["output"] for r in readouts}  # as strings or fields
    for f, text in SITE_CODE.items():  # every JavaScript file of the site: lab/ and class/ too
        spelled = {n for n in names if re.search(rf"""["']{n}["']""", text)}
        spelled |= {n for n in graph_names if re.search(rf"""["'.]{n}\b""", text)}
        assert not spelled, f"{f} spells out {spelled}: read it from MAN.train.knobs / readouts"
    # the page's size limits come from the manifest: no bound or comparison with one
    limits = re.compile(r"""(?:[<>]=?|\bmax\W+|\bmin\W+)\s*(?:16|64|256|1500)\b""")
    for f, text in CODE.items():
        if f.startswith(("explorer/trainer", "explorer/sizes")):
            assert not limits.search(text), f"{f} writes a size limit of its own"


def test_imports_go_one_way_and_onnxruntime_is_set_up_once():
    """class/ may import explorer/ (the lab, the report, the trainer's
    panel); nothing under explorer/ imports class/, statically or by an
    address; and onnxruntime-web is loaded, set (its env) and asked for
    sessions in one file, explorer/ort.js, that the page and both workers
    import."""
    up = {}
    for f, text in CODE.items():
        if f.startswith("explorer/"):
            wrong = [src for src in imports(f) if not src.startswith("explorer/")]
            wrong += re.findall(r"""["'][^"']*\bclass/[\w./-]*["']""", text)
            if wrong:
                up[f] = wrong
    assert up == {}, f"explorer/ imports class/ (class/ imports explorer/, never back): {up}"
    for f in JS:
        outside = [src for src in imports(f) if src.startswith("..")]
        assert not outside, f"{f} imports {outside}, outside assets/site"
    ort = {f for f, text in CODE.items()
           if re.search(r"\bort\.env\b|InferenceSession\.create|ort\.wasm\.min\.mjs", text)}
    assert ort == {"explorer/ort.js"}, f"onnxruntime is set up in {sorted(ort)}"
    users = {f for f in JS if "explorer/ort.js" in imports(f)}
    assert {"explorer/engine.js", "explorer/smollm2-engine.js",
            "explorer/worker-common.js"} <= users, users
    # a file that did not load is told in one text, fetchOk's
    told = {f for f, text in CODE.items()
            if re.search(r"""could not load ["']\s*\+|HTTP ["']\s*\+\s*\w+\.status""", text)}
    assert told == {"explorer/ort.js"}, f"a failed load is told in {sorted(told)}"


# The trainer panel's parts and the names its files give them (issue 50):
# the panel (P, Q, panel, this.P), its run (R), its view (V), and each part
# reached from them. A part's fields are assigned only in its own class.
PARTS = r"(?:run|view|knobs|switches|readout|pictures|lab|patch|files|worker)"
OTHERS = re.compile(rf"(?:\bthis\.(?:P|lab)|\b(?:P|Q|R|V|panel))(?:\.{PARTS})*"
                    r"\.(\w+)\s*(?:=(?!=)|\+\+|--|[-+*/]=|\[[^\]\n]*\]\s*=(?!=))")
# The view's lines and controls are written by the view (View.say, set,
# lock, read); the other parts draw into its canvases and boxes.
VIEW_WRITES = re.compile(r"(?:(?:\bthis\.P|\b(?:P|Q))\.view|\bV)\.\w+"
                         r"\.(?:textContent|value|checked)\s*=(?!=)")
TRAINER = {f: t for f, t in SITE_CODE.items() if re.search(
    r"explorer/(trainer[\w-]*|lab/\w+)\.js$|class/rerun\.js$", f)}
SITE_RAW = {str(f.relative_to(ROOT)): f.read_text() for f in SITE_JS}
EVENT_TARGET = {"addEventListener", "removeEventListener", "dispatchEvent"}
ADVICE_WORDS = re.compile(r"\b(?:Reset|Reload|reload|rebuild|make book|press Train|Train, to)\b")


def _literal_sentences(code: str) -> list[str]:
    """The sentences of a file's string literals, each run of literals
    joined by `+` read as one (an expression between them ends a piece)."""
    code = re.sub(r"(?:^|\s)//.*", "", code)
    code = re.sub(r'"\s*\+\s*"', "", code)  # "a " +\n "b" -> "a b"
    out = []
    for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', code):
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", lit) if len(s.strip()) >= 20]
    return out


def test_each_part_of_a_trainer_panel_owns_its_state_and_each_advice_is_written_once():
    """A trainer panel's parts (trainer-panel.js composes them: the run, the
    view, the knobs and switches, the read-outs, the pictures, the lab, the
    Patch view) each own their fields: no file of the trainer (trainer*.js,
    lab/, class/rerun.js) assigns a field of the panel or of one of its parts
    (`P.x =`, `this.P.x =`, `P.run.x =`, `V.x =`, ...), nor the text or
    value of one of the view's lines and controls (`P.view.status.textContent
    =`: `view.say`; the other parts draw into its canvases); every class of
    trainer*.js defines every member it uses; the re-run follows the panel's
    events and polls nothing; the advice (Reset, Reload, rebuild) is written
    once in the site's JavaScript, and a head's name ("L1H2") once in the
    trainer's."""
    assert len(TRAINER) >= 20, sorted(TRAINER)
    for f, text in TRAINER.items():
        writes = sorted({m.group(0).split("=")[0].strip() for m in OTHERS.finditer(text)})
        assert not writes, f"{f} assigns another part's fields: {writes} (call the owner's method)"
        lines = sorted(set(VIEW_WRITES.findall(text)))
        assert not lines or f.endswith("trainer-view.js"), f"{f} writes the view's lines: {lines}"
    for f, text in TRAINER.items():
        if "/explorer/trainer" not in "/" + f:
            continue
        classes = re.findall(r"^export class (\w+)(?: extends (\w+))? \{\n(.*?)^\}", text,
                             re.M | re.S)
        for name, base, body in classes:
            assert base in ("", "EventTarget"), f"{f}: {name} extends {base}: compose it instead"
            used = set(re.findall(r"\bthis\.(\w+)", body))
            own = set(re.findall(r"\bthis\.(\w+)\s*=(?!=)", body)) | set(
                re.findall(r"^  (?:async |get |static )?(\w+)\s*\(", body, re.M))
            inherited = EVENT_TARGET if base else set()
            missing = sorted(used - own - inherited)
            assert not missing, f"{f}: {name} uses members it does not define: {missing}"
    rerun = TRAINER["assets/site/class/rerun.js"]
    assert "setInterval" not in rerun and "addEventListener(" in rerun, "the re-run polls the panel"
    seen: dict[str, str] = {}
    for f, text in SITE_RAW.items():
        for s in _literal_sentences(text):
            if ADVICE_WORDS.search(s):
                assert s not in seen, f"{s!r} is written twice: in {seen[s]} and {f}"
                seen[s] = f
    # a head's name ("L1H2") is made in one place for the whole site
    spelled = {f for f, text in SITE_RAW.items()
               if re.search(r"""["']L1?["']\s*\+.{0,60}["'] ?H["']|["']L\dH["']\s*\+""", text)}
    assert spelled <= {"assets/site/explorer/lab/heads.js"}, f"head names spelled in {spelled}"
