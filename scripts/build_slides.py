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
import ast
import base64
import copy
import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import slide_notes
from slide_template import DECK_CSS, TEMPLATE

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
STATIC = "../_static"          # the decks live in html/slides/, the site's assets in html/_static/
REVEAL = f"{STATIC}/reveal"
MATHJAX = f"{STATIC}/mathjax/tex-mml-chtml.js"
REQUIRE = f"{STATIC}/widgets/require.js"
WIDGETS_CONFIG = f"{STATIC}/widgets-config.js"
WIDGETS_EMBED = f"{STATIC}/widgets/embed-amd.js"
NEEDED_STATIC = ["reveal/dist/reveal.js", "reveal/dist/reveal.css", "reveal/dist/theme/white.css",
                 "reveal/plugin/notes/notes.js", "mathjax/tex-mml-chtml.js",
                 "widgets/require.js", "widgets/embed-amd.js", "widgets-config.js"]
SKIP_SECTIONS = re.compile(r"^(exercises?|solutions?)\b", re.I)
SKIP_DIRECTIVES = {"exercise", "solution", "exercise-start", "exercise-end", "solution-start",
                   "solution-end", "dropdown", "toctree", "tableofcontents", "contents",
                   "bibliography", "margin", "sidebar", "glossary", "eval-rst"}
ADMONITIONS = {"admonition", "note", "tip", "important", "warning", "caution", "attention",
               "danger", "error", "hint", "seealso", "topic"}
SHORT_LEAD = 400               # characters of text a code cell may join on one slide
LONG_CODE = 12                 # lines: a longer cell's output gets a sub-slide of its own
SLIDE_W, SLIDE_H = 1280, 720   # the slide box (16:9), in CSS pixels before reveal.js scales it
CODE_MAX = 24                  # lines of code on one slide (18 px type, 1.3 line height)
OUTPUT_MAX = 16                # lines of printed output on one slide (20 px type, 1.3 line
OUTPUT_COLS = 88               # height, about 88 characters a line); the rest stays on the page
TEXT_BUDGET = 600              # estimated pixels of Markdown on one slide (the box is 720 high)
MIN_IMG = 300                  # px: the deck shrinks a picture to fit its slide, never below this
FIT_MIN = 0.8                  # ... and then the slide's type, never below this share of its size
MIN_ZOOM = 0.5                 # ... and then a picture drawn in HTML (heatmap grids, widgets)
MAX_GROW = 2.0                 # a slide's one figure grows to fill it, to at most 2 x its size
GROW_MARGIN = 56               # px left free under it (the caption clears the arrows)
GLUE_PREFIX = "application/papermill.record/"


class SlidesError(SystemExit):
    """A problem the user can fix (printed without a traceback)."""


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
# 2. MyST -> the Markdown nbconvert renders
# --------------------------------------------------------------------------

@dataclass
class Directive:
    name: str
    arg: str
    options: dict
    body: list[str]


@dataclass
class Fence:
    lines: list[str]           # an ordinary code block, fences included: kept verbatim


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}|:{3,})\s*(.*)$")


def parse_blocks(lines: list[str]) -> list:
    """Split MyST Markdown into text lines, code fences (kept as text) and
    directives (``` ```{name} ``` or ``:::{name}``), nested bodies unparsed."""
    out: list = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        fence, info = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines):
            close = lines[j].strip()
            if close and set(close) == {fence[0]} and len(close) >= len(fence):
                break
            j += 1
        body = lines[i + 1:j]
        d = re.match(r"^\{([\w:.-]+)\}\s*(.*)$", info)
        if d:
            out.append(_directive(d.group(1), d.group(2).strip(), body))
        else:                                   # an ordinary code fence: keep verbatim
            out.append(Fence(lines[i:j + 1]))
        i = j + 1
    return out


def _directive(name: str, arg: str, body: list[str]) -> Directive:
    options: dict = {}
    if body and body[0].strip() == "---":       # YAML options block
        end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), None)
        if end is not None:
            import yaml
            options = yaml.safe_load("\n".join(body[1:end])) or {}
            body = body[end + 1:]
    else:
        while body and re.match(r"^\s*:[\w-]+:", body[0]):
            k, _, v = body.pop(0).strip()[1:].partition(":")
            options[k] = v.strip()
    return Directive(name, arg, options, body)


