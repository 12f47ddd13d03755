"""Execute the chapters into the book's execution cache, several at a time.

    python scripts/execute_chapters.py            # 2 at a time (make book)
    python scripts/execute_chapters.py --jobs 1

`jupyter-book build` executes the chapters one after another, each on about
one core. Run first, this script executes them side by side and stores each
result in the cache that the build reads (``_build/.jupyter_cache``, the
``execute_notebooks: cache`` mode of ``_config.yml``), exactly as myst-nb
would store it: the same notebook, the same working folder (``chapters/``),
the same cell timeout. The build then finds every chapter in the cache and
executes none. A chapter already cached (its code unchanged) is skipped.

Each chapter runs in a kernel of its own, forked from one process that has
imported torch and the other libraries every chapter imports
(``scripts/kernel_zygote.py``; ``--no-zygote`` starts each from nothing):
importing them was about 2.7 of each chapter's CPU seconds.

Each chapter's split printouts are joined (:func:`join_split_streams`), so
a page does not depend on when the kernel flushed. A chapter that fails is
not cached; the script says which and exits 1, and the build would run it
again and show its traceback.

Executed chapters are also kept outside the clone, in the user's cache
(``$MHACOURSE_CACHE``, default ``~/.cache/mhacourse``, beside the explorer's
export), under a key of everything a chapter reads besides its own cells
(:func:`inputs_key`: the package, ``assets/``, ``benchmarks/results/``,
``_config.yml``, this script, Python's version and the version of every
distribution the book installs). A fresh clone of an unchanged course (CI) takes a
chapter from there instead of executing it again; any change to those
inputs or to the chapter's cells executes it. ``--no-shared-cache``
neither reads nor writes it.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kernel_zygote
import nbformat
import user_cache
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / ".jupyter_cache"
#: what a chapter may read besides its cells (folders: every file in them)
INPUTS = ("code/mhacourse", "code/pyproject.toml", "assets", "benchmarks/results",
          "_config.yml", "scripts/execute_chapters.py", "scripts/kernel_zygote.py")
KEEP = user_cache.KEEP  # input keys kept in the shared cache


def chapters() -> list[Path]:
    """The executed pages of ``_toc.yml``, as .ipynb files, in book order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []
    for part in toc.get("parts", [toc]):
        for ch in part.get("chapters", []):
            files += [ch["file"], *(s["file"] for s in ch.get("sections", []))]
    paths = [ROOT / f"{f}.ipynb" for f in files]
    return [p for p in paths if p.exists()]


def join_split_streams(nb) -> int:
    """Join each code cell's adjacent stream outputs of the same name (stdout
    after stdout) into one, text concatenated exactly, order kept.

    The kernel sends what a cell prints in chunks cut by time, so one
    ``print`` of a table can arrive as two outputs, which the page shows as
    two boxes: a page's look and length then depend on the machine's load
    (chapter 4's length passed and failed its bound by chance). myst-nb's
    ``merge_streams`` joins all of a cell's streams, across pictures, and
    adds a line break at each cut; this joins only neighbours, as printed.
    Returns how many outputs were joined."""
    joined = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        out = []
        for o in cell.get("outputs", []):
            prev = out[-1] if out else None
            if (o.get("output_type") == "stream" and prev is not None
                    and prev.get("output_type") == "stream" and prev.get("name") == o.get("name")):
                prev["text"] = prev["text"] + o["text"]
                joined += 1
            else:
                out.append(o)
        cell["outputs"] = out
    return joined


def shared_dir() -> Path:
    """The executed chapters kept outside the clone (beside the explorer's
    export: ``scripts/user_cache.py``)."""
    return user_cache.root() / "executed-chapters"


def inputs_key() -> str:
    """SHA-256 of every file of :data:`INPUTS` (name and content; no
    ``__pycache__``), Python's version and the name and version of every
    distribution the book installs (``user_cache.python_and_distributions``:
    not the tests' own packages). `make` drops the clone's execution cache
    when it changes (``--inputs-key``)."""
    files = [f for name in INPUTS
             for f in sorted([ROOT / name] if (ROOT / name).is_file()
                             else (ROOT / name).rglob("*"))
             if f.is_file() and "__pycache__" not in f.parts and ".egg-info" not in str(f)]
    return user_cache.make_key(((str(f.relative_to(ROOT)), f) for f in files),
                               user_cache.python_and_distributions())


