"""How SmolLM2-135M runs in the explorer page, in headless Chromium.

    python benchmarks/bench_explorer_smollm2.py      # after `make book`

Serves ``_build/html`` on 127.0.0.1 (every other request blocked), opens the
explorer page, presses "Load SmolLM2" and measures:

- the bytes the SmolLM2 view downloads (its graph, tokenizer and their
  config: the resource entries under ``explorer-data/smollm2/``);
- the time to first use once the bytes are local: onnxruntime-web reading
  the graph and the first forward pass (the engine's ``readyMs``);
- a 64-token sentence (the graph's limit): the forward pass with the
  loss at every position, all 270 heads' patterns and the chosen layer's
  nine large drawn (the view's own
  ``timings``: from the change to the drawing done), several runs, each a
  different sentence;
- the tab's memory: the renderer process's resident set (``/proc``, its pid
  from the DevTools protocol's ``SystemInfo.getProcessInfo``), before and
  after loading, and its peak (``VmHWM``).

Prints the figures and writes ``benchmarks/results/explorer_smollm2.json``
with the machine's load average and the CPU seconds of the renderer, since
a busy machine stretches wall-clock times.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from site_browser import CHROMIUM, CHROMIUM_ARGS, DRIVE, serve  # noqa: E402

PAGE = "chapters/explorer.html"
OUT = ROOT / "benchmarks" / "results" / "explorer_smollm2.json"
WORDS = ("alpha beta gamma delta river mountain garden window paper music "
         "yellow silver quiet happy stone cloud").split()


def proc_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def renderers(browser) -> list[int]:
    cdp = browser.new_browser_cdp_session()
    info = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
    return [p["id"] for p in info if p["type"] == "renderer"]


def sentence(n_tokens: int, k: int) -> str:
    words = [WORDS[(k * 7 + i * 3) % len(WORDS)] for i in range(n_tokens - 1)]
    return " ".join(words) + "."


def main() -> int:
    from playwright.sync_api import sync_playwright

    load0 = os.getloadavg()[0]
    out: dict = {"page": PAGE}
    with serve() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
        blocked: list[str] = []
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                      else (blocked.append(r.request.url), r.abort()))
        page = context.new_page()
        page.goto(f"{base}/{PAGE}")
        page.wait_for_function("window.mha && mha.smollm2 && mha.smollm2.view", timeout=60_000)
        page.wait_for_timeout(2000)  # the explorer's own engine settles
        pids = renderers(browser)
        before = {p: proc_kib(p, "VmRSS") for p in pids}
        cpu0 = {p: cpu_s(p) for p in pids}
        t = time.perf_counter()
        page.click("#mha-smollm2 .mha-smol-load")
        page.wait_for_function("mha.smollm2.state !== 'precomputed'", timeout=600_000)
        state = page.evaluate("mha.smollm2.state")
        assert state == "ready", page.inner_text("#mha-smollm2 .mha-smol-status")
        out["load_wall_s"] = round(time.perf_counter() - t, 1)
        out["first_use_ms"] = round(page.evaluate("mha.smollm2.readyMs"))
        out["bytes_downloaded"] = page.evaluate("""() => performance.getEntriesByType('resource')
            .filter((e) => e.name.includes('/explorer-data/smollm2/'))
            .reduce((s, e) => s + (e.encodedBodySize || e.transferSize || 0), 0)""")
        runs, cpu_runs = [], []
        page.fill("#mha-smol-off", "")
        for k in range(5):
            for words in range(64, 30, -1):  # the longest that fits the graph's 64 tokens
                text = sentence(words, k)
                n = page.evaluate("async (t) => (await mha.smol.tokenize(t)).ids.length", text)
                if n <= 64:
                    break
            count = page.evaluate("mha.smollm2.timings.length")
            c = {p: cpu_s(p) for p in pids}
            page.fill("#mha-smol-text", text)
            page.wait_for_function(f"mha.smollm2.timings.length > {count}", timeout=120_000)
            last = page.evaluate("mha.smollm2.timings[mha.smollm2.timings.length - 1]")
            assert last["live"] and last["L"] == n, last
            runs.append(last["ms"])
            cpu_runs.append(max(cpu_s(p) - c[p] for p in pids))
        out["tokens"] = n
        out["forward_and_draw_ms"] = {"median": round(statistics.median(runs)),
                                      "runs": [round(r) for r in runs]}
        out["renderer_cpu_s_per_run"] = round(statistics.median(cpu_runs), 2)
        after = {p: proc_kib(p, "VmRSS") for p in pids}
        peak = {p: proc_kib(p, "VmHWM") for p in pids}
        main_pid = max(pids, key=lambda p: (after[p] or 0))
        out["tab_memory_mb"] = {"before_load": round((before[main_pid] or 0) / 1024),
                                "after_load": round((after[main_pid] or 0) / 1024),
                                "peak": round((peak[main_pid] or 0) / 1024)}
        out["renderer_cpu_s_load"] = round(cpu_s(main_pid) - cpu0[main_pid], 1)
        out["requests_blocked"] = len(blocked)
        browser.close()
    out["load_average"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"SmolLM2 in the page: {out['bytes_downloaded'] / 1e6:.1f} MB downloaded; first use "
          f"{out['first_use_ms'] / 1000:.1f} s after the bytes are local; {out['tokens']} tokens, "
          f"forward + drawing {out['forward_and_draw_ms']['median'] / 1000:.2f} s (median of 5; "
          f"renderer CPU {out['renderer_cpu_s_per_run']:.2f} s); tab memory "
          f"{out['tab_memory_mb']['before_load']} -> {out['tab_memory_mb']['after_load']} MB "
          f"(peak {out['tab_memory_mb']['peak']} MB); {out['requests_blocked']} requests left "
          f"the site; load average {out['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
