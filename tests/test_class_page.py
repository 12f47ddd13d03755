"""The class's experiment (``make book`` first): a student's report and the
class page that reads thirty of them, in headless Chromium, offline. The
reports are made by the page's own ``buildReport`` from runs of known
content (``class_reports``); the page must show their numbers exactly, give
each bad file one line, send no request with a report, and say how close a
re-run came."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess

import class_reports as C
import jsonschema
import pytest
from test_page_code import MAX_LINES
from test_site import AXE_SERIOUS, LOAD_SCRIPT

from site_browser import ROOT, SITE, offline_page, serve

CLASS = ROOT / "assets" / "site" / "class"
PAGE = "chapters/class.html"
SCRIPT = ROOT / "scripts" / "class_reference.py"
SCHEMA = json.loads((CLASS / "report.schema.json").read_text())


@pytest.fixture(scope="module")
def reports():
    if not C.MANIFEST.exists():
        pytest.fail("the site is not built: run `make book` first")
    runs = C.class_spec()
    got, texts = C.generate(runs)
    return runs, got, texts


def test_the_schema_uses_only_what_the_page_checks():
    src = (CLASS / "schema-lite.js").read_text()
    known = set(re.findall(r'"([$\w]+)"', src[src.index("KEYWORDS") : src.index("];")]))
    used = set()

    def walk(node, in_props=False):
        if isinstance(node, dict):
            for k, v in node.items():
                if not in_props:
                    used.add(k)
                walk(v, in_props=k in ("properties", "$defs") and not in_props)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(SCHEMA)
    assert used <= known, (
        f"report.schema.json uses keywords schema-lite.js does not check: {used - known}"
    )


def test_reports_fit_the_schema_and_keep_their_checksum(reports):
    runs, got, texts = reports
    for r in got:
        jsonschema.validate(r, SCHEMA)
    assert [json.loads(t) for t in texts] == got, "a report's file is not its JSON"
    again = [json.loads(t) for t in C.resum([json.loads(t) for t in texts])]
    assert [r["checksum"] for r in again] == [r["checksum"] for r in got], (
        "the checksum is not stable"
    )
    assert [r["phase_step"] for r in got] == [C.expected_phase(run) for run in runs]


@pytest.mark.parametrize("h, d_k", [(16, 2), (8, 2), (16, 4)])
def test_a_long_run_with_many_heads_makes_a_report_under_100_kb(h, d_k):
    """The largest runs the trainer allows at 800-1,500 steps: every read-out's
    roles of 2 x h heads, 10 ablations and 7 predictions."""
    steps = C.manifest()["train"]["steps_for"][str(h * d_k)]
    run = {
        "student": "A student with a long name, for the largest report",
        "h": h,
        "d_k": d_k,
        "seed": 0,
        "steps": steps,
        "phase": 400,
        "final": [0.9, 0.95, 0.85],
        "predict": "400_799",
        "ablations": [
            {
                "step": steps,
                "off": [f"L1H{i + 1}" for i in range(k + 1)],
                "accuracy": [0.5, 0.6, 0.4],
            }
            for k in range(10)
        ],
    }
    got, texts = C.generate([run])
    got[0]["predictions"] *= 7
    text = C.resum(got)[0]
    jsonschema.validate(json.loads(text), SCHEMA)
    kb = len(text.encode()) / 1000
    print(f"h = {h}, d_k = {d_k}, {steps} steps: report {kb:.1f} KB")
    assert kb <= 100, f"a report of h = {h}, d_k = {d_k}, {steps} steps is {kb:.1f} KB"


def test_the_class_modules_are_small_es_modules_with_no_globals():
    for js in sorted(CLASS.glob("*.js")):
        text = js.read_text()
        n = len(text.splitlines())
        assert n <= MAX_LINES, f"{js.name} has {n} lines (at most {MAX_LINES}, as Prettier formats)"
        assert re.search(r"^(export|import) ", text, re.M), f"{js.name} is not an ES module"
        assert not re.search(r"window\.\w+\s*=[^=]", text), f"{js.name} sets a global"
        assert "fetch(" not in text or js.name == "class.js", f"{js.name} makes a request"
    # the one fetch reads the site's own files, never a report
    fetched = re.findall(r'getJSON\("([^"]+)"\)', (CLASS / "class.js").read_text())
    assert fetched == [
        "explorer-data/manifest.json",
        "class-data/reference.json",
        "class/report.schema.json",
    ]


def test_the_lesson_plan_adds_up_to_50_minutes():
    text = (ROOT / "chapters" / "class_lesson.md").read_text()
    spans = [(int(a), int(b)) for a, b in re.findall(r"^\| (\d+)–(\d+) \|", text, re.M)]
    assert spans and spans[0][0] == 0, spans
    assert all(b1 == a2 for (_, b1), (a2, _) in zip(spans, spans[1:])), f"gaps or overlaps: {spans}"
    assert sum(b - a for a, b in spans) == 50 == spans[-1][1], spans
    phases = re.findall(r"^\| \d+–\d+ \| (\w[\w ]*?) \|", text, re.M)
    assert {"predict", "run", "compare", "discuss"} <= set(phases), phases
    quiz = re.findall(r"^(\d)\. ", text[text.index("## Quiz") :], re.M)
    keys = re.findall(r"\"Q(\d)\. ", (CLASS / "class-draw.js").read_text())
    assert quiz == keys == [str(i) for i in range(1, 7)], (quiz, keys)


# --------------------------------------------------------------- the page


@pytest.fixture(scope="module")
def opened(reports):
    """The class page with the 30 reports and the 10 bad files opened."""
    runs, got, texts = reports
    bad = C.bad_files(runs, got, texts)
    files = [
        {"name": C.file_name(i), "mimeType": "application/json", "buffer": t.encode()}
        for i, t in enumerate(texts)
    ]
    files += [{"name": n, "mimeType": "application/json", "buffer": t.encode()} for n, t, _ in bad]
    if not (SITE / PAGE).exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base) as (p, blocked):
        errors, requests = [], []
        p.on("pageerror", lambda e: errors.append(str(e)))
        p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        p.goto(f"{base}/{PAGE}", wait_until="networkidle")
        p.wait_for_selector("#mha-class-files")
        p.on("request", lambda r: requests.append(r.url))
        p.set_input_files("#mha-class-files", files)
        p.wait_for_function(
            "document.querySelector('.mha-class-status').textContent.startsWith('Read')"
        )
        yield {
            "page": p,
            "base": base,
            "blocked": blocked,
            "errors": errors,
            "requests": requests,
            "runs": runs,
            "reports": got,
            "bad": bad,
        }
        assert errors == [], errors
        assert blocked == [], f"the class page tried to reach {blocked}"


def cells(p, i):
    return p.locator(".mha-class-table tbody tr").nth(i).locator("th, td").all_inner_texts()


def pct(x):
    return f"{100 * x:.1f} %"


def test_the_page_shows_every_reports_numbers(opened):
    p, runs, got = opened["page"], opened["runs"], opened["reports"]
    assert p.locator(".mha-class-table tbody tr").count() == len(runs) == 30
    for i, (run, r) in enumerate(zip(runs, got)):
        step = run.get("step", run["steps"])
        opts = (
            ", ".join(
                x
                for x in [
                    "layers 1" if run["layers"] == 1 else "",  # the knobs' labels
                    "" if run["warmup"] else "warm-up off",
                ]
                if x
            )
            or "–"
        )
        p_heads = max(1, run["h"] - 1)
        i_heads = 1 if run["phase"] is not None and run["layers"] == 2 else 0
        want = [
            run["student"],
            str(run["h"]),
            str(run["d_k"]),
            str(run["seed"]),
            str(step) if step == run["steps"] else f"{step} of {run['steps']}",
            opts,
            "never" if run["phase"] is None else str(run["phase"]),
            {
                "before_200": "before 200",
                "200_399": "200–399",
                "400_799": "400–799",
                "800_or_later": "800 or later",
                "never": "never",
            }[run["predict"]]
            if "predict" in run
            else "–",
            run.get("grade", "–"),
            pct(run["final"][0]),
            pct(run["final"][2]),
            str(p_heads),
            str(i_heads),
            str(len(run.get("ablations", []))),
            "does not match" if "link" in run else "matches",
            "Re-run",
        ]
        assert cells(p, i) == want, f"row {i + 1}: {cells(p, i)} != {want}"


def test_ten_bad_files_get_one_line_each_and_the_class_still_shows(opened):
    p, bad = opened["page"], opened["bad"]
    lines = p.locator(".mha-class-problems li").all_inner_texts()
    assert len(lines) == len(bad) == 10, lines
    for (name, _, words), line in zip(bad, lines):
        assert line.startswith(name) and words in line, f"{name}: {line!r} lacks {words!r}"
        assert "\n" not in line and len(line) < 400, line
    status = p.locator(".mha-class-status").inner_text()
    assert "30 reports shown, 10 set aside" in status, status


def test_plateau_link_and_quiz_key_from_the_class(opened):
    p, runs = opened["page"], opened["runs"]
    stuck = [r["student"] for r in runs if r["phase"] is None]
    shown = p.locator(".mha-class-stuck li").all_inner_texts()
    assert [s.split(" (")[0] for s in shown] == stuck
    odd = p.locator(".mha-class-odd li").all_inner_texts()
    assert [s.split(" (")[0] for s in odd] == [r["student"] for r in runs if "link" in r]
    for line, r in zip(odd, [r for r in runs if "link" in r]):
        assert f"h: the link says {2 * r['h']}, the report {r['h']}" in line, line
    trusted = [r for r in runs if "link" not in r]
    key = p.locator(".mha-class-quiz li").all_inner_texts()
    left = sum(r["phase"] is not None for r in trusted)
    # every run of the fixture is its own (no two share settings and seed)
    n = len(trusted)
    assert key[0].startswith(
        f"Q1. Runs that left the plateau: {left} of {n} distinct runs ({n} reports). By setting: "
    ), key[0]
    graded = [r for r in trusted if "predict" in r]
    right = sum(r["grade"] == "right" for r in graded)
    shown = {}
    for r in graded:
        shown[r["band"]] = shown.get(r["band"], 0) + 1
    best = min(shown, key=lambda b: (-shown[b], b))
    assert key[3].startswith(
        f"Q4. Phase-change predictions graded right: {right} of {len(graded)}. The best "
        f"constant answer, \"{C.band_words(best)}\" every time, would have been right "
        f"{shown[best]} of {len(graded)} times"), key[3]
    # the seed spread: runs of 4 x 16 with every other setting at its default
    plain = [r for r in trusted if (r["h"], r["d_k"], r["layers"], r["warmup"]) == (4, 16, 2, True)
             and r.get("step", r["steps"]) == r["steps"]]
    h4 = sorted(r["phase"] for r in plain if r["phase"] is not None)
    assert (f"4 × 16, {plain[0]['steps']} steps ({len(plain)} runs, seeds "
            f"{', '.join(str(s) for s in sorted(r['seed'] for r in plain))}): phase change "
            f"from step {h4[0]} to {h4[-1]}") in key[4], key[4]
    # the charts: each distinct run once in each chart, named
    assert p.locator(".mha-class-charts g.mha-class-run").count() == 2 * n
    assert p.locator(".mha-class-charts g.mha-class-run text").count() == 2 * n


def test_thirty_reports_open_within_two_seconds(opened):
    ms = opened["page"].evaluate(
        "import('../_static/class/class.js').then(m => m.classPages()[0].lastOpenMs)"
    )
    print(f"40 files (30 reports) read and drawn in {ms:.0f} ms")
    assert ms <= 2000, f"the class took {ms:.0f} ms to open"


def test_no_request_carries_a_report(opened):
    """Opening the files made no request at all (the class's reports stay
    in the browser), and nothing left the site."""
    assert opened["requests"] == [], opened["requests"]
    assert opened["blocked"] == []


def test_a_students_report_shows_and_prints_on_one_page(opened, tmp_path):
    p = opened["page"]
    p.locator(".mha-class-show").first.click()
    view = p.locator(".mha-class-detail .mha-report")
    assert view.locator("svg.mha-chart").count() == 2
    assert view.locator(".mha-report-grades tbody tr").count() == 1
    p.evaluate("""async () => {
        const m = await import('../_static/explorer/report-view.js');
        const c = await import('../_static/class/class.js');
        const r = c.classPages()[0].result.runs[9].report;
        window.__undo = m.preparePrint(r, 0.29);
    }""")
    pdf = tmp_path / "report.pdf"
    p.pdf(path=str(pdf), format="A4")
    p.evaluate("window.__undo(); delete window.__undo")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    assert re.search(r"^Pages:\s+1$", info, re.M), info
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "Student 10" in text and "Predictions" in text, text[:500]


def test_a_rerun_is_judged_within_the_stated_tolerance(opened):
    """The runner is the trainer's engine, injected by the page that has it;
    here one that returns the report's own curves moved by a rounding-sized
    amount (agrees) and by one a hand edit would make (differs)."""
    p = opened["page"]
    text = p.locator(".mha-class-tolerance").inner_text()
    assert (
        "within 1e-3 of the report's (relative)" in text
        and "within 5 of the 15,360 scored positions" in text
    )
    p.evaluate("""() => import('../_static/class/class.js').then(m => {
        const page = m.classPages()[0];
        return page.setRunner((settings, steps, link) => {
            const run = page.result.runs.find(x => x.report.link === link), c = run.report.curves;
            const shift = settings.h === 2 ? 0.01 : 1e-6;
            return Promise.resolve({ loss: c.loss.map(x => x * (1 + 1e-6)), steps: c.steps,
                accuracy: c.accuracy.map(a => a.map(x => x + shift)), sha256: null });
        });
    })""")
    p.wait_for_function("!document.querySelector('.mha-class-rerun').disabled")
    rows = p.locator(".mha-class-table tbody tr")
    for i, verdict in [(0, "agrees"), (1, "differs")]:  # h = 1 and h = 2
        rows.nth(i).locator(".mha-class-rerun").click()
        note = rows.nth(i).locator(".mha-class-rerun-note")
        note.filter(has_text=verdict).wait_for()
        assert verdict in note.inner_text(), note.inner_text()


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_the_open_class_has_no_serious_accessibility_violation(opened, mode):
    p, base = opened["page"], opened["base"]
    p.evaluate(f"document.documentElement.dataset.theme = '{mode}'")
    p.wait_for_timeout(300)
    if not p.evaluate("typeof axe !== 'undefined'"):
        p.evaluate(LOAD_SCRIPT, [f"{base}/_static/axe/axe.min.js", 60_000])
    found = p.evaluate(AXE_SERIOUS)
    assert found == [], f"the class page with 30 reports ({mode} mode): {found}"


def test_export_then_the_class_page_reads_it(opened, tmp_path):
    """The trainer's "Export report" (report-view.js exportControls, with a
    run as the trainer holds it): the file it saves fits the schema, and the
    class page reads it as one more student's report."""
    p, r = opened["page"], opened["reports"][2]
    d = r["settings"]["d_model"]
    n = sum(math.prod(a * d + b for a, b in q["dims"]) for q in C.manifest()["train"]["params"])
    p.evaluate(
        """async ([r, n]) => {
        const m = await import('../_static/explorer/report-view.js');
        const man = await (await fetch('../_static/explorer-data/manifest.json')).json();
        const { buildId } = await import('../_static/explorer/lab/report.js');
        const build = await buildId(man);
        const run = () => ({ link: r.link, course: { version: '0.1.0', build },
            settings: r.settings, state: r.state, step: r.step, losses: r.curves.loss,
            evals: r.curves.steps.map((s, i) => ({ step: s, accuracy: r.curves.accuracy[i],
                roles: r.roles.heads[i] })),
            ruleLookup: man.train.baselines['previous word'].lookup,
            predictions: r.predictions, ablations: r.ablations, weights: new Float32Array(n),
            knobs: man.train.knobs });
        document.querySelector('.mha-class-detail').appendChild(m.exportControls(run, 0.29, 'x'));
    }""",
        [r, n],
    )
    p.fill("#x-name", "Student 31")
    with p.expect_download() as dl:
        p.click(".mha-report-export")
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    assert path.name == "report-student-31-h4-dk16.json"
    saved = json.loads(path.read_text())
    jsonschema.validate(saved, SCHEMA)
    assert saved["curves"] == r["curves"] and saved["phase_step"] == r["phase_step"]
    assert "Saved report-student-31-h4-dk16.json" in p.locator(".mha-report-status").inner_text()
    p.set_input_files("#mha-class-files", [str(path)])
    p.wait_for_function(
        "document.querySelector('.mha-class-status').textContent.includes('31 reports shown')"
    )
    assert p.locator(".mha-class-table tbody tr").last.locator("th").inner_text() == "Student 31"


