"""Print one handout (PDF) per chapter from the built site, with headless
Chromium, for a class that works on paper.

    python scripts/build_handouts.py                 # after `make book` (it runs this)
    python scripts/build_handouts.py chapters/03_parallel_heads.md   # some chapters
    python scripts/build_handouts.py --site /tmp/b/_build/html

Each chapter page (``_build/html/chapters/NN_*.html``) is served on
127.0.0.1, opened in Debian's Chromium with every other request blocked, and
printed with the site's print stylesheet (``assets/site/print.css``) to
``_build/html/handouts/NN_slug.pdf`` (A4):

- no site chrome: header, sidebars, buttons and navigation are not printed;
- the math is MathJax's rendering (the script waits for MathJax to finish and
  fails if raw TeX is left in the page);
- widgets print as their picture: the widget manager renders each widget
  from the state saved at build time (the view with the default controls);
  of each control only the chosen option prints, and a line under the
  widget says which view is printed. A widget that did not render fails the
  build (no empty boxes on paper);
- exercises print, their solutions do not (they are removed from the page
  before printing); other dropdowns print opened.

``_build/html/handouts/handouts.js`` lists the handouts
(``window.mhaHandouts``: file, title, pages) for ``assets/site/chapter-links.js``,
which puts a "Handout" button on each chapter page; ``handouts.json`` holds the
same list with what was checked (math, figures, widgets, solutions removed).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from site_browser import CHROMIUM, offline_page, serve

ROOT = Path(__file__).resolve().parent.parent

SITE = ROOT / "_build" / "html"
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\frac|\\sqrt|\\text\{|\\mathrm")

PREPARE = r"""
async () => {
  // Remove from a code listing the lines of myst_nb's glue: `glue(...)`
  // calls (over as many lines as their brackets take), its import, and a
  // block header (`for ...:`) left with no body. Returns the lines removed.
  function dropGlueLines(pre) {
    const lines = pre.textContent.split("\n");
    const drop = new Set();
    let depth = 0, open = false;
    lines.forEach((line, i) => {
      const t = line.trim();
      if (!open && /^(glue\(|from myst_nb import glue\b|import myst_nb\b)/.test(t)) {
        open = true; depth = 0;
      }
      if (open) {
        drop.add(i);
        const code = t.replace(/(["'])(?:\\.|(?!\1).)*\1/g, "");   // brackets in strings
        depth += (code.match(/[([{]/g) || []).length - (code.match(/[)\]}]/g) || []).length;
        if (depth <= 0) { open = false; }
      }
    });
    if (!drop.size) { return 0; }
    const indent = l => l.length - l.trimStart().length;
    for (let changed = true; changed;) {
      changed = false;
      lines.forEach((line, i) => {
        if (drop.has(i) || !/:\s*(#.*)?$/.test(line.trim())) { return; }
        let j = i + 1;
        while (j < lines.length && (drop.has(j) || !lines[j].trim())) { j += 1; }
        if (j >= lines.length || indent(lines[j]) <= indent(line)) { drop.add(i); changed = true; }
      });
    }
    // delete the dropped lines' characters, last first, from the highlighted DOM
    const starts = [];
    let at = 0;
    lines.forEach(l => { starts.push(at); at += l.length + 1; });
    const texts = [];
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(), pos = 0; n; n = walker.nextNode()) {
      texts.push([n, pos]); pos += n.data.length;
    }
    const point = off => {
      for (let k = texts.length - 1; k >= 0; k--) {
        const [n, from] = texts[k];
        if (from <= off) { return [n, Math.min(off - from, n.data.length)]; }
      }
      return [texts[0][0], 0];
    };
    [...drop].sort((a, b) => b - a).forEach(i => {
      const range = document.createRange();
      const [n0, o0] = point(starts[i]);
      const [n1, o1] = point(Math.min(starts[i] + lines[i].length + 1, at - 1));
      range.setStart(n0, o0); range.setEnd(n1, o1);
      range.deleteContents();
    });
    return drop.size;
  }

  // MathJax: wait until the page is typeset
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const article = document.querySelector("article.bd-article, main, body");
  const report = {};
  report.title = (article.querySelector("h1") || {}).textContent || document.title;
  report.title = report.title.replace(/[#¶]\s*$/, "").trim();
  report.math = document.querySelectorAll("mjx-container").length;
  // solutions: removed, so that no printer (or text extraction) shows them
  const solutions = document.querySelectorAll(".solution, div.solution, details.solution");
  report.solutions_removed = solutions.length;
  solutions.forEach(e => e.remove());
  // an exercise's code (the attempt it asks about, with the checker's call)
  // is folded on the page; on paper it is printed, open
  report.exercise_code_opened = 0;
  document.querySelectorAll(".exercise").forEach(ex => {
    for (let c = ex.nextElementSibling; c && c.classList.contains("cell");
         c = c.nextElementSibling) {
      c.querySelectorAll("details.hide").forEach(d => {
        d.open = true; d.classList.add("handout-open"); report.exercise_code_opened += 1; });
    }
  });
  // the lines that hand numbers to the prose (myst_nb's glue) are build
  // plumbing, not the lesson: not printed
  report.glue_lines_removed = 0;
  document.querySelectorAll(".cell_input pre").forEach(pre => {
    const dropped = dropGlueLines(pre);
    report.glue_lines_removed += dropped;
    if (dropped && !pre.textContent.trim()) {
      pre.closest(".cell_input").style.display = "none";
    }
  });
  // a checker's verdict starts with an emoji (U+2705 / U+274C) that no font
  // of the printing machine may have (it printed as an empty box): the
  // check mark and ballot x of the text font instead
  report.verdict_marks = 0;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (/[\u2705\u274c]/.test(n.data)) {
      report.verdict_marks += (n.data.match(/[\u2705\u274c]/g) || []).length;
      n.data = n.data.replace(/\u2705/g, "\u2713").replace(/\u274c/g, "\u2717");
    }
  }
  // other dropdowns: opened
  document.querySelectorAll(".admonition.dropdown .toggle-hidden")
    .forEach(e => e.classList.remove("toggle-hidden"));
  document.querySelectorAll("details.dropdown, details.admonition:not(.hide)")
    .forEach(d => d.open = true);
  // widgets: the widget manager renders each view next to its <script>;
  // say under it which view the picture shows
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]');
  report.widgets = views.length;
  report.widgets_rendered = 0;
  views.forEach(s => {
    const box = s.parentElement.querySelector(".jupyter-widgets, .widget-vbox, .lm-Widget");
    if (!box || box.getBoundingClientRect().height < 20) { return; }
    report.widgets_rendered += 1;
    const chosen = [];
    box.querySelectorAll(".widget-toggle-buttons, .widget-dropdown").forEach(c => {
      const label = (c.querySelector(".widget-label") || {}).textContent || "";
      const on = c.querySelector(".mod-active") || c.querySelector("select option:checked");
      if (on) { chosen.push(`${label.trim()} = ${on.textContent.trim()}`); }
    });
    const note = document.createElement("p");
    note.className = "handout-static-note";
    note.textContent = "Interactive on the web page; printed here: the view for "
      + (chosen.length ? chosen.join(", ") : "the default settings") + ".";
    s.parentElement.appendChild(note);
  });
  // figures: images that loaded, at a visible size
  const imgs = Array.from(article.querySelectorAll("img"));
  report.figures = imgs.filter(i => i.complete && i.naturalWidth > 50
                                   && i.getBoundingClientRect().width > 50).length;
  report.broken_images = imgs.filter(i => i.complete && i.naturalWidth === 0).length;
  report.raw_text = article.innerText;
  return report;
}
"""

SKIPPED = re.compile(r"/(fontawesome\.js|searchindex\.js|explorer/[\w.-]+\.js|explorer-data/)")

WIDGETS_READY = r"""
() => {
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]');
  for (const s of views) {
    const box = s.parentElement.querySelector(".jupyter-widgets, .widget-vbox, .lm-Widget");
    if (!box) { return false; }
    for (const img of box.querySelectorAll("img")) {
      if (!img.complete) { return false; }
    }
  }
  return Array.from(document.images).every(i => i.complete);
}
"""

FOOTER = ('<div style="font-size:8px;width:100%;padding:0 14mm;color:#555;'
          'display:flex;justify-content:space-between;">'
          '<span>{title}</span><span><span class="pageNumber"></span> / '
          '<span class="totalPages"></span></span></div>')


class HandoutError(SystemExit):
    """A problem the user can fix (printed without a traceback)."""


def pdf_pages(data: bytes) -> int:
    """Pages of a PDF Chromium wrote (its page objects, not the /Pages tree)."""
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data))


def chapter_pages(site: Path, wanted: list[str]) -> list[Path]:
    pages = sorted((site / "chapters").glob("[0-9][0-9]_*.html"))
    if not pages:
        raise HandoutError(f"no chapter pages in {site / 'chapters'}: run `make book` first")
    if wanted:
        stems = {Path(w).stem for w in wanted}
        unknown = stems - {p.stem for p in pages}
        if unknown:
            raise HandoutError(f"no built page for {sorted(unknown)}")
        pages = [p for p in pages if p.stem in stems]
    return pages


def print_chapter(page, base: str, html: Path, site: Path, out: Path) -> dict:
    rel = html.relative_to(site).as_posix()
    page.emulate_media(media="screen")
    page.goto(f"{base}/{rel}", wait_until="load")
    page.wait_for_function(WIDGETS_READY, timeout=60_000)
    page.emulate_media(media="print")
    report = page.evaluate(PREPARE)
    raw = report.pop("raw_text")
    problems = []
    leftover = RAW_TEX.search(raw)
    if leftover:
        i = leftover.start()
        problems.append(f"raw TeX left in the page: {raw[max(0, i - 40):i + 40]!r}")
    if report["widgets_rendered"] != report["widgets"]:
        problems.append(f"{report['widgets'] - report['widgets_rendered']} of "
                        f"{report['widgets']} widgets did not render")
    if report["broken_images"]:
        problems.append(f"{report['broken_images']} images did not load")
    if problems:
        raise HandoutError(f"{rel}: " + "; ".join(problems))
    title = report["title"]
    target = out / f"{html.stem}.pdf"
    page.pdf(path=str(target), format="A4", print_background=True,
             display_header_footer=True, header_template="<span></span>",
             footer_template=FOOTER.format(title=title.replace("<", "&lt;")),
             margin={"top": "14mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
    data = target.read_bytes()
    report.update(file=target.name, page=rel, pages=pdf_pages(data), bytes=len(data))
    return report


def print_share(base: str, share: list[Path], site: Path, out: Path) -> tuple[dict, list]:
    """Print ``share`` in a browser of its own: ``({page: report}, blocked URLs)``."""
    reports = {}
    with offline_page(base, width=1100, height=1400) as (page, blocked):
        for html in share:
            reports[html] = print_chapter(page, base, html, site, out)
    return reports, blocked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chapters", nargs="*", help="chapter files or stems (default: all)")
    ap.add_argument("--site", type=Path, default=SITE, help="the built site (_build/html)")
    ap.add_argument("--jobs", type=int, default=2, help="browsers printing side by side")
    args = ap.parse_args()
    site = args.site.resolve()
    if not Path(CHROMIUM).exists():
        print(f"handouts skipped: no Chromium at {CHROMIUM} to print them with "
              "(apt-get install chromium, or set CHROMIUM=/path/to/chrome); "
              "the chapter pages show no Handout button.")
        return 0
    pages = chapter_pages(site, args.chapters)
    out = site / "handouts"
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "handouts.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    t = time.perf_counter()
    # what paper does not show, and costs each page most of a second: the
    # icon font's script (icons sit in the site's chrome, not printed), the
    # search index, and the live explorer and trainer; answered 404 by the
    # server (site_browser.serve says why not by a Playwright route)
    with serve(site, skip=SKIPPED) as base:
        # `--jobs` browsers side by side, each driven by a process of its
        # own (Playwright's synchronous API in threads takes turns) and
        # printing every jobs-th chapter
        shares = [pages[i::args.jobs] for i in range(max(1, args.jobs))]
        with ProcessPoolExecutor(max_workers=len(shares),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(print_share, [base] * len(shares), shares,
                                 [site] * len(shares), [out] * len(shares)))
    blocked = [url for _, urls in done for url in urls]
    for html in pages:
        r = next(reports[html] for reports, _ in done if html in reports)
        manifest[html.stem] = r
        print(f"{r['file']}: {r['pages']} pages, {r['bytes'] / 1024:.0f} KiB, "
              f"{r['math']} formulas, {r['figures']} figures, "
              f"{r['widgets']} widgets, {r['solutions_removed']} solutions left out")
    if blocked:
        print(f"blocked requests to other servers: {sorted(set(blocked))[:5]}")
    manifest = {k: manifest[k] for k in sorted(manifest)
                if (site / "chapters" / f"{k}.html").exists()}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    links = {k: {"file": v["file"], "title": v["title"], "pages": v["pages"]}
             for k, v in manifest.items()}
    (out / "handouts.js").write_text(
        "// written by scripts/build_handouts.py: the chapters' printable handouts\n"
        f"window.mhaHandouts = {json.dumps(links, indent=1)};\n")
    print(f"{len(pages)} handouts in {out} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
