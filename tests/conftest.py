"""The order `make test`'s two workers take the test files in.

pytest-xdist (``--dist loadfile``) gives each worker a whole file at a time,
in the order of the collection (``--no-loadscope-reorder``: by default it
puts the files with the most tests first, whatever they cost). A file
that starts last and runs long leaves the other worker idle, so the files
that take longest start first: the longest-processing-time rule. The
seconds beside each are one full run's (baseline of issue 37, this 2-core
machine, two workers, before the cuts that issue made); the rest follow in
the collection's own order.
"""
from __future__ import annotations

LONGEST_FIRST = (
    "tests/test_site.py",              # 888 s: every page in Chromium, axe in two modes
    "tests/test_train_live.py",        # 1,256 s: two whole runs in the page and in Python
    "code/tests/test_web_train.py",    # 249 s: the exported step against PyTorch
    "tests/test_slides.py",            # 234 s: every deck opened, every slide reached
    "tests/test_lab_live.py",          # 117 s: links, files and grades in the page
    "tests/test_csp.py",               # every page under its policy (88 s one test)
    "code/tests/test_real_lm.py",      # SmolLM2 against transformers' Llama
    "tests/test_explorer_smollm2.py",  # the page's SmolLM2 against the package
    "tests/test_untrusted_live.py",    # hostile reports and Reset, in the page
    "tests/test_lan_http.py",          # a class of six runs over plain http (issue 47)
    "tests/test_manifest.py",          # 70 s
    "tests/test_handouts.py",          # 54 s
    "tests/test_explorer_live.py",     # 46 s
    "code/tests/test_tiny_model.py",   # 34 s
    "code/tests/test_circuits.py",     # 32 s
)


def pytest_collection_modifyitems(session, config, items):
    rank = {f: i for i, f in enumerate(LONGEST_FIRST)}
    # sorted() is stable: within a file, and among the files not listed, the
    # collection's order stays
    items[:] = sorted(items, key=lambda it: rank.get(it.nodeid.split("::")[0], len(rank)))
