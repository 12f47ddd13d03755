"""What comes from a student, a file or an earlier run is checked before the
page uses it (issue 48), on the built site (``make book`` first), in
Debian's Chromium with every request that leaves 127.0.0.1 blocked:

- a report's link becomes a link only to this site's trainer; a
  ``javascript:`` link, another site's and HTML in a report's fields run
  nothing and are shown as text, with one line;
- a report with a loss of ``1e999`` is set aside with one line;
- Re-run of a report whose size the trainer refuses ends with one line and
  leaves no hidden panel and no timer;
- after Reset, a read-out of the discarded model (still in the read-out
  worker when Reset was pressed) is never kept by the next run of the
  same settings;
- a one-layer model, downloaded and opened again, is not "diverged".

The page's Content-Security-Policy has its own test (tests/test_csp.py);
here, as in the other live tests, the browser drives the pages past it."""
from __future__ import annotations

import json
import os
import re

import class_reports as C
import pytest
from live_fixture import live_page  # noqa: F401 (the shared fixture)

from site_browser import CHROMIUM

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

PANEL = "mha.trainer.panels[0]"
CLASS = "chapters/class.html"

# The read-out worker's answers held back while window.__held is a list
# (and delivered, in order, by window.__release()): a read of the old model
# is still in flight when Reset is pressed, every time.
HOLD_READS = """(() => {
  const W = window.Worker;
  window.__held = null;
  window.Worker = class extends W {
    constructor(url, opts) {
      super(url, opts);
      if (!String(url).includes("readout-worker")) { return; }
      let fn = null;
      Object.defineProperty(this, "onmessage", { get: () => fn, set: (f) => { fn = f; } });
      this.__deliver = (e) => { if (fn) { fn.call(this, e); } };
      this.addEventListener("message", (e) => {
        if (window.__held) { window.__held.push([this, e]); } else { this.__deliver(e); }
      });
    }
  };
  window.__release = () => {
    const held = window.__held || [];
    window.__held = null;
    held.forEach(([w, e]) => w.__deliver(e));
    return held.length;
  };
})();"""

# The page's interval timers that are still set.
COUNT_TIMERS = """(() => {
  const set = window.setInterval, clear = window.clearInterval;
  window.__timers = new Set();
  window.setInterval = (...a) => {
    const id = set.apply(window, a); window.__timers.add(id); return id; };
  window.clearInterval = (id) => { window.__timers.delete(id); return clear.call(window, id); };
})();"""


def new_page(live, init: str | None = None):
    p = live.page.context.new_page()
    p.on("pageerror", lambda e: live.errors.append(str(e)))
    if init:
        p.add_init_script(init)
    return p


def open_link(live, query: str, init: str | None = None):
    """The trainer's page at ``query``, its first panel built."""
    p = new_page(live, init)
    p.goto(live.url + query)
    p.wait_for_function(f"window.mha?.trainer && {PANEL}.lab.ready")
    p.locator(".mha-trainer").scroll_into_view_if_needed()
    p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
    return p


def finished(p, timeout=120_000):
    p.wait_for_function(f"""{PANEL}.state === 'done' && {PANEL}.evals.length &&
        {PANEL}.evals[{PANEL}.evals.length - 1].step === {PANEL}.step""", timeout=timeout)


def run_spec(student: str, h: int = 2, d_k: int = 8, steps: int = 60, **more) -> dict:
    """A run for class_reports.generate: phase change at step 40."""
    rule = C.manifest()["train"]["baselines"]["previous word"]["lookup"]
    return {"student": student, "h": h, "d_k": d_k, "seed": 0, "steps": steps, "layers": 2,
            "warmup": True, "phase": 40, "final": [0.9, 0.95, round(rule + 0.4, 6)], **more}


