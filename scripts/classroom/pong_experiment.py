"""What a late pong does to a kernel's websocket, on the real hub.

    .venv/bin/python scripts/classroom/pong_experiment.py        # about 2 minutes

The single-user server pings each kernel websocket and closes one whose pong
is late ("WebSocket ping timeout after N ms" in its log): every 30 s, 90 s
allowed, in a class; here every 2 s with 4 s allowed (the same code path,
``ServerApp.tornado_settings``), so a pause of 12 s is enough. One learner
runs a cell that prints for 10 s, and their client stops reading for 12 s
after the first message, as a test client starved of CPU, or a busy
program, would. Twice:

- ``pump=False``: tornado's websocket client, which answers a ping only once
  the program has taken every message before it (its queue holds one);
- ``pump=True``: the classroom check's client (scripts/classroom/kernel.py),
  which takes every frame as it arrives, as a browser does.

It prints, for each, the server's ping timeouts, the client's reconnections
(with the close code), and whether the cell's reply still arrived (the server
keeps a closed client's messages and replays them when it reconnects). The
hub, the proxy and the server run on 127.0.0.1 and are stopped at the end.
"""
from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

# run as a script: the package ``classroom`` is found from scripts/
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from classroom import accounts, evidence  # noqa: E402
from classroom import kernel as kc  # noqa: E402
from classroom.hub import Api, Hub, start_servers, wait_for_hub  # noqa: E402

FAST_PINGS = ["--ServerApp.tornado_settings={'ws_ping_interval': 2000, 'ws_ping_timeout': 4000}"]
CELL = "import time\nfor i in range(40):\n    print(i, flush=True)\n    time.sleep(0.25)"
PAUSE_S = 12


async def slow_reader(api, ws_base: str, name: str, token: str, pump: bool) -> dict:
    """Open a notebook, run CELL, read one message, pause, then read on."""
    user = f"/user/{quote(name)}"
    session = await api.call("POST", f"{user}/api/sessions", token, {
        "path": f"pong-{uuid.uuid4().hex[:6]}.ipynb", "type": "notebook", "name": "",
        "kernel": {"name": "python3"}})
    t0 = time.perf_counter()
    sock = kc.KernelSocket(f"{ws_base}{user}/api/kernels/{session['kernel']['id']}/channels",
                           token, t0, pump)
    deadline = t0 + 120
    out = {"pump": pump, "outputs": 0, "reply": None, "error": None}
    try:
        await sock.connect()
        await sock.kernel_info(deadline)
        m = kc.message("execute_request", {"code": CELL, "silent": False,
                                           "store_history": False, "user_expressions": {},
                                           "allow_stdin": False, "stop_on_error": True},
                       sock.client_id)
        await sock.send(m)
        await sock.next(deadline)
        out["pause_from"] = evidence.utc_now()
        await asyncio.sleep(PAUSE_S)          # the program is busy: nothing is read
        out["pause_to"] = evidence.utc_now()
        while out["reply"] is None:
            msg, _ = await sock.next(deadline)
            if msg["parent_header"].get("msg_id") != m["header"]["msg_id"]:
                continue
            if msg["header"]["msg_type"] == "stream":
                out["outputs"] += msg["content"]["text"].count("\n")
            elif msg["header"]["msg_type"] == "execute_reply":
                out["reply"] = msg["content"]["status"]
    except Exception as e:                                     # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        out["reconnections"] = sock.reconnections
        sock.close()
        await api.call("DELETE", f"{user}/api/sessions/{session['id']}", token)
    return out


async def experiment(hub: Hub, tmp: Path) -> list[dict]:
    api = Api(hub.url)
    await wait_for_hub(api, hub)
    learners = await start_servers(api, hub, hub.names, tmp)
    name = hub.names[0]
    ws_base = hub.url.replace("http://", "ws://")
    results = []
    for pump in (False, True):
        r = await slow_reader(api, ws_base, name, learners[name]["token"], pump)
        results.append(r)
        await asyncio.sleep(1)
    await api.call("DELETE", f"/hub/api/users/{name}/server", hub.token)
    await asyncio.sleep(2)
    api.http.close()
    return results


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="classroom-pong-"))
    names = ["learner01"]
    hub = Hub(tmp, uuid.uuid4().hex, names, server_args=FAST_PINGS)
    results, error = [], None
    try:
        hub.start()
        results = asyncio.run(experiment(hub, tmp))
    except Exception as e:                                     # noqa: BLE001
        error = f"{type(e).__name__}: {e}"
    finally:
        hub.stop()
        events = evidence.websocket_events(hub.log.read_text(errors="replace")
                                           if hub.log.exists() else "")
        accounts.remove_accounts(names)
        shutil.rmtree(tmp, ignore_errors=True)
    if error:
        print(f"FAILED: {error}")
        return 1
    for r in results:
        timeouts = [e for e in events if e["event"] == "ping_timeout"
                    and r["pause_from"][:19] <= e["at"][:19] <= r["pause_to"][:19]]
        print(f"client {'pump (as a browser)' if r['pump'] else 'tornado queue of one'}: "
              f"paused {PAUSE_S} s from {r['pause_from']}; server ping timeouts in the "
              f"pause: {len(timeouts)}; reconnections: {len(r['reconnections'])}; "
              f"cell reply: {r['reply']}; printed lines received: {r['outputs']} of 40"
              + (f"; error: {r['error']}" if r["error"] else ""))
        for e in timeouts:
            print(f"  server: {e['line']}")
        for e in r["reconnections"]:
            print(f"  client: closed at {e['at']} (code {e['close_code']}, reason "
                  f"{e['close_reason']!r}), reconnected {e.get('reconnected_after_s')} s later")
    return 0


if __name__ == "__main__":
    sys.exit(main())
