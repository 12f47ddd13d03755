"""scripts/sphinx_preload.py's preload links for the classic scripts: every
page asks for the scripts its parser will wait for at once, not one after
another (the pages' Content-Security-Policy <meta> stops Chromium's preload
scanner)."""
from __future__ import annotations

import re

import pytest
from sphinx_csp import META
from sphinx_preload import ENTRY_TAG, classic_scripts, with_script_preloads

from site_browser import SITE

PAGE = """<!DOCTYPE html><html><head>
<meta charset="utf-8" />
<script src="a.js?v=1"></script>
<script defer src="b.js"></script>
<script type="module" src="c.js"></script>
<script async src="d.js"></script>
<script>var inline = 1;</script>
</head><body><script src="e.js"></script><script src="a.js?v=1"></script></body></html>
"""


def test_only_the_scripts_the_parser_waits_for_in_order_once():
    assert classic_scripts(PAGE) == ["a.js?v=1", "e.js"]


def test_the_links_follow_the_charset_and_a_second_pass_changes_nothing():
    once = with_script_preloads(PAGE)
    assert with_script_preloads(once) == once
    head = once[:once.index("</head>")]
    assert re.findall(r'<link rel="preload" as="script" href="([^"]+)">', head) == \
        ["a.js?v=1", "e.js"]
    assert head.index("<meta charset") < head.index('<link rel="preload"')
    assert with_script_preloads("<p>no head, no scripts</p>") == "<p>no head, no scripts</p>"


def test_the_entry_module_moves_to_the_head_before_every_deferred_script():
    page = PAGE.replace("</body>", '<script type="module" src="../_static/explorer/page.js">'
                                   "</script>\n</body>")
    once = with_script_preloads(page)
    assert with_script_preloads(once) == once
    assert len(ENTRY_TAG.findall(once)) == 1
    head = once[:once.index("</head>")]
    assert ENTRY_TAG.search(head), "the entry module is not in the head"
    assert head.index("explorer/page.js") < head.index("<script defer")


@pytest.mark.parametrize("page", ["chapters/explorer.html", "chapters/01_one_head.html",
                                  "chapters/class.html"])
def test_built_pages_preload_every_classic_script_after_their_policy(page):
    path = SITE / page
    if not path.exists():
        pytest.fail("the site is not built: run `make book` first")
    text = path.read_text()
    head = text[:text.index("</head>")]
    want = classic_scripts(text)
    assert len(want) >= 10, f"{page}: {want}"
    got = re.findall(r'<link rel="preload" as="script" href="([^"]+)">', head)
    assert got == want, f"{page}: preloaded {got}, its classic scripts {want}"
    policy = META.search(head)
    assert policy and policy.end() <= head.index('<link rel="preload" as="script"'), \
        f"{page}: the links come before the page's policy"
    assert text.encode().index(b"<meta charset") < 1024, f"{page}: charset after 1,024 bytes"
    for src in got:
        assert (path.parent / src.split("?")[0]).resolve().is_file(), f"{page}: {src} missing"
    if "explorer/page.js" in text:  # the explorer's entry runs before the theme's and MathJax's
        assert len(ENTRY_TAG.findall(text)) == 1 and ENTRY_TAG.search(head), page
        deferred = re.search(r"<script\b[^>]*\bdefer\b", head)
        assert ENTRY_TAG.search(head).start() < deferred.start(), page
