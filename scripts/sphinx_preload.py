"""A Sphinx extension (``_config.yml``'s ``local_extensions``): every page
that loads the explorer's entry module (``_static/explorer/page.js``) gets,
in its ``<head>``, a ``<link rel="modulepreload">`` for each module that
page.js imports, directly or not.

Without them the browser finds the modules one level of imports at a time
(page.js, then trainer.js, then trainer-lab.js, then lab/grade.js, ...):
five round trips before the first line runs. With them every file is asked
for at once, while the page's HTML is still being read. Measured in headless
Chromium on a link to the explorer (benchmarks/bench_reader.py).

The list is read off the modules' own ``import ... from "./x.js"`` lines
when the book is built, so a module added to the graph is preloaded with
no list to keep.

Every page also gets, at the top of its ``<head>``, a ``<link
rel="preload" as="script">`` for each classic script it loads in order
(no ``async``, ``defer`` or ``type="module"``: Sphinx's, the theme's, the
search index, the explorer's data). Chromium's preload scanner, which
would find them ahead of the parser, stops at a ``<meta
http-equiv="Content-Security-Policy">`` (scripts/sphinx_csp.py puts one on
every page), and the parser, which waits for each such script to run
before it reads on, then found the next one only after the last had run:
each file's request waited for the one before (a cold link to the
explorer: 17 scripts, one after another, from 1,065 to 1,746 ms; measured
in headless Chromium, benchmarks/bench_reader.py). A preload link is read
by the parser itself, so they are all asked for at once.

The entry module's own ``<script type="module">`` moves from the page's
body to the same place, before the theme's and MathJax's ``defer``
scripts. A module script runs once the page is parsed, as those do, in
document order with them: in the body it waited for Font Awesome's and
MathJax's to run first (about 260 ms of the main thread on a cold link,
before any of the explorer's code ran). The page's classic data scripts
(the manifest, the precomputed views) are still run by the parser, before
it. The pages are rewritten when the build finishes, as sphinx_csp does; a
second build replaces the links of the first.
"""
from __future__ import annotations

import re
from pathlib import Path

from sphinx_csp import RUNS, SCRIPT, TYPE, rewrite_pages, top_of_head

SITE_ASSETS = Path(__file__).resolve().parent.parent / "assets" / "site"
ENTRY = "explorer/page.js"
#: static imports only: ``import {a} from "./b.js"``, ``import "./c.js"``,
#: ``export {d} from "../e.js"`` (dynamic ``import(...)``, the engines, load later)
STATIC_IMPORT = re.compile(r'^\s*(?:import|export)\b[^;"]*?(?:from\s*)?"(\.{1,2}/[^"]+\.js)"', re.M)


def module_graph(entry: str = ENTRY, root: Path = SITE_ASSETS) -> list[str]:
    """Every module ``entry`` loads, ``entry`` first, as paths under
    ``root`` (``assets/site``), in the order a depth-first walk meets them."""
    seen: list[str] = []

    def walk(rel: str) -> None:
        if rel in seen:
            return
        seen.append(rel)
        path = root / rel
        for target in STATIC_IMPORT.findall(path.read_text()):
            walk((path.parent / target).resolve().relative_to(root.resolve()).as_posix())

    walk(entry)
    return seen


def preload_tags(pathto_static: str) -> str:
    """The ``<link>`` tags for a page whose ``_static/`` is at ``pathto_static``."""
    mods = [f'<link rel="modulepreload" href="{pathto_static}{m}">' for m in module_graph()]
    return "\n".join(mods) + "\n"


#: a classic script the parser waits for: ``<script src="...">`` of a type
#: the browser runs (sphinx_csp's SCRIPT, TYPE and RUNS), not a module, with
#: no ``async`` or ``defer``
SRC = re.compile(r'\bsrc="([^"]+)"')
OUT_OF_ORDER = re.compile(r"\b(?:async|defer)\b", re.I)
CLASSIC = re.compile(r"<!-- classic scripts -->\n.*?<!-- /classic scripts -->\n", re.S)
ENTRY_TAG = re.compile(r'<script type="module" src="[^"]*' + re.escape(ENTRY) + r'"></script>\n?')


def classic_scripts(html: str) -> list[str]:
    """The ``src`` of every classic script of ``html`` the parser runs in
    order, in document order, each once."""
    out: list[str] = []
    for tag in SCRIPT.finditer(html):
        attrs = tag.group(1)
        kind = TYPE.search(attrs)
        classic = (kind.group(1).lower() if kind else "") in RUNS - {"module"}
        src = SRC.search(attrs)
        if src and classic and not OUT_OF_ORDER.search(attrs) and src.group(1) not in out:
            out.append(src.group(1))
    return out


def with_script_preloads(html: str) -> str:
    """``html`` with a preload link for each of its classic scripts at the
    top of its ``<head>``, after ``<meta charset>`` (which must come within
    its first 1,024 bytes), then the entry module's script tag, if it has
    one; those of an earlier build replaced."""
    entry = ENTRY_TAG.search(html)  # in the body, or in the block of an earlier pass
    html = ENTRY_TAG.sub("", CLASSIC.sub("", html), count=1)
    head = top_of_head(html)
    srcs = classic_scripts(html)
    if head is None or not (srcs or entry):
        return html
    links = "".join(f'<link rel="preload" as="script" href="{s}">\n' for s in srcs)
    if entry:
        links += entry.group(0).rstrip("\n") + "\n"
    block = "<!-- classic scripts -->\n" + links + "<!-- /classic scripts -->\n"
    return html[: head.end()] + block + html[head.end():]


def _add_script_preloads(app, exception):
    rewrite_pages(app, exception, with_script_preloads)


def _add_preloads(app, pagename, templatename, context, doctree):
    if doctree is None or "_static/explorer/page.js" not in context.get("body", ""):
        return
    static = context["pathto"]("_static/", 1)
    context["metatags"] = context.get("metatags", "") + preload_tags(static)


def setup(app):
    app.connect("html-page-context", _add_preloads)
    # before sphinx_csp's (priority 500), which then puts its policy between
    # <meta charset> and these
    app.connect("build-finished", _add_script_preloads, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
