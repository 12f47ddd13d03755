"""Where the page's "Train -> 90 %" time goes, against its engine's floor.

    python benchmarks/bench_page_step.py      # after `make book`

``bench_reader.py`` gives the reader's figure (click Train -> the accuracy
line at 90 %, h 4, d_k 16, over tm.train's time to the same step). This one
splits it, in headless Chromium, every non-local request blocked:

- the panel's steady step time, steps 100 -> 500, ms a step: with every
  read-out on (as a reader gets it), and with the read-out worker replaced
  by one that never answers (no held-out evaluation, no circuits, nothing
  drawn from them), and with one that scores the first copy of the weights
  and answers every later read with those numbers at once (everything
  drawn as a reader gets it, no evaluation after the first), runs
  interleaved, median of ``--runs`` each; on - silent is what the read-outs,
  on the other core, cost the training, and drawn - silent the part of it
  that is the page's own drawing;
- one Train -> 90 % run cut at the panel's step counter (it moves every 20
  steps): click -> step 20 (start-up and the first 20 steps), step 20 ->
  440 (ms a step), step 440 -> the line reads 90 % (the last read-out);
- the step graph alone in onnxruntime-web in Node (``step_engine.mjs``),
  the floor the page's step cannot go below.

Prints a table and writes ``benchmarks/results/page_step.json`` with the
machine's load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # site_browser
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_reader import (  # noqa: E402
    ACCURACY,
    PAGE,
    engine_step,
    new_page,
    panel,
    pause,
    set_size,
    settle,
)

from site_browser import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "page_step.json"
SILENT_WORKER = "self.onmessage = () => {};"  # takes every read-out, answers none
READ = "async function read(msg) {"
# the page's read-out worker, its first unmasked read-out kept and given again
# (new id, run and step) for every later one: the page draws, nothing is scored
DRAWN_ONLY = """let kept = null;
async function read(msg) {
  if (kept && !msg.mask) { return { ...kept, id: msg.id, run: msg.run, step: msg.step }; }
  const out = await scored(msg);
  if (!msg.mask) { kept = out; }
  return out;
}
async function scored(msg) {"""


def readout_worker(mode: str) -> str | None:
    """The read-out worker's text for ``mode``: "off" answers nothing,
    "drawn" scores once (:data:`DRAWN_ONLY`), "on" is the page's own (None)."""
    if mode == "off":
        return SILENT_WORKER
    if mode == "drawn":
        text = (ROOT / "assets" / "site" / "explorer" / "readout-worker.js").read_text()
        assert text.count(READ) == 1, "readout-worker.js has no single read(msg) to wrap"
        return text.replace(READ, DRAWN_ONLY)
    return None
# In the page: the time (ms after Train's click) at which the panel's step
# counter first reaches each mark, and at which the accuracy line reads 90 %.
MARKS = """([pattern]) => { const P = mha.trainer.panels[0], t0 = performance.now();
  const re = new RegExp(pattern), marks = {};
  const tick = () => {
    for (const k of [20, 100, 440]) {
      if (P.step >= k && !(k in marks)) marks[k] = performance.now() - t0; }
    const m = re.exec(document.querySelector('.mha-train-panel .mha-train-accuracy').textContent);
    if (m && Number(m[2]) >= 90) { marks.ninety = performance.now() - t0; marks.step = Number(m[1]);
                                   window.__marks = marks; return; }
    requestAnimationFrame(tick); };
  window.__marks = null; requestAnimationFrame(tick); }"""


def open_panel(browser, base, mode: str = "on"):
    blocked: list[str] = []
    page = new_page(browser, base, 1280, blocked)
    body = readout_worker(mode)
    if body is not None:
        page.context.route("**/readout-worker.js", lambda route: route.fulfill(
            status=200, body=body, content_type="text/javascript"))
    page.goto(f"{base}/{PAGE}")
    panel(page).scroll_into_view_if_needed()
    return page, blocked


def steady_ms(browser, base, mode: str) -> float:
    """ms a step between the panel's steps 100 and 500 at h 4, d_k 16, the
    read-out worker as ``mode`` (:func:`readout_worker`)."""
    page, blocked = open_panel(browser, base, mode)
    try:
        box = set_size(page, 4, 16)
        settle(page)
        box.locator(".mha-train-go").click()
        page.wait_for_function("mha.trainer.panels[0].step >= 100", timeout=120_000)
        s0, t0 = page.evaluate("mha.trainer.panels[0].step"), time.perf_counter()
        page.wait_for_function("mha.trainer.panels[0].step >= 500", timeout=120_000)
        s1, t1 = page.evaluate("mha.trainer.panels[0].step"), time.perf_counter()
        assert blocked == [], blocked
        return 1000 * (t1 - t0) / (s1 - s0)
    finally:
        page.context.close()


def phases(browser, base) -> dict:
    page, blocked = open_panel(browser, base)
    try:
        box = set_size(page, 4, 16)
        settle(page)
        page.evaluate(MARKS, [ACCURACY.pattern])
        box.locator(".mha-train-go").click()
        page.wait_for_function("window.__marks", timeout=120_000)
        m = page.evaluate("window.__marks")
        pause(page)
        assert blocked == [], blocked
        return {"start_to_20_ms": round(m["20"]), "ms_per_step_20_440": round(
                (m["440"] - m["20"]) / 420, 2), "last_readout_ms": round(m["ninety"] - m["440"]),
                "to_90_ms": round(m["ninety"]), "step": m["step"]}
    finally:
        page.context.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    steady: dict[str, list[float]] = {"on": [], "drawn": [], "off": []}
    with serve() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.runs):
            for key in steady:
                steady[key].append(round(steady_ms(browser, base, key), 2))
                print(f"read-outs {key}: {steady[key][-1]} ms a step", flush=True)
        cut = phases(browser, base)
        print(f"Train -> 90 %: {cut}", flush=True)
        version = browser.version
        browser.close()
    engine = engine_step(1)["median_ms"]
    on, drawn, off = (statistics.median(steady[k]) for k in ("on", "drawn", "off"))
    result = {"machine": {"cpus": os.cpu_count(), "load_average_before": load,
                          "load_average_after": os.getloadavg()}, "browser": version,
              "steady_ms_per_step": steady, "on_median": on, "drawn_median": drawn,
              "off_median": off,
              "train_to_90": cut, "engine_ms_per_step": engine}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nChromium {version}, h 4, d_k 16, load average {load[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after\n"
          "| what | value |\n|---|---|\n"
          f"| page's step, steps 100-500, every read-out on (median of {args.runs}) | "
          f"{on:.2f} ms |\n"
          f"| same, every read-out drawn but only the first scored | {drawn:.2f} ms |\n"
          f"| same, the read-out worker silent | {off:.2f} ms |\n"
          f"| what the read-outs cost the training | {100 * (on / off - 1):.0f} % |\n"
          f"| of which the page's drawing | {100 * (drawn / off - 1):.0f} % |\n"
          f"| the step graph alone in Node (no page) | {engine:.2f} ms |\n"
          f"| Train -> 90 %: click -> step 20 | {cut['start_to_20_ms']} ms |\n"
          f"| step 20 -> 440 | {cut['ms_per_step_20_440']} ms a step |\n"
          f"| step 440 -> the line reads 90 % (the last read-out) | "
          f"{cut['last_readout_ms']} ms |\n"
          f"| click -> 90 % | {cut['to_90_ms']} ms (step {cut['step']}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
