"""What a reader waits for in the trainer, measured from outside the page.

    python benchmarks/bench_reader.py      # after `make book`

The page's own benchmark (``bench_train_web.py``) reads timings the page
keeps. This one sees only what a reader sees: it drives Debian's Chromium
through Playwright, with the page's DOM as its only handle, and times

- a keystroke in the trainer's sentence box: from Playwright's key press
  (which returns once the page has handled the key) to two animation frames
  later (the frame that shows it), median of ``--keys`` presses, first with
  the page idle (settled: engine ready, nothing loading, 3 s later), then
  while h 3, d_k 20 trains with every read-out on, in the same browser; the
  figure the issue asks for is their ratio;
- Train to 90 %: from the click on Train (h 4, d_k 16, every read-out on) to
  the moment the accuracy line reads 90 % or more (a MutationObserver in the
  page tells Playwright), median of ``--runs``;
- the same run in PyTorch, right after each page run (the page's run
  paused): ``tm.train(TinyConfig(h=4, d_k=16), 800, seed=0)`` on one torch
  thread in a fresh process, training alone (no read-outs); its time to the
  page's step is the 800 steps' time times step / 800 (every step costs the
  same). The figure the issue asks for is the page's time over that one,
  pair by pair, median of ``--runs`` pairs (target: at most 1.3). (Page runs
  first and PyTorch's minutes later gave 1.28 to 1.49 on one build: the
  VM's speed drifts within minutes.) The step at which tm.train first reads
  >= 90 % (read every 20 steps) comes from one more run at the end;
- the page's step with nothing around it (``step_engine.mjs``): the same
  step graph in onnxruntime-web's WebAssembly engine in Node, one thread,
  ``--runs`` times 200 steps at h 4, d_k 16, after PyTorch's runs: its ms a
  step over PyTorch's (800 steps' time / 800) is the ratio the page would
  have if its messages, read-outs and drawing cost nothing;
- opening an experiment's link (``--links`` times): from the navigation's
  start to the moment the link's controls and predictions are on screen
  (the lab's ``timings.ready``) and to the moment the panel has built the
  link's model and Train is enabled; first with an empty browser cache
  (a reader who follows a teacher's link to a site she has not visited),
  then with the cache the first visit left (a link followed on the site).

Every non-local request is blocked. Prints a table and writes
``benchmarks/results/reader.json`` with the machine's load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # site_browser
from site_browser import CHROMIUM, CHROMIUM_ARGS, DRIVE, block_outside, serve  # noqa: E402

PAGE = "chapters/explorer.html"
OUT = ROOT / "benchmarks" / "results" / "reader.json"
TWO_FRAMES = ("() => new Promise(r => requestAnimationFrame("
              "() => requestAnimationFrame(() => r())))")
ACCURACY = re.compile(r"Held-out accuracy after (\d+) steps: ([\d.]+)")


def panel(page):
    return page.locator(".mha-train-panel").first


def set_size(page, h, d_k):
    box = panel(page)
    reset = box.locator(".mha-train-reset")
    if reset.is_enabled():
        reset.click()
    budget = box.locator("input[id$='-budget']")
    if budget.count() and budget.is_checked():
        budget.set_checked(False)
    box.locator("input[id$='-h']").fill(str(h))
    box.locator("input[id$='-dk']").fill(str(d_k))
    box.locator(".mha-train-go:enabled").wait_for(timeout=120_000)
    return box


def settle(page):
    """Wait until the page is idle: the explorer's engine ready, nothing
    loading, then 3 s. Right after the load, the page is still compiling and
    drawing (a keystroke then took about 100 ms to two frames, against about
    60 ms once settled), which would flatter the training/idle ratio."""
    page.wait_for_function("window.mha?.explorer && "
                           "mha.explorer.timings.some(t => t.reason === 'engine-ready')",
                           timeout=60_000)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(3000)


def keystrokes(page, n):
    """Median ms from a key press in the sentence box to two frames later."""
    field = panel(page).locator(".mha-train-sentence")
    field.click()
    field.press("End")
    times = []
    for i in range(n):
        page.wait_for_timeout(150)
        t0 = time.perf_counter()
        field.press("Backspace" if i % 2 else "s")
        page.evaluate(TWO_FRAMES)
        times.append((time.perf_counter() - t0) * 1000)
    return times


# Resolves once the panel's accuracy line reads >= 90 %, with [step, percent]:
# a MutationObserver in the page, so that the wait costs the page nothing
# (polling the line from Playwright 50 times a second took about 1.7 s of the
# main thread per run, and the driver's CPU, beside the two workers: 11.2 s
# polled against 9.8 s observed, same build).
NINETY = """([sel, pattern, ms]) => new Promise((resolve) => {
  const box = document.querySelector(sel), re = new RegExp(pattern);
  setTimeout(() => { seen.disconnect(); resolve([null, null]); }, ms);
  const check = () => {
    const m = re.exec(box.textContent);
    if (m && Number(m[2]) >= 90) { seen.disconnect(); resolve([Number(m[1]), Number(m[2])]); }
  };
  const seen = new MutationObserver(check);
  seen.observe(box, {childList: true, characterData: true, subtree: true});
  check();
})"""


def train_to_ninety(page, timeout_s=120):
    box = set_size(page, 4, 16)
    page.evaluate("(args) => { window.__ninety = (" + NINETY + ")(args); }",
                  [".mha-train-panel .mha-train-accuracy", ACCURACY.pattern, timeout_s * 1000])
    t0 = time.perf_counter()
    box.locator(".mha-train-go").click()
    step, _ = page.evaluate("() => window.__ninety")
    return (time.perf_counter() - t0, step) if step is not None else (None, None)


# tm.train on one thread in a fresh process: training alone, then the step at
# which its held-out accuracy, read every 20 steps, first reaches 90 %
TORCH_RUN = """
import json, torch
torch.set_num_threads(1)
from mhacourse import tiny_model as tm
cfg = tm.TinyConfig(h=4, d_k=16)
_, alone = tm.train(cfg, 800, seed=0)
first = None
if {read}:
    _, m = tm.train(cfg, 800, seed=0, eval_every=20)
    first = next((r["step"] for r in m["history"] if r["accuracy"] >= 0.9), None)
