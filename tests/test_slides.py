"""The chapters' slide decks (scripts/build_slides.py, run by `make book`),
opened in headless Chromium with every request that leaves the site blocked."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from site_browser import SITE, offline_page, serve
from test_book import ROOT, toc_files

sys.path.insert(0, str(ROOT / "scripts"))
import build_slides as bs  # noqa: E402  (scripts/build_slides.py)
import slide_markdown as sm  # noqa: E402  (scripts/slide_markdown.py)
import slide_paginate as sp  # noqa: E402  (scripts/slide_paginate.py)

SLIDES = SITE / "slides"
CHAPTER_PAGES = [f for f in toc_files()
                 if re.fullmatch(r"chapters/[0-9][0-9]_[\w-]+", f)
                 and (ROOT / f"{f}.ipynb").exists()]
STEMS = [Path(f).name for f in CHAPTER_PAGES]


def decks() -> dict:
    manifest = SLIDES / "decks.js"
    if not manifest.exists():
        pytest.fail("no slides: run `make book` (it runs scripts/build_slides.py)")
    return json.loads(re.search(r"=\s*(\{.*\});", manifest.read_text(), re.S).group(1))


def has_math(deck_html: str) -> bool:
    """TeX left in the deck's Markdown for MathJax (code and scripts aside)."""
    text = re.sub(r"<(pre|script|style|code)\b.*?</\1>", "", deck_html, flags=re.S)
    return bool(re.search(r"\$[^$<>\n]+\$|\\\(|\\\[|\\begin\{", text))


@pytest.fixture(scope="module")
def browser():
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base, width=1280, height=800) as (page, blocked):
        yield base, page, blocked


def test_every_chapter_has_a_deck():
    listed = decks()
    for stem in STEMS:
        assert stem in listed, f"no deck for {stem}: run `make book`"
        assert (SLIDES / listed[stem]["file"]).exists()
    for stem in listed:
        assert stem in STEMS, f"a deck for {stem}, which is not a chapter in _toc.yml"


@pytest.mark.parametrize("stem", STEMS)
def test_deck_loads_nothing_from_other_servers(stem):
    text = (SLIDES / f"{stem}.slides.html").read_text()
    remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="((?:https?:)?//[^"]+)"', text)
    assert not remote, f"{stem} deck loads {remote}"
    assert '"../_static/reveal/dist/reveal.js"' in text, "reveal.js must come from the site"
    assert 'src="../_static/mathjax/tex-mml-chtml.js"' in text, "MathJax must come from the site"


@pytest.mark.parametrize("stem", STEMS)
def test_chapter_links_its_deck_which_opens_offline_every_slide_reached_and_fitting(browser, stem):
    """From the chapter's page, its Slides button opens its deck (one load of
    the deck for the checks below: loading took most of their time): the
    deck opens offline with no page error, the keyboard and Reveal.next()
    reach every slide, and every slide fits its box (_check_fit)."""
    base, page, blocked = browser
    blocked.clear()
    errors: list[str] = []
    on_error = lambda e: errors.append(str(e))  # noqa: E731
    # the button is chapter-links.js's, made when the document is parsed
    page.goto(f"{base}/chapters/{stem}.html", wait_until="domcontentloaded")
    link = page.locator("a.slides-button")
    link.wait_for()
    href = link.get_attribute("href")
    assert href.endswith(f"slides/{stem}.slides.html"), href
    assert link.inner_text().strip() == "Slides"
    page.on("pageerror", on_error)
    try:
        link.click()
        page.wait_for_url(f"**/slides/{stem}.slides.html*")
        page.wait_for_load_state("networkidle")
        _walk_deck(page, stem)
        _check_fit(page, stem)
    finally:
        page.remove_listener("pageerror", on_error)
    assert errors == [], f"{stem} deck: {errors}"
    assert blocked == [], f"{stem} deck tried to reach {blocked}"


