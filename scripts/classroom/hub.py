"""The test hub of scripts/classroom_check.py: a JupyterHub on 127.0.0.1 in a
temporary folder (``Hub``), its REST API and the learners' servers through its
proxy (``Api``), and what a learner does to reach a chapter (``launch``).
scripts/classroom/pong_experiment.py starts the same hub; both import it here.
"""
from __future__ import annotations

import asyncio
import html
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import yaml
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from classroom import accounts

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHP = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
DEFAULT_CHAPTERS = ["03_parallel_heads", "04_what_heads_learn"]
MARKER = "MHACOURSE_CLASSROOM_RUN"     # in the environment of every process it starts
# the repository, from _config.yml (nbgitpuller clones into a folder named after it)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
REPO_NAME = REPO_URL.removesuffix(".git").split("/")[-1]


def say(msg: str) -> None:
    print(msg, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# The hub
# --------------------------------------------------------------------------

HUB_CONFIG = """\
# written by scripts/classroom_check.py: a TEST hub, never for learners
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.pid_file = {tmp!r} + "/proxy.pid"
c.JupyterHub.pid_file = {tmp!r} + "/hub.pid"
c.JupyterHub.db_url = "sqlite:///" + {tmp!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {tmp!r} + "/cookie_secret"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
c.Spawner.cmd = [{singleuser!r}]
# kernels talk to their server over Unix sockets in the learner's own runtime
# folder, not TCP ports of 127.0.0.1: with TCP, 8 servers starting 8 kernels
# at once each pick 5 "free" ports of the one loopback (bind to 0, release,
# the kernel binds later), and another process can take one in between; the
# kernel then dies ("ZMQError: Address already in use"), its restarts reuse
# the same port, and the server drops it: "the kernel's websocket closed"
c.Spawner.args = ["--KernelManager.transport=ipc"] + {args!r}
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 600
c.Spawner.http_timeout = 600
c.Spawner.environment = {environment!r}
c.Spawner.environment["JUPYTER_RUNTIME_DIR"] = (
    lambda spawner: {runtime!r} + "/" + spawner.user.name)
c.JupyterHub.services = [{{"name": "classroom-check", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "classroom-check",
    "scopes": ["admin:users", "admin:servers", "tokens"],
    "services": ["classroom-check"],
}}]
"""
# then accounts.authenticator_config() and accounts.spawner_config()


class Hub:
    """A JupyterHub process (and the proxy it starts) in a temporary folder."""

    def __init__(self, tmp: Path, run_id: str, names: list[str],
                 server_args: list[str] | None = None):
        self.tmp, self.run_id, self.names = tmp, run_id, names
        self.server_args = server_args or []
        self.port, self.hub_port, self.api_port = free_port(), free_port(), free_port()
        self.token = secrets.token_hex(32)
        self.url = f"http://127.0.0.1:{self.port}"      # the proxy: what learners reach
        self.proc: subprocess.Popen | None = None
        self.log = tmp / "jupyterhub.log"

    def start(self) -> None:
        env_for_servers = {
            MARKER: self.run_id,
            "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin",
            # the kernel imports this checkout's mhacourse, as `make book` does
            "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT / "code")),
            "LANG": "C.UTF-8",
            # one thread per kernel: PyTorch would otherwise start a thread
            # per core of the node for every learner (see the guide)
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            # nbgitpuller clones the snapshot, which another account owns:
            # git reads only a global file for that permission
            "GIT_CONFIG_GLOBAL": str(self.tmp / "gitconfig"),
        }
        (self.tmp / "gitconfig").write_text(
            f"[safe]\n\tdirectory = {self.tmp / 'origin' / REPO_NAME / '.git'}\n")
        accounts.create_accounts(self.names, self.tmp / "home", self.run_id)
        # a short folder per learner for their kernels' sockets (a Unix
        # socket's path is at most 107 bytes)
        for n in self.names:
            (self.tmp / "run" / n).mkdir(parents=True)
            (self.tmp / "run" / n).chmod(0o700)
            accounts.chown_tree(self.tmp / "run" / n, n)
        (self.tmp / "run").chmod(0o711)
        config = HUB_CONFIG.format(
            port=self.port, hub_port=self.hub_port, api_port=self.api_port, chp=str(CHP),
            tmp=str(self.tmp), singleuser=str(BIN / "jupyterhub-singleuser"),
            environment=env_for_servers, token=self.token, args=self.server_args,
            runtime=str(self.tmp / "run"))
        config += accounts.authenticator_config(self.names) + accounts.spawner_config(self.tmp)
        (self.tmp / "jupyterhub_config.py").write_text(config)
        env = {**os.environ, MARKER: self.run_id, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        env.pop("CONFIGPROXY_AUTH_TOKEN", None)
        self.proc = subprocess.Popen(
            accounts.private_view(self.tmp, Path(sys.executable))
            + [str(BIN / "jupyterhub"), "-f", str(self.tmp / "jupyterhub_config.py")],
            cwd=self.tmp,
            env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
            start_new_session=True)

    def log_tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)      # the hub stops servers and proxy
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Api:
    """The hub's REST API and the learners' servers, through the proxy."""

    def __init__(self, base: str):
        self.base = base
        self.http = AsyncHTTPClient(force_instance=True, max_clients=256)

    async def call(self, method: str, path: str, token: str, body=None, ok=(200, 201, 202, 204),
                   timeout: float = 120, raw: bool = False):
        req = HTTPRequest(self.base + path, method=method,
                          headers={"Authorization": f"token {token}",
                                   "Content-Type": "application/json"},
                          body=None if body is None and method in ("GET", "DELETE")
                          else json.dumps(body or {}),
                          request_timeout=timeout, connect_timeout=timeout)
        try:
            resp = await self.http.fetch(req, raise_error=False)
        except OSError as e:
            raise RuntimeError(f"{method} {path}: {e}") from None
        if resp.code not in ok:
            text = resp.body.decode(errors="replace")[:300] if resp.body else ""
            raise RuntimeError(f"{method} {path}: HTTP {resp.code} {text}")
        if raw:
            return resp.body.decode(errors="replace")
        return json.loads(resp.body) if resp.body else None


async def wait_for_hub(api: Api, hub: Hub, timeout: float = 120) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        if hub.proc.poll() is not None:
            raise RuntimeError(f"JupyterHub exited:\n{hub.log_tail()}")
        try:
            await api.call("GET", "/hub/api/", hub.token, timeout=5)
            return
        except (RuntimeError, HTTPClientError):
            await asyncio.sleep(0.5)
    raise RuntimeError(f"JupyterHub did not answer in {timeout:.0f} s:\n{hub.log_tail()}")


# --------------------------------------------------------------------------
# A learner
# --------------------------------------------------------------------------

def snapshot_repository(tmp: Path) -> str:
    """The repository as the hub would clone it, without the network: a git
    repository of the working tree (tracked and untracked, not ignored,
    files) on the configured branch, in a folder named like the repository
    (nbgitpuller names its clone after the URL's last part). Its file:// URL."""
    origin = tmp / "origin" / REPO_NAME
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (origin / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, origin / f)
    git = ["git", "-c", "user.name=classroom-check", "-c", "user.email=check@localhost"]
    for cmd in (["init", "-q", "-b", BRANCH], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(git + cmd, cwd=origin, check=True, capture_output=True)
    return origin.as_uri()


def jupyterhub_link(stem: str) -> tuple[str, str]:
    """The JupyterHub (nbgitpuller) launch link of a chapter: read from the
    built page when the site is built, else made from _config.yml the way
    Jupyter Book makes it. Returns (link, where it came from)."""
    page = ROOT / "_build" / "html" / "chapters" / f"{stem}.html"
    if page.exists():
        m = re.search(r'href="([^"]+/hub/user-redirect/git-pull\?[^"]+)"', page.read_text())
        if m:
            return html.unescape(m.group(1)), f"the built page {page.relative_to(ROOT)}"
    hub = CONFIG.get("launch_buttons", {}).get("jupyterhub_url", "http://localhost:8000")
    query = urlencode({"repo": REPO_URL, "urlpath": f"lab/tree/{REPO_NAME}/chapters/{stem}.ipynb",
                       "branch": BRANCH}, safe="/")
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}", "_config.yml (no built site)"


async def launch(api: Api, name: str, password: str, link: str, origin: str) -> dict:
    """What a learner does: sign up on the hub with a password of their own,
    then click the chapter's JupyterHub link: log in, the hub sends them to
    their server's nbgitpuller, which clones the course, then to the chapter
    in JupyterLab. The link's hub is this test hub and its repository the
    local snapshot; its path, branch and urlpath are the link's own."""
    t = time.perf_counter()
    browser = accounts.Browser(api.http, api.base)
    signed_up = await accounts.sign_up(browser, name, password)
    u = urlsplit(link)
    query = dict(parse_qsl(u.query))
    query["repo"] = origin
    target = f"{u.path}?{urlencode(query, safe='/')}"
    resp, landed = await accounts.log_in(browser, name, password, target)
    if resp.code != 200 or urlsplit(landed).path != f"/user/{name}/git-pull":
        raise RuntimeError(f"{name}: signed up ({signed_up!r}), then the JupyterHub link "
                           f"led to {landed} (HTTP {resp.code}): "
                           f"{accounts.page_alert(resp.body) or 'not their nbgitpuller'}")
    # the nbgitpuller page's script: /git-pull/api streams the clone's progress
    pull = {"repo": origin, "branch": query.get("branch", ""),
            "targetpath": urlsplit(origin).path.rstrip("/").split("/")[-1]}
    resp, _ = await browser.fetch(f"{api.base}/user/{name}/git-pull/api?{urlencode(pull)}")
    events = resp.body.decode(errors="replace")
    phases = [json.loads(line[5:]) for line in events.splitlines() if line.startswith("data:")]
    if not phases or phases[-1].get("phase") != "finished":
        raise RuntimeError(f"{name}: nbgitpuller did not finish: {phases[-1:] or events[:300]}")
    # then the page sends the learner to urlpath: JupyterLab with the chapter
    urlpath = query.get("urlpath", "")
    if not urlpath.startswith("lab/tree/"):
        raise RuntimeError(f"the link's urlpath {urlpath!r} does not open JupyterLab")
    resp, _ = await browser.fetch(f"{api.base}/user/{name}/{quote(urlpath)}")
    notebook = urlpath[len("lab/tree/"):]
    if resp.code != 200 or not (api.home / name / notebook).is_file():
        raise RuntimeError(f"{name}: {urlpath} (HTTP {resp.code}): {notebook} is not in their home")
    return {"pulled_s": time.perf_counter() - t}


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

async def start_servers(api: Api, hub: Hub, names: list[str], tmp: Path) -> dict[str, dict]:
    # the hub made the users on its allowed list when it started (409: all exist)
    await api.call("POST", "/hub/api/users", hub.token, {"usernames": names},
                   ok=(200, 201, 409))
    tokens = {}
    for name in names:
        r = await api.call("POST", f"/hub/api/users/{name}/tokens", hub.token,
                           {"note": "classroom-check", "expires_in": 3600})
        tokens[name] = r["token"]
    t0 = time.perf_counter()
    await asyncio.gather(*(api.call("POST", f"/hub/api/users/{n}/server", hub.token)
                           for n in names))
    ready: dict[str, float] = {}
    while len(ready) < len(names) and time.perf_counter() - t0 < 600:
        for n in names:
            if n in ready:
                continue
            model = await api.call("GET", f"/hub/api/users/{n}", hub.token)
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                ready[n] = time.perf_counter() - t0
            elif not model.get("pending") and not server:
                raise RuntimeError(f"{n}'s server failed to start:\n{hub.log_tail()}")
        await asyncio.sleep(0.5)
    if len(ready) < len(names):
        raise RuntimeError(f"servers not ready after 600 s: {sorted(set(names) - set(ready))}")
    # a learner's first request: their server answers through the proxy
    await asyncio.gather(*(api.call("GET", f"/user/{n}/api/status", tokens[n]) for n in names))
    # every learner follows the chapter's JupyterHub link at once: the course
    # is cloned into their home by nbgitpuller
    origin = snapshot_repository(tmp)
    link, source = jupyterhub_link(DEFAULT_CHAPTERS[0])
    say(f"JupyterHub link (from {source}):\n  {link}")
    api.home = tmp / "home"
    passwords = accounts.new_passwords(names)
    pulls = await asyncio.gather(*(launch(api, n, passwords[n], link, origin) for n in names))
    return {n: {"token": tokens[n], "ready_s": ready[n], **p} for n, p in zip(names, pulls)}
