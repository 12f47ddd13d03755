"""How long one explorer update takes (compute + redraw), on ONE core.

    python benchmarks/bench_explorer.py

An update is what happens when a reader changes a control in a live kernel:
the explorer recomputes the attention from the package and renders the HTML
heatmaps. Median of repeats after a warm-up, for h <= 12 and <= 32 tokens.
Target: median <= 100 ms.
"""
from __future__ import annotations

import os
import statistics
import time

import torch

from mhacourse.machine import cpu_model
from mhacourse.widgets import AttentionExplorer

SENT_8 = "The robot sat on the floor because it was tired."
SENT_16 = "the teacher gave the students their homework because the cat sat on the mat and it"
SENT_30 = ("the teacher gave the students their homework because the cat sat on "
           "the mat and the animal did not cross the street because it was too tired")


def time_updates(e: AttentionExplorer, changes, repeats: int = 15) -> float:
    fresh = len(changes) > 2  # every change is new: no warm-up, one pass
    for _ in range(0 if fresh else 2):  # warm-up: loads models, fills caches
        for name, value in changes:
            getattr(e, name).value = value
    times = []
    for r in range(1 if fresh else repeats):
        for name, value in changes:
            t = time.perf_counter()
            getattr(e, name).value = value  # triggers exactly one update
            times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    print(f"# explorer update time, 1 thread\n# CPU: {cpu_model()}; torch "
          f"{torch.__version__}; load average {os.getloadavg()[0]:.1f}\n")
    print("| source | h | tokens | change | median update (ms) |\n|---|---|---|---|---|")
    cases = [
        ("trained", 8, SENT_8, [("d_k", 8), ("d_k", 16)]),
        ("trained", 8, SENT_16, [("d_k", 8), ("d_k", 16)]),
        ("untrained", 12, SENT_16, [("d_k", 16), ("d_k", 32)]),
        ("MiniLM", 12, SENT_8, [("layer", 2), ("layer", 5)]),
        ("MiniLM", 12, SENT_30, [("layer", 2), ("layer", 5)]),
        # a new sentence each time: the model runs (no cache)
        ("MiniLM", 12, SENT_30, [("text", SENT_30 + " " + str(i)) for i in range(40)]),
    ]
    for source, h, sentence, changes in cases:
        e = AttentionExplorer(sentence=sentence, source=source, h=h, d_k=8, layer=1)
        n = len(e.view().tokens)
        ms = time_updates(e, changes)
        what = "new sentence" if len(changes) > 2 else changes[0][0]
        print(f"| {source} | {h} | {n} | {what} | {ms:.1f} |")


if __name__ == "__main__":
    main()
