"""The order `make test`'s two workers take the test files in.

pytest-xdist (``--dist loadfile``) gives each worker a whole file at a time,
in the order of the collection (``--no-loadscope-reorder``: by default it
puts the files with the most tests first, whatever they cost). A file
that starts last and runs long leaves the other worker idle, so the files
that take longest start first: the longest-processing-time rule. The
seconds beside each are one full run's (issue 49's baseline: test time per
file from pytest's JUnit report, this 2-core machine, two workers, before
that issue's cuts); the rest follow in the collection's own order.
"""
from __future__ import annotations

LONGEST_FIRST = (
    "tests/test_site.py",              # 765 s: every page in Chromium, axe in two modes
    "tests/test_train_live.py",        # 364 s: two whole runs in the page and in Python
    "tests/test_slides.py",            # 279 s: every deck opened, every slide reached
    "tests/test_lab_live.py",          # 162 s: links, files and grades in the page
    "tests/test_lan_http.py",          # 97 s: a class of six runs over plain http
    "tests/test_explorer_smollm2.py",  # 68 s: the page's SmolLM2 against the package
    "tests/test_untrusted_live.py",    # 65 s: hostile reports and Reset, in the page
    "tests/test_explorer_live.py",     # 47 s
    "tests/test_csp.py",               # 41 s: every page under its policy
    "code/tests/test_tiny_model.py",   # 39 s
    "code/tests/test_real_lm.py",      # 36 s: SmolLM2 against transformers' Llama
    "code/tests/test_web_train.py",    # 35 s: the exported step against PyTorch
    "tests/test_handouts.py",          # 23 s
    "code/tests/test_web_export.py",   # 23 s
    "tests/test_patch_live.py",        # 22 s
    "tests/test_lab_grades_live.py",   # 21 s
    "code/tests/test_circuits.py",     # 20 s
)


def pytest_collection_modifyitems(session, config, items):
    rank = {f: i for i, f in enumerate(LONGEST_FIRST)}
    # sorted() is stable: within a file, and among the files not listed, the
    # collection's order stays
    items[:] = sorted(items, key=lambda it: rank.get(it.nodeid.split("::")[0], len(rank)))
