"""A class on one JupyterHub: start a real hub on 127.0.0.1, give N learners a
server each, have them all run a chapter at the same moment through the hub's
proxy, and measure what each learner's server needs.

    make classroom-check                             # installs what it needs, then runs this
    .venv/bin/python scripts/classroom_check.py --learners 8
    .venv/bin/python scripts/classroom_check.py --chapters 03_parallel_heads 08_how_many_heads
    .venv/bin/python scripts/classroom_check.py --no-every-chapter --no-write   # quick

What it does
------------
1. starts JupyterHub (``jupyterhub`` from PyPI, requirements-classroom.txt)
   with configurable-http-proxy (npm, package.json) on free ports of
   127.0.0.1 and a login that admits only the class: NativeAuthenticator,
   names on the hub's allowed list approved at sign-up, each with a password
   of their own (scripts/classroom/accounts.py). Every learner's server is a
   process with a home folder under a temporary directory; as root, each
   runs as a system account made for that learner and removed afterwards
   (``LocalProcessSpawner``), so no server runs as root or with
   ``--allow-root``;
2. creates N learners through the hub's REST API (an admin service token),
   gives each learner an API token of their own, and starts all N servers at
   once (JupyterLab, as on Binder); then every learner signs up, logs in and
   follows a chapter's JupyterHub link, whose nbgitpuller clones the course
   into their home. The hub must refuse a stranger, a stranger who signed up
   but was never approved, and a learner's name with a wrong password;
3. for each chapter in turn, every learner at the same moment opens the
   chapter as JupyterLab does (``POST /api/sessions``: a new kernel) and runs
   all its cells: every ``execute_request`` is sent at once on the kernel's
   websocket, as "Run All" does. All traffic goes through the hub's proxy,
   with the learner's own token. If a kernel's websocket closes, the learner
   reconnects as JupyterLab does, and the report counts it apart
   (scripts/classroom/kernel.py); the servers' websocket events and the
   machine's load, with their times, go into the report
   (scripts/classroom/evidence.py);
4. meanwhile a sampler reads, every 0.2 s, the resident memory (RSS) of each
   learner's process tree (server + kernel) and of the hub and proxy;
5. then, unless ``--no-every-chapter``, one learner runs every chapter in
   turn (each chapter's peak, against Binder's 2 GB);
6. stops the servers, the hub and the proxy, checks that no process it
   started is left and that its ports are free, deletes its temporary folder.

It writes ``benchmarks/results/classroom_cpu.json`` (the measurements) and
``benchmarks/results/classroom_cpu.md`` (tables and the Zero to JupyterHub
settings derived from them; the instructor guide includes it). Exit status 0
when every learner ran every chapter without an error, the hub refused all
three logins it must refuse, and nothing was left behind (processes, ports,
system accounts, the temporary folder). The last line printed is
``learners=N succeeded=N peak_rss_mib_per_learner=X``.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
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
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psutil
import yaml
from classroom import accounts, evidence
from classroom import kernel as kc
from classroom.report import (  # noqa: F401  (the tests read them here)
    BINDER_LIMIT_MIB,
    binder_markdown,
    markdown,
    quantile,
    round_up,
    run_record,
    sizing,
    summarise,
)
from classroom.sampler import Sampler
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CHP = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_CHAPTERS = ["03_parallel_heads", "04_what_heads_learn"]
LOG_COPY = ROOT / "_build" / "classroom-check" / "jupyterhub.log"
MARKER = "MHACOURSE_CLASSROOM_RUN"     # in the environment of every process it starts
# the repository, from _config.yml (nbgitpuller clones into a folder named after it)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
REPO_NAME = REPO_URL.removesuffix(".git").split("/")[-1]
MIB = 1024 * 1024


def say(msg: str) -> None:
    print(msg, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` (a closed socket's TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


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


async def check_refusals(api: Api, learner: str) -> list[dict]:
    """The hub must refuse a stranger, a stranger who signed up, and a
    learner's name with a wrong password (scripts/classroom/accounts.py)."""
    checks = await accounts.refusals(api.http, api.base, learner)
    for c in checks:
        say(f"  login as {c['who']} ({c['name']}): "
            + ("refused" if c["refused"] else "NOT REFUSED")
            + f", back on {c['landed']} with {c['message']!r}"
            + (f" (sign-up said {c['signed_up']!r})" if c["signed_up"] else ""))
    return checks


