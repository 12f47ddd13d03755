"""The trainer's Patch view (issue 46) on the built site (``make book``
first), in Debian's Chromium, offline: a model file opened in the page
(the book's h 4, d_k 16 model) is patched in the read-out worker with
mhacourse.web_patch's two graphs, patch then ablate (the two patching maps
are drawn first, then all five), and every map the page draws (patching
both ways, zero, mean and resample ablation) equals the package's
patching_map and ablation_map within 1e-4 (seen 1.8e-7), on the first 64
and 32 of the build's 256 pairs; the Python line names those calls. Bad input gets
one line and no map: no trained model, an empty or too large batch, ends
too close to divide by, numbers that are not, a run still training, a
one-layer model; a Reset leaves no map. One page, one file, no training
run: 98 s at load average 18 on this shared 2-core machine, most of it
the page, the file and the first request's graph load (12 s there)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from live_fixture import live_page  # noqa: F401 (the shared fixture)

import mhacourse as mc
from mhacourse import interventions as iv
from mhacourse import tiny_model as tm
from mhacourse import web_patch
from mhacourse.catalogue import assets_dir
from site_browser import CHROMIUM

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")
PANEL = "mha.trainer.panels[0]"
VIEW = PANEL + ".patch"
TOL = 1e-4  # the bound, page against Python


def maps_now(p) -> tuple[dict, str]:
    return (p.evaluate(f"{VIEW}.last"),
            p.locator(".mha-patch-maps").first.evaluate("e => e.querySelectorAll('canvas').length"))


def refused(p, call: str, words: str) -> None:
    """``call`` answers with one line holding ``words`` and leaves no map."""
    assert p.evaluate(call) is None
    note = p.locator(".mha-patch-note").first.inner_text()
    assert words in note and "\n" not in note and "NaN" not in note, note
    last, canvases = maps_now(p)
    assert last is None and canvases == 0


def test_the_pages_maps_equal_the_package_and_bad_input_gets_one_line(live_page):  # noqa: F811
    p = live_page.page
    p.wait_for_function("window.mha?.trainer && mha.trainer.panels.length")
    p.locator(".mha-trainer").first.scroll_into_view_if_needed()
    p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=90_000)
    p.locator(".mha-patch summary").first.click()
    refused(p, f"{VIEW}.request('successor', 256)", "No trained model yet")
    path = assets_dir() / "models" / "h4_dk16.safetensors"
    p.locator(".mha-lab-open").first.set_input_files(str(path))
    p.wait_for_function(f"{PANEL}.lab.files.opened && {PANEL}.snapshot")
    model = tm.load(path)
    for name, n in (("successor", 64), ("occurrence", 256 // 8)):
        r = p.evaluate(f"""(() => {{ const seen = [];
            {VIEW}.onDrawn = (r) => seen.push(r.maps.length);
            return {VIEW}.request({name!r}, {n}).then((r) => {{ {VIEW}.onDrawn = null;
              return r && Object.assign({{ seen }}, r); }}); }})()""")
        assert r is not None, p.locator(".mha-patch-note").first.inner_text()
        pairs = iv.Pairs(*(t[:n] for t in mc.corrupt(name, web_patch.N_PAIRS,
                                                      seed=web_patch.SEED)))
        want = ([mc.patching_map(model, pairs, d) for d in iv.DIRECTIONS]
                + [mc.ablation_map(model, pairs, m) for m in iv.METHODS])
        got = np.array(r["fractions"]).reshape(5, 2, 4)
        err = max(float(np.abs(g - w.numpy()).max()) for g, w in zip(got, want, strict=True))
        print(f"\n{name}, {n} pairs: page vs package max |diff| {err:.1e}; graphs "
              f"{r['ms']:.0f} ms, request to the patching maps drawn {r['msFirst']:.0f} ms, "
              f"to all {r['msTotal']:.0f} ms (load average {os.getloadavg()[0]:.1f})")
        assert err < TOL
        assert r["seen"] == [2, 5]  # the patch graph's two maps drawn first, then all five
        assert maps_now(p)[1] == 5
        line = p.locator(".mha-patch-python code").first.inner_text()
        assert line.startswith('model = tm.load("h4_dk16.safetensors")')
        assert f'mc.corrupt("{name}", 256, seed=0)' in line
        assert (f"t[:{n}]" in line) == (n < 256) and 'mc.ablation_map(model, p, "resample")' in line
    refused(p, f"{VIEW}.request('successor', 0)", "The batch is empty")
    refused(p, f"{VIEW}.request('successor', '')", "The batch is empty")
    refused(p, f"{VIEW}.request('successor', 257)", "choose 1 to 256")
    fake = ("{h: 4, corruption: 'successor', n: 8, step: 0, ms: 1, "
            "fractions: Array(40).fill(%s), ends: %s}")
    refused(p, f"{VIEW}.draw({fake % ('Infinity', '[1.0, 1.0004]')})", "a difference under 0.001")
    refused(p, f"{VIEW}.draw({fake % ('NaN', '[NaN, 1.0]')})", "not numbers")
    # the run's state is read-only: shadowed for one call
    refused(p, f"""(() => {{ const q = {PANEL};
        Object.defineProperty(q, 'state', {{ value: 'running', configurable: true }});
        const r = q.patch.request('successor', 8); delete q.state; return r; }})()""",
            "still training")
    refused(p, f"""(() => {{ const k = {PANEL}.knobs, f = k.layers; k.layers = () => 1;
        const r = {VIEW}.request('successor', 8); k.layers = f; return r; }})()""",
            "This model has 1 layer")
    assert p.evaluate(f"{VIEW}.request('query', 16).then(r => r && r.n)") == 16
    assert "&corruption=query&pairs=16" in p.evaluate("location.search")  # the link carries it
    p.locator(".mha-train-reset").first.click()
    assert maps_now(p) == (None, 0)


def test_the_link_and_the_report_carry_the_corruption(live_page):  # noqa: F811
    """A link's corruption and pairs set the Patch view (a bad one: the
    manifest's default, named in the lab's one line); a report shows its
    own. The same page, opened again: 6 s at load average 7."""
    p = live_page.page
    shown = p.evaluate("""async () => {
      const m = await import(new URL("../_static/explorer/report-view.js", location.href).href);
      const r = { student: "Ann", settings: { h: 4, d_k: 16, d_model: 64, seed: 0, steps: 40 },
        step: 40, state: "done", phase_step: null, predictions: [], ablations: [],
        curves: { loss: [1], steps: [40], accuracy: [[0.5, 0.9, 0.3]] },
        roles: { steps: [], heads: [] }, model: { sha256: "0".repeat(64) },
        course: { build: "0123456789abcdef" }, created: "now", link: "x",
        patch: { corruption: "query", pairs: 16 } };
      return m.reportView(r, 0.29, []).textContent; }""")
    assert "patched on 16 \u201cquery\u201d pairs" in shown
    for link, want, line in (("?corruption=occurrence&pairs=32", ["occurrence", "32"], ""),
                             ("?corruption=bogus&pairs=300", ["successor", "256"],
                              "corruption (bogus); pairs (300).")):
        p.goto(live_page.url.split("?")[0] + link)
        p.wait_for_function("window.mha?.trainer && mha.trainer.panels.length")
        p.locator(".mha-trainer").first.scroll_into_view_if_needed()
        p.wait_for_function(f"{PANEL}.lab.ready")
        got = p.evaluate(f"[{VIEW}.choice.value, {VIEW}.count.value]")
        assert got == want, (link, got)
        note = p.locator(".mha-lab-line").first.inner_text()
        assert note.endswith(line) and "\n" not in note, note
