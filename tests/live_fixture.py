"""The live explorer page as a pytest fixture, shared by the browser test
files (kept out of ``site_browser``, which ``make book`` imports without
pytest)."""
from __future__ import annotations

import base64

import numpy as np
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


# Float32Arrays cross from the page as base64 of their bytes (a 512-token
# MiniLM run is 19 million weights: far too slow as JSON numbers). B64 is the
# page-side encoder to put in an evaluated script; floats() decodes.
B64 = """const b64 = (a) => { const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    let s = ""; for (let i = 0; i < u.length; i += 32768) {
      s += String.fromCharCode.apply(null, u.subarray(i, i + 32768)); }
    return btoa(s); };"""


def floats(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4")
