"""The live page that the browser tests share (``make book`` first).

``live_page`` opens ``chapters/explorer.html`` of the built site in headless
Chromium, offline (every request that leaves 127.0.0.1 is blocked and
recorded), and checks when the module's tests are done that the page raised
no JavaScript error and reached nothing outside. ``tests/test_explorer_live.py``
and ``tests/test_train_live.py`` each build their ``page`` fixture on it,
waiting for what they drive (the explorer's engine, the trainer's panels).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from site_browser import PAGE, SITE, offline_page, serve


@dataclass
class LivePage:
    """The open page, the site's base URL, the URLs it tried to reach
    elsewhere, and the JavaScript errors it raised."""

    page: object
    base: str
    blocked: list[str]
    errors: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.base}/{PAGE}"


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
