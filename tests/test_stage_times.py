"""`make book` ends with the time of each stage (issue 49): every stage the
Makefile lists stamps its start and end, the table names them in that order,
and a stage whose target was up to date reads "skipped"."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from stage_times import table

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text()


def listed_stages() -> list[str]:
    return re.search(r"^STAGES := (.+)$", MAKEFILE, re.M).group(1).split()


def test_every_listed_stage_is_stamped_at_both_ends():
    """The names in STAGES are exactly those the recipes stamp, each stamped
    as often at its start as at its end, every start before its end."""
    stamps = re.findall(r"\$\(call stage,(\w+),(start|end)\)", MAKEFILE)
    stamped = {name for name, _ in stamps}
    assert stamped == set(listed_stages()), (stamped, listed_stages())
    for name in stamped:
        ends = [what for n, what in stamps if n == name]
        assert ends == ["start", "end"] * (len(ends) // 2), (name, ends)
    book = MAKEFILE[MAKEFILE.index("\nbook:"):MAKEFILE.index("\nhtml:")]
    assert "> $(STAGE_LOG)" in book.split("\n")[2], "the book's first step starts the log"
    assert "STAGE_TABLE = $(BIN)/python scripts/stage_times.py $(STAGE_LOG) $(STAGES)" in book
    # the table also when a stage failed: after the sub-make, and at the end
    assert book.count("{ $(STAGE_TABLE); exit 1; }") == 1, book
    assert "\n\t@$(STAGE_TABLE)\n" in book, book


def test_the_table_gives_seconds_skipped_and_unfinished():
    log = "\n".join([
        "book start 1000.0",
        "install start 1001.0", "install end 1003.5",     # two recipes: 2.5 + 1.0 s
        "install start 1004.0", "install end 1005.0",
        "export start 1005.0", "export end 1065.0",
        "html start 1010.0",                                 # its recipe failed
        "not a stamp",
    ])
    rows = {line.split()[0]: line.split()[1:]
            for line in table(log, ["install", "npm", "export", "html"], 1070.0).splitlines()}
    assert list(rows) == ["stage", "install", "npm", "export", "html", "total"]
    assert rows["install"] == ["1.0", "5.0", "3.5"]
    assert rows["npm"] == ["-", "-", "skipped"]
    assert rows["export"] == ["5.0", "65.0", "60.0"]
    assert rows["html"] == ["10.0", "-", "unfinished"]
    assert rows["total"] == ["0.0", "70.0", "70.0"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_makefile_stamps_a_stage_that_runs_and_not_one_up_to_date(tmp_path: Path):
    """The real Makefile, on a scratch copy with stand-ins for jupytext and
    Python: the notebooks' stage is stamped when it runs, and reads skipped
    on the next build, when its notebooks are up to date."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    for name in ("_config.yml", "scripts/colab_cell.py", "chapters/01_one_head.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / ".book-deps").touch()
    for tool in ("jupytext", "python"):
        (tmp_path / ".venv" / "bin" / tool).write_text("#!/bin/sh\nexit 0\n")
        (tmp_path / ".venv" / "bin" / tool).chmod(0o755)
    log = tmp_path / "_build" / ".stages"
    script = str(ROOT / "scripts" / "stage_times.py")

    def build() -> dict[str, list[str]]:
        log.parent.mkdir(exist_ok=True)
        log.write_text("book start 0\n")
        r = subprocess.run(["make", "-o", ".venv/.book-deps", "_build/.ipynbs"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        out = subprocess.run([sys.executable, script, str(log), *listed_stages()],
                             capture_output=True, text=True, check=True).stdout
        return {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:]}

    first = build()
    assert first["notebooks"][-1] not in ("skipped", "unfinished"), first
    assert float(first["notebooks"][-1]) >= 0
    assert all(first[s][-1] == "skipped" for s in listed_stages() if s != "notebooks"), first
    again = build()
    assert again["notebooks"][-1] == "skipped", again


def test_npm_starts_beside_the_python_install():
    """One sub-make builds the Python install and the rest, so that npm's
    download (which needs no Python) starts at the build's first second;
    what runs the venv's Python after npm waits for the install."""
    book = MAKEFILE[MAKEFILE.index("\nbook:"):MAKEFILE.index("\nhtml:")]
    makes = [line for line in book.split("\n") if "$(MAKE)" in line]
    assert len(makes) == 1 and "book-deps" in makes[0] and "-j3" in makes[0], makes
    npm = re.search(r"^node_modules/\.mha-stamp:(.*)$", MAKEFILE, re.M).group(1)
    assert "VENV" not in npm and "BIN" not in npm, npm
    vendor = re.search(r"^_vendor/\.stamp:(.*)$", MAKEFILE, re.M).group(1)
    assert "| $(VENV)/.book-deps" in vendor, vendor


def test_npm_runs_at_the_builds_own_priority():
    """Not niced: beside two busy processes a niced npm ci got a tenth of a
    core and had not ended in 9 minutes of a busy `.ci/run`."""
    recipe = MAKEFILE[MAKEFILE.index("\nnode_modules/.mha-stamp:"):]
    recipe = recipe[:recipe.index("\n\n")]
    assert "npm ci" in recipe and "nice" not in recipe, recipe
