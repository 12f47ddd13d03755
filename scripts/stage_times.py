"""The table `make book` prints at its end: when each stage of the build ran.

    python scripts/stage_times.py _build/.stages install npm vendor ...

Each stage's recipe in the Makefile appends a line ``STAGE start|end SECONDS``
(a shell ``date +%s.%N``, no Python) to ``_build/.stages``, which the book's
first step starts with ``book start SECONDS``. Stages run side by side under
``make -j3``, so the table gives each one's start and end, in seconds from
the book's start, and its wall seconds (the sum over its recipes: the
install has two); a stage whose recipe did not run, because what it makes
was up to date, reads ``skipped``; one that started and never ended (its
recipe failed) reads ``unfinished``. The last row is the book's whole wall time.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path


def read_stamps(text: str) -> tuple[float | None, dict[str, list[tuple[str, float]]]]:
    """The book's start and, for each stage, its ``(start|end, seconds)``
    stamps in the order written."""
    begin, stamps = None, {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("start", "end"):
            continue
        name, what, when = parts[0], parts[1], float(parts[2])
        if name == "book" and what == "start":
            begin = when
        else:
            stamps.setdefault(name, []).append((what, when))
    return begin, stamps


def spans(stamps: list[tuple[str, float]]) -> tuple[list[tuple[float, float]], bool]:
    """Each ``(start, end)`` of a stage's recipes, and whether one never ended."""
    out, opened, unfinished = [], None, False
    for what, when in stamps:
        if what == "start":
            unfinished = unfinished or opened is not None
            opened = when
        elif opened is not None:
            out.append((opened, when))
            opened = None
    return out, unfinished or opened is not None


def table(text: str, stages: list[str], now: float) -> str:
    """The stage table of a ``_build/.stages`` log; ``now`` ends the book."""
    begin, stamps = read_stamps(text)
    if begin is None:
        begin = min((w for s in stamps.values() for _, w in s), default=now)
    width = max(len(s) for s in [*stages, "stage", "total"])
    rows = [f"{'stage':<{width}}  {'start s':>8}  {'end s':>8}  {'seconds':>10}"]
    for name in stages:
        done, unfinished = spans(stamps.get(name, []))
        if not done and not unfinished:
            rows.append(f"{name:<{width}}  {'-':>8}  {'-':>8}  {'skipped':>10}")
            continue
        first = min([a for a, _ in done] + [w for what, w in stamps[name] if what == "start"])
        last = max((b for _, b in done), default=None)
        took = f"{sum(b - a for a, b in done):.1f}" if not unfinished else "unfinished"
        rows.append(f"{name:<{width}}  {_at(first, begin):>8}  {_at(last, begin):>8}  "
                    f"{took:>10}")
    rows.append(f"{'total':<{width}}  {'0.0':>8}  {now - begin:>8.1f}  {now - begin:>10.1f}")
    return "\n".join(rows)


def _at(when: float | None, begin: float) -> str:
    return "-" if when is None else f"{when - begin:.1f}"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    log = Path(argv[0])
    text = log.read_text() if log.exists() else ""
    print(f"Stages of this build (wall seconds; {log}):")
    print(table(text, argv[1:], time.time()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
