"""Speaker notes for the chapters' slide decks (scripts/build_slides.py).

reveal.js shows a slide's notes in its speaker view (key S); nbconvert puts a
cell whose ``slideshow.slide_type`` is ``notes`` into the notes of the slide
it follows. Each slide's notes say what the slide itself does not show:

- the title slide: the chapter's exercises (the deck leaves them out) and
  where the live trainer is, for the decks that link to it;
- a figure: its number, and its description (the alt text of the page), to
  say aloud what the picture shows;
- a printout cut to fit the slide, and code folded on the page: that the
  rest is on the chapter page;
- what the deck leaves out of the section (its folded asides: package
  listings, details), by title, so the speaker knows where to find it;
- on every slide: the section of the chapter page it comes from.
"""
from __future__ import annotations

import html
import re

NOTES_MAX = 600                # characters of one note (an alt text is cut there)


def plain(text: str) -> str:
    """One line of text from Markdown/HTML: tags, emphasis and links dropped."""
    text = re.sub(r"<[^>]+>", " ", str(text))
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\*\*|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)|`", "", text)
    text = " ".join(html.unescape(text).split())
    return text if len(text) <= NOTES_MAX else text[:NOTES_MAX - 1].rstrip() + "\u2026"


def code_notes(cell, figure_number: str | None) -> list[str]:
    """Notes for a code cell as the deck shows it (after clean_code_cell)."""
    notes = []
    mystnb = cell.metadata.get("mystnb", {})
    alt = mystnb.get("image", {}).get("alt") or mystnb.get("figure", {}).get("caption")
    pictures = any(k.startswith("image/") for o in cell.get("outputs", [])
                   for k in o.get("data", {}))
    if alt and pictures:
        notes.append(f"{figure_number or 'The picture'} shows: {plain(alt)}")
    transient = cell.metadata.get("transient", {})
    if transient.get("output_cut"):
        notes.append("The printout is cut to fit the slide: the chapter page has all of it.")
    if transient.get("remove_source") and cell.source.strip() and cell.get("outputs"):
        notes.append("The code that makes this is folded on the chapter page "
                     "(\u201cShow code cell source\u201d).")
    return notes


def left_out_note(titles: list[str]) -> list[str]:
    """The folded asides of a section that the deck leaves out."""
    titles = [plain(t) for t in titles if plain(t)]
    if not titles:
        return []
    named = "; ".join(f"\u201c{t}\u201d" for t in titles)
    return [f"Folded on the chapter page, not on the slides: {named}."]


def exercises(nb) -> list[str]:
    """Titles of the chapter's exercises (``{exercise}`` blocks), in order."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for m in re.finditer(r"^ {0,3}(?:`{3,}|:{3,})\{exercise\}[ \t]*(.*)$",
                             cell.source, re.M):
            found.append(plain(m.group(1)) or f"exercise {len(found) + 1}")
    return found


def title_notes(nb, trainer: bool) -> list[str]:
    notes = []
    ex = exercises(nb)
    if ex:
        notes.append(f"The deck leaves out the chapter's {len(ex)} exercises (the page and "
                     "the handout have them): " + "; ".join(ex) + ".")
    if trainer:
        notes.append("The link \u201cTrain a model live\u201d opens the explorer's trainer, "
                     "which trains the chapter's tiny model in the browser, offline.")
    return notes


def notes_markdown(notes: list[str], section: str | None) -> str | None:
    """A notes cell's Markdown: one bullet a note (duplicates dropped), then
    the section of the chapter page; None when there is nothing to say."""
    lines = list(dict.fromkeys(n for n in notes if n))
    if section:
        lines.append(f"From the chapter page's section \u201c{plain(section)}\u201d.")
    if not lines:
        return None
    return "\n".join(f"- {html.escape(n, quote=False)}" for n in lines)
