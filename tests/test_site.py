"""The built site (``make book`` first), opened as a reader would: in headless
Chromium, with every request that leaves the site blocked."""
from __future__ import annotations

import io
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from site_browser import SITE, offline_page, serve
from test_book import ROOT, toc_files

PAGES = [f + ".html" for f in toc_files()]
NOTEBOOK_PAGES = [p for p in PAGES if (ROOT / p.replace(".html", ".ipynb")).exists()]


@pytest.fixture(scope="module")
def site():
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base) as (page, blocked):
        yield base, page, blocked


def html(page: str) -> str:
    return (SITE / page).read_text()


@pytest.mark.parametrize("page", PAGES)
def test_page_built_without_errors_or_stderr(page):
    text = html(page)
    assert "Traceback" not in text, f"{page} shows a traceback"
    assert 'class="output stderr"' not in text, f"{page} shows stderr output"
    assert 'class="output traceback"' not in text


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_nothing_from_other_servers(page):
    text = html(page)
    remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
    assert not remote, f"{page} loads {remote}"


@pytest.mark.parametrize("page", PAGES)
def test_page_offline_math_renders_and_nothing_leaves(site, page):
    base, browser, blocked = site
    blocked.clear()
    errors: list[str] = []
    browser.on("pageerror", lambda e: errors.append(str(e)))
    browser.goto(f"{base}/{page}", wait_until="networkidle")
    if 'class="math' in html(page):  # Sphinx marks every formula so
        browser.wait_for_selector("mjx-container", timeout=15_000)
        assert browser.locator("mjx-merror").count() == 0, f"MathJax error on {page}"
    assert blocked == [], f"{page} tried to reach {blocked}"
    ours = [e for e in errors if "THEBE_JS_URL" not in e]  # sphinx-thebe loads twice
    assert ours == [], f"JavaScript errors on {page}: {ours}"


def _shot(locator) -> bytes:
    return locator.screenshot()


def test_static_widget_renders_and_reacts_offline(site):
    """Chapter 1's d_k explorer: the controls change the picture with no kernel."""
    base, browser, blocked = site
    blocked.clear()
    browser.goto(f"{base}/chapters/01_one_head.html", wait_until="networkidle")
    box = browser.locator(".widget-vbox").first
    box.wait_for(timeout=15_000)
    box.scroll_into_view_if_needed()
    img = box.locator("img:visible")
    assert img.count() == 1
    before_alt, before = img.get_attribute("alt"), _shot(box)
    browser.get_by_role("button", name="none").click()
    browser.wait_for_timeout(300)
    after_alt, after = box.locator("img:visible").get_attribute("alt"), _shot(box)
    assert "unscaled" in after_alt and "unscaled" not in before_alt
    assert before != after, "the picture did not change when the control moved"
    assert blocked == []


def test_widget_scripts_only_on_pages_with_widgets():
    for page in PAGES:
        has_state = "application/vnd.jupyter.widget-state+json" in html(page)
        has_js = "widgets/embed-amd.js" in html(page)
        assert has_state == has_js, f"{page}: widget manager loaded={has_js}, state={has_state}"


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_launch_buttons_name_notebooks_that_exist(page):
    links = re.findall(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)[^"]+)"',
                       html(page))
    assert len(links) >= 2, f"{page} lacks Binder/Colab launch links"
    for link in links:
        u = urlparse(unquote(link.replace("&amp;", "&")))
        path = parse_qs(u.query).get("urlpath", [u.path])[0]
        m = re.search(r"(chapters/[\w.-]+\.ipynb)", path)
        assert m, f"{link} does not name a chapter notebook"
        assert (ROOT / m.group(1)).exists(), f"{link} names a missing file"


@pytest.mark.parametrize("page", PAGES)
def test_accessibility_no_serious_or_critical_violations(site, page):
    base, browser, _ = site
    browser.goto(f"{base}/{page}", wait_until="networkidle")
    browser.wait_for_timeout(500)
    browser.add_script_tag(url=f"{base}/_static/axe/axe.min.js")
    found = browser.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.filter(v => ['serious', 'critical'].includes(v.impact))
                 .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
    }""")
    assert found == [], f"{page}: {found}"


# The explorer page (chapters/explorer) is tested in test_explorer_live.py:
# every control, typing, bad input, the keyboard, parity with the package.
