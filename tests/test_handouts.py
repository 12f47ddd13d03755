"""The chapters' printable handouts (scripts/build_handouts.py, run by
`make book`): one PDF per chapter, rendered here with poppler (`pdftoppm`,
`pdftotext`, `pdfimages`, `pdffonts`) to check that what a learner gets on
paper has the chapter's text, its figures and its math, and no site chrome
and no solutions. The "Handout" button is checked in the browser."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from site_browser import SITE
from test_book import ROOT, toc_files

HANDOUTS = SITE / "handouts"
CHAPTER_PAGES = [f for f in toc_files()
                 if re.fullmatch(r"chapters/[0-9][0-9]_[\w-]+", f)
                 and (ROOT / f"{f}.ipynb").exists()]
STEMS = [Path(f).name for f in CHAPTER_PAGES]
POPPLER = ["pdftoppm", "pdftotext", "pdfinfo", "pdfimages", "pdffonts"]
# TeX that MathJax should have turned into rendered math
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$\\?[A-Za-z][^$\n]{0,40}\$|\\frac|\\sqrt"
                     r"|\\text\{|\\mathrm|\\begin\{|\\operatorname")
# text of the site's chrome (header, sidebars, footer navigation)
CHROME = ["Skip to main content", "Back to top", "Start here", "For instructors", "Ctrl+K"]


def poppler(tool: str, *args: str | Path) -> str:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is missing: install poppler-utils (.ci/run does)")
    return subprocess.run([tool, *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


def manifest() -> dict:
    path = HANDOUTS / "handouts.json"
    if not path.exists():
        pytest.fail("no handouts: run `make book` (it runs scripts/build_handouts.py)")
    return json.loads(path.read_text())


def page_image(pdf: Path, page: int, tmp_path: Path, dpi: int = 60) -> Image.Image:
    prefix = tmp_path / f"{pdf.stem}-{page}"
    poppler("pdftoppm", "-r", dpi, "-f", page, "-l", page, "-png", "-singlefile", pdf, prefix)
    return Image.open(f"{prefix}.png").convert("RGB")


def ink(img: Image.Image) -> float:
    """Fraction of pixels that are not (near) white."""
    gray = img.convert("L")
    hist = gray.histogram()
    return sum(hist[:230]) / (img.width * img.height)


def colour(img: Image.Image) -> float:
    """Fraction of clearly coloured pixels (a heatmap or a plotted line)."""
    a = np.asarray(img, dtype=np.int16)                       # (H, W, 3)
    return float(((a.max(axis=2) - a.min(axis=2)) > 60).mean())


def test_one_handout_per_chapter():
    m = manifest()
    assert sorted(m) == sorted(STEMS), \
        f"handouts for {sorted(m)}, chapters in the book: {sorted(STEMS)}"
    notebooks = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert STEMS == notebooks, f"the book lists {STEMS}, chapters/ holds {notebooks}"
    js = (HANDOUTS / "handouts.js").read_text()
    listed = json.loads(re.search(r"=\s*(\{.*\});", js, re.S).group(1))
    for stem in STEMS:
        pdf = HANDOUTS / f"{stem}.pdf"
        assert pdf.exists() and pdf.read_bytes()[:5] == b"%PDF-", f"{pdf} is not a PDF"
        assert listed[stem]["file"] == pdf.name, f"handouts.js lists the wrong file for {stem}"
        info = poppler("pdfinfo", pdf)
        pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
        assert pages == m[stem]["pages"] == listed[stem]["pages"] >= 2, \
            f"{stem}: {pages} pages, the manifest says {m[stem]['pages']}"
        assert re.search(r"Page size:\s+59[45]\.\d+ x 84[12]\.\d+ pts \(A4\)", info), info


@pytest.mark.parametrize("stem", STEMS)
def test_handout_has_the_chapter_and_not_the_solutions(stem: str):
    m = manifest()[stem]
    pdf = HANDOUTS / f"{stem}.pdf"
    text = poppler("pdftotext", "-layout", pdf, "-")
    first = poppler("pdftotext", "-f", 1, "-l", 1, pdf, "-")
    title = m["title"]
    assert title and title in first, f"{stem}: page 1 lacks the chapter title {title!r}"
    for heading in ("The math", "The code", "Summary", "Exercises"):
        assert heading in text, f"{stem}: the handout lacks the section {heading!r}"
    assert re.search(r"Exercise\s+\d", text), f"{stem}: the exercises are not printed"
    # solutions: sphinx-exercise titles them "Solution to Exercise N"
    assert m["solutions_removed"] >= 3, f"{stem}: the page had {m['solutions_removed']} solutions"
    assert "Solution to" not in text, f"{stem}: a solution is printed"
    for chrome in CHROME:
        assert chrome not in text, f"{stem}: the site's chrome ({chrome!r}) is printed"
    # the sidebar would list every chapter: no other chapter's title on page 1
    others = [h["title"] for s, h in manifest().items() if s != stem]
    assert not [t for t in others if t in first], f"{stem}: the sidebar is printed"


@pytest.mark.parametrize("stem", STEMS)
def test_handout_math_is_rendered(stem: str):
    m = manifest()[stem]
    pdf = HANDOUTS / f"{stem}.pdf"
    assert m["math"] > 0, f"{stem}: MathJax typeset no formula before printing"
    text = poppler("pdftotext", pdf, "-")
    # code cells may hold backslashes and braces; prose math must not
    raw = RAW_TEX.search(text)
    assert raw is None, \
        f"{stem}: raw TeX printed: {text[max(0, raw.start() - 60):raw.start() + 60]!r}"
    # MathJax's CHTML fonts are web fonts: Chromium embeds them as Type 3
    fonts = poppler("pdffonts", pdf)
    assert re.search(r"(?m)Type 3", fonts), f"{stem}: no embedded math font:\n{fonts}"


def raster_figures(pdf: Path, least: int = 150) -> list[tuple[int, int, int]]:
    """(page, width, height) of the raster images in the PDF at least ``least`` px."""
    rows = [line.split() for line in poppler("pdfimages", "-list", pdf).splitlines()[2:]]
    return [(int(r[0]), int(r[3]), int(r[4])) for r in rows
            if r[2] == "image" and int(r[3]) >= least and int(r[4]) >= least]


def widget_pages(pdf: Path) -> list[int]:
    """Pages holding the note build_handouts.py writes under a printed widget."""
    pages = poppler("pdftotext", pdf, "-").split("\f")
    return [i + 1 for i, t in enumerate(pages) if "Interactive on the web page; printed here" in t]


@pytest.mark.parametrize("stem", STEMS)
def test_handout_figures_are_printed(stem: str, tmp_path: Path):
    m = manifest()[stem]
    pdf = HANDOUTS / f"{stem}.pdf"
    assert m["figures"] >= 1, f"{stem}: no figure was loaded when printing"
    figures = raster_figures(pdf)
    assert figures, f"{stem}: the handout holds no figure"
    # each figure page: render it, and take the figures out of the PDF again
    for page in sorted({p for p, _, _ in figures}):
        img = page_image(pdf, page, tmp_path)
        assert ink(img) > 0.02, f"{stem}: page {page} (with a figure) renders blank"
        poppler("pdfimages", "-png", "-f", page, "-l", page, pdf, tmp_path / f"fig{page}")
        for path in sorted(tmp_path.glob(f"fig{page}-*.png")):
            fig = Image.open(path).convert("RGB")
            if fig.width < 150 or fig.height < 150:
                continue
            lo, hi = fig.convert("L").getextrema()
            assert hi - lo > 100 and ink(fig) > 0.02, \
                f"{stem}: a figure on page {page} is blank ({ink(fig):.1%} ink)"
    first = page_image(pdf, 1, tmp_path)
    assert 0.01 < ink(first) < 0.6, f"{stem}: page 1 is blank or solid ({ink(first):.1%} ink)"


def test_widgets_print_their_picture(tmp_path: Path):
    """Where a chapter has a widget, the printed page shows its picture (a
    plot, or the heatmaps the widget manager drew), not an empty box."""
    m = manifest()
    with_widgets = [s for s in STEMS if m[s]["widgets"]]
    assert with_widgets, "no chapter has a widget: the check would test nothing"
    for stem in with_widgets:
        assert m[stem]["widgets_rendered"] == m[stem]["widgets"], f"{stem}: a widget did not render"
        pdf = HANDOUTS / f"{stem}.pdf"
        pages = widget_pages(pdf)
        assert len(pages) >= m[stem]["widgets"], f"{stem}: the widget's static note is not printed"
        with_raster = {p for p, _, _ in raster_figures(pdf, least=100)}
        for page in pages:
            # a plotted picture (a raster image) or coloured heatmap cells
            img = page_image(pdf, page, tmp_path)
            assert page in with_raster or colour(img) > 0.01, \
                f"{stem}: the widget on page {page} printed no picture"


@pytest.mark.parametrize("stem", STEMS)
def test_handout_prints_every_tab(stem: str):
    """A tab-set shows one tab at a time on the page; on paper every tab's
    label and content are printed (assets/site/print.css)."""
    page = (SITE / "chapters" / f"{stem}.html").read_text()
    labels = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", t)).split()) for t in
              re.findall(r'<label [^>]*class="sd-tab-label"[^>]*>(.*?)</label>', page, re.S)]
    if not labels:
        pytest.skip(f"{stem} has no tab-set")
    text = " ".join(poppler("pdftotext", HANDOUTS / f"{stem}.pdf", "-").split())
    missing = [t for t in labels if t not in text]
    assert missing == [], f"{stem}: tabs not printed in the handout: {missing}"
    # and each tab's content: the first words of its first paragraph (not in a
    # table) without math
    parts = re.split(r'<div [^>]*class="sd-tab-content[^"]*"[^>]*>', page)[1:]
    for label, part in zip(labels, parts):
        part = re.split(r'<label [^>]*class="sd-tab-label"', part)[0]
        part = re.sub(r"<table\b.*?</table>", "", part, flags=re.S)   # columns print apart
        paras = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", p)).split())
                 for p in re.findall(r"<p>(.*?)</p>", part, re.S)]
        plain = [p for p in paras if p and "\\(" not in p and "$" not in p]
        if plain:
            words = " ".join(plain[0].split()[:5])
            assert words in text, f"{stem}: tab {label!r} ({words!r}...) is not printed"


def test_every_chapter_page_loads_the_handout_button():
    """The site loads the Handout button's script and the print style; that
    each chapter page, opened in Chromium, shows the button and that its
    link serves the chapter's PDF is checked by test_site's per-page test
    (which opens every page once)."""
    assert "chapter-links.js" in (ROOT / "_config.yml").read_text(), \
        "_config.yml must load assets/site/chapter-links.js (the Handout button)"
    assert "handouts/handouts.js" in (ROOT / "assets" / "site" / "chapter-links.js").read_text()
    assert "print.css" in (ROOT / "_config.yml").read_text(), \
        "_config.yml must load assets/site/print.css"
    assert CHAPTER_PAGES, "no chapter pages found in _toc.yml"


@pytest.mark.parametrize("stem", STEMS)
def test_handout_prints_no_glue_lines(stem: str):
    """The lines that hand a number to the prose (``glue(...)``, its import)
    are build plumbing: the handout prints the chapter's code without them."""
    text = poppler("pdftotext", HANDOUTS / f"{stem}.pdf", "-")
    assert not re.search(r"\bglue\(|myst_nb", text), \
        f"{stem}: the handout prints glue lines: {re.findall(r'.*glue.*', text)[:3]}"