def test_the_labs_table_of_book_runs_gives_the_same_reference(opened):
    """When the lab's table of the book's runs (mhacourse.book_runs, issue 35)
    is in the site, the class page can read it instead of
    scripts/class_reference.py's file: the same runs, phase steps and sweep.
    Here the table is made from the reference file's own runs."""
    spec = importlib.util.spec_from_file_location("class_reference", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    ref = script.reference()
    table = {
        "rule_lookup": ref["rule_lookup"],
        "phase_margin": ref["phase_margin"],
        "runs": [
            {"name": p["name"], "source": "assets/models/metrics.json" if p["source"] == "grid"
             else f"assets/runs/{p['name']}.json", "h": p["h"], "d_k": p["d_k"], "seed": p["seed"],
             "steps": p["steps"], "every": p["every"], "layers": p["knobs"].get("layers", 2),
             "warmup": p["knobs"].get("warmup", True),
             "identical": p["knobs"].get("identical", False),
             "phase_step": p["phase_step"]}
            for p in ref["points"]
        ],
        "sweep": {"steps": 800, "runs": [{k: s[k] for k in ("h", "d_k", "seed", "lookup")}
                                         for s in ref["sweep"]]},
    }
    got = opened["page"].evaluate(
        """async (t) => {
        const man = await (await fetch('../_static/explorer-data/manifest.json')).json();
        const m = await import('../_static/class/class-read.js');
        return m.referenceFromBookRuns(t, man.train.knobs);
    }""", table
    )
    assert got["points"] == ref["points"]
    assert got["sweep"] == ref["sweep"]
