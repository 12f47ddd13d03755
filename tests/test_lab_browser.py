"""The lab's modules in Chromium (the repository served on 127.0.0.1,
offline): the prediction form and the grades it leads to, a hostile link's
sentence shown as text, model files read and refused, and the times the
issue sets (grading every prediction <= 50 ms, reading a model file <= 1 s).
The page integration is tested with the trainer; this drives the modules."""
from __future__ import annotations

import json
import os

import pytest
from test_lab import model_spec

from mhacourse import tiny_model as tm
from mhacourse.catalogue import assets_dir
from mhacourse.checks import predictions as P
from site_browser import CHROMIUM, ROOT, offline_page, serve

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

@pytest.fixture(scope="module")
def lab():
    with serve(ROOT) as base, offline_page(base) as (page, blocked):
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/tests/js/lab-page.html")
        page.wait_for_function("window.lab !== undefined")
        page.evaluate("spec => { window.SPEC = spec; }", model_spec())
        yield page, base
        assert not errors, errors
        assert not blocked, blocked


def test_predict_then_grade_in_the_page(lab):
    page, base = lab
    run = json.loads((assets_dir() / "runs" / "main.json").read_text())
    record = P.run_record(tm.load(assets_dir() / "runs" / "main.safetensors"),
                          {"steps": 800, "seed": 0, "history": run["history"]})
    page.evaluate("""async (base) => {
        const bank = await (await fetch("/code/mhacourse/data/questions.json")).json();
        const s = {h: 4, d_k: 16, seed: 0, steps: 800, layers: 2, warmup: true, identical: false};
        window.BANK = bank;
        window.FORM = lab.ui.predictionForm(document, bank, s, "before_run", {composition: "k"});
        document.getElementById("out").appendChild(FORM.element);
    }""", base)
    legends = page.locator("legend").all_inner_texts()
    assert len(legends) == 4 and legends[0].startswith("At which step")  # two-layer, before a run
    page.get_by_label("steps 200-399").check()
    page.locator("fieldset").nth(2).get_by_label("layer 1").check()  # the induction heads' layer
    chosen = page.evaluate("FORM.values()")
    assert chosen == {"phase_step": "200_399", "induction_layer": "layer 1", "composition": "k"}
    timing = page.evaluate("""([rec, base]) => {
        const every = Object.fromEntries(
            BANK.questions.map((q) => [q.id, Object.keys(q.answers)[0]]));
        const t = performance.now();
        lab.grade.grade(BANK, every, rec);  // every question of the bank, timed
        const ms = performance.now() - t;
        const grades = lab.grade.grade(BANK, FORM.values(), rec);
        document.getElementById("out").appendChild(lab.ui.gradeList(document, grades, base + "/"));
        return ms;
    }""", [record, base])
    py = {g["id"]: g for g in P.grade(chosen, record)}
    for qid, g in py.items():
        item = page.locator(f"li[data-question='{qid}']")
        assert item.get_attribute("class") == f"mha-lab-{g['status']}"
        assert g["line"] in item.inner_text()
    href = page.locator("li[data-question='composition'] a").get_attribute("href")
    assert href == f"{base}/chapters/11_how_heads_form.html#composition-the-qk-ov-reading"
    assert timing <= 50, timing
    print(f"grading all {len(P.questions()['questions'])} questions in the page: {timing:.2f} ms")


def test_a_hostile_link_shows_text_and_injects_nothing(lab):
    page, _ = lab
    line = page.evaluate("""() => {
        const limits = {h_max: 16, d_k_min: 2, d_k_max: 64, d_model_max: 256, max_steps: 1500,
                        budget: 64, n_layers: 2, steps_for: {}};
        const r = lab.link.decodeExperiment("?text=" + encodeURIComponent(
            '<img src=x onerror="window.hit=1"><script>window.hit=2</scr' + 'ipt>') +
            "&h=%3Cb%3E&predict=__proto__:x", limits, window.BANK);
        document.getElementById("sentence").textContent = r.experiment.text;
        document.getElementById("message").textContent = r.ignored;
        return r.ignored;
    }""")
    assert "the size" in line and "1 prediction" in line
    assert page.locator("#sentence img, #sentence script").count() == 0
    assert page.evaluate("window.hit === undefined && ({}).x === undefined")


def test_model_files_read_and_refused_in_the_page(lab):
    page, _ = lab
    out = page.evaluate("""async () => {
        const bytes = await (await fetch("/assets/models/h4_dk16.safetensors")).arrayBuffer();
        const file = new File([bytes], "h4_dk16.safetensors");
        const t = performance.now();
        const ok = await lab.ui.readModel(file, SPEC);
        const ms = performance.now() - t;
        const huge = new Uint8Array(lab.modelFile.maxFileBytes(SPEC) + 1);
        const bad = [new File(["not a model"], "notes.txt"),
                     new File([new Uint8Array(0)], "empty.safetensors"),
                     new File([bytes.slice(0, 5000)], "cut.safetensors"),
                     new File([huge], "huge.safetensors")];
        const lines = [];
        for (const f of bad) { lines.push((await lab.ui.readModel(f, SPEC)).error); }
        const c = ok.model.config;
        return {h: c.h, d_k: c.d_k, n: ok.model.params.length, ms, lines};
    }""")
    assert (out["h"], out["d_k"], out["n"]) == (4, 16, 37)
    assert out["ms"] <= 1000, out["ms"]
    words = ["notes.txt: the file is too short|notes.txt: not a model file",
             "empty.safetensors: the file is empty", "cut.safetensors: the file is truncated",
             "huge.safetensors: the file is too large"]
    for line, want in zip(out["lines"], words):
        assert any(line.startswith(w) for w in want.split("|")), line
        assert "\n" not in line
    print(f"reading h4_dk16.safetensors in the page: {out['ms']:.1f} ms")