def open_class(live, files: list[tuple[str, str]], init: str | None = None):
    """The class page with these (name, text) files opened."""
    c = new_page(live, init)
    c.goto(f"{live.base}/{CLASS}")
    c.wait_for_function("document.querySelector('#mha-class-files')")
    c.set_input_files("#mha-class-files", [
        {"name": n, "mimeType": "application/json", "buffer": t.encode()} for n, t in files])
    c.wait_for_function(
        "document.querySelector('.mha-class-status').textContent.startsWith('Read')")
    return c


def test_a_reports_link_and_fields_run_nothing_on_the_class_page(live_page):  # noqa: F811
    """A report whose link is javascript: (its checksum recomputed, as any
    student can) and whose name is HTML: no element made from them, no
    link that runs script, one line saying why; another site's link is
    text too; the site's own trainer link stays a link."""
    base = live_page.base
    evil = '<img src=x onerror="window.pwned=1">Eve<script>window.pwned=3</script>'
    runs = [run_spec(evil, link="javascript:window.pwned=2;void 0"),
            run_spec("Mallory", link="https://evil.example/chapters/explorer.html?v=1&h=2&dk=8"),
            run_spec("Trent", link=f"{base}/chapters/explorer.html?v=1&h=2&dk=8&seed=0&steps=60")]
    _, texts = C.generate(runs)
    c = open_class(live_page, [(f"report-{i}.json", t) for i, t in enumerate(texts)])
    try:
        assert "3 reports shown, 0 set aside" in c.locator(".mha-class-status").inner_text()
        why = {}
        for i, name in enumerate(["Eve", "Mallory", "Trent"]):
            c.locator(".mha-class-show").nth(i).click()
            view = c.locator(".mha-class-detail .mha-report")
            assert name in view.locator("h3").inner_text()
            # every link of a report is an http(s) one of this site's pages
            hrefs = [a.get_attribute("href") for a in view.locator("a").all()]
            assert all(h.startswith(base + "/chapters/") for h in hrefs), hrefs
            refused = view.locator(".mha-report-link-refused")
            why[name] = refused.inner_text() if refused.count() else None
        assert "javascript:" in why["Eve"] and "\n" not in why["Eve"], why
        assert "another site (evil.example)" in why["Mallory"], why
        assert why["Trent"] is None, why
        c.locator(".mha-class-show").nth(0).click()
        shown = c.locator(".mha-class-detail .mha-report-link-text").inner_text()
        assert shown.startswith("javascript:window.pwned=2"), shown
        c.wait_for_timeout(300)
        assert c.evaluate("window.pwned === undefined"), "a report's field or link ran script"
        assert c.locator("#mha-class img, #mha-class script").count() == 0
        assert evil in c.locator(".mha-class-detail h3").inner_text()
    finally:
        c.close()


def test_a_report_with_an_infinite_loss_is_set_aside_with_one_line(live_page):  # noqa: F811
    """1e999 is read as Infinity by JSON.parse; its checksum (taken of the
    canonical JSON, where Infinity is null) is the one the student
    recomputed: only the finiteness check catches it."""
    got, _ = C.generate([run_spec("Zed")])
    got[0]["curves"]["loss"][3] = None
    text = C.resum(got)[0]
    at = text.index('"loss"')
    bad = text[:at] + re.sub(r"\bnull\b", "1e999", text[at:], count=1)
    assert "1e999" in bad and json.loads(bad)["curves"]["loss"][3] == float("inf")
    c = open_class(live_page, [("report-zed.json", bad)])
    try:
        lines = c.locator(".mha-class-problems li").all_inner_texts()
        assert len(lines) == 1 and lines[0].startswith("report-zed.json"), lines
        assert "curves.loss[3] is not a finite number" in lines[0] and "\n" not in lines[0], lines
        assert "0 reports shown, 1 set aside" in c.locator(".mha-class-status").inner_text()
    finally:
        c.close()


