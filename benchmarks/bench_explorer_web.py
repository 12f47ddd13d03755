"""How fast the static site's live explorer is, in headless Chromium.

    python benchmarks/bench_explorer_web.py      # after `make book`

Serves ``_build/html`` on 127.0.0.1 (every other request blocked) and measures:

- navigation -> first paint and -> live engine ready, each run in a fresh
  browser context (cold cache), and the bytes the page transferred;
- a keystroke or a control change -> repaint, compute included (the page's
  own ``mha.explorer.timings``: from the input event to the animation frame
  after the heatmaps are drawn), for tiny models of several sizes;
- MiniLM: bytes and seconds to load it, and its forward pass plus repaint for
  a 16-token sentence (each run a new sentence, so nothing is cached).

Prints a table and writes ``benchmarks/results/explorer_web.json``, with the
machine's load average, since the numbers depend on what else runs.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from site_browser import CHROMIUM, CHROMIUM_ARGS, DRIVE, SITE, serve  # noqa: E402

PAGE = "chapters/explorer.html"
OUT = ROOT / "benchmarks" / "results" / "explorer_web.json"
READY = "window.mha?.explorer && window.mha?.explorer.engine === 'ready'"
BYTES = """() => performance.getEntriesByType('navigation').concat(
    performance.getEntriesByType('resource')).reduce((s, e) => s + (e.encodedBodySize || 0), 0)"""
WORDS = ("alpha beta gamma delta river mountain garden window paper music "
         "yellow silver quiet happy").split()


def median(xs):
    return round(statistics.median(xs), 1)


def new_page(browser, base):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                  else r.abort())
    return context, context.new_page()


def timings(page, reason, start=0):
    return [t["ms"] for t in page.evaluate("mha.explorer.timings")[start:]
            if t["reason"] == reason and "error" not in t]


def bench_navigation(browser, base, runs=5):
    first, ready, sizes = [], [], []
    for _ in range(runs):
        context, page = new_page(browser, base)
        t0 = time.perf_counter()
        page.goto(f"{base}/{PAGE}")
        page.wait_for_function("window.mha?.explorer && mha.explorer.timings.length > 0")
        first.append(1000 * (time.perf_counter() - t0))
        page.wait_for_function(READY, timeout=30_000)
        page.wait_for_function("mha.explorer.timings.some(t => t.reason === 'engine-ready')")
        ready.append(1000 * (time.perf_counter() - t0))
        sizes.append(page.evaluate(BYTES))
        largest = page.evaluate("""() => performance.getEntriesByType('resource')
            .map(e => [e.name.split('/').pop(), e.encodedBodySize || 0])
            .sort((a, b) => b[1] - a[1]).slice(0, 3)""")
        context.close()
    return {"first_paint_ms": median(first), "engine_ready_ms": median(ready),
            "engine_ready_ms_all": [round(x) for x in ready],
            "page_open_bytes": int(statistics.median(sizes)), "largest_files": largest}


def bench_typing(page, cells, keys=30):
    out = {}
    for mode, h, d_k in cells:
        page.click(f"label[for=mha-mode-{mode}]")
        page.click(f"label[for=mha-h-{h}]")
        if mode == "wide":
            page.click(f"label[for=mha-dk-{d_k}]")
        page.fill("#mha-text", "")
        page.wait_for_timeout(200)
        start = len(page.evaluate("mha.explorer.timings"))
        page.type("#mha-text", "the cat sat on the mat because it", delay=60)
        page.wait_for_timeout(300)
        ms = timings(page, "text", start)[-keys:]
        out[f"{mode} h={h} d_k={d_k}"] = {"keystroke_to_repaint_ms": median(ms),
                                          "max_ms": round(max(ms), 1), "n": len(ms)}
    start = len(page.evaluate("mha.explorer.timings"))
    page.click("label[for=mha-mode-budget]")
    for _ in range(3):
        for h in (1, 2, 4, 8, 16):
            page.click(f"label[for=mha-h-{h}]")
            page.wait_for_timeout(80)
    ms = timings(page, "h", start)
    out["control change (h, same budget)"] = {"control_to_repaint_ms": median(ms), "n": len(ms)}
    return out


def bench_minilm(page, runs=12):
    before = page.evaluate(BYTES)
    page.click("label[for=mha-source-minilm]")
    t0 = time.perf_counter()
    page.click("button.mha-load")
    page.wait_for_function("window.mha?.explorer.minilm === 'ready'", timeout=120_000)
    load_s = time.perf_counter() - t0
    loaded = page.evaluate(BYTES) - before
    ms, forward = [], []
    for i in range(runs):
        words = WORDS[i % len(WORDS):] + WORDS[:i % len(WORDS)]
        text = " ".join(words)  # 14 words: 16 tokens with [CLS] and [SEP]
        n = page.evaluate("(t) => mha.engine.tokenizeMiniLM(t).then(r => r.kept)", text)
        assert n == 16, n
        start = len(page.evaluate("mha.explorer.timings"))
        page.evaluate("(t) => { mha.explorer.setText(t); mha.explorer.update('bench'); }", text)
        page.wait_for_function(f"mha.explorer.timings.length > {start}")
        ms += timings(page, "bench", start)
        forward.append(page.evaluate("""async (t) => { const t0 = performance.now();
            await mha.engine.minilm(t + ' again', null); return performance.now() - t0; }""", text))
    return {"load_bytes": int(loaded), "load_s": round(load_s, 2),
            "forward_and_repaint_16_tokens_ms": median(ms[1:]),
            "forward_only_16_tokens_ms": median(forward[1:]), "n": len(ms) - 1}


def main() -> int:
    from playwright.sync_api import sync_playwright

    if not (SITE / PAGE).exists():
        print("build the site first: make book", file=sys.stderr)
        return 1
    result = {"machine": {"cpus": os.cpu_count(), "load_average_before": os.getloadavg(),
                          "python": platform.python_version()}}
    with serve() as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        result["browser"] = browser.version
        result["navigation"] = bench_navigation(browser, base)
        context, page = new_page(browser, base)
        page.goto(f"{base}/{PAGE}")
        page.wait_for_function(READY, timeout=30_000)
        result["typing"] = bench_typing(page, [("budget", 4, 16), ("budget", 16, 4),
                                               ("wide", 8, 32)])
        result["minilm"] = bench_minilm(page)
        browser.close()
    result["machine"]["load_average_after"] = os.getloadavg()
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    nav, mini = result["navigation"], result["minilm"]
    print(f"navigation -> first paint {nav['first_paint_ms']} ms, -> live engine ready "
          f"{nav['engine_ready_ms']} ms (median of {len(nav['engine_ready_ms_all'])} cold loads)")
    print(f"page open: {nav['page_open_bytes'] / 1e6:.2f} MB transferred")
    for k, v in result["typing"].items():
        print(f"{k:34s} {v}")
    print(f"MiniLM: {mini['load_bytes'] / 1e6:.1f} MB, loaded in {mini['load_s']} s; "
          f"16 tokens: forward + repaint {mini['forward_and_repaint_16_tokens_ms']} ms "
          f"(forward alone {mini['forward_only_16_tokens_ms']} ms)")
    print(f"load average before/after: {result['machine']['load_average_before']} / "
          f"{result['machine']['load_average_after']}; wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
