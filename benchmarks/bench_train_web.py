"""How fast the page trains ("Train it yourself"), in headless Chromium.

    python benchmarks/bench_train_web.py      # after `make book`

Serves ``_build/html`` on 127.0.0.1 (every other request blocked), opens the
explorer page and measures, with the page's own numbers:

Every read-out is on, as a reader gets them: the held-out read-out of every
copy of the weights (every 20 steps: accuracy per part, roles, and the
circuits where the build has that graph) in the read-out worker, and the
heads redrawn in the page.

- training steps per second (the worker's count; the read-outs run beside
  it, the redraws in the page) for h/d_k = 1/64, 4/16, 16/4 and the largest
  allowed model, 16/16 (d_model 256);
- seconds from pressing Train to >= 90 % held-out accuracy for h = 4,
  d_k = 16 (the accuracy is read every 20 steps, so this is the first
  read-out at or above 90 %), median of ``--runs`` fresh models;
- one full read-out at h = 16, d_k = 16, the worker's time for the
  circuits graph: composition, previous-token band, prefix, copying, and
  every head's role on the first ``probe_n`` (24) held-out sequences; and
  apart from it, the held-out accuracy read-out (the evaluate graph on all
  1,024 held-out sequences: accuracy per part, statistics, roles, the
  curves' and the role timeline's numbers), and the round trip of both;
- keystroke to repaint while a model trains: from the input event in the
  sentence box to the animation frame after the heads are redrawn;
- the bytes the page loads to train one configuration (the page's and the
  worker's resources).

Prints a table and writes ``benchmarks/results/train_web.json`` with the
machine's load average, since the numbers depend on what else runs.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from mhacourse.circuits.core import PROBE_N  # noqa: E402
from site_browser import CHROMIUM, CHROMIUM_ARGS, DRIVE, serve  # noqa: E402

PAGE = "chapters/explorer.html"
OUT = ROOT / "benchmarks" / "results" / "train_web.json"
READY = "i => mha.trainer.panels[i].state === 'ready'"


def size(page, i, h, d_k):
    box = page.locator(".mha-train-panel").nth(i)
    if box.locator(".mha-train-reset").is_enabled():
        box.locator(".mha-train-reset").click()
    box.locator("input[id$='-budget']").set_checked(False)
    box.locator("input[id$='-h']").fill(str(h))
    box.locator("input[id$='-dk']").fill(str(d_k))
    page.wait_for_function(READY, arg=i, timeout=60_000)
    return box


def steps_per_second(page, h, d_k, steps=100):
    box = size(page, 0, h, d_k)
    page.evaluate("n => mha.trainer.panels[0].worker.steps(n)", steps)
    box.locator(".mha-train-go").click()
    page.wait_for_function("mha.trainer.panels[0].state === 'done'", timeout=600_000)
    return page.evaluate("mha.trainer.panels[0].stepsPerSecond")


def read_out(page, n=7):
    """One full read-out of an h = 16, d_k = 16 model (the panel's Reader),
    ``n`` times: the median of the worker's time and of the round trip."""
    size(page, 0, 16, 16)
    worker, trip, parts = [], [], []
    for _ in range(n):
        r = page.evaluate("""async () => { const t0 = performance.now();
            const r = await mha.trainer.panels[0].readNow();
            return {ms: r.ms, trip: performance.now() - t0, circuits: !!r.circuits,
                    evaluate: r.msEvaluate, circ: r.msCircuits}; }""")
        worker.append(r["ms"])
        trip.append(r["trip"])
        parts.append((r["evaluate"], r["circ"]))
    return {"n": n, "worker_ms_median": round(statistics.median(worker), 1),
            "round_trip_ms_median": round(statistics.median(trip), 1),
            "evaluate_ms_median": round(statistics.median(p[0] for p in parts), 1),
            "circuits_ms_median": round(statistics.median(p[1] for p in parts), 1),
            "circuits": r["circuits"]}


def time_to_ninety(page, typing=False):
    box = size(page, 0, 4, 16)
    box.locator(".mha-train-go").click()
    repaints = []
    if typing:  # type while it trains: keystroke -> repaint
        field = box.locator(".mha-train-sentence")
        field.fill("the cat sat on")
        for word in "the mat because it was tired and the dog sat".split():
            for ch in " " + word:
                page.wait_for_timeout(120)
                field.press(ch if ch != " " else "Space")
        repaints = page.evaluate("mha.trainer.panels[0].timings.repaints || []")
    page.wait_for_function("mha.trainer.panels[0].state === 'done'", timeout=600_000)
    t = page.evaluate("mha.trainer.panels[0].timings")
    acc = page.evaluate("mha.trainer.panels[0].evals.map(e => e.accuracy[0])")
    return t.get("ninety"), t.get("ninetyStep"), acc[-1], repaints


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    result = {"machine": {"cpus": os.cpu_count(), "load_average_before": load,
                          "platform": platform.platform()}}
    with serve() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        result["browser"] = browser.version
        context = browser.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                      else r.abort())
        page = context.new_page()
        page.goto(f"{base}/{PAGE}")
        page.wait_for_function("window.mha?.trainer && mha.trainer.panels.length === 2")
        page.locator(".mha-trainer").scroll_into_view_if_needed()  # its workers start there
        page.wait_for_function("window.mha && mha.trainer.panels.length === 2 && "
                               "mha.trainer.panels.every(q => q.state === 'ready')",
                               timeout=120_000)
        worker = page.evaluate("mha.trainer.panels[0].resources()")
        own = page.evaluate("""() => performance.getEntriesByType('navigation').concat(
            performance.getEntriesByType('resource')).map(e => ({name: e.name,
            bytes: e.encodedBodySize || 0}))""")
        train_files = [e for e in worker if "/train/" in e["name"] or "/ort/" in e["name"]]
        page_files = [e for e in own if any(k in e["name"] for k in
                      ("trainer", "train-worker.js", "readout-worker.js", "worker-common.js",
                       "manifest.js", "engine.js", "tokenizers/", "explorer.css"))]
        result["bytes"] = {
            "worker": sum(e["bytes"] for e in train_files),
            "page_scripts": sum(e["bytes"] for e in page_files),
            "files": {Path(e["name"]).name: e["bytes"] for e in train_files + page_files},
        }
        result["bytes"]["total"] = result["bytes"]["worker"] + result["bytes"]["page_scripts"]
        rates = {}
        for h, d_k in [(1, 64), (4, 16), (16, 4), (16, 16)]:
            rates[f"h{h}_dk{d_k}"] = round(steps_per_second(page, h, d_k), 1)
            print(f"h={h:2d} d_k={d_k:2d}: {rates[f'h{h}_dk{d_k}']} steps/s", flush=True)
        result["steps_per_second"] = rates
        result["read_out_h16_dk16"] = read_out(page)
        print(f"one read-out at h 16 d_k 16: {result['read_out_h16_dk16']}", flush=True)
        ninety, runs = [], []
        for r in range(args.runs):
            ms, step, final, repaints = time_to_ninety(page, typing=(r == 0))
            runs.append({"ms_to_90": ms, "step_at_90": step, "final_accuracy": final,
                         "repaint_ms": repaints})
            if ms is not None:
                ninety.append(ms)
            print(f"run {r + 1}: 90 % after {ms and ms / 1000:.1f} s (step {step}), "
                  f"final {final:.3f}", flush=True)
        result["h4_dk16"] = {"runs": runs,
                             "median_s_to_90": round(statistics.median(ninety) / 1000, 1)
                             if ninety else None}
        reps = [x for r in runs for x in r["repaint_ms"]]
        result["repaint_while_training_ms"] = {
            "n": len(reps), "median": round(statistics.median(reps), 1) if reps else None,
            "max": round(max(reps), 1) if reps else None}
        browser.close()
    result["machine"]["load_average_after"] = os.getloadavg()
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    b = result["bytes"]
    print(f"\nChromium {result['browser']}, load average {load[0]:.1f}\n"
          f"| what | value |\n|---|---|\n"
          + "".join(f"| steps/s {k} | {v} |\n" for k, v in rates.items())
          + f"| Train -> 90 % held-out, h4 d_k 16 (median of {args.runs}) | "
            f"{result['h4_dk16']['median_s_to_90']} s |\n"
          f"| one full read-out (circuits, composition, roles on {PROBE_N} held-out "
          f"sequences), h16 d_k16, median in the worker | "
          f"{result['read_out_h16_dk16']['circuits_ms_median']} ms |\n"
          f"| held-out accuracy read-out (1,024 sequences), h16 d_k16, median | "
          f"{result['read_out_h16_dk16']['evaluate_ms_median']} ms |\n"
          f"| both, round trip from the page (median) | "
          f"{result['read_out_h16_dk16']['round_trip_ms_median']} ms |\n"
          f"| keystroke -> repaint while training (median, n = "
          f"{result['repaint_while_training_ms']['n']}) | "
          f"{result['repaint_while_training_ms']['median']} ms |\n"
          f"| bytes to train one configuration | {b['total'] / 1e6:.2f} MB "
          f"(worker {b['worker'] / 1e6:.2f}, page {b['page_scripts'] / 1e6:.2f}) |")
    print(f"wrote {OUT.relative_to(ROOT)} in {time.process_time():.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
