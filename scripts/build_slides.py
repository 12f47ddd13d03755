"""Build one reveal.js slide deck per chapter from the chapters themselves.

    python scripts/build_slides.py                      # after `make book`
    python scripts/build_slides.py --build-dir /tmp/b/_build
    python scripts/build_slides.py chapters/01_one_head.md   # some chapters

The decks are generated, never written by hand: the source is the executed
notebook that `jupyter-book build` leaves in
``_build/jupyter_execute/chapters/NN_*.ipynb`` (so every figure, printed
number and widget of the page is in the deck), and the output is
``_build/html/slides/NN_*.slides.html``, next to the site. The decks use the
site's own copies of reveal.js, MathJax and the widget manager
(``_static/reveal/``, ``_static/mathjax/``, ``_static/widgets/``): no CDN.
``_build/html/slides/decks.js`` lists the decks; ``assets/site/chapter-links.js``
reads it to put a "Slides" button on each chapter page that has a deck.

Which cells become which slides (the default rule)
--------------------------------------------------
- the chapter title (``#``) is the title slide; each ``##`` heading starts a
  slide and each ``###`` heading a sub-slide (a vertical slide below it);
- the Goals admonition is a slide, a "Myth vs fact" admonition a sub-slide;
- a code cell, with its output, becomes a sub-slide (a figure -- an image or a
  widget -- with its caption), unless it is short (<= 12 lines) and its slide
  so far holds only a heading and a short lead-in (<= 400 characters of
  text), which it then joins; a longer cell's output gets a sub-slide of its
  own; text after a code cell goes on a new sub-slide;
- every slide fits the 1280 x 720 slide box (a projector shows no
  scrollbar): Markdown estimated taller than the box goes on as many
  sub-slides as it needs ("... (continued)"), split between blocks, inside a
  long admonition, or inside a code fence longer than 24 lines; a code cell
  longer than 24 lines is shown over several sub-slides, then its output; a
  printout longer than 16 rows (a line longer than about 88 characters wraps,
  between words, over several) is cut there, with a pointer to the chapter
  page; a picture and a printout of more than 6 lines get a sub-slide each.
  Code is 18 px, printed output 20 px. In the browser a slide's one figure
  grows to fill the slide (as wide as the slide or as tall as its room, at
  most 2x); a slide still too tall has its pictures shrunk (not below
  300 px), then its type (not below 0.8 of its size), then pictures drawn in
  HTML scaled (not below 0.5); ``tests/test_slides.py`` walks every slide;
- figures carry the page's numbers ("Fig. 20") in their captions, and
  ``{numref}`` reads as that number;
- every slide has speaker notes (key S): what the slide leaves out of the
  page (``scripts/slide_notes.py``);
- skipped: the hidden Colab cell, cells tagged ``remove-cell``, the
  ``## Exercises`` section, every ``{exercise}``/``{solution}`` block and
  dropdowns; cells tagged ``hide-input``/``remove-input`` show only their
  output, ``remove-output`` only their code.

A cell's ``slideshow.slide_type`` metadata (``slide``, ``subslide``,
``fragment``, ``-``, ``skip``, ``notes``; Jupyter's own "slide type" menu)
overrides the rule for that cell. In a chapter's MyST source a code cell
takes it in its ``---`` options block (``slideshow: {slide_type: skip}``), a
Markdown cell from the cell break above it
(``+++ {"slideshow": {"slide_type": "slide"}}``).

MyST syntax that nbconvert does not know is turned into Markdown/HTML first:
admonitions, ``literalinclude`` (the package's code, read again from
``code/``), ``{math}``, ``glue`` roles, directives and figures (values from
the executed notebook), sphinx-design tab-sets (every tab, one after another,
each under its label), cross-reference roles and links to other pages.
"""
from __future__ import annotations

import argparse
import copy
import functools
import json
import re
import sys
from pathlib import Path

import slide_notes
from slide_markdown import (
    CHAPTERS,
    FIGURES,
    LABELS,
    ROOT,
    SlidesError,
    collect_labels,
    figure_numbers,
)
from slide_paginate import GLUE_PREFIX, assign_slides, chapter_units
from slide_template import DECK_CSS, TEMPLATE

STATIC = "../_static"          # the decks live in html/slides/, the site's assets in html/_static/
REVEAL = f"{STATIC}/reveal"
MATHJAX = f"{STATIC}/mathjax/tex-mml-chtml.js"
REQUIRE = f"{STATIC}/widgets/require.js"
WIDGETS_CONFIG = f"{STATIC}/widgets-config.js"
WIDGETS_EMBED = f"{STATIC}/widgets/embed-amd.js"
NEEDED_STATIC = ["reveal/dist/reveal.js", "reveal/dist/reveal.css", "reveal/dist/theme/white.css",
                 "reveal/plugin/notes/notes.js", "mathjax/tex-mml-chtml.js",
                 "widgets/require.js", "widgets/embed-amd.js", "widgets-config.js"]