print(json.dumps({{"seconds": alone["train_seconds"], "cpu": alone["cpu_seconds"],
                  "first_90": first}}))
"""


def torch_run(read: bool = False) -> dict:
    """One tm.train run alone on one thread in a fresh process (``read``:
    and the step at which its accuracy, read every 20 steps, first reads
    >= 90 %)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", TORCH_RUN.format(read=read)], env=env,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def pause(page):
    """Stop the panel's run (it trains on to 800 steps after 90 %), so that
    the PyTorch run next to it has the machine to itself."""
    button = panel(page).locator(".mha-train-pause")
    if button.is_enabled():
        button.click()
        page.wait_for_function("['paused', 'done'].includes(mha.trainer.panels[0].state)",
                               timeout=60_000)


LINK = "?v=1&h=2&dk=16&seed=7&steps=60&warmup=0&predict=phase_step%3Anever"


def new_page(browser, base, width, blocked):
    """A page in a new browser context (an empty cache) that reaches only the site."""
    context = browser.new_context(viewport={"width": width, "height": 900}, **DRIVE)
    block_outside(context, base, blocked)
    return context.new_page()


def open_link(browser, base, width, n, blocked):
    """ms from navigation start to the link restored and to Train enabled:
    ``n`` times in a new context (empty cache), ``n`` times in one page."""
    def once(page):
        page.goto(f"{base}/{PAGE}{LINK}")
        page.wait_for_function("window.mha?.trainer && mha.trainer.panels[0].lab.timings.ready",
                               timeout=60_000)
        panel(page).locator(".mha-train-go:enabled").wait_for(timeout=120_000)
        built = page.evaluate("performance.now()")
        return [round(page.evaluate("mha.trainer.panels[0].lab.timings.ready")), round(built)]

    cold = []
    for _ in range(n):
        page = new_page(browser, base, width, blocked)
        cold.append(once(page))
        page.context.close()
    page = new_page(browser, base, width, blocked)
    once(page)  # the visit that fills the cache
    warm = [once(page) for _ in range(n)]
    page.context.close()
    return {"cold": cold, "warm": warm}


