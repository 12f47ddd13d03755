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

import pytest
from class_reports import class_spec, generate

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
            *CHROMIUM_ARGS, "--host-resolver-rules=MAP school.test 127.0.0.1"])
        yield b, {"lan": f"http://school.test:{port}", "local": base}
        b.close()


def page_at(browser, where: str):
    """A page of a new context that may reach only the site at ``where``;
    returns (page, requested URLs, blocked URLs, errors)."""
    b, bases = browser
    context = b.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
    blocked, asked, errors = [], [], []
    block_outside(context, bases[where], blocked)
    page = context.new_page()
    page.on("request", lambda r: asked.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, asked, blocked, errors


def lab_state(browser, where: str) -> dict:
    p, asked, blocked, errors = page_at(browser, where)
    try:
        p.goto(browser[1][where] + "/chapters/explorer.html?v=1&h=2&dk=8&steps=20")
        p.wait_for_function(f"window.mha?.trainer && {PANEL}.lab.ready", timeout=60_000)
        out = p.evaluate(f"""async () => {{
            const R = await import('../_static/class/report.js');
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


def test_the_class_page_reads_reports_over_plain_http(browser, tmp_path):
    reports, texts = generate(class_spec(3))
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"report-{i}.json")
        paths[-1].write_text(text)
    p, asked, blocked, errors = page_at(browser, "lan")
    try:
        p.goto(browser[1]["lan"] + "/chapters/class.html")
        p.wait_for_function("document.querySelector('.mha-class-status') && "
                            "/This site is build/.test("
                            "document.querySelector('.mha-class-status').textContent)",
                            timeout=60_000)
        assert p.evaluate("window.isSecureContext") is False
        p.set_input_files("#mha-class-files", [str(x) for x in paths])
        p.wait_for_function("document.querySelector('.mha-class-status').textContent"
                            ".includes('3 reports shown')", timeout=60_000)
        assert p.locator(".mha-class-problems li").count() == 0  # every checksum matched
        assert any(u.endswith(NOBLE) for u in asked)
        assert blocked == [] and errors == [], (blocked, errors)
    finally:
        p.context.close()