def cells_key(nb) -> str:
    """SHA-256 of a chapter's code cells (their source, in order) and kernel."""
    code = [c.source for c in nb.cells if c.get("cell_type") == "code"]
    kernel = nb.metadata.get("kernelspec", {}).get("name", "")
    return hashlib.sha256(json.dumps([kernel, code]).encode()).hexdigest()[:32]


def from_shared(folder: Path, nb) -> object | None:
    """The executed notebook of ``nb``'s cells in ``folder``, or None."""
    f = folder / f"{cells_key(nb)}.ipynb"
    return nbformat.read(f, as_version=4) if f.is_file() else None


def to_shared(folder: Path, source, executed) -> None:
    """Keep the executed notebook (written aside, then renamed, so that a
    half-written one is never read) and the :data:`KEEP` latest keys only.
    A cache that cannot be written is skipped with one line."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".new-")
        with os.fdopen(fd, "w") as out:
            nbformat.write(executed, out)
        os.replace(tmp, folder / f"{cells_key(source)}.ipynb")
        os.utime(folder)
    except OSError as e:
        print(f"execute_chapters: not kept in the shared cache ({e})", file=sys.stderr)
        return
    user_cache.prune(folder.parent)


def execute(path: Path, timeout: int) -> tuple[Path, object, float, str | None]:
    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=timeout,
                                 allow_errors=False, meta_override=True)
    join_split_streams(nb)
    return path, nb, result.time, result.exc_string if result.err else None


#: Chapters that take longest to execute, slowest first (a fresh build on 2
#: cores: chapter 17 ~100 s with its first dequantization, chapter 8 ~70 s,
#: the others 30-40 s); the rest follow in the book's order.
SLOWEST_FIRST = ["17_induction_in_a_real_lm", "08_how_many_heads", "09_making_it_fast",
                 "14_positions", "04_what_heads_learn", "11_how_heads_form"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="chapters at a time (default 2)")
    ap.add_argument("--no-shared-cache", action="store_true",
                    help="neither take chapters from the user's cache nor keep them there")
    ap.add_argument("--no-zygote", action="store_true",
                    help="start each kernel from nothing (scripts/kernel_zygote.py)")
    ap.add_argument("--inputs-key", action="store_true",
                    help="print the key of what the chapters read besides their cells, and "
                         "stop (make drops this clone's execution cache when it changes)")
    args = ap.parse_args()
    if args.inputs_key:
        print(inputs_key())
        return 0
    timeout = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]
    cache = get_cache(str(CACHE))
    shared = None if args.no_shared_cache else shared_dir() / inputs_key()
    todo, pages, reused = [], chapters(), 0
    for path in pages:
        nb = nbformat.read(path, as_version=4)
        try:
            cache.match_cache_notebook(nb)
            continue
        except KeyError:
            pass
        done = from_shared(shared, nb) if shared else None
        if done is None:
            todo.append(path)
            continue
        cache.cache_notebook_bundle(
            CacheBundleIn(done, str(path), data={"execution_seconds": 0.0, "shared": True}),
            check_validity=False, overwrite=True)
        reused += 1
    if reused:
        print(f"{reused} chapters taken from the shared cache ({shared}: the same cells, "
              f"package, assets, results and libraries)", flush=True)
    # the slowest first (measured in a fresh build), so that the last to end
    # is a short one: the two workers finish together
    todo.sort(key=lambda p: SLOWEST_FIRST.index(p.stem) if p.stem in SLOWEST_FIRST
              else len(SLOWEST_FIRST))
    t0, failed = time.perf_counter(), []
    print(f"executing {len(todo)} chapters, {args.jobs} at a time "
          f"({len(pages) - len(todo)} already cached)", flush=True)
    zygote = (kernel_zygote.forked_kernels() if todo and not args.no_zygote
              else contextlib.nullcontext())
    with zygote, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, nb, seconds, error in pool.map(lambda p: execute(p, timeout), todo):
            name = path.relative_to(ROOT)
            if error:
                failed.append(name)
                print(f"{name}: FAILED after {seconds:.1f} s (the build will show why)",
                      flush=True)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            if shared:
                to_shared(shared, nbformat.read(path, as_version=4), nb)
            print(f"{name}: executed in {seconds:.1f} s", flush=True)
    print(f"{len(todo) - len(failed)} chapters executed in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