def _walk_deck(page, stem: str) -> None:
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    total = page.evaluate("Reveal.getTotalSlides()")
    assert total == decks()[stem]["slides"], "the deck's slide count differs from decks.js"
    assert total >= 5, f"{stem}: only {total} slides"

    # the keyboard works: the right arrow leaves the title slide
    page.locator(".reveal").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    page.wait_for_function("Reveal.getIndices().h === 1")
    page.evaluate("Reveal.slide(0, 0)")

    # Reveal.next() from the first slide until the last, in the page: three
    # round trips a slide from here cost this test on five decks (02, 04,
    # 08, 11, 14) 53.3 and 45.0 s, against 44.3 and 40.2 s (interleaved)
    seen, last = page.evaluate("""(most) => {
        const seen = [];
        for (let k = 0; k < most; k++) {
            const i = Reveal.getIndices();
            seen.push([i.h, i.v]);
            if (Reveal.isLastSlide()) { break; }
            Reveal.next();
        }
        return [seen, Reveal.isLastSlide()];
    }""", total + 2)
    seen = [tuple(i) for i in seen]
    assert len(set(seen)) == total, f"Reveal.next() reached {len(set(seen))} of {total} slides"
    assert last
    assert page.locator(".reveal .admonition-title", has_text="Goals").count() == 1, \
        "no Goals slide"
    assert page.locator(".reveal section h2", has_text="Summary").count() == 1, \
        "no Summary slide"
    if has_math((SLIDES / f"{stem}.slides.html").read_text()):
        page.wait_for_selector("mjx-container", state="attached")
        assert page.locator("mjx-merror").count() == 0, f"MathJax error in the {stem} deck"


SLIDE_BOX = (1280, 720)      # scripts/build_slides.py: SLIDE_W, SLIDE_H
MIN_CODE_PX = 14.4           # 18 px code at the smallest type scale the deck allows (0.8)
MIN_OUTPUT_PX = 16           # 20 px printed output at that scale


def _check_fit(page, stem: str) -> None:
    """Walk every slide of the open deck: its content is no taller than the
    1280 x 720 slide box (a projector shows no scrollbar), its code and
    printed output no smaller than MIN_CODE_PX and MIN_OUTPUT_PX, and it has
    speaker notes."""
    box = page.evaluate("[Reveal.getConfig().width, Reveal.getConfig().height]")
    assert tuple(box) == SLIDE_BOX, f"{stem}: the slide box is {box}, not {SLIDE_BOX}"
    found = page.evaluate("""async () => {
        const wait = ms => new Promise(r => setTimeout(r, ms));
        if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
        const seen = [];
        // each slide by its own indices: the walk above has been through the
        // deck, and reveal.js takes Reveal.next() into a vertical stack at
        // the slide last shown there
        for (const slide of Reveal.getSlides()) {
            const at = Reveal.getIndices(slide);
            Reveal.slide(at.h, at.v || 0);
            await wait(20);
            const s = Reveal.getCurrentSlide(), i = Reveal.getIndices();
            let over = s.scrollHeight - s.clientHeight;
            for (let t = 0; over > 1 && t < 20; t++) {     // pictures and widgets settle
                await wait(50);
                over = s.scrollHeight - s.clientHeight;
            }
            const size = sel => [...s.querySelectorAll(sel)].filter(e => e.offsetHeight > 0)
                .map(e => parseFloat(getComputedStyle(e).fontSize));
            const code = size('pre'), printed = size('.jp-OutputArea-output pre');
            const notes = s.querySelector('aside.notes');
            seen.push({at: `${i.h}/${i.v}`, height: s.clientHeight, content: s.scrollHeight,
                       over, code: code.length ? Math.min(...code) : null,
                       printed: printed.length ? Math.min(...printed) : null,
                       notes: notes ? notes.textContent.trim().length : 0});
        }
        return seen;
    }""")
    assert len(found) == decks()[stem]["slides"]
    wrong = [f for f in found if f["height"] != SLIDE_BOX[1]]
    assert wrong == [], f"{stem}: a slide is not {SLIDE_BOX[1]} px high: {wrong[:3]}"
    over = [(f["at"], f["content"]) for f in found if f["over"] > 1]
    assert over == [], \
        f"{stem}: slides taller than the {SLIDE_BOX[1]} px box (slide, height): {over}"
    small = [(f["at"], f["code"]) for f in found
             if f["code"] is not None and f["code"] < MIN_CODE_PX]
    assert small == [], f"{stem}: code smaller than {MIN_CODE_PX} px on slides {small}"
    small = [(f["at"], f["printed"]) for f in found
             if f["printed"] is not None and f["printed"] < MIN_OUTPUT_PX]
    assert small == [], f"{stem}: printed output smaller than {MIN_OUTPUT_PX} px on {small}"
    silent = [f["at"] for f in found if f["notes"] == 0]
    assert silent == [], f"{stem}: slides without speaker notes: {silent}"


