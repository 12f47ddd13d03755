"""MyST Markdown -> the Markdown (with HTML) nbconvert renders on a slide.

It holds the parts of the chapters' slide decks that read MyST: the blocks of
a Markdown cell (``parse_blocks``: text, code fences, directives), its roles
and links (``inline``), its directives (``render_directive``: admonitions,
``literalinclude``, ``{math}``, figures, glue values, tab-sets), the page's
figure numbers and labels (``FIGURES``, ``LABELS``, filled per chapter), and
the error a user can fix (``SlidesError``).

Used by scripts/build_slides.py, the entry point (which documents the rules),
and scripts/slide_paginate.py.
"""
from __future__ import annotations

import ast
import base64
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SKIP_DIRECTIVES = {"exercise", "solution", "exercise-start", "exercise-end", "solution-start",
                   "solution-end", "dropdown", "toctree", "tableofcontents", "contents",
                   "bibliography", "margin", "sidebar", "glossary", "eval-rst"}
ADMONITIONS = {"admonition", "note", "tip", "important", "warning", "caution", "attention",
               "danger", "error", "hint", "seealso", "topic"}


class SlidesError(SystemExit):
    """A problem the user can fix (printed without a traceback)."""


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
