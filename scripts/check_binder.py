"""Recreate the Binder environment locally and open a chapter the way the
Binder button does: JupyterLab, the chapter as a notebook, a cell run.

    .venv/bin/python scripts/check_binder.py            # a few minutes
    .venv/bin/python scripts/check_binder.py --reuse    # keep an existing venv
    .venv/bin/python scripts/check_binder.py --budget   # + scripts/chapter_budget.py in it

What it does, as repo2docker would (without Docker):

1. copies the working tree (tracked and untracked, not ignored files) into a
   fresh folder, as Binder clones the repository;
2. creates a venv (default /tmp/binder-venv) with the Python of
   binder/runtime.txt, installs binder/requirements.txt into it and runs
   binder/postBuild from the copy's root (repo2docker's working directory);
3. starts that venv's JupyterLab on 127.0.0.1 with fresh config, data,
   runtime and workspace folders, rooted at the copy;
4. reads the Binder button's URL in the built page (``_build/html/chapters/
   01_one_head.html``; ``make book`` first) and opens its ``urlpath`` in
   headless Chromium (Debian's, /usr/bin/chromium), every request that leaves
   127.0.0.1 blocked;
5. checks the chapter opened as a notebook (a ``.jp-Notebook`` with its
   cells), runs the hidden Colab cell (it must do nothing) and the first
   ``import mhacourse`` cell, and checks that cell's output.

download.pytorch.org is tried as binder/requirements.txt says; where it cannot
be reached, pip falls back to the other indexes and to PIP_FIND_LINKS (a local
``torch-2.13.0+cpu`` wheel) and the script says so. Exit status 0 when every
check passed. Not part of ``make test`` (it installs ~1 GB).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from site_browser import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parent.parent

PAGE = ROOT / "_build" / "html" / "chapters" / "01_one_head.html"


def say(msg: str) -> None:
    print(msg, flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    say("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


def reachable(host: str, port: int = 443) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


def copy_repository(dest: Path) -> None:
    """The working tree as a fresh clone would have it (plus uncommitted files)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def python_for_runtime() -> str:
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(\d+\.\d+)", runtime)
    if not m:
        raise SystemExit(f"binder/runtime.txt: expected python-X.Y, got {runtime!r}")
    exe = shutil.which(f"python{m.group(1)}")
    if exe is None and f"{sys.version_info[0]}.{sys.version_info[1]}" == m.group(1):
        exe = sys.executable
    if exe is None:
        raise SystemExit(f"no python{m.group(1)} on PATH (binder/runtime.txt asks for it)")
    return exe


def local_wheels() -> list[str]:
    """Folders holding a local torch CPU wheel (PIP_FIND_LINKS, .whl/)."""
    dirs = [d for d in os.environ.get("PIP_FIND_LINKS", "").split() if d]
    dirs.append(str(ROOT / ".whl"))
    return [d for d in dirs if Path(d).is_dir() and list(Path(d).glob("torch-*+cpu-*.whl"))]


def make_env(venv: Path, repo: Path, reuse: bool, index_ok: bool) -> float:
    t = time.perf_counter()
    if reuse and (venv / "bin" / "jupyter-lab").exists():
        say(f"reusing {venv}")
    else:
        if venv.exists():
            shutil.rmtree(venv)
        run([python_for_runtime(), "-m", "venv", str(venv)])
        run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--upgrade", "pip"])
        requirements = ["-r", "binder/requirements.txt"]
        if not index_ok:
            # the PyTorch index cannot be reached: the same file without its
            # --extra-index-url line, torch from a local CPU wheel instead
            wheels = local_wheels()
            if not wheels:
                raise SystemExit("download.pytorch.org is unreachable and no local "
                                 "torch-*+cpu wheel was found (PIP_FIND_LINKS, .whl/)")
            text = (repo / "binder" / "requirements.txt").read_text()
            local = repo / "binder" / "requirements.local.txt"
            local.write_text(re.sub(r"(?m)^--extra-index-url .*$", "", text))
            requirements = ["-r", str(local.relative_to(repo))]
            for w in wheels:
                requirements += ["--find-links", w]
            say(f"installing torch from {wheels} instead")
        run([venv / "bin" / "python", "-m", "pip", "install", "-q", *requirements], cwd=repo)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "VIRTUAL_ENV": str(venv)}
    run(["./binder/postBuild"], cwd=repo, env=env)
    return time.perf_counter() - t


