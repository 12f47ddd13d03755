"""How long each chapter page is, in screens, as a reader sees it.

Opens every numbered chapter of the built site (``make book`` first) in
headless Chromium at 1280 x 900, offline, and measures the document's height
divided by 900. Prints a table and writes
``benchmarks/results/page_heights.json``.

    python scripts/page_heights.py [--out FILE] [--site DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from site_browser import SITE, document_screens, offline_page, serve

ROOT = Path(__file__).resolve().parent.parent

WIDTH, HEIGHT = 1280, 900          # the viewport the issue measures at
OUT = ROOT / "benchmarks" / "results" / "page_heights.json"


def chapter_pages(site: Path = SITE) -> list[str]:
    """The numbered chapter pages of the built site, in course order."""
    return sorted(f"chapters/{p.name}" for p in (site / "chapters").glob("[0-9][0-9]*_*.html"))


def page_screens(page, url: str) -> float:
    """Document height of ``url`` divided by the viewport height."""
    page.goto(url, wait_until="networkidle")
    page.wait_for_timeout(500)
    return document_screens(page)


def measure(site: Path = SITE) -> dict[str, float]:
    """{page: screens} for every chapter page of ``site``."""
    screens = {}
    with serve(site) as base, offline_page(base, WIDTH, HEIGHT) as (page, blocked):
        for rel in chapter_pages(site):
            screens[rel] = round(page_screens(page, f"{base}/{rel}"), 2)
    if blocked:
        raise RuntimeError(f"pages tried to reach other servers: {sorted(set(blocked))}")
    return screens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--site", type=Path, default=SITE)
    args = ap.parse_args()
    if not (args.site / "index.html").exists():
        sys.exit(f"no built site at {args.site}: run `make book` first")
    screens = measure(args.site)
    for rel, n in screens.items():
        print(f"{rel:45s} {n:5.1f} screens")
    print(f"{'longest':45s} {max(screens.values()):5.1f} screens")
    record = {"viewport": [WIDTH, HEIGHT], "unit": "screens (document height / 900 px)",
              "pages": screens}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