def notebook(stem: str) -> str:
    """Where nbgitpuller put the chapter, from the learner's home."""
    return f"{REPO_NAME}/chapters/{stem}.ipynb"


async def classroom(args, hub: Hub, tmp: Path) -> dict:
    api = Api(hub.url)
    ws_base = hub.url.replace("http://", "ws://")
    await wait_for_hub(api, hub)
    say(f"hub up at {hub.url} (pid {hub.proc.pid}); proxy API on 127.0.0.1:{hub.api_port}")
    sampler = Sampler(hub.proc.pid)
    sampler.start()
    names = hub.names
    t = time.perf_counter()
    learners = await start_servers(api, hub, names, tmp)
    spawn_s = time.perf_counter() - t
    say(f"{len(names)} servers started at once; each learner signed up, logged in and "
        f"followed the JupyterHub link, which pulled the course: {spawn_s:.1f} s (pull: "
        f"{max(v['pulled_s'] for v in learners.values()):.1f} s at most)")
    refusals = await check_refusals(api, names[0])
    await asyncio.sleep(2)
    sampler.sample()
    rounds = []
    for stem in args.chapters:
        sampler.phase = stem
        t0 = time.perf_counter()
        cells = kc.chapter_cells(ROOT, stem)
        results = await asyncio.gather(*(
            kc.run_chapter(api, ws_base, n, learners[n]["token"], stem, cells, notebook(stem),
                           t0, args.timeout)
            for n in names))
        wall = time.perf_counter() - t0
        sampler.sample()
        cpu = sampler.kernel_cpu_s(stem)
        for r in results:
            r["peak_rss_mib"] = sampler.peaks.get(stem, {}).get(r["learner"], 0.0)
            r["kernel_cpu_s"] = cpu.get(r["learner"], 0.0)
        ok = [r for r in results if r["error"] is None]
        say(f"{stem}: {len(names)} learners ran all {results[0]['cells']} cells at once: "
            f"{len(ok)} succeeded in {wall:.1f} s; kernel websocket reconnections: "
            f"{sum(len(r['reconnections']) for r in results)}; the client's largest lag "
            f"behind a kernel: {max(r.get('max_lag_s', 0) for r in results):.1f} s")
        for r in results:
            for e in r["reconnections"]:
                say(f"  {r['learner']} RECONNECTED at {e['at']} (t={e['t_s']} s, close code "
                    f"{e['close_code']}, reason {e['close_reason']!r}, after "
                    f"{e['after_messages']} messages, lag {e['max_lag_s']} s)")
            if r["error"]:
                say(f"  {r['learner']} FAILED: {r['error']}")
        rounds.append({"chapter": stem, "wall_s": wall, "learners": results})
        await asyncio.sleep(1)
    every = []
    if args.every_chapter:
        solo = names[0]
        for nb in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
            sampler.phase = f"solo-{nb.stem}"
            t0 = time.perf_counter()
            r = await kc.run_chapter(api, ws_base, solo, learners[solo]["token"], nb.stem,
                                     kc.chapter_cells(ROOT, nb.stem), notebook(nb.stem), t0,
                                     args.timeout)
            r["wall_s"] = time.perf_counter() - t0
            sampler.sample()
            r["peak_rss_mib"] = sampler.peaks.get(sampler.phase, {}).get(solo, 0.0)
            r["kernel_cpu_s"] = sampler.kernel_cpu_s(sampler.phase).get(solo, 0.0)
            say(f"  alone: {nb.stem}: {r['wall_s']:.1f} s, peak {r['peak_rss_mib']:.0f} MiB"
                + (f"  FAILED: {r['error']}" if r["error"] else ""))
            every.append(r)
    sampler.phase = "idle-after"
    await asyncio.sleep(1)
    sampler.sample()
    idle = sampler.peaks.get("idle", {})
    # stop the servers through the API, as the idle culler would
    t = time.perf_counter()
    await asyncio.gather(*(api.call("DELETE", f"/hub/api/users/{n}/server", hub.token)
                           for n in names))
    for _ in range(240):
        models = await asyncio.gather(*(api.call("GET", f"/hub/api/users/{n}", hub.token)
                                        for n in names))
        if not any(m.get("servers") for m in models):
            break
        await asyncio.sleep(0.5)
    stop_s = time.perf_counter() - t
    sampler.stop_event.set()
    sampler.join()
    api.http.close()
    return {"spawn_s": spawn_s, "stop_s": stop_s,
            "server_ready_s": {n: learners[n]["ready_s"] for n in names},
            "pull_s": max(v["pulled_s"] for v in learners.values()),
            "idle_server_rss_mib": idle, "hub_and_proxy_peak_rss_mib": sampler.hub_peak,
            "rounds": rounds, "every_chapter": every, "samples": sampler.samples,
            "refusals": refusals, "server_process_accounts": sampler.accounts,
            # a learner whose server process changed had their server die and restart
            "server_restarts": {n: len(p) - 1 for n, p in sampler.server_pids.items()
                                if len(p) > 1}}