def _exercise_attempts(stem: str) -> list[str]:
    """The ``def`` lines of the code cells that follow an exercise in the
    chapter's source and are folded on the page (tag hide-input)."""
    source = (ROOT / "chapters" / f"{stem}.md").read_text()
    found = []
    for m in re.finditer(r"^```\{exercise\}.*?^```\s*$\s*^```\{code-cell\}[^\n]*\n(.*?)^```",
                         source, re.S | re.M):
        cell = m.group(1)
        if re.search(r"^:tags:.*hide-input|^tags:.*hide-input", cell, re.M):
            found += re.findall(r"^def \w+\(.*?\):", cell, re.M)
    return found


def test_handouts_print_the_exercises_attempts():
    """An exercise that asks about "the attempt below" has that attempt in a
    code cell folded on the page: the handout prints it open."""
    attempts = {stem: _exercise_attempts(stem) for stem in STEMS}
    assert any(attempts.values()), "no exercise is followed by folded code: nothing to test"
    missing = {}
    for stem, defs in attempts.items():
        if defs:
            text = " ".join(poppler("pdftotext", HANDOUTS / f"{stem}.pdf", "-").split())
            missing[stem] = [d for d in defs if " ".join(d.split()) not in text]
    assert not any(missing.values()), f"attempts not printed: {missing}"


