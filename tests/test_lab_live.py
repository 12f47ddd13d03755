"""The lab wired into the trainer (issues 35 and 38), end to end on the
built site (``make book`` first), in Debian's Chromium with every request
that leaves 127.0.0.1 blocked: predictions graded on the page as the
package grades them; an experiment's link that round-trips, and hostile
ones that restore what is valid with one line; a downloaded model that
``tm.load`` reads to the page's accuracy; a model file opened in the page
with the package's roles; bad files refused one line each. Runs are kept
short (a link's ``steps``). The times the issue sets are printed."""
from __future__ import annotations

import json
import os
import struct

import pytest
import torch
from live_fixture import live_page  # noqa: F401 (the shared fixture)

from mhacourse import tiny_model as tm
from mhacourse.catalogue import assets_dir
from mhacourse.checks import predictions as P
from site_browser import CHROMIUM

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

PANEL = "mha.trainer.panels[0]"


def open_link(live, query: str, scroll: bool = True):
    """A new page of the same (offline) browser context at the trainer's
    page with ``query``; the first panel built when scrolled to."""
    p = live.page.context.new_page()
    p.on("pageerror", lambda e: live.errors.append(str(e)))
    p.goto(live.url + query)
    p.wait_for_function(f"window.mha?.trainer && {PANEL}.lab.ready")
    if scroll:
        p.locator(".mha-trainer").scroll_into_view_if_needed()
        p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
    return p


def train(p, timeout=180_000):
    p.evaluate(f"{PANEL}.start()")
    p.wait_for_function(f"""{PANEL}.state === 'done' && {PANEL}.evals.length &&
        {PANEL}.evals[{PANEL}.evals.length - 1].step === {PANEL}.step""", timeout=timeout)


def controls(p) -> dict:
    return p.evaluate(f"""() => {{ const q = {PANEL}, k = q.knobs.inputs, out = {{}};
        Object.keys(k).forEach(n => {{
            out[n] = k[n].type === 'checkbox' ? k[n].checked : k[n].value; }});
        return Object.assign(out, {{ h: q.view.hIn.value, dk: q.view.dkIn.value,
            seed: q.view.seedIn.value, budget: q.view.budget.checked,
            text: q.view.sentence.value, steps: q.config && q.config.steps,
            off: q.switches.names(Number(q.view.hIn.value)),
            predict: Array.from(document.querySelectorAll('.mha-lab-predict input:checked'))
                .map(i => i.dataset.question + ':' + i.value) }}); }}""")


@pytest.mark.parametrize("h, d_k, steps", [(4, 16, 80), (2, 8, 60)])
def test_a_prediction_graded_on_the_page_equals_the_package(live_page, h, d_k, steps):  # noqa: F811
    """Two questions, one answered right and one wrong (swapped at the other
    size), graded on the page from its run and in Python from tm.train's."""
    model, metrics = tm.train(tm.TinyConfig(h=h, d_k=d_k), steps=steps, seed=1, eval_every=20)
    record = P.run_record(model, {**metrics, "steps": steps, "seed": 1})
    asked = {"phase_step": "never", "previous_layer": "neither"}
    truth = {g["id"]: g["answer"] for g in P.grade(asked, record)}
    bank = {q["id"]: q for q in P.questions()["questions"]}
    other = {k: next(a for a in bank[k]["answers"] if a != v) for k, v in truth.items()}
    # right then wrong at one size, wrong then right at the other
    first, second = (truth, other) if h == 4 else (other, truth)
    predict = {"phase_step": first["phase_step"], "previous_layer": second["previous_layer"]}
    query = f"?v=1&h={h}&dk={d_k}&seed=1&steps={steps}&predict=" + \
        ",".join(f"{k}:{v}" for k, v in predict.items())
    p = open_link(live_page, query.replace(" ", "+"))
    try:
        assert p.evaluate(f"{PANEL}.lab.line.textContent") == ""
        train(p)
        p.wait_for_function(f"{PANEL}.lab.grades.length === 2 && "
                            f"{PANEL}.lab.grades.every(g => g.status !== 'waiting')")
        page = {g["id"]: g for g in p.evaluate(f"{PANEL}.lab.grades")}
        python = {g["id"]: g for g in P.grade(predict, record)}
        for k in predict:
            mine, theirs = page[k], python[k]
            assert (mine["status"], mine["answer"]) == (theirs["status"], theirs["answer"]), \
                (k, mine, theirs)
        assert sorted(g["status"] for g in python.values()) == ["right", "wrong"]
        items = p.locator(".mha-lab-grades li")
        assert items.count() == 2 and items.first.locator("a").count() == 1  # with its chapter link
        ms = p.evaluate(f"""() => {{ const L = {PANEL}.lab;
            L.predictions = Object.fromEntries(
                L.data.bank.questions.map(q => [q.id, Object.keys(q.answers)[0]]));
            const t = performance.now(); L.regrade(); return performance.now() - t; }}""")
        print(f"\ngrading every question of the bank after a run (h={h}): {ms:.1f} ms "
              f"(load average {os.getloadavg()[0]:.1f})")
        assert ms <= 50
    finally:
        p.close()


