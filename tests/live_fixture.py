"""The live explorer page as a pytest fixture, shared by the browser test
files (kept out of ``site_browser``, which ``make book`` imports without
pytest)."""
from __future__ import annotations

import pytest

from site_browser import PAGE, SITE, LivePage, offline_page, serve


@pytest.fixture(scope="module")
def live_page():
    if not (SITE / PAGE).exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base) as (p, blocked):
        live = LivePage(p, base, blocked)
        p.on("pageerror", lambda e: live.errors.append(str(e)))
        p.goto(live.url)
        yield live
        ours = [e for e in live.errors if "THEBE_JS_URL" not in e]
        assert ours == [], f"JavaScript errors: {ours}"
        assert blocked == [], f"the page tried to reach {blocked}"