def test_chapter_11_handout_prints_the_buggy_qk_attempt():
    """Exercise "A head's QK matrix" says "the attempt below has a bug": the
    attempt (folded on the page) is printed, with the checker's verdict."""
    text = " ".join(poppler("pdftotext", HANDOUTS / "11_how_heads_form.pdf", "-").split())
    assert "The attempt below has a bug" in text
    assert "def my_qk(W_Q, W_K, i, h):" in text and "bug on purpose" in text
    assert "\u2717 you took rows" in text


def _covered(char: str, cache: dict) -> bool:
    """Some installed font has a glyph for ``char`` (fontconfig), or it is in
    the Private Use Area (the icon font and MathJax's fonts, which the page
    loads itself and the PDF embeds)."""
    if 0xE000 <= ord(char) <= 0xF8FF:
        return True
    if char not in cache:
        out = subprocess.run(["fc-list", f":charset={ord(char):x}", "family"],
                             capture_output=True, text=True).stdout
        cache[char] = bool(out.strip())
    return cache[char]


def test_handout_glyphs_render():
    """Every character of every handout has a glyph: each one pdftotext reads
    is in a font of the printing machine (or the page's own embedded icon and
    math fonts), and every font is embedded. The checkers' verdicts start
    with an emoji (U+2705 / U+274C) that Debian's fonts lack (it printed as
    an empty box, which pdftotext does not even read): the handout prints
    U+2713 / U+2717 instead, one for each verdict on the page."""
    if shutil.which("fc-list") is None:
        pytest.fail("fc-list is missing (fontconfig, which Chromium depends on)")
    cache: dict = {}
    problems = []
    for stem in STEMS:
        pdf = HANDOUTS / f"{stem}.pdf"
        text = poppler("pdftotext", pdf, "-")
        bad = sorted({c for c in text if ord(c) > 127 and not _covered(c, cache)})
        if bad:
            problems.append(f"{stem}: no font has {[f'U+{ord(c):04X}' for c in bad]}")
        fonts = poppler("pdffonts", pdf).splitlines()[2:]
        unembedded = [f for f in fonts if f.split()[-5:-4] != ["yes"]]
        if unembedded:
            problems.append(f"{stem}: fonts not embedded: {unembedded}")
        page = (SITE / "chapters" / f"{stem}.html").read_text()
        page = re.sub(r'<div class="solution.*?</div>\s*</div>', "", page, flags=re.S)
        verdicts = len(re.findall("[\u2705\u274c]", page))
        marks = len(re.findall("[\u2713\u2717]", text))
        if marks < verdicts:
            problems.append(f"{stem}: {verdicts} verdicts on the page, {marks} marks printed")
    assert problems == [], "; ".join(problems)


def test_the_server_answers_the_skipped_files_404_and_serves_the_rest(tmp_path: Path):
    """build_handouts keeps a page from loading what paper does not show by
    the server's 404 (site_browser.serve's skip), not a Playwright route,
    which turned Chromium's HTTP cache off."""
    import urllib.error
    import urllib.request

    from site_browser import serve

    (tmp_path / "searchindex.js").write_text("index")
    (tmp_path / "page.js").write_text("kept")
    with serve(tmp_path, skip=re.compile(r"/searchindex\.js")) as base:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{base}/searchindex.js?v=1", timeout=30)
        assert e.value.code == 404
        assert urllib.request.urlopen(f"{base}/page.js", timeout=30).read() == b"kept"