ROLE = re.compile(r"\{([\w:.-]+)\}`([^`]*)`")
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _page_link(target: str) -> str | None:
    """A link in a chapter to another page of the book -> its URL from slides/."""
    if re.match(r"^[a-z]+:", target):
        return target
    path, _, anchor = target.partition("#")
    if not path:
        return None                              # a label on the same page
    p = Path(path)
    if p.suffix in (".md", ".ipynb", ""):
        resolved = (CHAPTERS / p).resolve()
        try:
            rel = resolved.relative_to(ROOT).with_suffix(".html").as_posix()
        except ValueError:
            return None
        return f"../{rel}" + (f"#{anchor}" if anchor else "")
    return None


def _glue_text(name_fmt: str, glue: dict) -> str:
    name, _, fmt = name_fmt.partition(":")
    data = glue.get(name.strip())
    if data is None:
        raise SlidesError(f"glue value {name!r} not found in the executed notebook")
    text = data.get("text/plain", "")
    if fmt:
        try:
            return format(ast.literal_eval(text), fmt)
        except (ValueError, SyntaxError):
            return text
    return text


LABELS: dict[str, str] = {}   # label -> title, for {ref} (filled per chapter)
FIGURES: dict[str, str] = {}  # figure name -> its number on the page ("Fig. 20"), per chapter
LEFT_OUT: list[str] = []      # what the slides leave out (dropdowns), for the speaker notes


def figure_numbers(page: Path) -> dict[str, str]:
    """The numbers Sphinx gave the chapter's figures on its built page
    (``{"fig-phase-change": "Fig. 20"}``): the deck's captions carry them
    and ``{numref}`` resolves to them, as on the page."""
    if not page.exists():
        return {}
    text = page.read_text()
    found = re.findall(r'<figure[^>]*\bid="([^"]+)"[^>]*>(?:(?!</figure>).)*?'
                       r'<span class="caption-number">([^<]+)</span>', text, re.S)
    return {name: " ".join(number.split()) for name, number in found}


def collect_labels(nb) -> dict[str, str]:
    """Titles of the chapter's labelled headings, exercises and figures."""
    found: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            fig = cell.metadata.get("mystnb", {}).get("figure", {})
            if fig.get("name"):
                found[fig["name"]] = FIGURES.get(fig["name"], "the figure")
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^\s*\(([\w:.-]+)\)=\s*$", line)
            if m:
                heading = next((l for l in lines[i + 1:] if l.strip()), "")
                found[m.group(1)] = heading.lstrip("#").strip() or m.group(1)
            m = re.match(r"^ {0,3}(?:`{3,}|:{3,})\{(exercise|solution)\}\s*(.*)$", line)
            if m:
                for opt in lines[i + 1:i + 6]:
                    lab = re.match(r"^\s*:label:\s*(\S+)", opt)
                    if lab:
                        title = m.group(2).strip()
                        found[lab.group(1)] = f"\u201c{title}\u201d" if title else "below"
                        break
    return found


def inline(text: str, glue: dict) -> str:
    """Roles and links of one line of MyST Markdown."""
    def role(m: re.Match) -> str:
        name, content = m.group(1), m.group(2)
        label = re.match(r"^(.*?)\s*<([^>]+)>$", content)
        shown, target = (label.group(1), label.group(2)) if label else (content, content)
        if name == "math":
            return f"${content}$"
        if name in ("glue", "glue:", "glue:text", "glue:any"):
            return html.escape(_glue_text(content, glue))
        if name == "glue:md":
            return glue.get(content, {}).get("text/markdown", "")
        if name == "glue:math":
            return glue.get(content, {}).get("text/latex", "")
        if name == "doc":
            url = _page_link(target if target.endswith((".md", ".ipynb")) else target + ".md")
            return f"[{shown}]({url})" if url else shown
        if name in ("sub", "sup", "kbd", "abbr"):
            tag = {"abbr": "abbr"}.get(name, name)
            return f"<{tag}>{html.escape(shown)}</{tag}>"
        if name == "eq":
            return f"({shown})"
        if name.startswith("cite"):
            return f"[{shown}]"
        if name == "numref":
            number = FIGURES.get(target)
            if number is None:
                return shown if label else "the figure"
            if label:                            # {numref}`Figure %s <name>`
                return shown.replace("%s", number.split()[-1].rstrip("."))
            return number
        if name == "ref" and not label:
            return LABELS.get(content, content)
        return shown                             # ref, term, download, ...

    def link(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        url = _page_link(target)
        if url is None:
            return text or target.lstrip("#")
        return f"[{text or Path(target).stem}]({url})"

    def image(m: re.Match) -> str:
        alt, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target):
            return m.group(0)
        path = (CHAPTERS / target).resolve()
        mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                ".gif": "image/gif", ".svg": "image/svg+xml"}.get(path.suffix.lower())
        if not path.exists() or not mime:
            raise SlidesError(f"image {target} not found")
        return _img({mime: base64.b64encode(path.read_bytes()).decode()}, alt)

    text = ROLE.sub(role, text)
    text = IMAGE.sub(image, text)
    return LINK.sub(link, text)


