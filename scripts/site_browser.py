"""Open the built site in headless Chromium with every non-local request blocked.

Shared by `scripts/build_handouts.py` (which `make book` runs),
`scripts/screenshot.py`, the benchmarks and the site tests (pytest.ini puts
scripts/ on their path). Debian's chromium at /usr/bin/chromium (never a
browser downloaded by Playwright). It imports no test dependency and lives
outside tests/: `make book` runs it with the book's packages only (the live
pages' pytest fixture is in `tests/live_fixture.py`).
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
PAGE = "chapters/explorer.html"  # the explorer and the trainer (the live-page tests)
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
#: Every request that would leave the machine goes to a proxy that is not
#: there (port 9 of the loopback address, where nothing listens) and fails;
#: Chromium never sends its loopback addresses (127.0.0.1, localhost, [::1])
#: to a proxy, so the local server is reached directly. Blocking there, not
#: in a Playwright route, keeps the browser as a reader's: a route pauses
#: every request of the page for the Playwright client to answer and turns
#: the HTTP cache off (a link opened again on the explorer took 1,586 ms
#: routed against 687 ms, and cold 2,369 against 1,970, median of 3 at load
#: 5-6). block_outside records the URLs that were tried.
BLOCKING_PROXY = "--proxy-server=http://127.0.0.1:9"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    BLOCKING_PROXY,
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    skip = None  # a compiled pattern: paths answered 404 without reading a file

    def log_message(self, *args):
        pass

    def send_head(self):
        if self.skip is not None and self.skip.search(self.path.split("?", 1)[0]):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return super().send_head()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A browser that stops reading a file (a page closed or navigated
        away mid-download) is not an error of the site: say nothing, as
        for a request (socketserver printed a traceback for each)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(directory: Path = SITE, skip: re.Pattern | None = None):
    """Serve ``directory`` on 127.0.0.1 (a random free port); yield the base
    URL. Paths that ``skip`` matches are answered 404: the way to keep a
    page from loading a file without a Playwright route, which pauses every
    request for the Playwright client and turns Chromium's HTTP cache off
    (each page then compiles MathJax and the theme's scripts anew: the 17
    handouts took 45.6 CPU seconds of Chromium routed, 35.9 served so)."""
    handler = type("_Handler", (_Quiet,), {"skip": skip})
    handler = functools.partial(handler, directory=str(directory))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def document_screens(page) -> float:
    """How long the open page is: its document's height in viewport heights
    (screens), as ``tests/test_site.py`` and ``scripts/page_heights.py`` count.
    Measured once the page has settled: MathJax has typeset every formula,
    the fonts and every image have loaded. Before that the height depends on
    how far they got ("networkidle" does not wait for typesetting), and a
    page near its bound passed or failed by chance."""
    return page.evaluate("""async () => {
        let stage = 'MathJax';
        const settled = (async () => {
            if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
                await MathJax.startup.promise; }
            stage = 'the fonts';
            await document.fonts.ready;
            stage = 'the images';
            await Promise.all(Array.from(document.images, im => im.complete ? null :
                new Promise(ok => { im.onload = im.onerror = ok; })));
            stage = 'two frames';
            await new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(ok)));
        })();
        // bounded: Playwright's evaluate has no timeout of its own
        await Promise.race([settled, new Promise((_, no) => setTimeout(() => no(new Error(
            'the page did not settle in 60 s: waiting for ' + stage)), 60000))]);
        return document.documentElement.scrollHeight / window.innerHeight; }""")


#: How long a Playwright wait in a context of ours waits for its state, by
#: default (Playwright's own is 30 s). Every wait is for a state (a page
#: loaded, a model trained), so this bounds only how long a broken page is
#: waited for; on a machine busy with other work a page that is fine can
#: take several times its quiet time (issue 49: the suite beside two busy
#: loops), and that must not fail a test.
WAIT_MS = 120_000


def block_outside(context, base: str, blocked: list[str], route: bool = False) -> None:
    """Record in ``blocked`` every request of the Playwright ``context`` that
    is not for ``base`` (or a ``data:``/``blob:`` URL); the browser's
    :data:`BLOCKING_PROXY` (in :data:`CHROMIUM_ARGS`) makes them fail. With
    ``route`` they are also aborted by a Playwright route (a browser whose
    site is on a name that is not a loopback address, which the proxy would
    refuse too, launched with that name in ``--proxy-bypass-list``). Its
    waits wait up to :data:`WAIT_MS` unless they say."""
    context.set_default_timeout(WAIT_MS)
    local = (base, "data:", "blob:")

    def seen(request):
        if not request.url.startswith(local):
            blocked.append(request.url)

    context.on("request", seen)
    if route:
        context.route(re.compile("^(?!" + "|".join(map(re.escape, local)) + ")"),
                      lambda r: r.abort())


#: The site's pages carry a Content-Security-Policy (scripts/sphinx_csp.py)
#: that refuses scripts compiled from strings, which Playwright's
#: ``wait_for_function("...")`` is: a context that drives the pages that way
#: is made with ``**DRIVE`` (Playwright's ``bypass_csp``). The policy's own
#: test (tests/test_csp.py) opens the pages without it.
DRIVE = {"bypass_csp": True}
#: An init script (``context.add_init_script``) with which a page keeps, from
#: its first line, what its policy refused, in ``window.__csp``.
CSP_RECORD = """window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
  e.violatedDirective + " " + e.blockedURI + " " + (e.sourceFile || "") + ":" + e.lineNumber));"""
#: The ids a page uses more than once (a function for ``page.evaluate``).
IDS_TWICE = """() => { const ids = Array.from(document.querySelectorAll('[id]'), (e) => e.id);
  return ids.filter((i, k) => ids.indexOf(i) !== k); }"""


@contextlib.contextmanager
def offline_page(base: str, width: int = 1280, height: int = 900, csp: bool = False):
    """A Playwright page that may only reach ``base``. Yields ``(page, blocked)``,
    ``blocked`` being the list of URLs it tried to reach elsewhere. With
    ``csp`` the pages' Content-Security-Policy holds for the test's own
    scripts too (no ``wait_for_function`` with a string then)."""
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": width, "height": height},
                                      **({} if csp else DRIVE))
        block_outside(context, base, blocked)
        page = context.new_page()
        try:
            yield page, blocked
        finally:
            browser.close()


# --- the live page that the browser tests share (make book first) ----------
#
# ``live_page`` opens ``chapters/explorer.html`` of the built site in headless
# Chromium, offline (every request that leaves 127.0.0.1 is blocked and
# recorded), and checks when the module's tests are done that the page raised
# no JavaScript error and reached nothing outside. ``tests/test_explorer_live.py``
# and ``tests/test_train_live.py`` import it and build their ``page`` fixture
# on it. (tests/conftest.py holds only the order the test files run in.)

@dataclass
class LivePage:
    """The open page, the site's base URL, the URLs it tried to reach
    elsewhere, and the JavaScript errors it raised."""

    page: object
    base: str
    blocked: list[str]
    errors: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.base}/{PAGE}"