def binder_urlpath(page: Path) -> str:
    """The urlpath of the Binder launch button in a built chapter page."""
    if not page.exists():
        raise SystemExit(f"{page} is missing: run `make book` first")
    m = re.search(r'href="(https://mybinder\.org/[^"]+)"', page.read_text())
    if not m:
        raise SystemExit(f"{page} has no Binder button")
    url = unquote(m.group(1).replace("&amp;", "&"))
    say(f"Binder button: {url}")
    path = parse_qs(urlparse(url).query).get("urlpath", [""])[0]
    if not path:
        raise SystemExit(f"the Binder URL names no urlpath: {url}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(venv: Path, repo: Path, scratch: Path, token: str):
    port = free_port()
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "JUPYTER_CONFIG_DIR": str(scratch / "config"), "JUPYTER_DATA_DIR": str(scratch / "data"),
           "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"), "IPYTHONDIR": str(scratch / "ipython"),
           "MPLCONFIGDIR": str(scratch / "mpl"), "JUPYTER_PLATFORM_DIRS": "1"}
    log = open(scratch / "lab.log", "w")
    proc = subprocess.Popen(
        [venv / "bin" / "jupyter-lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={repo}", f"--LabApp.workspaces_dir={scratch / 'workspaces'}",
         f"--LabApp.user_settings_dir={scratch / 'settings'}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])],
        cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(120):
        if proc.poll() is not None:
            raise SystemExit(f"JupyterLab exited:\n{(scratch / 'lab.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                status = json.load(r)
                say(f"JupyterLab up at {base} ({status.get('kernels', 0)} kernels)")
                return proc, base
        except OSError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit("JupyterLab did not start in 120 s")


def check_in_browser(base: str, token: str, urlpath: str, notebook: Path, shot: Path) -> list[str]:
    """Open urlpath; return the failed checks (empty: all passed)."""
    import nbformat
    from playwright.sync_api import sync_playwright

    failures: list[str] = []
    expected_cells = len(nbformat.read(notebook, 4).cells)
    blocked: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})

        def route(r):
            if r.request.url.startswith(base) or r.request.url.startswith(("data:", "blob:")):
                return r.continue_()
            blocked.append(r.request.url)
            return r.abort()

        context.route("**/*", route)
        page = context.new_page()
        url = f"{base}/{urlpath}?token={token}"
        say(f"opening {base}/{urlpath}")
        page.goto(url, wait_until="domcontentloaded")
        try:
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
        except Exception:
            page.screenshot(path=str(shot))
            return [f"no notebook opened at {urlpath} (screenshot {shot})"]
        tab = page.locator(".jp-NotebookPanel:visible").first
        try:                                   # cells render one after another
            page.wait_for_function(
                "n => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length >= n",
                arg=min(expected_cells, 5), timeout=60_000)
        except Exception:
            pass
        title = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current "
                             ".lm-TabBar-tabLabel").first.inner_text()
        cells = tab.locator(".jp-Cell").count()
        say(f"opened as a notebook: tab {title!r}, {cells} cells in the page "
            f"({expected_cells} in {notebook.name}; JupyterLab renders long "
            "notebooks as they scroll into view)")
        if title != notebook.name:
            failures.append(f"the current tab is {title!r}, not {notebook.name}")
        if cells < 3:
            failures.append(f"only {cells} cells rendered")
        # wait for the kernel
        try:
            page.wait_for_function(
                """() => { const s = document.querySelector(
                     '.jp-NotebookPanel .jp-Toolbar-kernelStatus, '
                   + '.jp-NotebookPanel [data-status]');
                   const k = document.querySelector('.jp-NotebookPanel .jp-KernelName, '
                   + '.jp-NotebookPanel .jp-Toolbar-kernelName');
                   return k && !/no kernel|starting/i.test(k.textContent); }""", timeout=120_000)
        except Exception:
            pass
        kernel = page.locator(".jp-NotebookPanel .jp-Toolbar-kernelName").first
        say(f"kernel: {kernel.inner_text().strip() if kernel.count() else '?'}")

        code_cells = tab.locator(".jp-CodeCell")

        def run_cell(i: int, want: str | None, timeout: int = 180_000) -> str:
            cell = code_cells.nth(i)
            cell.scroll_into_view_if_needed()
            cell.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Escape")          # command mode: run the selected cell
            page.keyboard.press("Control+Enter")
            page.wait_for_function(
                """(el) => { const p = el.querySelector('.jp-InputPrompt');
                   return p && /\\[\\d+\\]/.test(p.textContent); }""",
                arg=cell.element_handle(), timeout=timeout)
            cell.locator(".jp-OutputArea").scroll_into_view_if_needed()
            return cell.locator(".jp-OutputArea").inner_text()

        sources = [code_cells.nth(i).locator(".jp-InputArea-editor").inner_text()
                   for i in range(min(code_cells.count(), 6))]
        colab = next((i for i, s in enumerate(sources) if "google.colab" in s), None)
        first_import = next((i for i, s in enumerate(sources) if "import mhacourse" in s), None)
        if colab is None:
            failures.append("no Colab install cell among the first code cells")
        else:
            out = run_cell(colab, None)
            say(f"Colab cell (code cell {colab}) ran; output: {out.strip()!r}")
            if out.strip():
                failures.append(f"the Colab cell printed something outside Colab: {out[:200]!r}")
        if first_import is None:
            failures.append("no `import mhacourse` cell among the first code cells")
        else:
            out = run_cell(first_import, None)
            lines = out.strip().splitlines()
            say(f"first import cell (code cell {first_import}) ran; output, first lines:")
            for line in lines[:6]:
                say(f"    {line}")
            if "Error" in out or "Traceback" in out:
                failures.append(f"the import cell failed: {out[-500:]}")
            elif not lines:
                failures.append("the import cell printed nothing")
        page.screenshot(path=str(shot))
        say(f"screenshot: {shot}")
        browser.close()
    # JupyterLab itself asks for nothing outside; list what was blocked anyway
    if blocked:
        say(f"blocked requests to other servers ({len(blocked)}): {sorted(set(blocked))[:5]}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", type=Path, default=Path("/tmp/binder-venv"))
    ap.add_argument("--repo-copy", type=Path, default=Path("/tmp/binder-repo"))
    ap.add_argument("--page", type=Path, default=PAGE, help="a built chapter page (Binder button)")
    ap.add_argument("--reuse", action="store_true", help="keep an existing venv")
    ap.add_argument("--budget", action="store_true",
                    help="also run scripts/chapter_budget.py with the Binder venv")
    ap.add_argument("--shot", type=Path, default=Path("/tmp/check_binder.png"))
    args = ap.parse_args()

    t0 = time.perf_counter()
    host_ok = reachable("download.pytorch.org")
    say("download.pytorch.org: " + ("reachable" if host_ok else
        "NOT reachable from here: installing binder/requirements.txt without its "
        "--extra-index-url line, torch from a local CPU wheel"))
    urlpath = binder_urlpath(args.page)
    if args.repo_copy.exists():
        shutil.rmtree(args.repo_copy)
    args.repo_copy.mkdir(parents=True)
    copy_repository(args.repo_copy)
    secs = make_env(args.venv, args.repo_copy, args.reuse, host_ok)
    say(f"environment ready in {secs:.0f} s")
    freeze = subprocess.run([args.venv / "bin" / "python", "-m", "pip", "list",
                             "--format=freeze"], capture_output=True, text=True).stdout
    picked = [l for l in freeze.splitlines()
              if re.match(r"(torch|jupyterlab|ipywidgets|numpy|mhacourse|myst-nb)==", l, re.I)]
    say("installed: " + ", ".join(picked))
    size = subprocess.run(["du", "-sh", str(args.venv)], capture_output=True,
                          text=True).stdout.split()[0]
    say(f"venv size: {size} ({args.venv})")

    m = re.match(r"(?:lab/tree|tree|notebooks)/(.+)$", urlpath)
    if not m:
        raise SystemExit(f"urlpath {urlpath!r} does not open a file in JupyterLab (lab/tree/...)")
    notebook = args.repo_copy / m.group(1)
    failures = [] if urlpath.startswith("lab/") else [f"urlpath {urlpath!r} is not JupyterLab"]
    if not notebook.exists():
        failures.append(f"{m.group(1)} does not exist in the repository")
    scratch = Path(tempfile.mkdtemp(prefix="binder-lab-"))
    token = secrets.token_hex(16)
    proc, base = start_lab(args.venv, args.repo_copy, scratch, token)
    try:
        if notebook.exists():
            failures += check_in_browser(base, token, urlpath, notebook, args.shot)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    if args.budget:
        chapters = sorted(str(p) for p in (args.repo_copy / "chapters").glob("[0-9][0-9]_*.md"))
        run([args.venv / "bin" / "python", str(args.repo_copy / "scripts" / "chapter_budget.py"),
             *chapters], cwd=args.repo_copy)
    say(f"total {time.perf_counter() - t0:.0f} s")
    if failures:
        say("FAILED:\n- " + "\n- ".join(failures))
        return 1
    say("OK: the Binder environment opens the chapter as a notebook and runs it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