def test_long_cells_and_outputs_are_split_for_slides():
    """The rules that keep slides short, on made-up cells: a long code cell over
    several sub-slides, long printed output cut with a pointer to the page, a
    long text over several slides with its heading marked "continued"."""

    code = "\n".join(f"x{i} = {i}" for i in range(60))
    cell = nbformat.v4.new_code_cell(code)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="\n".join(map(str, range(40))))]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Heading"), cell])
    cells = sp.assign_slides(sp.chapter_units(nb, {}))
    shown = [c for c in cells if c.cell_type == "code" and
             not c.metadata.get("transient", {}).get("remove_source")]
    assert len(shown) == 3 and all(len(c.source.splitlines()) <= sp.CODE_MAX for c in shown)
    assert "\n".join(c.source for c in shown).split() == code.split(), "code lost in the split"
    printed = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert len(printed) == 1
    lines = printed[0]["text"].splitlines()
    assert len(lines) == sp.OUTPUT_MAX and "more lines: see the chapter page" in lines[-1]
    shown_cells = [c for c in cells if c.metadata["slideshow"]["slide_type"] != "notes"]
    assert all(c.metadata["slideshow"]["slide_type"] == "subslide" for c in shown_cells[1:])
    notes = [c for c in cells if c.metadata["slideshow"]["slide_type"] == "notes"]
    assert any("cut to fit the slide" in c.source for c in notes), \
        "the speaker notes do not say that the printout was cut"

    text = "## A long section\n\n" + "\n\n".join("word " * 120 for _ in range(8))
    pages = sp.paginate(text)
    assert len(pages) >= 3
    assert all('class="deck-continued">A long section (continued)' in p for p in pages[1:])
    assert "".join(pages).count("word") == 8 * 120


def test_tab_sets_and_glue_directives_become_slide_markdown():
    """A sphinx-design tab-set shows every tab on the slides, each under its
    label, and ``{glue}`` / ``{glue:md}`` directives show the glued value."""
    source = ["::::{tab-set}", ":::{tab-item} First tab", "```{glue:md} table",
              ":format: myst", "```", "text of the first tab", ":::",
              ":::{tab-item} Second tab", "```{glue} picture", "```",
              "text of the second tab", ":::", "::::"]
    glue = {"table": {"text/markdown": "| a | b |\n|:--|:--|\n| 1 | 2 |"},
            "picture": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}}
    out = sm.render(sm.parse_blocks(source), glue, sm.CHAPTERS)
    for shown in ("**First tab**", "| 1 | 2 |", "text of the first tab",
                  "**Second tab**", "data:image/png;base64,iVBORw0KGgo=",
                  "text of the second tab"):
        assert shown in out, f"{shown!r} is missing from the slide Markdown:\n{out}"
    assert out.index("First tab") < out.index("Second tab")
    assert not re.search(r":::|```\{", out), f"a directive was left unconverted:\n{out}"
    with pytest.raises(sm.SlidesError, match="missing"):
        sm.render(sm.parse_blocks(["```{glue} missing", "```"]), {}, sm.CHAPTERS)


@pytest.mark.parametrize("stem", STEMS)
def test_deck_skips_exercises_and_the_colab_cell(stem):
    text = (SLIDES / f"{stem}.slides.html").read_text()
    assert "google.colab" not in text, "the hidden Colab cell is on a slide"
    assert not re.search(r"<h2[^>]*>\s*Exercises", text), "the exercises are on a slide"
    assert "{exercise}" not in text and "{solution}" not in text
    assert not re.search(r":::\s*\{|```\{", text), "MyST directive left unconverted"


