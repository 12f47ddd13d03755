"""Launching a chapter elsewhere: Colab (the hidden install cell), Binder
(binder/), JupyterHub (nbgitpuller links) and the slide decks. Every launch
link of the built site must name a file that exists in the repository."""
from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import jupytext
import pytest
import yaml

from site_browser import SITE
from test_book import ROOT, colab_cell, toc_files

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
ORG_REPO = urlparse(REPO_URL).path.strip("/")             # "org/name"
LAUNCH = CONFIG.get("launch_buttons", {})


def paired_notebooks() -> list[Path]:
    """Every MyST notebook in chapters/ (jupytext front matter), NN_* and others."""
    return sorted(p for p in (ROOT / "chapters").glob("*.md")
                  if p.read_text().startswith("---\njupytext:"))


NOTEBOOKS = paired_notebooks()
SOURCES = NOTEBOOKS + [p.with_suffix(".ipynb") for p in NOTEBOOKS
                       if p.with_suffix(".ipynb").exists()]
PAGES = [f + ".html" for f in toc_files()]
NOTEBOOK_PAGES = [p for p in PAGES if (ROOT / p.replace(".html", ".ipynb")).exists()]


def first_code_cell(path: Path):
    nb = jupytext.read(path)
    return next(c for c in nb.cells if c.cell_type == "code")


# --------------------------------------------------------------------------
# Colab: the hidden first cell
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_first_code_cell_is_the_hidden_colab_install(path: Path):
    cell = first_code_cell(path)
    assert "remove-cell" in cell.metadata.get("tags", []), \
        f"{path.name}: the Colab cell must be tagged remove-cell (hidden on the site)"
    assert 'if "google.colab" in sys.modules:' in cell.source, \
        f"{path.name}: the first code cell must install only inside Colab"
    m = re.search(r"!git clone -q --depth 1 --branch (\S+) (\S+) (\S+)", cell.source)
    assert m, f"{path.name}: the first code cell must clone the course repository"
    # the .ipynb (what Colab opens) clones exactly _config.yml's repository and
    # branch; the .md source holds the placeholders scripts/colab_cell.py fills
    want = ((BRANCH, REPO_URL) if path.suffix == ".ipynb"
            else ("{repository.branch}", "{repository.url}"))
    assert (m.group(1), m.group(2)) == want, (
        f"{path.name} clones {m.group(2)} at {m.group(1)}, not {want[1]} at {want[0]}"
        + (" (_config.yml's repository): run `make sync`" if path.suffix == ".ipynb"
           else ": the source must not name the repository; run `make sync`"))
    assert colab_cell.repository() == (REPO_URL, BRANCH)
    clone = m.group(3)
    assert f'%pip install -q "{clone}/code[notebook]"' in cell.source, \
        f"{path.name}: the first code cell must install the clone's package"
    assert f'os.environ["MHACOURSE_ASSETS"] = "{clone}/assets"' in cell.source, \
        f"{path.name}: the explorer's models must be found in the clone"
    assert (ROOT / "code" / "pyproject.toml").exists()
    assert "notebook" in (ROOT / "code" / "pyproject.toml").read_text(), \
        "code/pyproject.toml must define the [notebook] extra Colab installs"


def _run_colab_cell(source: str, in_colab: bool) -> list[tuple[str, str]]:
    """Run the cell as IPython would (magics -> get_ipython() calls) with a stub
    shell that records them; return the (magic, argument) calls made."""
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)
    calls: list[tuple[str, str]] = []

    class Shell:
        def run_line_magic(self, name, line, *args, **kw):
            calls.append((name, line))

        def system(self, cmd):
            calls.append(("!", cmd))

    saved = sys.modules.get("google.colab")
    saved_env = dict(os.environ)  # the cell sets MHACOURSE_ASSETS in Colab
    try:
        if in_colab:
            sys.modules["google.colab"] = types.ModuleType("google.colab")
        else:
            sys.modules.pop("google.colab", None)
        exec(compile(python, "<colab cell>", "exec"), {"get_ipython": lambda: Shell()})
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        if saved is not None:
            sys.modules["google.colab"] = saved
        else:
            sys.modules.pop("google.colab", None)
    return calls


def _text_files():
    """Every text file of the repository (not build products or installs)."""
    skip = {".git", "_build", "node_modules", ".venv", "_vendor", "_generated",
            "__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache"}
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if skip & set(rel.parts) or not path.is_file() or path.is_symlink():
            continue
        if path.suffix in {".md", ".py", ".yml", ".yaml", ".toml", ".txt", ".cfg",
                           ".ipynb", ".json", ".html", ".js", ".css", ""}:
            yield rel


