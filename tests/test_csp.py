"""The site's Content-Security-Policy (scripts/sphinx_csp.py, issue 48):
every page Sphinx writes carries one, before any script, that runs only
the site's own scripts (its inline ones by hash) and WebAssembly; and in
Chromium, with the policy in force (no Playwright bypass: the test's own
waits poll from Python), the explorer, the trainer, the class page and a
chapter with widgets and formulas work with no violation reported, while
a ``javascript:`` link and an inline handler put into the page run
nothing. ``make book`` first."""
from __future__ import annotations

import os
import re
import time

import pytest
from test_site import PAGES

from site_browser import CHROMIUM, CSP_RECORD, SITE, offline_page, serve

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
def sphinx_pages() -> list:
    """The pages Sphinx writes (not the decks, handouts or copied files)."""
    skip = {"_static", "_sources", "slides", "handouts", "_images"}
    return sorted(p for p in SITE.rglob("*.html") if not skip & set(p.relative_to(SITE).parts))


def directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


def test_every_page_has_the_policy_before_any_script():
    pages = sphinx_pages()
    if not pages:
        pytest.fail("the site is not built: run `make book` first")
    for page in pages:
        html = page.read_text()
        if "<script" not in html and 'http-equiv="Refresh"' in html:
            continue  # Jupyter Book's root index.html: a redirect, and nothing else
        m = META.search(html)
        assert m, f"{page.relative_to(SITE)} has no Content-Security-Policy"
        first_script = html.find("<script")
        assert first_script < 0 or m.start() < first_script, f"{page}: a script before the policy"
        d = directives(m.group(1))
        script = d["script-src"]
        assert script[:2] == ["'self'", "'wasm-unsafe-eval'"], (page, script)
        assert "'unsafe-inline'" not in script, page
        assert all(s.startswith("'sha256-") or s in ("'unsafe-hashes'", "'unsafe-eval'")
                   for s in script[2:]), (page, script)
        assert d["object-src"] == ["'none'"] and d["base-uri"] == ["'self'"], page
        # only a page with ipywidgets (whose manager compiles JSON schemas) may eval
        widgets = "application/vnd.jupyter.widget-state+json" in html
        assert ("'unsafe-eval'" in script) == widgets, page
    for name in ("explorer", "class", "08_how_many_heads"):
        html = (SITE / "chapters" / f"{name}.html").read_text()
        assert "'unsafe-eval'" not in META.search(html).group(1), name


def until(p, expr: str, timeout: float = 90) -> None:
    """Poll ``expr`` in the page (no wait_for_function: the policy forbids
    the string it compiles)."""
    end = time.monotonic() + timeout
    while not p.evaluate(expr):
        if time.monotonic() > end:
            raise TimeoutError(expr)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def strict():
    """A page with the policy in force, offline; its console errors."""
    if not (SITE / "chapters" / "explorer.html").exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base, csp=True) as (p, blocked):
        errors: list[str] = []
        p.context.add_init_script(CSP_RECORD)
        p.on("pageerror", lambda e: errors.append(str(e)))
        p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        yield p, base, errors
        assert blocked == [], f"the pages tried to reach {blocked}"


def test_the_explorer_and_the_trainer_work_under_the_policy(strict):
    p, base, errors = strict
    p.goto(f"{base}/chapters/explorer.html", wait_until="networkidle")
    until(p, "window.mha && mha.engine && mha.trainer && mha.trainer.panels.length > 0")
    p.locator(".mha-trainer").scroll_into_view_if_needed()
    until(p, "mha.trainer.panels[0].state === 'ready'")
    p.evaluate("mha.trainer.panels[0].worker.steps(20); mha.trainer.panels[0].start()")
    until(p, """mha.trainer.panels[0].state === 'done' &&
        mha.trainer.panels[0].evals.some(e => e.step === 20)""")
    assert p.evaluate("mha.trainer.panels[0].heads.querySelectorAll('canvas').length") > 0
    assert p.locator("#mha-explorer canvas").count() > 0
    assert p.evaluate("window.__csp") == [], p.evaluate("window.__csp")
    assert errors == [], errors


def test_a_chapter_with_widgets_and_formulas_works_under_the_policy(strict):
    p, base, errors = strict
    p.goto(f"{base}/chapters/01_one_head.html", wait_until="networkidle")
    until(p, "window.MathJax && document.querySelectorAll('mjx-container').length > 0")
    until(p, "document.querySelectorAll('.widget-slider, .jupyter-widgets').length > 0", timeout=30)
    assert p.evaluate("window.__csp") == [], p.evaluate("window.__csp")
    assert [e for e in errors if "404" not in e] == [], errors


def test_the_class_page_works_and_a_javascript_link_runs_nothing(strict):
    p, base, errors = strict
    p.goto(f"{base}/chapters/class.html", wait_until="networkidle")
    until(p, "!!document.querySelector('#mha-class-files') && "
             "document.querySelector('.mha-class-runner').textContent === 'Re-run: ready.'")
    assert p.evaluate("window.__csp") == [], p.evaluate("window.__csp")
    # whatever a page's own code may let through, the policy stops: a
    # javascript: link and an inline handler, put into the page by hand
    p.evaluate("""() => {
        const a = document.createElement('a');
        a.href = 'javascript:window.pwned = 1'; a.id = 'evil'; a.textContent = 'evil';
        const img = document.createElement('img');
        img.setAttribute('onerror', 'window.pwned = 2'); img.src = 'data:,';
        document.body.append(a, img); }""")
    p.click("#evil")
    time.sleep(0.5)
    assert p.evaluate("window.pwned") is None
    seen = p.evaluate("window.__csp")
    assert len(seen) == 2 and all(v.startswith("script-src") for v in seen), seen
    errors[:] = [e for e in errors if "Content Security Policy" not in e]
    assert errors == [], errors


def test_every_page_outside_the_toc_loads_with_no_violation(strict):
    """Each page Sphinx writes that is not in the table of contents (the
    index, the search page), opened with its policy in force, is refused
    nothing. (The pages of the table of contents are opened the same way,
    policy in force, by test_site's per-page test, which checks this too;
    a page that comes to need another source says so there.)"""
    p, base, _ = strict
    toc = set(PAGES)
    refused, seen_pages = {}, 0
    for page in sphinx_pages():
        name = page.relative_to(SITE).as_posix()
        if name in toc:
            continue
        seen_pages += 1
        p.goto(f"{base}/{name}", wait_until="networkidle")
        p.wait_for_timeout(200)
        seen = p.evaluate("window.__csp")
        if seen:
            refused[name] = seen
    assert seen_pages >= 2, "the index and the search page"
    assert refused == {}, refused