def test_a_link_round_trips_and_the_model_leaves_the_page(live_page, tmp_path):  # noqa: F811
    """Controls set by hand, Copy link, open it in a new page: every control
    equal, Train gives the same run; Download, tm.load, evaluate: the
    page's accuracy to 0.1 point."""
    a = open_link(live_page, "?v=1&h=2&dk=16&steps=60")
    try:
        box = a.locator(".mha-train-panel").first
        box.locator("input[id$='-seed']").fill("7")
        box.locator("input[id$='-warmup']").set_checked(False)
        a.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
        a.locator(".mha-lab-predict input[value='never']").first.check()
        train(a)
        url = a.evaluate(f"{PANEL}.lab.copyLink()")
        for part in ("seed=7", "warmup=0", "steps=60", "predict=phase_step%3Anever"):
            assert part in url, url
        before, losses = controls(a), a.evaluate(f"{PANEL}.losses")
        acc = a.evaluate(f"{PANEL}.evals.map(e => e.accuracy)")
        with a.expect_download() as dl:
            a.locator(".mha-lab-download").first.click()
        path = tmp_path / dl.value.suggested_filename
        dl.value.save_as(path)
    finally:
        a.close()
    b = open_link(live_page, url[url.index("?"):])
    try:
        restored = b.evaluate(f"{PANEL}.lab.timings.ready")
        built = b.evaluate("performance.now()")
        print(f"\nopening the link: controls and predictions restored at {restored:.0f} ms, "
              f"the model built (ready to train) by {built:.0f} ms "
              f"(load average {os.getloadavg()[0]:.1f})")
        assert controls(b) == before
        train(b)
        assert b.evaluate(f"{PANEL}.losses") == losses
        assert b.evaluate(f"{PANEL}.evals.map(e => e.accuracy)") == acc
    finally:
        b.close()
    model = tm.load(path)
    assert model.cfg.h == 2 and model.cfg.d_k == 16 and model.cfg.warmup == 0
    assert model.extra["seed"] == 7 and model.extra["trained_steps"] == 60
    assert abs(tm.evaluate(model)["accuracy"] - acc[-1][0]) <= 1e-3


HOSTILE = [
    "?h=<script>alert(1)</script>&dk=16",
    "?text=%3Cimg%20src%3Dx%20onerror%3D%22window.pwned%3D1%22%3E&h=99",
    "?v=999&h=4&dk=16",
    "?h=4&dk=16&off=1.9,3.1,x.y",
    "?h=3&dk=16&budget=1",
    "?seed=-1&steps=99999999",
    "?predict=phase_step:soon,__proto__:x,constructor:y",
    "?layers=7&warmup=maybe&identical=2",
    "?dk=1e9&h=1",
    "?" + "a=" + "x" * 5000,
]


def test_hostile_links_restore_what_is_valid_with_one_line(live_page):  # noqa: F811
    for query in HOSTILE:
        p = open_link(live_page, query, scroll=False)
        try:
            line = p.evaluate(f"{PANEL}.lab.line.textContent")
            assert line and "\n" not in line and len(line) < 400, (query, line)
            assert p.evaluate("window.pwned === undefined && "
                              "!document.querySelector('.mha-trainer img, .mha-trainer script')")
            h = int(p.evaluate(f"{PANEL}.view.hIn.value"))
            assert 1 <= h <= 16, (query, h)
        finally:
            p.close()