def test_the_repository_address_is_written_once():
    """_config.yml's repository: is the one place the address is written; the
    chapters' notebooks get it from there (scripts/colab_cell.py, run by
    `make book` and `make sync`). No chapter source, document, script or test
    holds a copy."""
    allowed = {Path("_config.yml")} | {p.relative_to(ROOT) for p in SOURCES
                                       if p.suffix == ".ipynb"}
    copies = []
    for rel in _text_files():
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if ORG_REPO in text and rel not in allowed:
            copies.append(str(rel))
    assert not copies, (
        f"these files write the repository ({ORG_REPO}) themselves; refer to "
        f"_config.yml's repository: instead: {copies}")
    notebooks = [p for p in SOURCES if p.suffix == ".ipynb"]
    assert len(notebooks) >= 16, notebooks
    for nb in notebooks:  # each clones it once, in its Colab cell
        assert nb.read_text(encoding="utf-8").count(ORG_REPO) == 1, nb.name


def test_the_colab_cell_follows_config(tmp_path: Path):
    """scripts/colab_cell.py fills in whatever _config.yml says (url and
    branch) and puts the placeholders back, leaving the rest unchanged."""
    md = (ROOT / "chapters" / "01_one_head.md").read_text(encoding="utf-8")
    filled = colab_cell.fill(md, "https://example.org/a/b", "teach-2027")
    assert ("!git clone -q --depth 1 --branch teach-2027 https://example.org/a/b "
            "/content/mha-course") in filled
    assert filled.replace("--branch teach-2027 https://example.org/a/b",
                          "--branch {repository.branch} {repository.url}") == md
    assert colab_cell.unfill(filled) == md
    assert colab_cell.fill(colab_cell.fill(md, REPO_URL, BRANCH), REPO_URL, BRANCH) \
        == colab_cell.fill(md, REPO_URL, BRANCH)
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://example.org/x/y/\n  branch: dev\n")
    assert colab_cell.repository(config) == ("https://example.org/x/y", "dev")
    config.write_text("repository:\n  url: not-a-url\n")
    with pytest.raises(SystemExit, match="must be the https address"):
        colab_cell.repository(config)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_cell_does_nothing_outside_colab(path: Path):
    source = first_code_cell(path).source
    assert _run_colab_cell(source, in_colab=False) == [], \
        f"{path.name}: the Colab cell ran a command outside Colab"
    calls = _run_colab_cell(source, in_colab=True)
    assert [c[0] for c in calls] == ["!", "pip"], \
        f"{path.name}: inside Colab the cell should clone, then %pip install; ran {calls}"
    assert calls[0][1].startswith("git clone") and "[notebook]" in calls[1][1]


# --------------------------------------------------------------------------
# Binder: binder/ (repo2docker reads it in preference to the top level)
# --------------------------------------------------------------------------

def binder_requirements() -> dict[str, str]:
    """name -> the full requirement line, from binder/requirements.txt."""
    found = {}
    for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            found[re.split(r"[=<>!~\[ ;]", line)[0].lower().replace("_", "-")] = line
    return found


def test_binder_pins_the_cpu_build_of_torch():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert re.search(r"(?m)^--extra-index-url https://download\.pytorch\.org/whl/cpu\s*$", text)
    torch = binder_requirements().get("torch", "")
    assert re.fullmatch(r"torch==\d+\.\d+\.\d+\+cpu", torch), \
        f"binder/requirements.txt must pin torch's CPU build exactly, has {torch!r}"
    book = (ROOT / "requirements.txt").read_text()
    pinned = re.search(r"(?m)^torch==([\d.]+)", book)
    assert pinned and torch.startswith(f"torch=={pinned.group(1)}+"), \
        "Binder's torch differs from the book's (requirements.txt)"


def _with_dependencies(names: set[str]) -> set[str]:
    """The distributions ``names`` pull in (as installed here), names normalised."""
    import importlib.metadata as md

    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731
    todo, seen = [norm(n) for n in names], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for r in requires:
            if "extra ==" not in r:
                todo.append(norm(re.split(r"[=<>!~\[ ;(]", r, maxsplit=1)[0]))
    return seen


