"""The build's cache outside the clone, one place for every script that
keeps something there: ``$MHACOURSE_CACHE``, else
``$XDG_CACHE_HOME/mhacourse``, else ``~/.cache/mhacourse``.

Each kind of thing has a folder of its own (``explorer-export``,
``executed-chapters``, ``slides``, ``handouts``), and in it one folder an
input key (a SHA-256 of what made it). A fresh clone of an unchanged course
(CI) then takes what an earlier build made instead of making it again;
any change to the inputs makes it anew. :func:`restore` copies an entry
out, :func:`keep` copies one in (written aside, then renamed, so that a
half-written entry is never read) and keeps the :data:`KEEP` latest.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

KEEP = 2  # entries kept of each kind


def root() -> Path:
    """The cache's folder (it may not exist yet)."""
    env = os.environ.get("MHACOURSE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME")
                                      or Path.home() / ".cache") / "mhacourse"
    return base


def restore(kind: str, key: str, out: Path, marker: str) -> bool:
    """Copy the entry ``kind``/``key`` into ``out`` if it is there, complete
    (it holds the file ``marker``); True if it was."""
    entry = root() / kind / key
    if not (entry / marker).is_file():
        return False
    shutil.copytree(entry, out, dirs_exist_ok=True)
    os.utime(entry)  # the latest used is kept longest
    return True


def keep(kind: str, key: str, out: Path, who: str) -> None:
    """Keep the folder ``out`` as the entry ``kind``/``key``, and the
    :data:`KEEP` latest of ``kind`` only. A cache that cannot be written is
    skipped with one line, which ``who`` (the script) begins."""
    folder = root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".new-"))
        shutil.copytree(out, tmp / "x")
        if (folder / key).exists():
            shutil.rmtree(folder / key)
        os.replace(tmp / "x", folder / key)
        os.utime(folder / key)  # copytree gave it the source's time
        shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        print(f"{who}: not cached ({e})", file=sys.stderr)
        return
    entries = sorted((p for p in folder.iterdir() if not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
