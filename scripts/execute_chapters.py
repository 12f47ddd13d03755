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

Each chapter's split printouts are joined (:func:`join_split_streams`), so
a page does not depend on when the kernel flushed. A chapter that fails is
not cached; the script says which and exits 1, and the build would run it
again and show its traceback.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / ".jupyter_cache"


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
    args = ap.parse_args()
    timeout = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]
    cache = get_cache(str(CACHE))
    todo, pages = [], chapters()
    for path in pages:
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(path)
    # the slowest first (measured in a fresh build), so that the last to end
    # is a short one: the two workers finish together
    todo.sort(key=lambda p: SLOWEST_FIRST.index(p.stem) if p.stem in SLOWEST_FIRST
              else len(SLOWEST_FIRST))
    t0, failed = time.perf_counter(), []
    print(f"executing {len(todo)} chapters, {args.jobs} at a time "
          f"({len(pages) - len(todo)} already cached)", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
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
            print(f"{name}: executed in {seconds:.1f} s", flush=True)
    print(f"{len(todo) - len(failed)} chapters executed in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