def test_deck_widgets_work_offline(browser):
    """A chapter's static widget (the precomputed explorer) reacts in its deck."""
    base, page, blocked = browser
    with_widgets = [s for s in STEMS if decks()[s].get("widgets")]
    if not with_widgets:
        pytest.skip("no chapter has widgets")
    stem = with_widgets[0]
    blocked.clear()
    page.goto(f"{base}/slides/{stem}.slides.html", wait_until="networkidle")
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    box = page.locator(".widget-vbox").first
    box.wait_for(state="attached")
    # go to the widget's slide
    page.evaluate("""() => { const el = document.querySelector('.widget-vbox');
        const s = el.closest('section'); const i = Reveal.getIndices(s);
        Reveal.slide(i.h, i.v); }""")
    page.wait_for_timeout(500)
    img = box.locator("img:visible")
    assert img.count() == 1, "the widget shows no picture in the deck"
    before = img.get_attribute("alt")
    buttons = box.locator("button:visible")
    assert buttons.count() >= 2
    buttons.nth(1).click()
    page.wait_for_timeout(300)
    after = box.locator("img:visible").get_attribute("alt")
    assert after != before, "the picture did not change when the control moved"
    assert blocked == []


def test_no_slides_link_on_text_pages(browser):
    base, page, _ = browser
    page.goto(f"{base}/index.html", wait_until="networkidle")
    page.wait_for_timeout(300)
    assert page.locator("a.slides-button").count() == 0


def test_numbered_figure_references_resolve():
    """``{numref}`` reads as the page's figure number, and the figure's
    caption on its slide carries that number (chapter 11's "A picture"
    slide read "the figure, the figure, the figure and the figure")."""
    sm.FIGURES.clear()
    sm.FIGURES.update({"fig-a": "Fig. 20", "fig-b": "Fig. 21"})
    try:
        line = sm.inline("{numref}`fig-a` and {numref}`Figure %s <fig-b>`; {numref}`nope`", {})
        assert line == "Fig. 20 and Figure 21; the figure", line
        cell = nbformat.v4.new_code_cell("plot()")
        cell.metadata["mystnb"] = {"figure": {"name": "fig-a", "caption": "A caption."}}
        _, extra = sp.clean_code_cell(cell)
        assert "Fig. 20</strong> A caption." in extra[0].source
    finally:
        sm.FIGURES.clear()
    for stem in STEMS:
        source = (ROOT / "chapters" / f"{stem}.md").read_text()
        refs = re.findall(r"\{numref\}`([^`<]+)`", source)
        if not refs:
            continue
        deck = (SLIDES / f"{stem}.slides.html").read_text()
        numbers = sm.figure_numbers(SITE / "chapters" / f"{stem}.html")
        for ref in refs:
            assert ref in numbers, f"{stem}: {{numref}}`{ref}` names no figure of the page"
            assert numbers[ref] in deck, f"{stem}: the deck never says {numbers[ref]}"
        assert "the figure, the figure" not in deck, f"{stem}: unresolved references"


SLIDE_TEXT_PX = 13           # a figure's smallest text on a slide, in slide px (1280 wide)