def bad_files(tmp_path):
    good = (assets_dir() / "models" / "h4_dk16.safetensors").read_bytes()
    n = struct.unpack("<Q", good[:8])[0]
    head = json.loads(good[8:8 + n])

    def with_header(h, body=good[8 + n:]):
        text = json.dumps(h).encode()
        return struct.pack("<Q", len(text)) + text + body

    cfg = json.loads(head["__metadata__"]["config"])
    wide = dict(head, __metadata__=dict(head["__metadata__"], config=json.dumps({**cfg, "h": 64})))
    name = next(k for k in head if k != "__metadata__")
    nan = bytearray(good)
    at = 8 + n + head[name]["data_offsets"][0]
    nan[at:at + 4] = struct.pack("<f", float("nan"))
    files = {
        "notes.txt": b"this is not a model",
        "empty.safetensors": b"",
        "truncated.safetensors": good[: len(good) // 2],
        "header.safetensors": struct.pack("<Q", 10**9) + good[8:],
        "json.safetensors": struct.pack("<Q", n) + b"{" * n + good[8 + n:],
        "wide.safetensors": with_header(wide),
        "nan.safetensors": bytes(nan),
        "noconfig.safetensors": with_header({k: v for k, v in head.items() if k != "__metadata__"}),
        "missing.safetensors": with_header({k: v for k, v in head.items() if k != name}),
        "huge.safetensors": good + b"\0" * 60_000_000,
    }
    out = []
    for f, data in files.items():
        (tmp_path / f).write_bytes(data)
        out.append(tmp_path / f)
    return out


def test_a_model_file_opens_with_the_package_roles_and_bad_files_get_one_line(live_page, tmp_path):  # noqa: F811
    p = open_link(live_page, "")
    try:
        path = assets_dir() / "models" / "h4_dk16.safetensors"
        t0 = p.evaluate("performance.now()")
        p.locator(".mha-lab-open").first.set_input_files(str(path))
        p.wait_for_function(f"{PANEL}.lab.files.opened && {PANEL}.heads.querySelector('canvas')")
        drawn = p.evaluate("t0 => performance.now() - t0", t0)
        p.wait_for_function(f"{PANEL}.evals.length && {PANEL}.roleNames")
        read = p.evaluate("t0 => performance.now() - t0", t0)
        checked = p.evaluate(f"{PANEL}.lab.files.timings.read")
        print(f"\nh4_dk16.safetensors: read and checked in {checked:.0f} ms, "
              f"heads drawn at {drawn:.0f} ms, roles and circuits read at {read:.0f} ms "
              f"(load average {os.getloadavg()[0]:.1f})")
        model = tm.load(path)
        assert p.evaluate(f"{PANEL}.roleNames") == tm.head_roles(tm.head_scores(model))
        p.locator(".mha-train-use").first.uncheck()  # a head switch works on the opened model
        p.wait_for_function(f"{PANEL}.ablated && {PANEL}.ablated.roleNames")
        for f in bad_files(tmp_path):
            p.evaluate(f"{PANEL}.lab.line.textContent = ''")
            p.locator(".mha-lab-open").first.set_input_files(str(f))
            p.wait_for_function(f"{PANEL}.lab.line.textContent !== ''")
            line = p.evaluate(f"{PANEL}.lab.line.textContent")
            assert line.startswith(f.name + ": ") and "\n" not in line and len(line) < 300, line
        assert p.evaluate(f"{PANEL}.state") == "done"
        assert p.evaluate(f"{PANEL}.lab.files.opened") == path.name
        p.locator(".mha-train-reset").first.click()  # the page keeps working: a fresh model builds
        p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
    finally:
        p.close()
    assert live_page.blocked == []
    assert torch.isfinite(next(model.parameters())).all()


def test_export_report_then_the_class_page_reruns_its_link(live_page, tmp_path):  # noqa: F811
    """The trainer's Export report (issue 38) after a short run; the class
    page reads the file and re-runs its link with the trainer's engine
    (class/rerun.js), within the page's stated tolerance."""
    p = open_link(live_page, "?v=1&h=2&dk=8&seed=4&steps=40&predict=phase_step:never")
    try:
        train(p)
        box = p.locator(".mha-train-panel").first
        box.locator("input[id$='-report-name']").fill("Ada")
        with p.expect_download() as dl:
            box.locator(".mha-report-export").click()
        path = tmp_path / dl.value.suggested_filename
        dl.value.save_as(path)
        report = json.loads(path.read_text())
        assert report["settings"]["h"] == 2 and report["step"] == 40
        assert len(report["curves"]["loss"]) == 40
        assert [g["id"] for g in report["predictions"]] == ["phase_step"]
    finally:
        p.close()
    c = live_page.page.context.new_page()
    c.on("pageerror", lambda e: live_page.errors.append(str(e)))
    try:
        c.goto(f"{live_page.base}/chapters/class.html")
        c.wait_for_function("document.querySelector('#mha-class-files')")
        c.set_input_files("#mha-class-files", [str(path)])
        c.wait_for_function(
            "document.querySelector('.mha-class-status').textContent.includes('1 reports shown')")
        row = c.locator(".mha-class-table tbody tr").first
        assert row.locator("td").nth(-2).inner_text() == "matches"
        row.locator(".mha-class-rerun").click()
        note = row.locator(".mha-class-rerun-note")
        note.filter(has_text="agrees").wait_for(timeout=180_000)
        print("\nthe class page's re-run: " + note.inner_text())
    finally:
        c.close()
