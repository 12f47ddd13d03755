"""The documents a maintainer reads are current: every script is described,
no file names a build machine's private paths, and every relative link in them
points at a file of the repository."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md"]
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))
# Paths that only exist on one machine: a home directory, this workplace's
# folders, or a virtual environment given by its absolute path.
PRIVATE = re.compile(r"(/home/\w+|/work/|/Users/\w+|/tmp/bash_jobs|/[\w/]+/\.venv\b)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_script_folders_are_not_empty():
    assert len(SCRIPTS) >= 5 and len(BENCHMARKS) >= 5, (SCRIPTS, BENCHMARKS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_is_described_in_the_readme(script: Path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`{script.name}`" in readme or f"scripts/{script.name}" in readme, (
        f"README.md does not describe scripts/{script.name}")
    doc = script.read_text(encoding="utf-8").lstrip()
    assert doc.startswith(('"""', "#!")), f"scripts/{script.name} has no docstring"


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.name)
def test_every_benchmark_is_in_the_benchmarks_table(bench: Path):
    table = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert f"| `{bench.name}` |" in table, (
        f"benchmarks/README.md's table has no row for {bench.name}")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_name_no_private_paths(doc: Path):
    hits = PRIVATE.findall(doc.read_text(encoding="utf-8"))
    assert not hits, f"{doc.name} names machine-private paths: {hits}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_inside_the_repository(doc: Path):
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path = (doc.parent / target).resolve()
        if ROOT not in path.parents and path != ROOT or not path.exists():
            broken.append(target)
    assert not broken, f"{doc.name} links to files outside the repository or missing: {broken}"