@pytest.mark.parametrize("stem", ["11_how_heads_form", "08_how_many_heads"])
def test_slide_figures_fill_the_slide(browser, stem):
    """A slide with one figure drawn by a cell shows it as wide as the slide
    or as tall as the room the slide has (or at 2x); they sat at natural size
    in the top 45 % of the slide. A figure that fills the slide's width (or
    reaches 2x) has its smallest text (8 pt legends, 11 px on the page) at
    13 px or more, its 12 px ticks at 14.5 px or more. A figure taller than
    wide is bound by the slide's height instead (chapter 8's two stacked
    panels: its text stays small on a 720 px slide; it is checked to fill
    the height)."""
    import base64

    from mhacourse.plotting.figure_text import png_min_text_px

    base, page, _ = browser
    page.goto(f"{base}/slides/{stem}.slides.html", wait_until="networkidle")
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    found = page.evaluate("""async () => {
        const wait = ms => new Promise(r => setTimeout(r, ms));
        if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
        const out = [];
        for (const s of Reveal.getSlides()) {
            const pics = [...s.querySelectorAll('.jp-RenderedImage img')];
            if (pics.length !== 1) { continue; }
            const i = Reveal.getIndices(s);
            Reveal.slide(i.h, i.v);
            await wait(150);
            const im = pics[0];
            let bottom = 0;
            for (const c of s.children) {
                if (c.tagName === 'ASIDE') { continue; }
                bottom = Math.max(bottom, c.offsetTop + c.offsetHeight);
            }
            const png = 'data:image/png;base64,';
            out.push({at: `${i.h}/${i.v}`,
                      src: im.src.startsWith(png) ? im.src.slice(png.length) : null,
                      natural: im.naturalWidth, shown: im.offsetWidth,
                      column: im.parentElement.clientWidth, bottom, height: s.clientHeight});
        }
        return out;
    }""")
    assert found, f"{stem}: no slide with one figure"
    small = []
    for f in found:
        k = f["shown"] / f["natural"]
        fills = (f["shown"] >= 0.97 * f["column"] or f["bottom"] >= f["height"] - 80
                 or k >= bs.MAX_GROW - 0.01)
        assert fills, f"{stem} slide {f['at']}: the figure does not fill the slide: {f}"
        px = png_min_text_px(base64.b64decode(f["src"])) if f["src"] else None
        wide = f["shown"] >= 0.97 * f["column"] or k >= bs.MAX_GROW - 0.01
        if px is not None and wide and px * k < SLIDE_TEXT_PX:
            small.append((f["at"], round(px * k, 1)))
    assert small == [], f"{stem}: figure text under {SLIDE_TEXT_PX} px on slides {small}"


@pytest.mark.parametrize("stem", STEMS)
def test_printed_output_wraps_between_words(browser, stem, tmp_path):
    """A printed line longer than the slide wraps at a space, not inside a
    word (chapter 11's seeds printout broke "indu / ction"): in reveal.js's
    print view, which lays out every slide, no line box of a printout ends
    between two letters or digits. And the print view gives one page a
    slide (chapter 11's deck printed as a PDF, once)."""
    base, page, _ = browser
    page.goto(f"{base}/slides/{stem}.slides.html?print-pdf", wait_until="networkidle")
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    broken = page.evaluate("""() => {
        const bad = [];
        for (const pre of document.querySelectorAll('.jp-OutputArea-output pre')) {
            const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
            let prev = null;
            for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                for (let k = 0; k < n.data.length; k++) {
                    const r = document.createRange();
                    r.setStart(n, k); r.setEnd(n, k + 1);
                    const box = r.getClientRects()[0];
                    const ch = n.data[k];
                    if (box && prev && box.top > prev.top + 2 && prev.ch !== '\\n'
                        && /\\w/.test(prev.ch) && /\\w/.test(ch)) {
                        bad.push(prev.ch + '|' + ch + ' in ' + pre.textContent.slice(0, 40));
                    }
                    if (box) { prev = {top: box.top, ch}; } else if (ch === '\\n') { prev = null; }
                }
            }
        }
        return bad;
    }""")
    assert broken == [], f"{stem}: printed lines break inside words: {broken[:5]}"
    # and it prints one page a slide: no slide spilling its number onto a
    # page of its own, no blank page at the end (chapter 11's 44 slides
    # printed 46 pages)
    page.wait_for_function("""() => { const p = document.querySelectorAll('.reveal .pdf-page');
        return p.length > 0 && p[p.length - 1].style.breakAfter === 'auto'; }""")
    pages, slides = page.evaluate("""[document.querySelectorAll('.reveal .pdf-page').length,
        Reveal.getTotalSlides()]""")
    assert pages == slides, f"{stem}: {slides} slides laid out on {pages} pages"
    if stem == "11_how_heads_form":  # printed for real, once
        pdf = tmp_path / f"{stem}.pdf"
        page.pdf(path=str(pdf), prefer_css_page_size=True)
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
        printed = int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))
        assert printed == slides, f"{stem}: {slides} slides print on {printed} pages"