def test_rerun_of_a_size_the_trainer_refuses_ends_with_one_line(live_page):  # noqa: F811
    """h 16 x d_k 32 fits the report's format (h up to 64, d_k up to 256)
    but not the trainer (d_model 256 at most): the re-run ends at once with
    the trainer's line, and leaves no hidden panel or timer in the page."""
    steps = 400
    _, texts = C.generate([run_spec("Big", h=16, d_k=32, steps=steps, phase=None,
                                    final=[0.5, 0.9, 0.2])])
    c = open_class(live_page, [("report-big.json", texts[0])], init=COUNT_TIMERS)
    try:
        assert "1 reports shown" in c.locator(".mha-class-status").inner_text()
        c.wait_for_function("!document.querySelector('.mha-class-rerun').disabled")
        before = c.evaluate("window.__timers.size")
        c.locator(".mha-class-rerun").click()
        note = c.locator(".mha-class-rerun-note")
        note.filter(has_text="failed").wait_for()
        line = note.inner_text()
        assert "d_model" in line and "512" in line and "\n" not in line, line
        assert c.locator("#mha-class div[hidden], #mha-class .mha-train-panel").count() == 0
        c.wait_for_timeout(500)
        assert c.evaluate("window.__timers.size") == before, "the re-run left a timer running"
    finally:
        c.close()


def test_after_reset_no_readout_of_the_old_model_is_kept(live_page):  # noqa: F811
    """The read-outs of the first model are held in the read-out worker's
    answer queue while Reset is pressed and the same settings build a new
    model; once they arrive, the new run keeps none of them (before: all,
    as the settings were the same), and its own read-outs are its own."""
    p = open_link(live_page, "?v=1&h=2&dk=8&seed=3&steps=60", init=HOLD_READS)
    try:
        p.wait_for_function(f"{PANEL}.evals.length === 1")  # the step-0 read-out
        p.evaluate("window.__held = []")
        p.evaluate(f"{PANEL}.start()")
        p.wait_for_function(f"{PANEL}.state === 'done' && window.__held.length >= 3")
        assert p.evaluate(f"{PANEL}.evals.map(e => e.step)") == [0]
        p.locator(".mha-train-reset").first.click()
        p.wait_for_function(f"{PANEL}.state === 'ready' && window.__held.length >= 4")
        released = p.evaluate("window.__release()")
        assert released >= 4  # the old model's 20, 40, 60 and the new one's 0
        p.wait_for_function(f"{PANEL}.evals.length >= 1")
        p.wait_for_timeout(500)
        assert p.evaluate(f"{PANEL}.evals.map(e => e.step)") == [0], \
            "a read-out of the discarded model was kept by the new run"
        assert p.evaluate(f"{PANEL}.step") == 0 and p.evaluate(f"{PANEL}.phaseStep") is None
        p.evaluate(f"{PANEL}.start()")
        finished(p)
        assert p.evaluate(f"{PANEL}.evals.map(e => e.step)") == [0, 20, 40, 60]
    finally:
        p.close()


def test_a_one_layer_model_downloaded_and_opened_again_is_not_diverged(live_page, tmp_path):  # noqa: F811
    """The file holds the first block only; the page fills the second with
    zeros (switched off by the layers knob), whose circuit scores are not
    numbers: they are not drawn, and nothing says "diverged"."""
    p = open_link(live_page, "?v=1&h=2&dk=8&seed=1&steps=40&layers=1")
    try:
        p.evaluate(f"{PANEL}.start()")
        finished(p)
        with p.expect_download() as dl:
            p.locator(".mha-lab-download").first.click()
        path = tmp_path / dl.value.suggested_filename
        dl.value.save_as(path)
        assert "_1layer_" in path.name
        p.locator(".mha-train-reset").first.click()
        p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
        p.locator(".mha-lab-open").first.set_input_files(str(path))
        p.wait_for_function(f"""{PANEL}.lab.files.opened && {PANEL}.evals.length &&
            {PANEL}.view.circuits.textContent !== ''""")
        p.wait_for_timeout(500)
        text = p.locator(".mha-train-panel").first.inner_text()
        assert "diverged" not in text and "not a number" not in text, \
            [s for s in text.split("\n") if "diverged" in s or "not a number" in s]
        assert p.evaluate(f"{PANEL}.knobs.layers()") == 1
        assert "Circuits at step 40" in p.evaluate(f"{PANEL}.view.circuits.textContent")
        assert p.evaluate(f"{PANEL}.heads.querySelectorAll('canvas').length") == 2  # 1 layer x h 2
    finally:
        p.close()


