"""The build's cache outside the clone, one place for every script that
keeps something there: ``$MHACOURSE_CACHE``, else
``$XDG_CACHE_HOME/mhacourse``, else ``~/.cache/mhacourse``.

Each kind of thing has a folder of its own (``explorer-export``,
``executed-chapters``, ``slides``, ``handouts``), and in it one folder an
input key (a SHA-256 of what made it: :func:`make_key` makes every key of
the build). A fresh clone of an unchanged course (CI) then takes what an
earlier build made instead of making it again; any change to the inputs
makes it anew. :func:`restore` copies an entry out, :func:`keep`
copies one in (written aside, then renamed, so that a half-written entry
is never read) and keeps the :data:`KEEP` latest (:func:`prune`).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
KEEP = 2  # entries kept of each kind


def root() -> Path:
    """The cache's folder (it may not exist yet)."""
    env = os.environ.get("MHACOURSE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME")
                                      or Path.home() / ".cache") / "mhacourse"
    return base


def make_key(files: Iterable[tuple[str, Path]], versions: Iterable[str]) -> str:
    """An entry's key: the first 32 hex digits of the SHA-256 of ``files``
    (``(name, path)`` pairs, in the order given: each one's name, then the
    SHA-256 of its bytes) followed by ``versions`` (strings, joined by NUL)."""
    h = hashlib.sha256()
    for name, path in files:
        h.update(f"{name}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    h.update("\0".join(versions).encode())
    return h.hexdigest()[:32]


#: the requirements files `make book` installs from (requirements-test.txt
#: is not one: what only the tests install changes no output of the book)
BOOK_REQUIREMENTS = ("requirements.txt", "requirements-model.txt")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def book_requirements() -> list[str]:
    """The canonical names :data:`BOOK_REQUIREMENTS` list, in order
    (``-e ./code``: ``mhacourse``, the course's package)."""
    names = []
    for name in BOOK_REQUIREMENTS:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-e"):
                names.append("mhacourse")
            elif line and not line.startswith("-"):
                names.append(_canonical(Requirement(line).name))
    return names


def book_distributions(installed: dict) -> set[str]:
    """The canonical names of the distributions the book installs: those of
    :func:`book_requirements`, and every distribution they require, as far
    down as ``installed`` (canonical name -> distribution) goes
    (requirements of extras not followed)."""
    todo = book_requirements()
    seen = set()
    while todo:
        name = _canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        if name not in installed:
            continue  # not installed: its name stays in the set, without a version
        for text in installed[name].requires or []:
            r = Requirement(text)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    return seen


def python_and_distributions() -> list[str]:
    """Python's version, then each installed distribution of
    :func:`book_distributions` as ``name==version``, sorted: what a key made
    with them depends on. The tests' own packages are not in it, so that
    installing them (`make test` after `make book`) keeps the book's caches."""
    installed = {_canonical(d.metadata["Name"]): d for d in importlib.metadata.distributions()}
    book = book_distributions(installed)
    return [platform.python_version(),
            *sorted(f"{d.metadata['Name']}=={d.version}"
                    for name, d in installed.items() if name in book)]


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
    prune(folder)


def prune(folder: Path) -> None:
    """Keep the :data:`KEEP` latest entries (folders) of ``folder``: the
    others, and any file left beside them, go; one being written (a name
    beginning with ".") stays."""
    entries = sorted((p for p in folder.iterdir() if not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
