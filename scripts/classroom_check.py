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
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
from classroom import accounts, evidence
from classroom import kernel as kc
from classroom.hub import (  # noqa: F401  (DEFAULT_CHAPTERS: the tests read it here)
    BIN,
    CHP,
    DEFAULT_CHAPTERS,
    MARKER,
    REPO_NAME,
    ROOT,
    Api,
    Hub,
    say,
    start_servers,
    wait_for_hub,
)
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

RESULTS = ROOT / "benchmarks" / "results"
LOG_COPY = ROOT / "_build" / "classroom-check" / "jupyterhub.log"
MIB = 1024 * 1024


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` (a closed socket's TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


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