# --- the browser fuzz (issue 48, finding 7): many hostile values, one page
# load each, drawn by tests/untrusted_fuzz.py's seeded generators

N_LINKS, N_FILES, N_REPORTS = 300, 64, 60

FUZZ_LINKS = """async (links) => {
  const L = await import('../_static/explorer/lab/link.js');
  const T = await import('../_static/explorer/trainer-lab.js');
  const P = mha.trainer.panels[0], lab = P.lab, limits = T.linkLimits();
  const bad = [], counts = {ignored: 0, clean: 0};
  for (const q of links) {
    let got;
    try { got = L.decodeExperiment(q, limits, lab.data.bank, lab.start()); }
    catch (e) { bad.push(['threw', q.slice(0, 80), String(e)]); continue; }
    const e = got.experiment;
    const whole = ['h', 'd_k', 'seed', 'steps'].every(
      (k) => Number.isSafeInteger(e[k]) && e[k] >= 0);
    const sized = e.h >= 1 && e.h <= limits.h_max &&
      e.d_k >= limits.d_k_min && e.d_k <= limits.d_k_max;
    const line = got.ignored;
    if (!whole || !sized) {
      bad.push(['experiment', q.slice(0, 80), JSON.stringify(e).slice(0, 200)]);
    }
    if (line !== null && line !== undefined && line !== '' &&
        (typeof line !== 'string' || line.includes('\\n') || line.length > 400)) {
      bad.push(['line', q.slice(0, 80), String(line).slice(0, 200)]);
    }
    counts[line ? 'ignored' : 'clean'] += 1;
    lab.restore(e);
    const shown = [P.view.hIn.value, P.view.dkIn.value, P.view.seedIn.value].join(' ');
    if (/NaN|undefined|Infinity/.test(shown)) { bad.push(['controls', q.slice(0, 80), shown]); }
  }
  return {bad: bad.slice(0, 10), n_bad: bad.length, counts: counts};
}"""

FUZZ_FILES = """async (files) => {
  const P = mha.trainer.panels[0], lab = P.lab, bad = [], counts = {opened: 0, refused: 0};
  for (const [name, b64] of files) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    lab.line.textContent = '';
    let ok;
    try { ok = await lab.files.open(new File([bytes], name)); }
    catch (e) { bad.push(['threw', name, String(e)]); continue; }
    const line = lab.line.textContent;
    counts[ok ? 'opened' : 'refused'] += 1;
    if (!ok && (!line.startsWith(name) || line.includes('\\n') || line.length > 400)) {
      bad.push(['line', name, line.slice(0, 200)]);
    }
    // what is drawn, not the line (which may name NaN weights it refused)
    const text = document.querySelector('.mha-train-panel').innerText.split(line).join('');
    const at = text.search(/\\bNaN\\b/);
    if (at >= 0) { bad.push(['NaN shown', name, text.slice(Math.max(0, at - 80), at + 40)]); }
    if (ok) { // a file the page took: leave the panel as it was for the next
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {bad: bad.slice(0, 10), n_bad: bad.length, counts: counts};
}"""


