"""A Sphinx extension (``_config.yml``'s ``local_extensions``): every page
of the site gets a Content-Security-Policy, as a ``<meta http-equiv>`` at
the top of its ``<head>`` (a static site sends no headers of its own).

The policy lets a page run only the site's own scripts: files served from
its own origin (``'self'``: the theme, MathJax, the widget manager, the
explorer's modules and workers, onnxruntime-web), WebAssembly compiled from
them (``'wasm-unsafe-eval'``: onnxruntime-web and the tokenizer), and the
inline scripts Sphinx and the theme write into the page itself, each
allowed by the SHA-256 of its text (computed here, once the page is
written: a script added to a page later, by hand or by an attack, is not
in the list and does not run), and the theme's two inline event handlers
(its print and full-screen buttons), each by the hash of its own text
(``'unsafe-hashes'``). No ``'unsafe-inline'`` for scripts: so a
``javascript:`` address (a student's report link, say) or any other inline
event handler never runs. A page that holds ipywidgets (a chapter's
sliders) also allows ``'unsafe-eval'``: the widget manager compiles the
JSON schemas it checks their state against into functions (ajv), and
draws no widget without; the explorer, the trainer and the class page hold
none and never get it. Workers may come from the site or from ``blob:``
URLs; images, fonts and fetches from the site, ``data:`` and ``blob:``;
styles may be inline (MathJax and the theme set them); no plugins.

The pages are rewritten when the build finishes (``build-finished``): each
HTML page Sphinx wrote gets the policy of its own inline scripts, replacing
one an earlier build put there. tests/test_site_csp.py opens the pages in
Chromium and checks that nothing is refused.
"""
from __future__ import annotations

import base64
import hashlib
import html as entities
import re
from pathlib import Path

#: the policy, less the inline scripts' hashes (added per page)
POLICY = (
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'{hashes}",
    "worker-src 'self' blob:",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self' data: blob:",
    "media-src 'self' data: blob:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
)
META = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n?')
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)
TYPE = re.compile(r"""\btype\s*=\s*["']?([^"'\s>]+)""", re.I)
#: the script types a browser runs (an empty type is JavaScript)
RUNS = {"", "text/javascript", "application/javascript", "module"}
TAG = re.compile(r"<[a-zA-Z][^<>]*>")
HANDLER = re.compile(r"""\son[a-z]+\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
#: a page with ipywidgets: the widget manager's state, which it checks against
#: JSON schemas it compiles to functions (ajv: ``new Function``)
WIDGETS = "application/vnd.jupyter.widget-state+json"
CHARSET = re.compile(r"<meta charset=[^>]*>\n?", re.I)


def _source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def inline_hashes(html: str) -> list[str]:
    """The CSP sources (``'sha256-...'``) of the inline scripts that run in
    ``html``, in page order, each once."""
    out: list[str] = []
    for attrs, body in SCRIPT.findall(html):
        if re.search(r"\bsrc\s*=", attrs, re.I):
            continue
        t = TYPE.search(attrs)
        if (t.group(1).lower() if t else "") not in RUNS:
            continue  # data (JSON, widget state): never run
        if _source(body) not in out:
            out.append(_source(body))
    return out


def handler_hashes(html: str) -> list[str]:
    """The CSP sources of the page's inline event handlers (the theme's
    buttons: ``onclick="window.print()"``, ``onclick="toggleFullScreen()"``):
    each allowed by its own hash ('unsafe-hashes'), none other."""
    out: list[str] = []
    for tag in TAG.findall(SCRIPT.sub("", html)):
        for a, b in HANDLER.findall(tag):
            src = _source(entities.unescape(a or b))
            if src not in out:
                out.append(src)
    return out


def policy(html: str) -> str:
    handlers = handler_hashes(html)
    sources = inline_hashes(html) + (["'unsafe-hashes'"] + handlers if handlers else [])
    if WIDGETS in html:  # the widget manager compiles its JSON schemas (ajv) with new Function
        sources.append("'unsafe-eval'")
    return "; ".join(POLICY).format(hashes="".join(" " + s for s in sources))


def with_policy(html: str) -> str:
    """``html`` with its policy (one meta, right after ``<meta charset>``,
    before any script); an older policy is replaced."""
    html = META.sub("", html)
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy(html)}">\n'
    m = top_of_head(html)
    if m is None:
        return html
    return html[: m.end()] + meta + html[m.end():]


def top_of_head(html: str):
    """Where a page's own lines go at the top of its ``<head>``: the match
    of its ``<meta charset>`` (which must stay within the first 1,024 bytes),
    else of its ``<head>`` tag; None if it has neither."""
    return CHARSET.search(html) or re.search(r"<head[^>]*>\n?", html, re.I)


def pages(app) -> list[Path]:
    """The HTML pages Sphinx writes (the documents and its own index and
    search pages), not the files it copies into ``_static``."""
    builder = app.builder
    names = set(builder.env.found_docs) | {"genindex", "search", "py-modindex"}
    out = [Path(builder.get_outfilename(n)) for n in sorted(names)]
    return [p for p in out if p.is_file()]


def rewrite_pages(app, exception, rewrite) -> None:
    """Once an HTML build has finished without error: each of its
    :func:`pages` as ``rewrite`` (a function of the page's text) gives it,
    written only where that changes it (sphinx_preload uses it too)."""
    if exception is not None or app.builder.format != "html":
        return
    for path in pages(app):
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def _add_policy(app, exception):
    rewrite_pages(app, exception, with_policy)


def setup(app):
    app.connect("build-finished", _add_policy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