def _imported_modules(source: str) -> set[str]:
    """Top-level modules a cell or file imports (absolute imports only)."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(source))   # %magics -> calls
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_binder_installs_what_the_chapters_import():
    import importlib.metadata as md

    dists = _with_dependencies(set(binder_requirements()))
    provided = {"mhacourse"}                    # binder/postBuild installs it
    # the repository's own scripts, which a chapter may put on sys.path
    provided |= {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    provided |= {d.replace("-", "_") for d in dists}
    for module, owners in md.packages_distributions().items():
        if any(re.sub(r"[-_.]+", "-", o).lower() in dists for o in owners):
            provided.add(module)
    sources = [(path.name, cell.source) for path in NOTEBOOKS
               for cell in jupytext.read(path).cells if cell.cell_type == "code"]
    sources += [(f"code/mhacourse/{p.name}", p.read_text())      # and the package itself
                for p in sorted((ROOT / "code" / "mhacourse").glob("*.py"))]
    missing = {}
    for where, source in sources:
        for mod in _imported_modules(source):
            if mod not in sys.stdlib_module_names and mod not in provided:
                missing.setdefault(mod, where)
    assert not missing, f"binder/requirements.txt lacks what chapters import: {missing}"


def test_binder_post_build_installs_the_package():
    post = ROOT / "binder" / "postBuild"
    assert post.exists() and post.stat().st_mode & 0o111, "binder/postBuild must be executable"
    text = post.read_text()
    assert text.startswith("#!"), "binder/postBuild needs a shebang line"
    # repo2docker runs it from the repository root
    assert re.search(r"pip install .*-e \./code\b", text), "postBuild must install ./code"
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(\d+)\.(\d+)", runtime)
    assert m, f"binder/runtime.txt: {runtime!r}"
    needs = re.search(r'requires-python\s*=\s*">=(\d+)\.(\d+)"',
                      (ROOT / "code" / "pyproject.toml").read_text())
    assert needs and tuple(map(int, m.groups())) >= tuple(map(int, needs.groups())), \
        "binder/runtime.txt's Python is older than the package needs"


# --------------------------------------------------------------------------
# The built site's launch links
# --------------------------------------------------------------------------

def built(page: str) -> str:
    path = SITE / page
    if not path.exists():
        pytest.fail("the site is not built: run `make book` first")
    return path.read_text()


def launch_links(page: str) -> list[str]:
    hosts = ["mybinder.org", "colab.research.google.com"]
    hub = LAUNCH.get("jupyterhub_url", "").strip().rstrip("/")
    if hub:
        hosts.append(urlparse(hub).netloc)
    # https for Binder and Colab; a hub may be http (JupyterHub's default, localhost:8000)
    pattern = r'href="(https?://(?:%s)/[^"]+)"' % "|".join(map(re.escape, hosts))
    return [unquote(u.replace("&amp;", "&")) for u in re.findall(pattern, built(page))]


def repo_file(link: str) -> str:
    """The repository path a launch link opens."""
    u = urlparse(link)
    query = parse_qs(u.query)
    if u.netloc == "colab.research.google.com":
        m = re.fullmatch(rf"/github/{re.escape(ORG_REPO)}/blob/{re.escape(BRANCH)}/(.+)", u.path)
        assert m, f"{link}: not this repository's {BRANCH} branch"
        return m.group(1)
    if u.netloc == "mybinder.org":
        assert u.path == f"/v2/gh/{ORG_REPO}/{BRANCH}", f"{link}: not this repository/branch"
        path = query["urlpath"][0]
        assert path.startswith("lab/tree/"), f"{link}: Binder should open JupyterLab (lab/tree/...)"
        return path.removeprefix("lab/tree/")
    # JupyterHub + nbgitpuller: /hub/user-redirect/git-pull?repo=..&urlpath=lab/tree/<name>/<path>
    assert u.path.endswith("/hub/user-redirect/git-pull"), link
    assert query["repo"][0].rstrip("/") == REPO_URL and query.get("branch", [BRANCH])[0] == BRANCH
    name = ORG_REPO.split("/")[-1]
    path = query["urlpath"][0]
    assert path.startswith(f"lab/tree/{name}/"), f"{link}: nbgitpuller clones into {name}/"
    return path.removeprefix(f"lab/tree/{name}/")


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_every_launch_link_names_a_file_in_the_repository(page: str):
    links = launch_links(page)
    kinds = {urlparse(u).netloc for u in links}
    assert {"mybinder.org", "colab.research.google.com"} <= kinds, \
        f"{page}: Binder and Colab buttons expected, found {kinds}"
    for link in links:
        path = repo_file(link)
        assert path == page.replace(".html", ".ipynb"), \
            f"{link} opens {path}, not this page's notebook"
        assert (ROOT / path).exists(), f"{link} names {path}, which is not in the repository"


def test_jupyterhub_button_follows_the_config():
    hub = LAUNCH.get("jupyterhub_url", "").strip()
    for page in NOTEBOOK_PAGES:
        has = "/hub/user-redirect/git-pull" in built(page)
        assert has == bool(hub), \
            f"{page}: JupyterHub button {'present' if has else 'absent'}, jupyterhub_url={hub!r}"


CHAPTER_PAGES = [p for p in NOTEBOOK_PAGES if re.fullmatch(r"chapters/[0-9][0-9]_[\w-]+\.html", p)]


def test_every_chapter_page_has_a_jupyterhub_link_built_from_the_repository_setting():
    """The nbgitpuller link of every chapter comes from _config.yml alone:
    the hub from launch_buttons.jupyterhub_url, the repository and branch from
    repository: (the one place they are written)."""
    hub = LAUNCH.get("jupyterhub_url", "").strip().rstrip("/")
    assert hub, "_config.yml: launch_buttons.jupyterhub_url must be set (a JupyterHub button)"
    assert re.fullmatch(r"https?://[^/\s]+(/\S*)?", hub), f"jupyterhub_url {hub!r} is not a URL"
    assert len(CHAPTER_PAGES) == len(list((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))) > 0
    name = ORG_REPO.split("/")[-1]
    for page in CHAPTER_PAGES:
        hub_links = [u for u in launch_links(page) if "/hub/user-redirect/git-pull" in u]
        assert len(hub_links) == 1, f"{page}: {len(hub_links)} JupyterHub links, expected 1"
        u = urlparse(hub_links[0])
        query = parse_qs(u.query)
        assert f"{u.scheme}://{u.netloc}{u.path}" == f"{hub}/hub/user-redirect/git-pull", \
            f"{page}: the link does not go to the configured hub {hub}"
        assert query["repo"] == [REPO_URL] and query["branch"] == [BRANCH], \
            f"{page}: repo/branch {query.get('repo')}/{query.get('branch')} differ from " \
            f"_config.yml's repository ({REPO_URL}, {BRANCH})"
        notebook = page.replace(".html", ".ipynb")
        assert query["urlpath"] == [f"lab/tree/{name}/{notebook}"], \
            f"{page}: nbgitpuller should open {name}/{notebook} in JupyterLab, " \
            f"not {query['urlpath']}"


def test_the_repository_is_written_in_one_place():
    """launch_buttons names no repository (the links take it from repository:),
    and wherever prose or a cell must spell the URL out (the Colab cell, the
    guide's examples) it is the configured one."""
    launch = yaml.safe_dump(LAUNCH)
    assert "github.com" not in launch, "launch_buttons must not name the repository again"
    other = re.compile(r"github\.com[/%]2?F?([\w.-]+)[/%]2?F?([\w.-]+)")
    files = [ROOT / "README.md", ROOT / "chapters" / "instructor_guide.md", *NOTEBOOKS]
    for path in files:
        for org, repo in other.findall(path.read_text()):
            if org in ("jupyterhub", "jupyter", "executablebooks", "pytorch", "mybinder"):
                continue                                 # links to the tools' own pages
            assert f"{org}/{repo.removesuffix('.git')}" == ORG_REPO, \
                f"{path.name} names github.com/{org}/{repo}, _config.yml says {ORG_REPO}"


def test_slides_links_name_decks_of_existing_chapters():
    manifest = SITE / "slides" / "decks.js"
    if not manifest.exists():
        pytest.fail("no slides: run `make book` (it runs scripts/build_slides.py)")
    decks = json.loads(re.search(r"=\s*(\{.*\});", manifest.read_text(), re.S).group(1))
    assert decks, "decks.js lists no deck"
    for stem, deck in decks.items():
        assert (ROOT / "chapters" / f"{stem}.ipynb").exists(), \
            f"a deck for a missing chapter {stem}"
        assert (SITE / "slides" / deck["file"]).exists(), f"decks.js names a missing {deck['file']}"
        assert (SITE / "chapters" / f"{stem}.html").exists(), f"{stem} has a deck but no page"
    script = ROOT / "assets" / "site" / "chapter-links.js"
    assert "chapter-links.js" in str(CONFIG["sphinx"]["config"]["html_js_files"]), \
        "_config.yml must load assets/site/chapter-links.js"
    assert "slides/decks.js" in script.read_text()