def engine_step(runs):
    """The step graph alone in onnxruntime-web (Node): ms a step, median of
    ``runs`` runs of 200 steps, each in a fresh process."""
    data = ROOT / "_build" / "html" / "_static" / "explorer-data"
    out = []
    for _ in range(runs):
        done = subprocess.run(["node", str(ROOT / "benchmarks" / "step_engine.mjs"), str(data),
                               "4", "16", "200"], check=True, capture_output=True, text=True)
        out.append(json.loads(done.stdout.strip().splitlines()[-1])["ms_per_step"])
    return {"ms_per_step": out, "median_ms": statistics.median(out)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--links", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    result = {"machine": {"cpus": os.cpu_count(), "load_average_before": load,
                          "platform": platform.platform()}, "width": args.width}
    with serve() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        result["browser"] = browser.version
        blocked = []
        page = new_page(browser, base, args.width, blocked)
        page.goto(f"{base}/{PAGE}")
        panel(page).scroll_into_view_if_needed()
        box = set_size(page, 3, 20)
        settle(page)
        idle = keystrokes(page, args.keys)
        box.locator(".mha-train-go").click()
        page.wait_for_function("() => /after \\d+ steps/.test(document.querySelector("
                               "'.mha-train-accuracy').textContent)", timeout=120_000)
        busy = keystrokes(page, args.keys)
        result["keystroke_ms"] = {
            "idle": [round(t, 1) for t in idle], "training": [round(t, 1) for t in busy],
            "idle_median": round(statistics.median(idle), 1),
            "training_median": round(statistics.median(busy), 1)}
        k = result["keystroke_ms"]
        k["ratio"] = round(k["training_median"] / k["idle_median"], 2)
        print(f"keystroke -> two frames: idle {k['idle_median']} ms, training "
              f"{k['training_median']} ms, ratio {k['ratio']}", flush=True)
        # Each page run, then a PyTorch run right after it (the page paused):
        # the VM's speed drifts by a fifth within an hour, so a page run and
        # a PyTorch run minutes apart gave ratios from 1.28 to 1.49 on one
        # build; each pair's ratio sees one speed.
        runs = []
        for r in range(args.runs):
            s, step = train_to_ninety(page)
            pause(page)
            alone = torch_run()["seconds"]
            run = {"s_to_90": s and round(s, 2), "step": step, "torch_800_s": round(alone, 2)}
            if s and step:
                run["ratio"] = round(s / (alone * step / 800), 3)
            runs.append(run)
            print(f"run {r + 1}: 90 % after {s and round(s, 1)} s (step {step}); tm.train "
                  f"right after: 800 steps in {alone:.2f} s; ratio {run.get('ratio')}",
                  flush=True)
        done = [r["s_to_90"] for r in runs if r["s_to_90"] is not None]
        result["train_to_90"] = {"runs": runs,
                                 "median_s": round(statistics.median(done), 1) if done else None}
        page.context.close()  # its last run would still be training beside the links
        links = open_link(browser, base, args.width, args.links, blocked)
        result["open_link_ms"] = {
            k: {"runs": v, "restored_median": statistics.median(r[0] for r in v),
                "model_built_median": statistics.median(r[1] for r in v)}
            for k, v in links.items()}
        for k, v in result["open_link_ms"].items():
            print(f"open a link ({k} cache): restored {v['restored_median']:.0f} ms, "
                  f"model built {v['model_built_median']:.0f} ms", flush=True)
        result["blocked_requests"] = len(blocked)
        browser.close()
    t = result["torch_train"] = {
        "median_s_800": round(statistics.median(r["torch_800_s"] for r in runs), 2),
        "first_90": torch_run(read=True)["first_90"]}
    page_s, step = result["train_to_90"]["median_s"], runs[0]["step"]
    ratios = [r["ratio"] for r in runs if "ratio" in r]
    if page_s and step:
        t["to_page_step_s"] = round(t["median_s_800"] * step / 800, 2)
    if ratios:
        t["page_over_torch"] = round(statistics.median(ratios), 2)
        t["page_over_torch_range"] = [round(min(ratios), 2), round(max(ratios), 2)]
    print(f"tm.train, 800 steps alone on one thread: {t['median_s_800']} s (median of "
          f"{args.runs}); first >= 90 % at step {t['first_90']}; to the page's step {step}: "
          f"{t.get('to_page_step_s')} s; page / PyTorch, pair by pair: median "
          f"{t.get('page_over_torch')} (range {t.get('page_over_torch_range')})", flush=True)
    e = result["engine_step"] = engine_step(args.runs)
    torch_ms = 1000 * t["median_s_800"] / 800  # PyTorch's step
    e["over_torch_step"] = round(e["median_ms"] / torch_ms, 2)
    print(f"the step graph alone in onnxruntime-web (Node, one thread): {e['median_ms']} ms a "
          f"step (median of {args.runs} x 200); PyTorch's step {torch_ms:.2f}"
          f" ms: engine alone / PyTorch {e['over_torch_step']}", flush=True)
    result["machine"]["load_average_after"] = os.getloadavg()
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    k = result["keystroke_ms"]
    after = result["machine"]["load_average_after"]
    print(f"\nChromium {result['browser']}, {args.width} px, load average {load[0]:.1f} "
          f"before, {after[0]:.1f} after\n"
          f"| what (from outside the page) | value |\n|---|---|\n"
          f"| keystroke -> two frames, idle (median of {args.keys}) | {k['idle_median']} ms |\n"
          f"| same, while h 3 d_k 20 trains, every read-out on | {k['training_median']} ms |\n"
          f"| ratio (target <= 1.5) | {k['ratio']} |\n"
          f"| click Train -> accuracy line >= 90 %, h 4 d_k 16 (median of {args.runs}) | "
          f"{result['train_to_90']['median_s']} s |\n"
          f"| tm.train alone, one thread, to the same step (800 steps x step / 800) | "
          f"{t.get('to_page_step_s')} s |\n"
          f"| page / PyTorch, each page run against tm.train right after it (median of "
          f"{args.runs} pairs; range) (target <= 1.3) | {t.get('page_over_torch')} "
          f"({t.get('page_over_torch_range')}) |\n"
          f"| the step graph alone in onnxruntime-web (Node, no page) / PyTorch's step | "
          f"{e['median_ms']} / {torch_ms:.2f} ms = "
          f"{e['over_torch_step']} |\n"
          + "".join(f"| open a link, {k} cache: restored / model built (median of {args.links}) | "
                    f"{v['restored_median']:.0f} / {v['model_built_median']:.0f} ms |\n"
                    for k, v in result["open_link_ms"].items()) +
          f"| non-local requests blocked | {len(blocked)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