def test_curve_colours_agree_with_the_trainer():
    """The package's part colours (the chapters' curves, so the slides') are
    the live trainer's: "the blue curve" is the same part in a lecture's
    slides and in the trainer it projects."""
    from mhacourse.plotting import PART_COLOURS, PART_STYLE, PHASE_COLOUR

    js = (ROOT / "assets" / "site" / "explorer" / "trainer-charts.js").read_text()
    parts = dict(re.findall(r'name:\s*"([^"]+)",\s*colour:\s*"(#[0-9a-fA-F]{6})"', js))
    assert parts, "trainer-charts.js: no PARTS colours found"
    trainer = {"overall": parts.get("overall"), "previous": parts.get("previous word"),
               "lookup": parts.get("lookup")}
    assert {k: v.lower() for k, v in trainer.items() if v} == PART_COLOURS, \
        f"the trainer draws {trainer}, the package {PART_COLOURS}"
    phase = re.search(r'PHASE_COLOUR\s*=\s*"(#[0-9a-fA-F]{6})"', js)
    assert phase and phase.group(1).lower() == PHASE_COLOUR
    assert PART_STYLE["accuracy"][0] == PART_COLOURS["overall"]
    assert PART_STYLE["previous"][0] == PART_COLOURS["previous"]
    assert PART_STYLE["lookup"][0] == PART_COLOURS["lookup"]


PART_FIGURES = {"11_how_heads_form": ["fig-phase-change", "fig-ch11-ablation"],
                "08_how_many_heads": ["fig-heads-sweep", "fig-heads-live"]}


@pytest.mark.parametrize("stem", sorted(PART_FIGURES))
def test_figures_of_a_run_draw_the_parts_in_the_trainers_colours(stem):
    """The figures that plot the task's parts (previous, lookup) draw them in
    mhacourse.plotting.PART_COLOURS, the trainer's colours: each colour is in
    the built picture, and the old lookup colour (vermilion) is not."""
    import numpy as np
    from PIL import Image

    from mhacourse.plotting import PART_COLOURS

    page = (SITE / "chapters" / f"{stem}.html").read_text()
    for name in PART_FIGURES[stem]:
        m = re.search(rf'<figure[^>]*id="{name}"[^>]*>\s*<img[^>]*src="([^"]+)"', page)
        assert m, f"{stem}: no figure {name} on the page"
        img = np.asarray(Image.open(SITE / "chapters" / m.group(1)).convert("RGB"), dtype=int)

        def pixels(hex_colour: str) -> int:
            rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
            return int((np.abs(img - rgb).sum(axis=2) < 40).sum())

        for part in ("previous", "lookup"):
            assert pixels(PART_COLOURS[part]) > 50, \
                f"{stem} {name}: no {part} curve in {PART_COLOURS[part]}"
        assert pixels("#d55e00") < 20, f"{stem} {name}: still draws in the old #d55e00"


def test_the_chapter_11_deck_links_the_lectures_experiment():
    """The chapter 11 deck's first slide opens the trainer with the lecture's
    experiment set (issue 38): a link in the trainer's own address format,
    naming every setting that link.js writes."""
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    deck = (SITE / "slides" / "11_how_heads_form.slides.html").read_text(encoding="utf-8")
    found = re.search(r'class="deck-experiment" href="([^"]+)"', deck)
    assert found, "the chapter 11 deck has no link to the lecture's experiment"
    url = urlsplit(unescape(found.group(1)))
    assert url.path == "../chapters/explorer.html" and url.fragment == "explorer-train", url
    query = parse_qs(url.query)
    link_js = (ROOT / "assets" / "site" / "explorer" / "lab" / "link.js").read_text()
    written = re.search(r"const parts = \[(.*?)\];", link_js, re.S).group(1)
    keys = re.findall(r'\["(\w+)",', written)
    assert keys and set(keys) <= set(query), (keys, query)
    assert query["h"] == ["4"] and query["dk"] == ["16"] and query["seed"] == ["0"]
