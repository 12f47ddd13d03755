"""Export the models of the in-browser explorer (``make book`` runs this).

    python scripts/export_explorer.py [OUT]      # default: _generated/explorer-data

Writes the ONNX graphs, tokenizers, manifest and precomputed views that
``chapters/explorer`` loads (see :mod:`mhacourse.web_export`). Sphinx copies
``_generated/`` into the site's ``_static/``; nothing here is committed.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
import torch

from mhacourse import web_export, web_train

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_generated" / "explorer-data"


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    torch.set_num_threads(1)
    t = time.perf_counter()
    manifest = web_export.build(out)
    # the heatmaps' colour map: matplotlib's viridis, as in the chapters' figures
    rgb = np.round(255 * matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3])
    cmap = json.dumps(rgb.astype(int).tolist(), separators=(",", ":"))
    with open(out / "precomputed.js", "a") as f:
        f.write(f"window.mhaExplorerColormap = {cmap};\n")
    # the in-browser training (chapter 8 and the explorer): its graphs and data
    manifest["train"] = web_train.build(out / "train")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (out / "manifest.js").write_text(
        "// Written by scripts/export_explorer.py: what the explorer and the trainer load.\n"
        f"window.mhaExplorerManifest = {json.dumps(manifest, separators=(',', ':'))};\n"
        f"window.mhaExplorerColormap = {cmap};\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"explorer data: {len(manifest['tiny'])} tiny models + MiniLM, "
          f"{size / 1e6:.1f} MB in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}, "
          f"{time.perf_counter() - t:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
