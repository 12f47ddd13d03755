"""A chapter -> the cells of its slides: where each slide and sub-slide
starts, and what is cut or split so that each fits the slide box.

It holds the units a chapter is cut into (``Unit``, ``markdown_units``,
``chapter_units``), the estimates of their height and the splits of what is
too long for one slide (``paginate``, ``split_outputs``, ``short_output``),
and the slide types nbconvert reads (``assign_slides``).

Used by scripts/build_slides.py, the entry point (which documents the rules).
"""
from __future__ import annotations

import copy
import html
import re
from dataclasses import dataclass, field

import slide_notes
from slide_markdown import (
    ADMONITIONS,
    CHAPTERS,
    FENCE,
    FIGURES,
    LEFT_OUT,
    Fence,
    SlidesError,
    parse_blocks,
    render,
)

SKIP_SECTIONS = re.compile(r"^(exercises?|solutions?)\b", re.I)
SHORT_LEAD = 400               # characters of text a code cell may join on one slide
LONG_CODE = 12                 # lines: a longer cell's output gets a sub-slide of its own
CODE_MAX = 24                  # lines of code on one slide (18 px type, 1.3 line height)
OUTPUT_MAX = 16                # lines of printed output on one slide (20 px type, 1.3 line
OUTPUT_COLS = 88               # height, about 88 characters a line); the rest stays on the page
TEXT_BUDGET = 600              # estimated pixels of Markdown on one slide (the box is 720 high)
GLUE_PREFIX = "application/papermill.record/"


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
