"""The slide decks and the handouts of an unchanged course, from the cache.

    python scripts/cache_outputs.py restore slides    # exit 0: copied; 1: not there
    python scripts/cache_outputs.py keep slides       # after build_slides.py made them

``make book`` makes the decks (``scripts/build_slides.py``) and the handouts
(``scripts/build_handouts.py``) from the built pages, each about 50 s on two
cores. They are a function of the course's files, the installed Python
distributions and the Chromium that prints them, so each is kept in the
user's cache (``scripts/user_cache.py``) under the key :func:`course_key`,
and a build of the same course (a fresh clone in CI) copies them from there
instead of making them again. Any change to a file of the repository (one
git tracks, or would: ignored ones aside), to a distribution or to Chromium
is a new key. Outside a git checkout nothing is cached.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import user_cache

from site_browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
#: what each kind is: its folder in the site, and the file written last (an
#: entry without it is not taken)
OUTPUTS = {"slides": ("slides", "decks.js"), "handouts": ("handouts", "handouts.js")}


def course_key() -> str | None:
    """SHA-256 of every file of the repository git lists (tracked, and new
    ones it does not ignore: their names and contents as they are on disk),
    Python's version, the name and version of every distribution the book
    installs (``user_cache.book_distributions``: not the tests' own), and
    Chromium's version; None outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=ROOT, check=True,
                                capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    names = sorted(set(listed.decode().split("\0")) - {""})
    try:
        chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True,
                                  text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        chromium = "no chromium"
    python, *dists = user_cache.python_and_distributions()
    return user_cache.make_key(((n, ROOT / n) for n in names if (ROOT / n).is_file()),
                               [python, chromium, *dists])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=["restore", "keep"])
    ap.add_argument("kind", choices=sorted(OUTPUTS))
    ap.add_argument("--site", type=Path, default=SITE, help="the built site (_build/html)")
    args = ap.parse_args(argv)
    folder, last = OUTPUTS[args.kind]
    out = args.site / folder
    key = course_key()
    if key is None:
        return 1
    if args.action == "restore":
        if not user_cache.restore(args.kind, key, out, last):
            return 1
        print(f"{args.kind}: copied from the cache ({user_cache.root() / args.kind / key}: "
              "the course, its libraries and Chromium are as when they were made)")
        return 0
    if (out / last).is_file():
        user_cache.keep(args.kind, key, out, "cache_outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