def pyobject_source(path: Path, name: str) -> str:
    """The source of a top-level function/class (``Class.method`` too)."""
    src = path.read_text()
    tree = ast.parse(src)
    node = tree
    for part in name.split("."):
        node = next((n for n in getattr(node, "body", [])
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise SlidesError(f"{path}: no {name} for literalinclude :pyobject:")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = src.splitlines()[start - 1:node.end_lineno]
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(line[indent:] for line in lines)


def literalinclude(d: Directive, base: Path) -> str:
    path = (base / d.arg).resolve()
    if not path.exists():
        raise SlidesError(f"literalinclude: {path} not found")
    if "pyobject" in d.options:
        code = pyobject_source(path, d.options["pyobject"])
    else:
        lines = path.read_text().splitlines()
        if "lines" in d.options:
            keep: list[str] = []
            for part in str(d.options["lines"]).split(","):
                a, _, b = part.strip().partition("-")
                keep += lines[int(a) - 1:(int(b) if b else int(a))]
            lines = keep
        code = "\n".join(lines)
    lang = d.options.get("language", "python" if path.suffix == ".py" else "")
    return f"```{lang}\n{code}\n```"


def _img(data: dict, alt: str) -> str:
    for mime in ("image/png", "image/jpeg", "image/gif"):
        if mime in data:
            return f'<img src="data:{mime};base64,{data[mime]}" alt="{html.escape(alt)}">'
    if "image/svg+xml" in data:
        svg = "".join(data["image/svg+xml"])
        if not svg.lstrip().startswith("<"):     # already base64
            svg = base64.b64decode(svg).decode()
        b64 = base64.b64encode(svg.encode()).decode()
        return f'<img src="data:image/svg+xml;base64,{b64}" alt="{html.escape(alt)}">'
    return ""


def render(items: list, glue: dict, base: Path) -> str:
    """Blocks (from parse_blocks) -> Markdown with HTML for what Markdown lacks."""
    out: list[str] = []
    in_math = False
    for item in items:
        if isinstance(item, str):
            line = item
            if re.match(r"^\s*\([\w:.-]+\)=\s*$", line) or re.match(r"^\s*%", line) \
                    or line.strip() == "+++":
                continue                         # labels, comments, cell breaks
            line = re.sub(r"(\$\$)\s*\([\w:.-]+\)\s*$", r"\1", line)   # $$ (label)
            out.append(line if in_math else inline(line, glue))
            if line.count("$$") % 2:
                in_math = not in_math            # inside $$ ... $$: leave the TeX alone
            continue
        if isinstance(item, Fence):
            out.extend(item.lines)
            continue
        out.append(render_directive(item, glue, base))
    return "\n".join(out)


def glue_block(name: str, glue: dict) -> str:
    """A ``{glue}`` / ``{glue:md}`` directive: the value glued under ``name``
    (a picture, Markdown, HTML or text), as the deck shows it."""
    data = glue.get(name)
    if data is None:
        raise SlidesError(f"glue {name!r} not found in the executed notebook")
    picture = _img(data, name)
    if picture:
        return f'\n<p class="figure">{picture}</p>\n'
    if "text/markdown" in data:
        return "\n" + "".join(data["text/markdown"]) + "\n"
    if "text/html" in data:        # one HTML block: no blank line may end it early
        block = re.sub(r"\n\s*\n", "\n", "".join(data["text/html"]).strip())
        return f"\n<div>\n{block}\n</div>\n"
    return "\n```\n" + "".join(data.get("text/plain", "")) + "\n```\n"


def render_directive(d: Directive, glue: dict, base: Path) -> str:
    name = d.name
    cls = str(d.options.get("class", ""))
    if name in SKIP_DIRECTIVES or "dropdown" in cls.split() or "dropdown" in d.options:
        if name not in ("exercise", "solution", "exercise-start", "solution-start",
                        "exercise-end", "solution-end", "toctree"):
            LEFT_OUT.append(d.arg or name)       # for the speaker notes
        return ""
    body = render(parse_blocks(d.body), glue, base)
    if name in ADMONITIONS:
        title = inline(d.arg, glue) if d.arg else name.capitalize()
        kind = name if name != "admonition" else (cls.split() or ["note"])[0]
        return (f'\n<div class="admonition {html.escape(kind)} {html.escape(cls)}">\n'
                f'<p class="admonition-title">{html.escape(title)}</p>\n\n{body}\n\n</div>\n')
    if name == "literalinclude":
        return literalinclude(d, base)
    if name == "math":
        return f"\n$$\n{chr(10).join(d.body)}\n$$\n"
    if name in ("code", "code-block", "sourcecode"):
        return f"```{d.arg}\n{chr(10).join(d.body)}\n```"
    if name in ("figure", "image"):
        path = (base / d.arg).resolve()
        mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                ".gif": "image/gif", ".svg": "image/svg+xml"}.get(path.suffix.lower())
        if not path.exists() or not mime:
            raise SlidesError(f"{name}: {path} not found or not an image")
        data = ({mime: path.read_text()} if mime == "image/svg+xml"
                else {mime: base64.b64encode(path.read_bytes()).decode()})
        cap = f'\n\n<p class="caption">{body}</p>' if body.strip() else ""
        return f'\n<p class="figure">{_img(data, str(d.options.get("alt", "")))}</p>{cap}\n'
    if name == "glue:figure":
        data = glue.get(d.arg)
        if data is None:
            raise SlidesError(f"glue:figure {d.arg!r} not found in the executed notebook")
        cap = f'\n\n<p class="caption">{body}</p>' if body.strip() else ""
        return f'\n<p class="figure">{_img(data, str(d.options.get("alt", "")))}</p>{cap}\n'
    if name in ("glue", "glue:any", "glue:md"):
        return glue_block(d.arg.strip(), glue)
    if name == "tab-set":                        # every tab's content, one after another
        return f"\n{body}\n"
    if name == "tab-item":                       # a tab: its label as a bold lead-in
        return f"\n**{inline(d.arg, glue)}**\n\n{body}\n"
    if name == "raw":
        text = "\n".join(d.body)
        if "mha-trainer" in text:  # the live trainer: a link on the slide (see export)
            return ('\n<p class="deck-live"><a href="../chapters/explorer.html#train-it-yourself">'
                    "Train it yourself: open the live trainer</a> (it runs in the browser, "
                    "offline)</p>\n")
        return text if d.arg.strip() == "html" else ""
    if name in ("table", "div", "container", "card", "epigraph", "pull-quote", "highlights"):
        caption = f"**{inline(d.arg, glue)}**\n\n" if d.arg else ""
        return f"\n{caption}{body}\n"
    print(f"build_slides: directive {{{name}}} shown as plain text", file=sys.stderr)
    return body


# --------------------------------------------------------------------------
# 3. Units -> slides
# --------------------------------------------------------------------------

@dataclass
class Unit:
    kind: str                  # "heading1", "heading2", "heading3", "goals", "myth", "text", "code"
    markdown: str = ""         # for Markdown units
    cell: object = None        # for code units
    override: str | None = None
    skip_section: bool = False
    lines: int = 0             # lines of code shown
    extra: list = field(default_factory=list)   # cells that follow (captions)
    continued: bool = False    # the rest of a unit too long for one slide: a sub-slide of its own
    notes: list = field(default_factory=list)   # the speaker notes it adds (slide_notes.py)


# --------------------------------------------------------------------------
# 3a. Too long for one slide: split Markdown, code and printed output
# --------------------------------------------------------------------------

def _md_blocks(markdown: str) -> list[str]:
    """Top-level blocks of rendered Markdown, split at blank lines outside
    code fences, ``$$`` math and HTML ``<div>`` blocks (admonitions)."""
    blocks: list[list[str]] = [[]]
    fence = None
    math = False
    depth = 0
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None and not math and depth == 0 and not stripped:
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(line)
        m = FENCE.match(line)
        if fence is None and m and not math:
            fence = m.group(1)
        elif fence is not None and stripped and set(stripped) == {fence[0]} \
                and len(stripped) >= len(fence):
            fence = None
        elif fence is None:
            if stripped.count("$$") % 2:
                math = not math
            depth += len(re.findall(r"<div\b", line)) - len(re.findall(r"</div>", line))
            depth = max(depth, 0)
    return ["\n".join(b) for b in blocks if b]


def _text_height(text: str) -> float:
    """Estimated height (px) of prose at the deck's 24 px type, ~90 characters a line."""
    plain = re.sub(r"<[^>]+>|data:[^\"')]+|\]\([^)]*\)", "", text)
    items = re.split(r"\n(?=\s*(?:[-*+]|\d+\.)\s)", plain)      # list items start new lines
    lines = sum(max(1, -(-len(" ".join(i.split())) // 90)) for i in items)
    return lines * 32.4 + 24


def _block_height(block: str) -> float:
    """Estimated height (px) of one block on a slide (a guess that errs high)."""
    first = block.lstrip().splitlines()[0] if block.strip() else ""
    if FENCE.match(first):
        return 23.4 * max(1, len(block.splitlines()) - 2) + 36
    if re.match(r"^#{1,3}\s", first):
        return {1: 100, 2: 80, 3: 66}[len(first) - len(first.lstrip("#"))]
    if block.strip().startswith("$$"):
        rows = block.count("\\\\") + 1
        return 45 * rows + 40
    if "<img" in block:
        return 420 + _text_height(re.sub(r"<img[^>]*>", "", block))
    if block.lstrip().startswith("<div"):
        inner = re.sub(r"^\s*<div[^>]*>|</div>\s*$", "", block.strip())
        return 40 + sum(_block_height(b) for b in _md_blocks(inner))
    if block.lstrip().startswith("|"):
        return 42 * len(block.splitlines()) + 24
    return _text_height(block)


def _split_fence(block: str) -> list[str]:
    """A code fence longer than CODE_MAX lines -> fences of at most CODE_MAX lines."""
    lines = block.splitlines()
    head, body, tail = lines[0], lines[1:-1], lines[-1]
    if len(body) <= CODE_MAX:
        return [block]
    return [f"{head}\n{chr(10).join(chunk)}\n{tail}" for chunk in _code_chunks(body)]


def _code_chunks(lines: list[str]) -> list[list[str]]:
    """Code lines -> chunks of at most CODE_MAX lines, cut at a blank line or
    a top-level statement where one is near the limit."""
    chunks: list[list[str]] = []
    while len(lines) > CODE_MAX:
        cut = CODE_MAX
        for k in range(CODE_MAX, CODE_MAX // 2, -1):
            if not lines[k].strip() or not lines[k].startswith((" ", "\t", ")", "]", "}")):
                cut = k
                break
        chunks.append(lines[:cut])
        lines = lines[cut:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    if lines:
        chunks.append(lines)
    return chunks


def _split_div(block: str) -> list[str]:
    """An admonition too tall for one slide -> several, each with its frame
    and title (the later ones marked "continued")."""
    lines = block.strip().splitlines()
    if not lines[-1].strip() == "</div>":
        return [block]
    opening, inner = lines[0], "\n".join(lines[1:-1])
    parts = _md_blocks(inner)
    title = parts.pop(0) if parts and "admonition-title" in parts[0] else ""
    pages: list[list[str]] = [[]]
    used = 40.0 + (_block_height(title) if title else 0)
    for b in parts:
        h = _block_height(b)
        if pages[-1] and used + h > TEXT_BUDGET - 40:
            pages.append([])
            used = 40.0 + (_block_height(title) if title else 0)
        pages[-1].append(b)
        used += h
    out = []
    for k, page in enumerate(pages):
        head = title if k == 0 else title.replace("</p>", " (continued)</p>")
        out.append(f"{opening}\n{head}\n\n" + "\n\n".join(page) + "\n\n</div>")
    return out


def paginate(markdown: str) -> list[str]:
    """A Markdown unit -> the pages (slides) it needs, each estimated to fit
    TEXT_BUDGET pixels; continuation pages repeat the heading, marked as such."""
    blocks: list[str] = []
    for b in _md_blocks(markdown):
        if FENCE.match(b.lstrip().splitlines()[0]):
            blocks += _split_fence(b)
        elif b.lstrip().startswith("<div") and _block_height(b) > TEXT_BUDGET:
            blocks += _split_div(b)
        else:
            blocks.append(b)
    if sum(_block_height(b) for b in blocks) <= TEXT_BUDGET:
        return [markdown]
    heading = re.match(r"^\s*#{1,3}\s+(.*)$", blocks[0])
    pages: list[list[str]] = [[]]
    used = 0.0
    for b in blocks:
        h = _block_height(b)
        if pages[-1] and (used + h > TEXT_BUDGET or (b.lstrip().startswith("<div")
                                                    and pages[-1][-1].lstrip().startswith("<div")
                                                    and "(continued)" in b)):
            pages.append([])
            used = 40.0
        pages[-1].append(b)
        used += h
    out = ["\n\n".join(p) for p in pages]
    if heading:
        title = html.escape(re.sub(r"[*_`]", "", heading.group(1)).strip())
        out[1:] = [f'<p class="deck-continued">{title} (continued)</p>\n\n{p}' for p in out[1:]]
    return out


PICTURE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml",
                 "application/vnd.jupyter.widget-view+json", "text/html")


def split_outputs(cell):
    """A cell that shows a picture (an image, a widget, an HTML figure) and
    more than a few lines of printed text -> (the cell with the pictures, an
    output-only cell with the text); (cell, None) otherwise."""
    def printed_lines(out) -> int:
        if out.get("output_type") == "stream":
            text = out.get("text", "")
        elif not any(m in out.get("data", {}) for m in PICTURE_MIMES):
            text = out.get("data", {}).get("text/plain", "")
        else:
            return 0
        return len((text if isinstance(text, str) else "".join(text)).splitlines())

    outs = cell.get("outputs", [])
    text = [o for o in outs if printed_lines(o)]
    if len(text) == len(outs) or sum(printed_lines(o) for o in text) <= 6:
        return cell, None
    pictures = copy.deepcopy(cell)
    pictures.outputs = [o for o in outs if not printed_lines(o)]
    printed = copy.deepcopy(cell)
    printed.outputs = text
    printed.metadata.setdefault("transient", {})["remove_source"] = True
    return pictures, printed


def _rows(line: str) -> int:
    """Rows a printed line takes on a slide (it wraps at about OUTPUT_COLS)."""
    return max(1, -(-len(line.rstrip()) // OUTPUT_COLS))


def short_output(cell):
    """Printed output longer than OUTPUT_MAX rows (a long line wraps over
    several): its first lines, and a pointer to the chapter page for the
    rest (a slide cannot scroll)."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            key, holder = "text", out
        elif "text/plain" in out.get("data", {}) and len(out["data"]) == 1:
            key, holder = "text/plain", out["data"]
        else:
            continue
        text = holder[key] if isinstance(holder[key], str) else "".join(holder[key])
        lines = text.rstrip("\n").splitlines()
        if sum(map(_rows, lines)) > OUTPUT_MAX:
            keep, used = 0, 0
            while keep < len(lines) and used + _rows(lines[keep]) <= OUTPUT_MAX - 1:
                used += _rows(lines[keep])
                keep += 1
            keep = max(keep, 1)
            holder[key] = "\n".join(lines[:keep]) + \
                f"\n\u2026 {len(lines) - keep} more lines: see the chapter page\n"
            cell.metadata.setdefault("transient", {})["output_cut"] = True
    return cell


def markdown_units(cell, glue: dict) -> list[Unit]:
    """One Markdown cell -> units split at headings and special admonitions."""
    items = parse_blocks(cell.source.splitlines())
    units: list[Unit] = []
    current: list = []

    def flush(kind: str = "text"):
        if current and any((isinstance(i, str) and i.strip()) or not isinstance(i, str)
                           for i in current):
            markdown = render(current, glue, CHAPTERS)
            units.append(Unit(kind, markdown, notes=slide_notes.left_out_note(LEFT_OUT)))
        LEFT_OUT.clear()
        current.clear()

    pending = "text"
    for item in items:
        if isinstance(item, str):
            h = re.match(r"^(#{1,3})\s+(.*)$", item)
            if h:
                flush(pending)
                pending = f"heading{len(h.group(1))}"
                current.append(item)
                if pending == "heading2" and SKIP_SECTIONS.match(h.group(2).strip()):
                    pending = "skip"
                continue
            current.append(item)
            continue
        if isinstance(item, Fence):
            current.append(item)
            continue
        cls = str(item.options.get("class", ""))
        special = None
        if item.name in ADMONITIONS and item.arg.strip().lower().startswith("goals"):
            special = "goals"
        elif "myth-vs-fact" in cls.split() or item.arg.strip().lower().startswith("myth"):
            special = "myth"
        if special:
            flush(pending)
            markdown = render([item], glue, CHAPTERS)
            units.append(Unit(special, markdown, notes=slide_notes.left_out_note(LEFT_OUT)))
            LEFT_OUT.clear()
            pending = "text"
        else:
            current.append(item)
    flush(pending)
    for u in units:
        if u.kind == "skip":
            u.kind, u.skip_section = "heading2", True
    return units


def is_colab_cell(cell) -> bool:
    return "google.colab" in cell.source and "pip install" in cell.source


def clean_code_cell(cell):
    """Outputs a deck can show; tags applied; alt text and caption attached."""
    import nbformat

    cell = copy.deepcopy(cell)
    tags = set(cell.metadata.get("tags", []))
    cell.outputs = [o for o in cell.get("outputs", [])
                    if not o.get("metadata", {}).get("scrapbook")
                    and not any(k.startswith(GLUE_PREFIX) for k in o.get("data", {}))]
    if tags & {"remove-output", "hide-output"}:
        cell.outputs = []
    if tags & {"remove-input", "hide-input", "hide-cell"}:
        cell.metadata.setdefault("transient", {})["remove_source"] = True
    mystnb = cell.metadata.get("mystnb", {})
    alt = mystnb.get("image", {}).get("alt") or mystnb.get("figure", {}).get("caption", "")
    for out in cell.outputs:
        if alt and any(m.startswith("image/") for m in out.get("data", {})):
            out.setdefault("metadata", {})["alt"] = " ".join(str(alt).split())
    extra = []
    caption = mystnb.get("figure", {}).get("caption")
    if caption:
        number = FIGURES.get(mystnb.get("figure", {}).get("name", ""))
        number = f"<strong>{html.escape(number)}</strong> " if number else ""
        extra.append(nbformat.v4.new_markdown_cell(
            f'<p class="caption">{number}{html.escape(" ".join(str(caption).split()))}</p>'))
    return cell, extra


def chapter_units(nb, glue: dict) -> list[Unit]:
    units: list[Unit] = []
    for cell in nb.cells:
        override = cell.metadata.get("slideshow", {}).get("slide_type")
        if cell.cell_type == "markdown":
            found = markdown_units(cell, glue)
            if override in ("skip", "notes"):
                for u in found:
                    u.override = override
            elif found and override:
                found[0].override = override
            for u in found:
                pages = paginate(u.markdown) if u.kind not in ("heading1",) else [u.markdown]
                u.markdown = pages[0]
                units.append(u)
                units += [Unit("text", page, override=u.override if u.override in ("skip", "notes")
                               else None, continued=True) for page in pages[1:]]
        elif cell.cell_type == "code":
            tags = set(cell.metadata.get("tags", []))
            if override is None and ("remove-cell" in tags or is_colab_cell(cell)):
                continue
            clean, extra = clean_code_cell(cell)
            clean = short_output(clean)
            figure = FIGURES.get(clean.metadata.get("mystnb", {}).get("figure", {}).get("name", ""))
            notes = slide_notes.code_notes(clean, figure)
            pictures, printed = split_outputs(clean)
            if printed is not None and override is None:
                # a picture and a long printout: the printout gets a sub-slide of its own
                clean, extra_text = pictures, printed
            else:
                extra_text = None
            shown = not clean.metadata.get("transient", {}).get("remove_source")
            lines = len(clean.source.splitlines()) if shown else 0
            if lines > CODE_MAX and override is None:
                # too long for one slide: its code over several sub-slides, then its output
                chunks = _code_chunks(clean.source.splitlines())
                for chunk in chunks:
                    part = copy.deepcopy(clean)
                    part.source, part.outputs = "\n".join(chunk), []
                    units.append(Unit("code", cell=part, lines=len(chunk)))
                if clean.outputs:
                    output_only = copy.deepcopy(clean)
                    output_only.metadata.setdefault("transient", {})["remove_source"] = True
                    units.append(Unit("code", cell=output_only, extra=extra))
            elif lines > LONG_CODE and clean.outputs and override is None:
                # a long cell: its code, then its output on a sub-slide of its own
                output_only = copy.deepcopy(clean)
                output_only.metadata.setdefault("transient", {})["remove_source"] = True
                clean.outputs = []
                units.append(Unit("code", cell=clean, lines=lines))
                units.append(Unit("code", cell=output_only, extra=extra))
            else:
                units.append(Unit("code", cell=clean, override=override, extra=extra,
                                  lines=lines))
            units[-1].notes += notes
            if extra_text is not None:
                units.append(Unit("code", cell=extra_text, continued=True))
        # raw cells are not shown
    return units


def assign_slides(units: list[Unit], first_notes: list[str] | None = None):
    """Units -> cells carrying ``slideshow.slide_type`` for nbconvert; each
    slide ends with a notes cell (scripts/slide_notes.py), the first slide's
    starting from ``first_notes``."""
    import nbformat

    cells: list = []
    skipping = False
    text = 0                   # characters of text on the current (sub)slide
    cells_here = False         # a code cell (with or without a figure) on it
    notes: list[str] = list(first_notes or [])   # the current slide's speaker notes
    section = part = None      # the ## (and ###) heading the current slide belongs to

    closed = True              # the current slide's notes are written

    def close_slide():
        nonlocal closed
        if not cells:
            return
        markdown = slide_notes.notes_markdown(notes, section)
        if cells and markdown and not closed:
            cell = nbformat.v4.new_markdown_cell(markdown)
            cell.metadata["slideshow"] = {"slide_type": "notes"}
            cells.append(cell)
        notes.clear()
        closed = True

    def add(cell, slide_type: str):
        nonlocal text, cells_here, closed
        if slide_type in ("slide", "subslide"):
            close_slide()
            text, cells_here = 0, False
        cell.metadata["slideshow"] = {"slide_type": slide_type}
        cells.append(cell)
        closed = False

    for u in units:
        if u.kind in ("heading1", "heading2"):
            skipping = u.skip_section
        if u.override == "skip" or (skipping and u.override is None):
            continue
        if u.kind == "goals":
            close_slide()
            section = "Goals"
        if u.kind in ("heading2", "heading3") and u.override != "notes":
            title = re.match(r"^\s*#{1,3}\s+(.*)$", u.markdown, re.M)
            if title:
                close_slide()            # the notes so far belong to the slide before
                if u.kind == "heading2":
                    part = section = title.group(1).strip()
                else:
                    section = f"{part} \u203a {title.group(1).strip()}"
        if u.kind == "code":
            joins = not (cells_here or u.continued) and text <= SHORT_LEAD and u.lines <= LONG_CODE
            kind = u.override or ("-" if joins else "subslide")
            add(u.cell, kind)
            if kind != "notes":
                cells_here = True
            notes.extend(u.notes)
            for extra in u.extra:                # the figure's caption
                add(extra, "notes" if kind == "notes" else "-")
            continue
        cell = nbformat.v4.new_markdown_cell(u.markdown)
        default = {"heading1": "slide", "heading2": "slide", "goals": "slide",
                   "heading3": "subslide", "myth": "subslide"}.get(u.kind)
        if default is None:                      # text: after code, a new sub-slide
            default = "subslide" if cells_here or u.continued else "-"
        kind = u.override or default
        add(cell, kind)
        notes.extend(u.notes)
        if kind != "notes":
            text += len(re.sub(r"<[^>]+>|data:[^\"']+", "", u.markdown))
    close_slide()
    if not cells:
        raise SlidesError("no cell would be shown on a slide")
    cells[0].metadata["slideshow"] = {"slide_type": "slide"}
    for i, cell in enumerate(cells):             # copies and splits: ids anew
        cell["id"] = f"deck-{i}"
    return cells


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


def export(cells, nb, title: str, stem: str) -> str:
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import SlidesExporter

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
    exporter = SlidesExporter(
        extra_loaders=[DictLoader({"course_deck.html.j2": TEMPLATE})],
        template_file="course_deck.html.j2",
        reveal_url_prefix=REVEAL, reveal_theme="white", reveal_transition="slide",
        reveal_width=str(SLIDE_W), reveal_height=str(SLIDE_H),
        mathjax_url=MATHJAX, require_js_url=REQUIRE,
        exclude_input_prompt=True, exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(deck, resources={"course": {
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
