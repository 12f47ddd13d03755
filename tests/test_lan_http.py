"""The lab and the class page over plain http on a school's network (issue
47, item 7): a page served by a laptop over http at an address that is not
this machine's is not a secure context, so the browser gives it no
``crypto.subtle``. Chromium treats http://localhost, http://127.0.0.1 and
the whole of 127.0.0.0/8 as potentially trustworthy (secure), whatever the
port, so 127.0.0.2 would not show it; a host name that is not "localhost"
does, even when it resolves to 127.0.0.1: the browser decides by the
address's host, not by where it leads. So the site is served on 127.0.0.1
and opened as http://school.test:PORT (``--host-resolver-rules`` maps the
name; every other request is blocked). There, the page has no
``crypto.subtle``, loads the build's copy of @noble/hashes instead (and only
there), and the lab and the class page give the same build id and
checksums as on a secure page. Needs ``make book``."""
from __future__ import annotations

import os
import re
import shutil
import time

import pytest
from test_lab_grades_live import RECORD  # the page's record and grades, as graded there

from mhacourse.checks import predictions as P
from site_browser import CHROMIUM, CHROMIUM_ARGS, DRIVE, SITE, block_outside, serve

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

PANEL = "mha.trainer.panels[0]"
NOBLE = "/_static/noble-hashes/sha2.js"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not (SITE / "chapters" / "class.html").exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, sync_playwright() as p:
        port = base.rsplit(":", 1)[1]
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            *CHROMIUM_ARGS, "--host-resolver-rules=MAP school.test 127.0.0.1",
            "--proxy-bypass-list=school.test"])
        yield b, {"lan": f"http://school.test:{port}", "local": base}
        b.close()


