"""How fast the class page opens a class's reports, in headless Chromium.

    python benchmarks/bench_class_page.py [--repeats 7]   # after `make book`

Serves ``_build/html`` on 127.0.0.1 (every other request blocked), opens
``chapters/class.html`` and gives it 30 reports made by the page's own
``buildReport`` (``scripts/class_reports.py``) and the 10 bad files of the
tests, as a teacher's file picker would. Measures, with the page's own
clock (``lastOpenMs``: from the files given to the table, the charts, the
lists and the quiz key drawn), the median of ``--repeats`` openings in fresh
pages; the target is 2 s. Also the size of the reports (median and largest)
and of the largest report the trainer allows (h 16, d_k 2, 1,200 steps).

Prints the figures and writes ``benchmarks/results/class_page.json`` with
the machine's load average, since the numbers depend on what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import class_reports as C  # noqa: E402

from site_browser import offline_page, serve  # noqa: E402

PAGE = "chapters/class.html"
OUT = ROOT / "benchmarks" / "results" / "class_page.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    runs = C.class_spec()
    reports, texts = C.generate(runs)
    bad = C.bad_files(runs, reports, texts)
    files = [
        {"name": C.file_name(i), "mimeType": "application/json", "buffer": t.encode()}
        for i, t in enumerate(texts)
    ]
    files += [{"name": n, "mimeType": "application/json", "buffer": t.encode()} for n, t, _ in bad]
    big = dict(runs[0], h=16, d_k=2, steps=C.manifest()["train"]["steps_for"]["32"], phase=None)
    big["final"] = [0.6, 0.95, 0.25]
    big_kb = len(C.generate([big])[1][0].encode()) / 1000
    times = []
    with serve() as base:
        for _ in range(args.repeats):
            with offline_page(base) as (p, blocked):
                p.goto(f"{base}/{PAGE}", wait_until="networkidle")
                p.wait_for_selector("#mha-class-files")
                p.set_input_files("#mha-class-files", files)
                p.wait_for_function(
                    "document.querySelector('.mha-class-status').textContent.startsWith('Read')"
                )
                times.append(
                    p.evaluate(
                        "import('../_static/class/class.js')"
                        ".then(m => m.classPages()[0].lastOpenMs)"
                    )
                )
                assert blocked == [], blocked
    sizes = [len(t.encode()) / 1000 for t in texts]
    out = {
        "reports": len(texts),
        "bad_files": len(bad),
        "open_ms": times,
        "open_ms_median": round(statistics.median(times), 1),
        "report_kb_median": round(statistics.median(sizes), 1),
        "report_kb_max": round(max(sizes), 1),
        "largest_report_kb_h16_dk2": round(big_kb, 1),
        "machine": platform.platform(),
        "load_average": os.getloadavg(),
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(
        f"30 reports + 10 bad files opened in {out['open_ms_median']} ms (median of "
        f"{len(times)}); reports {out['report_kb_median']} KB median, {out['report_kb_max']} KB "
        f"largest; h 16 d_k 2 at 1,200 steps: {out['largest_report_kb_h16_dk2']} KB"
    )


if __name__ == "__main__":
    main()
