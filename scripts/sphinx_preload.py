"""A Sphinx extension (``_config.yml``'s ``local_extensions``): every page
that loads the explorer's entry module (``_static/explorer/page.js``) gets,
in its ``<head>``, a ``<link rel="modulepreload">`` for each module that
page.js imports, directly or not, and a ``<link rel="preload">`` for the
lab's two data files (the question bank and the book's runs).

Without them the browser finds the modules one level of imports at a time
(page.js, then trainer.js, then trainer-lab.js, then lab/grade.js, ...):
five round trips before the first line runs, and the lab's data is asked
for only once the trainer is built. With them every file is asked for at
once, while the page's HTML is still being read. Measured in headless
Chromium on a link to the explorer (benchmarks/bench_reader.py).

The list is read off the modules' own ``import ... from "./x.js"`` lines
when the book is built, so a module added to the graph is preloaded with
no list to keep.
"""
from __future__ import annotations

import re
from pathlib import Path

SITE_ASSETS = Path(__file__).resolve().parent.parent / "assets" / "site"
ENTRY = "explorer/page.js"
#: the lab's data, fetched by trainer-lab.js (labData) as soon as a trainer is built
LAB_DATA = ("explorer-data/lab/questions.json", "explorer-data/lab/book_runs.json")
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
    data = [f'<link rel="preload" as="fetch" crossorigin="anonymous" href="{pathto_static}{f}">'
            for f in LAB_DATA]
    return "\n".join(mods + data) + "\n"


def _add_preloads(app, pagename, templatename, context, doctree):
    if doctree is None or "_static/explorer/page.js" not in context.get("body", ""):
        return
    static = context["pathto"]("_static/", 1)
    context["metatags"] = context.get("metatags", "") + preload_tags(static)


def setup(app):
    app.connect("html-page-context", _add_preloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