def leftovers(run_id: str) -> list[str]:
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.pid == os.getpid():
            continue
        try:
            if p.environ().get(MARKER) == run_id:
                found.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:120]}")
        except psutil.Error:
            pass
    return found


def versions() -> dict:
    import importlib.metadata as md

    chp = json.loads((ROOT / "node_modules" / "configurable-http-proxy" / "package.json")
                     .read_text())["version"]
    return {"jupyterhub": md.version("jupyterhub"), "jupyterlab": md.version("jupyterlab"),
            "configurable-http-proxy": chp, "torch": md.version("torch")}


def binder_check(write: bool) -> int:
    """Run scripts/check_binder.py twice (a fresh environment, then reusing
    it) and record the environment's installed size and the times."""
    venv, repo = Path("/tmp/classroom-binder-venv"), Path("/tmp/classroom-binder-repo")
    out: dict = {"date": dt.date.today().isoformat(),
                 "machine": f"{os.cpu_count()} CPU cores, "
                            f"{psutil.virtual_memory().total / 1024 ** 3:.0f} GiB"}
    try:
        for kind, extra in (("fresh", []), ("reuse", ["--reuse"])):
            t = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, ROOT / "scripts" / "check_binder.py", "--venv", venv,
                 "--repo-copy", repo,
                 "--shot", Path(tempfile.gettempdir()) / "classroom-binder.png",
                 *extra], capture_output=True, text=True)
            secs = time.perf_counter() - t
            say(proc.stdout[-2500:] + proc.stderr[-1500:])
            if proc.returncode != 0:
                say(f"scripts/check_binder.py ({kind}) failed")
                return 1
            env_s = float(re.search(r"environment ready in (\d+) s", proc.stdout).group(1))
            out[kind] = {"total_s": round(secs, 1), "environment_s": env_s,
                         "open_chapter_1_s": round(secs - env_s, 1),
                         "torch_from_pytorch_index": "NOT reachable" not in proc.stdout}
        size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
        torch = sum(f.stat().st_size for d in venv.glob("lib/python*/site-packages/torch")
                    for f in d.rglob("*") if f.is_file())
        out["venv_mib"] = round(size / MIB)
        out["torch_mib"] = round(torch / MIB)
    finally:
        shutil.rmtree(venv, ignore_errors=True)
        shutil.rmtree(repo, ignore_errors=True)
    text = binder_markdown(out)
    say(text)
    if write:
        (RESULTS / "classroom_binder.json").write_text(json.dumps(out, indent=1) + "\n")
        (RESULTS / "classroom_binder.md").write_text(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learners", type=int, default=8)
    ap.add_argument("--chapters", nargs="+", default=DEFAULT_CHAPTERS,
                    help="chapter stems every learner runs at once, in turn")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per chapter")
    ap.add_argument("--every-chapter", action=argparse.BooleanOptionalAction, default=True,
                    help="then one learner runs every chapter (each chapter's peak)")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                    help="write benchmarks/results/classroom_cpu.{json,md}")
    ap.add_argument("--binder", action="store_true",
                    help="instead: size of the Binder environment and scripts/check_binder.py's "
                         "time to open chapter 1 (needs PyPI; writes classroom_binder.*)")
    args = ap.parse_args()
    if args.binder:
        return binder_check(args.write)
    if args.learners < 1:
        raise SystemExit(f"--learners must be at least 1, got {args.learners}")
    for stem in args.chapters:
        if not (ROOT / "chapters" / f"{stem}.ipynb").exists():
            raise SystemExit(f"no chapters/{stem}.ipynb (give stems like 03_parallel_heads)")
    missing = [str(p) for p in (BIN / "jupyterhub", BIN / "jupyterhub-singleuser", CHP)
               if not p.exists()]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make classroom-check` "
                         "(it installs requirements-classroom.txt and runs npm ci)")

    load_before = os.getloadavg()[0]
    run_id = uuid.uuid4().hex
    tmp = Path(tempfile.mkdtemp(prefix="classroom-check-"))
    names = [f"learner{i:02d}" for i in range(1, args.learners + 1)]
    hub = Hub(tmp, run_id, names)
    started = time.perf_counter()
    run, error = None, None
    load = evidence.LoadLog()
    load.start()
    dmesg_before = evidence.kernel_log()
    try:
        hub.start()
        run = asyncio.run(classroom(args, hub, tmp))
    except Exception as e:                                     # noqa: BLE001
        error = f"{type(e).__name__}: {e}"
    finally:
        hub.stop()
        time.sleep(1)
        left = leftovers(run_id)
        for line in left:            # only processes this run started (marked)
            pid = int(line.split()[0])
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        busy = [p for p in (hub.port, hub.hub_port, hub.api_port) if not port_is_free(p)]
        log = hub.log_tail(4000)
        events = evidence.websocket_events(hub.log.read_text(errors="replace")
                                           if hub.log.exists() else "")
        if hub.log.exists():      # kept for reading: _build/ is a build folder
            LOG_COPY.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(hub.log, LOG_COPY)
        accounts_left = accounts.remove_accounts(names)
        shutil.rmtree(tmp, ignore_errors=True)
        load.stop()
    total = time.perf_counter() - started
    say(f"stopped: hub, proxy and servers; leftover processes: {len(left)}; "
        f"ports still bound: {busy or 'none'}; system accounts left: "
        f"{accounts_left or 'none'}; {tmp} removed: {not tmp.exists()}")
    for e in events:
        if e["event"] in ("ping_timeout", "restored", "stale_replaced"):
            say(f"  hub log: {e['line']}")
    if error:
        say(f"FAILED: {error}\n--- hub log (tail; all of it in {LOG_COPY}) ---\n{log}")
    if run is None:
        say(f"learners={args.learners} succeeded=0 peak_rss_mib_per_learner=nan")
        return 1
    s = summarise(run, args.learners)
    s.update({"date": dt.date.today().isoformat(), "total_s": round(total, 1),
              "machine": f"{os.cpu_count()} CPU cores, "
                         f"{psutil.virtual_memory().total / 1024 ** 3:.0f} GiB",
              "versions": versions(), "chapters": args.chapters,
              # the machine may be shared: its load (1-minute average) before and after
              "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
              "load": load.summary(),
              "websocket_events": evidence.count(events),
              # processes the kernel killed for want of memory during the run
              "out_of_memory": evidence.out_of_memory(dmesg_before, evidence.kernel_log()),
              "leftover_processes": left, "ports_still_bound": busy,
              "leftover_accounts": accounts_left})
    # the evidence of each reconnection: the servers' log lines and the load around it
    for e in s["reconnections"]:
        e["hub_log_around"] = [x["line"] for x in events if x["at"] and abs(
            dt.datetime.fromisoformat(x["at"]).timestamp()
            - dt.datetime.fromisoformat(e["at"]).timestamp()) <= 5][:20]
        e["load_around"] = load.around(e["at"], 10)
    say(markdown(s))
    say(f"whole run: {total:.0f} s")
    if args.write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "classroom_cpu.json").write_text(json.dumps(s, indent=1) + "\n")
        (RESULTS / "classroom_cpu.md").write_text(markdown(s))
        say(f"wrote {RESULTS / 'classroom_cpu.json'} and classroom_cpu.md")
        with open(RESULTS / "classroom_runs.jsonl", "a") as f:   # one line a run
            f.write(json.dumps(run_record(s)) + "\n")
    refused = sum(r["refused"] for r in s["refusals"])
    ok = (s["succeeded"] == args.learners and not left and not busy and not tmp.exists()
          and not accounts_left and refused == len(s["refusals"]) == 3
          and all(r["ok"] for r in s["every_chapter"]))
    say(f"learners={s['learners']} succeeded={s['succeeded']} "
        f"reconnections={len(s['reconnections'])} "
        f"refused={refused}/{len(s['refusals'])} "
        f"peak_rss_mib_per_learner={s['peak_rss_mib_per_learner']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