def test_fuzz_the_trainers_links_and_model_files(live_page):  # noqa: F811
    """N_LINKS hostile links through the page's own link reader and the
    controls, then N_FILES hostile model files through Open, in one page:
    each link gives a size the trainer runs and at most one line; each
    file is opened or refused with one line naming it; nothing says NaN;
    no JavaScript error, no console error."""
    import base64

    import untrusted_fuzz as F

    p = open_link(live_page, "?v=1&h=2&dk=8&seed=0&steps=40")
    console = []
    p.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    try:
        p.wait_for_function(f"{PANEL}.lab.ready")
        got = p.evaluate(FUZZ_LINKS, F.links(N_LINKS))
        print(f"links: {N_LINKS} tried, {got['counts']}")
        assert got["n_bad"] == 0, got["bad"]
        files = [(n, base64.b64encode(b).decode()) for n, b in F.model_files(N_FILES)]
        got = p.evaluate(FUZZ_FILES, files)
        print(f"model files: {N_FILES} tried, {got['counts']}")
        assert got["n_bad"] == 0, got["bad"]
        assert got["counts"]["refused"] >= N_FILES - 8, got["counts"]
        assert p.evaluate("window.pwned === undefined")
        assert console == [], console[:5]
    finally:
        p.close()


def test_fuzz_the_class_pages_reports(live_page):  # noqa: F811
    """N_REPORTS reports, each with one field set to a hostile value,
    deleted or added (two in three with their checksum recomputed), and 8
    files that are no report, opened at once on the class page: every file
    is shown or set aside with one line naming it, nothing says NaN, no
    script runs, no error."""
    import untrusted_fuzz as F

    good, _ = C.generate([run_spec(f"S{i}", seed=i) for i in range(4)])
    edited, raw = F.reports(good, N_REPORTS)
    resummed = C.resum(edited[: 2 * N_REPORTS // 3])
    texts = resummed + [json.dumps(r) for r in edited[2 * N_REPORTS // 3:]] + raw
    files = [(f"fuzz-{i:03d}.json", t) for i, t in enumerate(texts)]
    console = []
    c = open_class(live_page, files)
    c.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    try:
        status = c.locator(".mha-class-status").inner_text()
        m = re.search(r"(\d+) reports? shown, (\d+) set aside", status)
        assert m, status
        shown, aside = int(m[1]), int(m[2])
        lines = c.locator(".mha-class-problems li").all_inner_texts()
        print(f"reports: {len(files)} tried, {shown} shown, {aside} set aside")
        assert shown + aside == len(files), (status, len(files))
        assert len(lines) == aside, (len(lines), aside)
        assert all(re.match(r"fuzz-\d{3}\.json", s) and "\n" not in s and len(s) < 400
                   for s in lines), [s[:120] for s in lines if "\n" in s or len(s) >= 400][:5]
        assert len({s[:13] for s in lines}) == aside, "a file set aside twice"
        shown_text = c.locator("#mha-class").inner_text()
        for line in lines:  # a line may quote the value it refused
            shown_text = shown_text.replace(line, "")
        nan = re.search(r"\bNaN\b", shown_text)
        assert not nan, shown_text[max(0, nan.start() - 120):nan.end() + 60]
        assert c.evaluate("window.pwned === undefined")
        assert c.locator("#mha-class img, #mha-class script").count() == 0
        assert console == [], console[:5]
    finally:
        c.close()


def test_the_explorers_engine_comes_back_without_a_reload(live_page):  # noqa: F811
    """Issue 48, finding 9: forward.onnx fails to load, the status says the
    live engine is unavailable; once the file is back, the next change
    (here, an example picked) starts the engine, and the line goes (before:
    it stayed until a reload)."""
    p = new_page(live_page)
    p.route("**/train/forward.onnx", lambda r: r.abort())
    try:
        p.goto(live_page.url)
        p.wait_for_function("window.mha?.explorer?.engine === 'failed'")
        assert "Live engine unavailable" in p.inner_text("#mha-status")
        p.unroute("**/train/forward.onnx")
        p.wait_for_timeout(1100)  # the explorer tries again at most once a second
        p.click("button.mha-example >> nth=1")
        p.wait_for_function("window.mha.explorer.engine === 'ready'")
        status = p.inner_text("#mha-status")
        assert status.startswith("Live engine ready") and "unavailable" not in status, status
    finally:
        p.close()
