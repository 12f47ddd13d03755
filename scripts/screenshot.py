"""Screenshot built pages in headless Chromium, offline, for a human to look at.

    python scripts/screenshot.py chapters/01_one_head.html [more pages] [--out DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from site_browser import offline_page, serve


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pages", nargs="+")
    ap.add_argument("--out", default="/tmp/shots")
    ap.add_argument("--full", action="store_true", help="whole page, not the first screen")
    ap.add_argument("--width", type=int, default=1280)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with serve() as base, offline_page(base, width=args.width) as (page, blocked):
        for rel in args.pages:
            page.goto(f"{base}/{rel}", wait_until="networkidle")
            page.wait_for_timeout(1500)
            name = out / (rel.replace("/", "_").replace(".html", "") + ".png")
            page.screenshot(path=str(name), full_page=args.full)
            print(name)
    if blocked:
        print("blocked non-local requests:", *sorted(set(blocked)), sep="\n  ")


if __name__ == "__main__":
    main()