SLIDE_W, SLIDE_H = 1280, 720   # the slide box (16:9), in CSS pixels before reveal.js scales it
MIN_IMG = 300                  # px: the deck shrinks a picture to fit its slide, never below this
FIT_MIN = 0.8                  # ... and then the slide's type, never below this share of its size
MIN_ZOOM = 0.5                 # ... and then a picture drawn in HTML (heatmap grids, widgets)
MAX_GROW = 2.0                 # a slide's one figure grows to fill it, to at most 2 x its size
GROW_MARGIN = 56               # px left free under it (the caption clears the arrows)


# --------------------------------------------------------------------------
# 1. The executed notebook, with its outputs
# --------------------------------------------------------------------------

def executed_notebook(stem: str, build: Path):
    """The chapter as the book build executed it.

    myst-nb writes ``jupyter_execute/chapters/NN.ipynb`` with outputs when it
    runs the chapter, but when the chapter comes from its execution cache it
    writes the notebook *without* them (myst_nb/sphinx_.py saves the parsed
    notebook, not the one merged from the cache). The outputs are then taken
    from that same cache (``_build/.jupyter_cache``), matched on the code.
    """
    import nbformat

    path = build / "jupyter_execute" / "chapters" / f"{stem}.ipynb"
    if not path.exists():
        raise SlidesError(f"{path} is missing: run `make book` first (it executes the chapters).")
    nb = nbformat.read(path, as_version=4)
    source = CHAPTERS / f"{stem}.ipynb"
    if source.exists():
        ours = [c.source.strip() for c in nbformat.read(source, 4).cells if c.cell_type == "code"]
        theirs = [c.source.strip() for c in nb.cells if c.cell_type == "code"]
        if ours != theirs:
            raise SlidesError(f"{path} is older than chapters/{stem}.ipynb: run `make book` first.")
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        cache_dir = build / ".jupyter_cache"
        try:
            from jupyter_cache import get_cache
            _, nb = get_cache(cache_dir).merge_match_into_notebook(nb)
        except (KeyError, FileNotFoundError, ImportError) as err:
            raise SlidesError(f"no executed outputs for {stem} in {path} or {cache_dir} "
                              f"({err.__class__.__name__}): run `make book` first.") from None
    return nb


def glue_values(nb, build: Path, stem: str) -> dict[str, dict]:
    """``myst_nb.glue`` values by name: mimetype -> data."""
    found: dict[str, dict] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                found[name] = {k.removeprefix(GLUE_PREFIX): v
                               for k, v in out.get("data", {}).items()}
    path = build / "jupyter_execute" / "chapters" / f"{stem}.glue.json"
    if path.exists():
        for name, out in json.loads(path.read_text()).items():
            found.setdefault(name, {k.removeprefix(GLUE_PREFIX): v
                                    for k, v in out.get("data", {}).items()})
    return found


# --------------------------------------------------------------------------
# 4. nbconvert (the template and the CSS: scripts/slide_template.py)
# --------------------------------------------------------------------------

#: Decks whose title slide links to the explorer's live trainer, so a teacher
#: can train a model in the lecture (chapter 3: heads in parallel; chapter 8:
#: how many heads).
TRAINER_DECKS = ("03_parallel_heads", "08_how_many_heads")
#: A deck whose lecture runs an experiment in the trainer: the experiment's
#: link (the trainer's own address format, assets/site/explorer/lab/link.js),
#: which opens the explorer page with every control set for it.
LECTURE_LINKS = {"11_how_heads_form": "?v=1&h=4&dk=16&budget=0&seed=0&steps=800"
                                      "&layers=2&warmup=1&identical=0"}


@functools.lru_cache(maxsize=1)
def slides_exporter():
    """nbconvert's reveal.js exporter with the course's template: one for
    every deck (each new one compiled its templates again)."""
    from jinja2 import DictLoader
    from nbconvert import SlidesExporter

    return SlidesExporter(
        extra_loaders=[DictLoader({"course_deck.html.j2": TEMPLATE})],
        template_file="course_deck.html.j2",
        reveal_url_prefix=REVEAL, reveal_theme="white", reveal_transition="slide",
        reveal_width=str(SLIDE_W), reveal_height=str(SLIDE_H),
        mathjax_url=MATHJAX, require_js_url=REQUIRE,
        exclude_input_prompt=True, exclude_output_prompt=True,
    )


