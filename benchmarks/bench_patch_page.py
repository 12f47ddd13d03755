"""How long the trainer's Patch view takes, from the request to the drawn
maps, in the built page (``make book`` first), in Debian's Chromium,
offline, onnxruntime-web on one thread.

    python benchmarks/bench_patch_page.py     # writes results/patch_page.json

The model is the book's h 4, d_k 16 file (assets/models/h4_dk16.safetensors)
opened in the page; the request is every head of both layers, one
corruption ("successor"), 256 pairs: mhacourse.web_patch's graph (patching
both ways, zero, mean and resample ablation: five maps) in the read-out
worker, then the five maps drawn. The first request also loads the graph
and the pairs (cold); the next ones are timed from the call to two frames
after the maps are in the page (median of 5). Issue 46's target: <= 1.5 s
after the run, on one thread. The machine is shared: the load average is
recorded with the figures.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # site_browser
from site_browser import offline_page, serve  # noqa: E402

PAGE = "chapters/explorer.html"
OUT = ROOT / "benchmarks" / "results" / "patch_page.json"
MODEL = ROOT / "assets" / "models" / "h4_dk16.safetensors"
PANEL = "mha.trainer.panels[0]"
TARGET_S = 1.5
ROUNDS = 5
TIMED = f"""async ([name, n]) => {{
  const t0 = performance.now();
  const r = await {PANEL}.patch.request(name, n);
  await new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(ok)));
  return r && {{ total: performance.now() - t0, graph: r.ms }};
}}"""


def main() -> int:
    with serve() as base, offline_page(base) as (p, blocked):
        p.goto(f"{base}/{PAGE}")
        p.wait_for_function("window.mha?.trainer && mha.trainer.panels.length")
        p.locator(".mha-trainer").first.scroll_into_view_if_needed()
        p.wait_for_function(f"{PANEL}.state === 'ready'", timeout=120_000)
        p.locator(".mha-lab-open").first.set_input_files(str(MODEL))
        p.wait_for_function(f"{PANEL}.lab.files.opened && {PANEL}.snapshot", timeout=60_000)
        p.wait_for_function(f"{PANEL}.evals.length && {PANEL}.roleNames", timeout=60_000)
        p.wait_for_timeout(1000)  # the opened model's read-outs settle
        cold = p.evaluate(TIMED, ["successor", 256])
        warm = [p.evaluate(TIMED, ["successor", 256]) for _ in range(ROUNDS)]
        assert cold and all(warm), p.locator(".mha-patch-note").first.inner_text()
        assert blocked == [], blocked
    total = statistics.median(w["total"] for w in warm) / 1000
    graph = statistics.median(w["graph"] for w in warm) / 1000
    result = {
        "about": "The Patch view's request to its five maps drawn (every head, one "
                 "corruption, 256 pairs) at h 4, d_k 16, in the built page, "
                 "onnxruntime-web on one thread; median of the warm requests.",
        "target": f"<= {TARGET_S:g} s (issue 46)",
        "cold_s": round(cold["total"] / 1000, 3), "request_to_drawn_s": round(total, 3),
        "graph_s": round(graph, 3), "rounds": ROUNDS,
        "warm_s": [round(w["total"] / 1000, 3) for w in warm], "cpus": os.cpu_count(),
        "load average (1/5/15 min) at end": [round(x, 2) for x in os.getloadavg()],
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"Patch view, h 4 d_k 16, 256 pairs: cold {result['cold_s']:.2f} s, warm "
          f"request to drawn {total:.2f} s (graph {graph:.2f} s), target {TARGET_S:g} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