def page_at(browser, where: str):
    """A page of a new context that may reach only the site at ``where``;
    returns (page, requested URLs, blocked URLs, errors)."""
    b, bases = browser
    context = b.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
    blocked, asked, errors = [], [], []
    block_outside(context, bases[where], blocked, route=True)
    page = context.new_page()
    page.on("request", lambda r: asked.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, asked, blocked, errors


def lab_state(browser, where: str) -> dict:
    p, asked, blocked, errors = page_at(browser, where)
    try:
        p.goto(browser[1][where] + "/chapters/explorer.html?v=1&h=2&dk=8&steps=20")
        # the build's id is hashed after the lab is ready (on its own time:
        # only a report needs it), here by @noble/hashes, loaded first
        p.wait_for_function(f"window.mha?.trainer && {PANEL}.lab.ready && !!{PANEL}.lab.data.build")
        out = p.evaluate(f"""async () => {{
            const R = await import('../_static/explorer/lab/report.js');
            return {{ secure: window.isSecureContext, subtle: !!(window.crypto && crypto.subtle),
                source: R.hashSource(), build: {PANEL}.lab.data.build,
                sum: await R.sha256Hex('abc'),
                questions: document.querySelectorAll('.mha-lab-predict fieldset').length }}; }}""")
        out["noble"] = any(u.endswith(NOBLE) for u in asked)
        assert blocked == [] and errors == [], (blocked, errors)
        return out
    finally:
        p.context.close()


def test_the_lab_works_over_plain_http_from_another_address(browser):
    lan, local = lab_state(browser, "lan"), lab_state(browser, "local")
    # the school's address is not a secure context: no crypto.subtle there
    assert (lan["secure"], lan["subtle"], lan["source"]) == (False, False, "@noble/hashes")
    assert (local["secure"], local["subtle"], local["source"]) == (True, True, "crypto.subtle")
    # the fallback ran there, and only there, and gives the same hashes
    assert lan["noble"] and not local["noble"]
    assert lan["sum"] == local["sum"] == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")  # SHA-256("abc")
    assert re.fullmatch(r"[0-9a-f]{16}", lan["build"]) and lan["build"] == local["build"]
    assert lan["questions"] > 0  # the questions are shown, as on a secure page


ROWS = [("2", "8", "", ["Ana", "Ben", "Cy", "Di"]), ("2", "8", "&layers=1", ["Ed", "Flo"])]
STEPS = 30


def test_a_class_experiment_over_plain_http(browser, tmp_path):
    """Issue 47: the whole lesson on the built site over plain http at a
    school's address. The class page's "Links for the class" gives six
    students of two rows their own seeds; each trains a short run,
    predicts, switches both heads of layer 1 off in one go and exports a
    report (one also exported twice, under a second name: a copy of one
    run). Every grade is the package's on the page's own record; the class
    page reads the seven reports as six distinct runs, groups its key by
    every setting but the seed, and in projector view fits 1280 x 720."""
    b, bases = browser
    lan, t0 = bases["lan"], time.perf_counter()

    def lap(what):
        print(f"{what}: {time.perf_counter() - t0:.1f} s (load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    context = b.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True,
                            **DRIVE)
    blocked, errors, asked = [], [], []
    block_outside(context, lan, blocked)
    context.on("request", lambda r: asked.append(r.url))
    context.on("page", lambda pg: pg.on("pageerror", lambda e: errors.append(str(e))))
    try:
        cls = context.new_page()
        cls.goto(lan + "/chapters/class.html")
        cls.wait_for_selector("#mha-class-files")
        assert cls.evaluate("window.isSecureContext") is False  # a school's plain http
        cls.locator(".mha-class-links summary").click()
        links, first = [], 1
        for h, dk, knob, names in ROWS:
            cls.fill("#mha-class-rowlink", f"{lan}/chapters/explorer.html?v=1&h={h}&dk={dk}"
                     f"&seed=0&steps={STEPS}{knob}&predict=phase_step:never#explorer-train")
            cls.fill("#mha-class-names", "\n".join(names))
            cls.fill("#mha-class-first", str(first))
            cls.click(".mha-class-makelinks")
            lines = cls.locator(".mha-class-links-out").input_value().splitlines()
            assert len(lines) == len(names), cls.locator(".mha-class-links-status").inner_text()
            links += [(ln.split(" (seed ")[0], ln.split(": ", 1)[1]) for ln in lines]
            first += len(names)
        assert all("predict=" not in u for _, u in links)  # the teacher's answers stay home
        seeds = [int(re.search(r"[?&]seed=(\d+)", u).group(1)) for _, u in links]
        assert seeds == list(range(1, 7))
        # six students: open, predict (each a different answer), train at once
        pages = []
        for i, (name, url) in enumerate(links):
            pg = context.new_page()
            pg.goto(url, wait_until="commit")  # the six load side by side
            pages.append((name, pg))
        lap("links made, six pages opened")
        for i, (name, pg) in enumerate(pages):
            pg.wait_for_function(f"window.mha?.trainer && {PANEL}.lab.ready")
            pg.locator(".mha-trainer").scroll_into_view_if_needed()  # the model is built in view
            pg.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
            pg.evaluate(f"""(i) => {{ const L = {PANEL}.lab;
                L.predictions = Object.fromEntries(L.data.bank.questions.map(q => {{
                    const a = Object.keys(q.answers); return [q.id, a[i % a.length]]; }}));
                {PANEL}.start(); }}""", i)
        lap("six runs started")
        files, grades = [], {}
        for i, (name, pg) in enumerate(pages):
            pg.wait_for_function(f"""{PANEL}.state === 'done' && {PANEL}.evals.length &&
                {PANEL}.evals[{PANEL}.evals.length - 1].step === {PANEL}.step""", timeout=120_000)
            if "layers=1" not in links[i][1]:  # both heads of layer 1 off in one go
                pg.evaluate("""() => { const b = document.querySelectorAll(
                    '.mha-train-panel .mha-train-use'); b[0].click(); b[1].click(); }""")
                pg.wait_for_function(f"{PANEL}.lab.ablations.length === 2 && !{PANEL}.ablating")
            got = pg.evaluate(RECORD)
            mine = {g["id"]: g for g in got["grades"]}
            theirs = {g["id"]: g for g in P.grade({k: g["prediction"] for k, g in mine.items()},
                                                  got["record"])}
            for k in mine:  # every grade, line and explanation: the package's
                assert {x: mine[k][x] for x in ("status", "answer", "line", "explain")} == {
                    x: theirs[k][x] for x in ("status", "answer", "line", "explain")}, (name, k)
            grades[name] = {k: g["status"] for k, g in mine.items()}
            if i == 0:  # Copy link opens the trainer's section, not the page's top
                url = pg.evaluate(f"{PANEL}.lab.copyLink()")
                assert url.endswith("&seed=1#train-it-yourself") or "seed=1" in url and \
                    url.endswith("#train-it-yourself"), url
            for who in [name] + (["Gus"] if i == 0 else []):  # Gus hands in Ana's run too
                pg.fill(".mha-report-controls input[type=text]", who)
                with pg.expect_download() as dl:
                    pg.click(".mha-report-export")
                files.append(tmp_path / f"{who}.json")
                dl.value.save_as(files[-1])
        lap("six runs trained, ablated, graded and exported")
        # the class page reads them
        cls.set_input_files("#mha-class-files", [str(f) for f in files])
        cls.wait_for_function("document.querySelector('.mha-class-status').textContent"
                              ".includes('7 reports shown, 0 set aside')")
        rows = cls.locator(".mha-class-table tbody tr")
        for k in range(rows.count()):
            c = rows.nth(k).locator("th, td").all_inner_texts()
            want = grades[c[0] if c[0] != "Gus" else "Ana"]["phase_step"]
            assert c[8] == want.replace("_", " "), (c, want)
        assert "7 reports that match their links are 6 distinct runs" in \
            cls.locator(".mha-class-copies").inner_text()
        key = cls.locator(".mha-class-quiz li").all_inner_texts()
        assert (f"of 6 distinct runs (7 reports). By setting: 2 × 8, {STEPS} steps "
                "(seeds 1, 2, 3, 4)") in key[0], key[0]
        assert f"2 × 8, layers 1, {STEPS} steps (seeds 5, 6)" in key[0], key[0]
        assert "Phase-change predictions graded right" in key[3] and "best constant" in key[3]
        assert f"2 × 8, {STEPS} steps (4 runs, seeds 1, 2, 3, 4)" in key[4], key[4]
        assert f"2 × 8, {STEPS} steps: " in key[5] and "(4 runs)" in key[5], key[5]
        assert cls.locator(".mha-class-charts g.mha-class-run").count() == 2 * 6
        lap("the class page read and checked")
        # projected at 1280 x 720: nothing wider than the window, charts side by side
        cls.click(".mha-class-projector-btn")
        fit = cls.evaluate("""() => {
            const root = document.getElementById('mha-class');
            const box = (sel) => Array.from(root.querySelectorAll(sel),
                e => e.getBoundingClientRect());
            return { scroll: root.scrollWidth - root.clientWidth, width: innerWidth,
                right: Math.max(...box('*').map(r => r.right)),
                tops: box('.mha-class-chart-row svg').map(r => Math.round(r.top)),
                names: root.querySelectorAll('.mha-point-label').length }; }""")
        assert fit["scroll"] <= 0 and fit["right"] <= fit["width"], fit
        assert len(set(fit["tops"])) == 1 and fit["names"] == 12, fit
        cls.screenshot(path=str(tmp_path / "class-projector-1280x720.png"))
        cls.locator(".mha-class-charts").scroll_into_view_if_needed()
        cls.screenshot(path=str(tmp_path / "class-projector-charts.png"))
        cls.locator(".mha-class-quiz").scroll_into_view_if_needed()
        cls.screenshot(path=str(tmp_path / "class-projector-quiz.png"))
        if os.environ.get("MHA_SHOTS"):
            for f in tmp_path.glob("*.png"):
                shutil.copy(f, os.environ["MHA_SHOTS"])
        assert any(u.endswith(NOBLE) for u in asked)  # checksums by the build's SHA-256
        assert blocked == [] and errors == [], (blocked, errors)
    finally:
        context.close()