def export(cells, nb, title: str, stem: str) -> str:
    import nbformat

    deck = nbformat.v4.new_notebook()
    deck.metadata = copy.deepcopy(nb.metadata)
    deck.metadata["title"] = title
    train = (' · <a href="../chapters/explorer.html#train-it-yourself">Train a model live</a>'
             if stem in TRAINER_DECKS else "")
    if stem in LECTURE_LINKS:
        train += (f' · <a class="deck-experiment" href="../chapters/explorer.html'
                  f'{LECTURE_LINKS[stem].replace("&", "&amp;")}#explorer-train">'
                  "Run the lecture's experiment in the trainer</a>")
    intro = (f'<p class="deck-links"><a href="../chapters/{stem}.html">Read the chapter</a>{train}'
             ' · press <kbd>?</kbd> for keys, <kbd>S</kbd> for speaker view</p>')
    first = cells[0]
    if first.cell_type == "markdown":
        first.source += "\n\n" + intro
    deck.cells = cells
    body, _ = slides_exporter().from_notebook_node(deck, resources={"course": {
        "css": DECK_CSS, "widgets_config": WIDGETS_CONFIG, "widgets_embed": WIDGETS_EMBED,
        "min_img": MIN_IMG, "fit_min": FIT_MIN, "min_zoom": MIN_ZOOM,
        "max_grow": MAX_GROW, "grow_margin": GROW_MARGIN}})
    leaks = re.findall(r'<(?:script|link)[^>]+(?:src|href)="((?:https?:)?//[^"]+)"', body)
    if leaks:
        raise SlidesError(f"{stem}: the deck would load {leaks} from another server")
    return body


def count_slides(cells) -> int:
    return sum(c.metadata["slideshow"]["slide_type"] in ("slide", "subslide") for c in cells)


def chapter_title(nb, stem: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.*)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return stem


def build_deck(stem: str, build: Path, out_dir: Path) -> dict:
    nb = executed_notebook(stem, build)
    glue = glue_values(nb, build, stem)
    FIGURES.clear()
    FIGURES.update(figure_numbers(out_dir.parent / "chapters" / f"{stem}.html"))
    LABELS.clear()
    LABELS.update(collect_labels(nb))
    cells = assign_slides(chapter_units(nb, glue),
                          slide_notes.title_notes(nb, stem in TRAINER_DECKS))
    title = chapter_title(nb, stem)
    body = export(cells, nb, title, stem)
    path = out_dir / f"{stem}.slides.html"
    path.write_text(body)
    return {"file": path.name, "title": title, "slides": count_slides(cells),
            "widgets": "widgets" in nb.metadata}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chapters", nargs="*", help="chapters/NN_*.md or .ipynb (default: all built)")
    ap.add_argument("--build-dir", type=Path, default=ROOT / "_build",
                    help="the book's _build folder (default: %(default)s)")
    args = ap.parse_args(argv)
    build = args.build_dir.resolve()
    html_dir = build / "html"
    try:
        if not (html_dir / "index.html").exists():
            raise SlidesError(f"{html_dir} has no site: run `make book` first.")
        missing = [p for p in NEEDED_STATIC if not (html_dir / "_static" / p).exists()]
        if missing:
            raise SlidesError(f"the site lacks _static/{missing[0]}: run `make book` "
                              "(it copies reveal.js, MathJax and the widget manager from npm).")
        if args.chapters:
            stems = [Path(c).stem for c in args.chapters]
        else:                                    # every chapter the book built a page for
            stems = sorted(p.stem for p in (html_dir / "chapters").glob("[0-9][0-9]_*.html")
                           if (CHAPTERS / f"{p.stem}.ipynb").exists())
        if not stems:
            raise SlidesError(f"no chapter pages in {html_dir / 'chapters'}: "
                              "run `make book` first.")
        out_dir = html_dir / "slides"
        out_dir.mkdir(exist_ok=True)
        decks = {}
        for stem in stems:
            decks[stem] = build_deck(stem, build, out_dir)
            d = decks[stem]
            print(f"slides/{d['file']}: {d['slides']} slides"
                  + (" (with widgets)" if d["widgets"] else ""))
        listed = {}
        manifest = out_dir / "decks.js"
        if args.chapters and manifest.exists():   # keep the decks built earlier
            m = re.search(r"=\s*(\{.*\});", manifest.read_text(), re.S)
            listed = json.loads(m.group(1)) if m else {}
        listed.update(decks)
        listed = {k: v for k, v in sorted(listed.items()) if (out_dir / v["file"]).exists()}
        manifest.write_text("// Written by scripts/build_slides.py: the chapters that have a "
                            "deck.\n"
                            f"window.mhaSlideDecks = {json.dumps(listed, indent=1)};\n")
    except SlidesError as err:
        print(f"build_slides: {err.code}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
