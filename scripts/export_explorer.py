"""Export the models of the in-browser explorer (``make book`` runs this).

    python scripts/export_explorer.py [OUT]      # default: _generated/explorer-data
    python scripts/export_explorer.py --workers 1   # all in one process

Writes the ONNX graphs, tokenizers, manifest and precomputed views that
``chapters/explorer`` loads (see :mod:`mhacourse.web_export`). ``make book``
runs it beside the chapters' execution and copies ``_generated/explorer-data``
into the site's ``_static/``; nothing here is committed.

The graphs are exported by a pool of ``--workers`` processes (default 2, one
per core of the course's 2-core build machine). The last line reports wall
and CPU seconds (user + system, this process and its workers) and the load
average, so that a time taken on a busy machine can be told apart.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
import torch

import mhacourse
from mhacourse import book_runs, web_export
from mhacourse.checks import predictions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_generated" / "explorer-data"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                 resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", type=Path, default=OUT)
    ap.add_argument("--workers", type=int, default=2,
                    help="processes exporting graphs (default: %(default)s)")
    args = ap.parse_args(argv)
    out = args.out
    torch.set_num_threads(1)
    t, cpu, load = time.perf_counter(), cpu_seconds(), os.getloadavg()[0]
    manifest = web_export.build(out, workers=args.workers)
    # the phase change's rule, from the question bank (its one source): the
    # trainer marks the phase change with the margin the grades use
    manifest["train"]["phase_margin"] = predictions.questions()["constants"]["phase_margin"]
    # the course's version, which a model file and a report record
    manifest["train"]["course_version"] = mhacourse.__version__
    # manifest.json as web_export wrote it, with these two
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    # the heatmaps' colour map: matplotlib's viridis, as in the chapters' figures
    rgb = np.round(255 * matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3])
    cmap = json.dumps(rgb.astype(int).tolist(), separators=(",", ":"))
    with open(out / "precomputed.js", "a") as f:
        f.write(f"window.mhaExplorerColormap = {cmap};\n")
    # what the explorer and chapter 8's trainer read (with the training graphs)
    (out / "manifest.js").write_text(
        "// Written by scripts/export_explorer.py: what the explorer and the trainer load.\n"
        f"window.mhaExplorerManifest = {json.dumps(manifest, separators=(',', ':'))};\n"
        f"window.mhaExplorerColormap = {cmap};\n")
    # the lab's data: the question bank and the book's runs (lab/*.json)
    book_runs.write_lab_data(out)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"explorer data: {len(manifest['tiny'])} tiny models + MiniLM, "
          f"{size / 1e6:.1f} MB in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}, "
          f"{time.perf_counter() - t:.1f} s wall, {cpu_seconds() - cpu:.1f} s CPU "
          f"({args.workers} workers; load average {load:.1f} -> {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
