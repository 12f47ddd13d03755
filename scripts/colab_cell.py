"""Fill the repository of _config.yml into every chapter's Colab install cell.

Each chapter's first, hidden code cell clones the course when the notebook
runs in Google Colab. Colab opens the committed ``chapters/*.ipynb`` from
GitHub, so that file must name the repository; the chapter's source,
``chapters/*.md``, does not. Its clone line holds two placeholders::

    !git clone -q --depth 1 --branch {repository.branch} {repository.url} /content/mha-course

and this script writes ``_config.yml``'s ``repository: url`` and ``branch``
(the one place they are written; the launch buttons read them too) into the
``.ipynb`` files it is given. Given a ``.md`` (which ``jupytext --sync``
rewrote from an ``.ipynb`` edited in Jupyter), it puts the placeholders back.
A file is rewritten only when it changes. ``make book`` and ``make sync``
run it; ``tests/test_launch.py`` checks the result.

    python scripts/colab_cell.py chapters/01_one_head.ipynb [more .ipynb/.md ...]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CLONE_TO = "/content/mha-course"
# the clone line, filled or not (also the older form without --branch)
CLONE = re.compile(r"!git clone -q --depth 1 (?:--branch (\S+) )?(\S+) "
                   + re.escape(CLONE_TO))


def clone_line(url: str, branch: str) -> str:
    """The Colab cell's clone line for ``url`` at ``branch``."""
    return f"!git clone -q --depth 1 --branch {branch} {url} {CLONE_TO}"


PLACEHOLDER = clone_line("{repository.url}", "{repository.branch}")


def repository(config: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """``(url, branch)`` from ``_config.yml``'s ``repository:`` block."""
    repo = yaml.safe_load(config.read_text(encoding="utf-8")).get("repository") or {}
    url = str(repo.get("url", "")).rstrip("/")
    if not re.fullmatch(r"https://\S+", url):
        raise SystemExit(f"{config}: repository: url must be the https address of "
                         f"the course's repository; got {url!r}.")
    return url, str(repo.get("branch", "main"))


def fill(text: str, url: str, branch: str) -> str:
    """``text`` with every clone line naming ``url`` at ``branch``."""
    return CLONE.sub(lambda m: clone_line(url, branch), text)


def unfill(text: str) -> str:
    """``text`` with every clone line back to the placeholders."""
    return CLONE.sub(lambda m: PLACEHOLDER, text)


def main(paths: list[str]) -> None:
    url, branch = repository()
    for name in paths:
        path = Path(name)
        old = path.read_text(encoding="utf-8")
        if not CLONE.search(old):
            raise SystemExit(f"{path}: no Colab clone line ({PLACEHOLDER!r}) found.")
        new = fill(old, url, branch) if path.suffix == ".ipynb" else unfill(old)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"{path}: Colab cell {'filled in' if path.suffix == '.ipynb' else 'reset'}")


if __name__ == "__main__":
    main(sys.argv[1:])
