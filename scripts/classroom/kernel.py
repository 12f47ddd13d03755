"""A learner's notebook, opened and run as JupyterLab does.

JupyterLab opens a notebook with ``POST /api/sessions`` (a new kernel), then
talks to the kernel over one websocket, ``/api/kernels/<id>/channels``, with
a ``session_id`` of its own (its client id). "Run All" sends every cell's
``execute_request`` at once and the kernel queues them.

When that websocket closes while the kernel is still alive, JupyterLab does
not give up: its ``KernelConnection`` reconnects with the same client id,
the first try at once and then after a random wait in a growing range
(0 to 2**attempt - 1 seconds), at most 7 tries in a row, and asks for the
kernel's info again. The single-user server keeps, for that client id, every
message the kernel sends while no websocket is open and replays them when
the same client reconnects, so the cells' replies are not lost. This client
does the same, and reports every reconnection (when, the close code and
reason, after how many messages) apart from the failures.

Pings. The single-user server pings every kernel websocket every 30 s and
closes one whose pong is more than 90 s late ("WebSocket ping timeout" in
its log). A browser answers a ping in its network stack, however far behind
the page's JavaScript is with the messages before it. Tornado's websocket
client does not: it hands messages over through a queue that holds one, and
reads no further frame, so answers no ping, until the program has taken
every message before it; a test client that stalls loses its socket where a
browser would not (scripts/classroom/pong_experiment.py shows both on the
real hub). So this client, like a browser, takes every frame as it arrives
(``pump=True``: a callback puts it on a queue of its own, unbounded), and
pongs go out at once; ``pump=False`` is tornado's queue, kept for that
experiment. Every message's lag (its arrival minus the time the kernel
stamped on it) is measured: how far behind the client is.

A reconnection cannot save a kernel that died: its websocket closes and
every reconnection is answered 404 "Kernel does not exist", as JupyterLab's
would be, and that learner fails (the flake of issue 30 was such a kernel:
see scripts/classroom_check.py, ``--KernelManager.transport=ipc``).
"""
from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import os
import random
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import nbformat
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

MIB = 1024 * 1024
RECONNECT_LIMIT = 7        # JupyterLab's KernelConnection._reconnectLimit
OUTPUTS = ("display_data", "execute_result", "stream", "error", "update_display_data")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def chapter_cells(root: Path, stem: str) -> list[str]:
    nb = nbformat.read(root / "chapters" / f"{stem}.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def message(msg_type: str, content: dict, session: str, channel: str = "shell") -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": session,
                       "username": "learner", "version": "5.3", "date": utc_now()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel,
            "buffers": []}


class KernelSocket:
    """The kernel's websocket, reconnected as JupyterLab reconnects it."""

    def __init__(self, url: str, token: str, t0: float, pump: bool = True):
        self.client_id = uuid.uuid4().hex       # JupyterLab's clientId: kept on reconnect
        self.url = f"{url}?session_id={self.client_id}"
        self.token, self.t0, self.pump = token, t0, pump
        self.ws = None
        self.inbox: asyncio.Queue | None = None
        # messages read while waiting for a kernel_info_reply (after a
        # reconnection: the replayed replies), handed out first by next()
        self.backlog: collections.deque = collections.deque()
        self.messages = 0
        self.max_lag_s = 0.0
        self.reconnections: list[dict] = []
        self.attempt = 0

    async def connect(self) -> None:
        req = HTTPRequest(self.url, headers={"Authorization": f"token {self.token}"},
                          connect_timeout=120, request_timeout=120)
        if self.pump:     # every frame taken as it arrives: pings answered at once
            self.inbox = asyncio.Queue()
            self.ws = await websocket_connect(req, max_message_size=256 * MIB,
                                              on_message_callback=self.inbox.put_nowait)
        else:             # tornado's own queue of one message
            self.ws = await websocket_connect(req, max_message_size=256 * MIB)
        self.attempt = 0                        # JupyterLab: reset once connected

    async def send(self, msg: dict) -> None:
        await self.ws.write_message(json.dumps(msg))

    async def kernel_info(self, deadline: float) -> None:
        """kernel_info_request, read until its reply (as on every (re)connect)."""
        info = message("kernel_info_request", {}, self.client_id)
        await self.send(info)
        while True:
            got = await self.read(deadline)
            if got is None:         # closed again: the reconnection asked for it anew
                return
            msg, size = got
            if msg["parent_header"].get("msg_id") == info["header"]["msg_id"] \
                    and msg["header"]["msg_type"] == "kernel_info_reply":
                return
            self.backlog.append((msg, size))

    async def receive(self) -> str | bytes | None:
        return await (self.inbox.get() if self.pump else self.ws.read_message())

    async def next(self, deadline: float) -> tuple[dict, int]:
        """The next message and its size in bytes; reconnects on a close."""
        while True:
            if self.backlog:
                return self.backlog.popleft()
            got = await self.read(deadline)
            if got is not None:
                return got

    async def read(self, deadline: float) -> tuple[dict, int] | None:
        """The next message off the websocket; None once it closed and the
        client reconnected (what the reconnection read is in the backlog)."""
        left = deadline - time.perf_counter()
        if left <= 0:
            raise asyncio.TimeoutError
        raw = await asyncio.wait_for(self.receive(), left)
        if raw is None:
            await self.reconnect(deadline)
            return None
        self.messages += 1
        msg = json.loads(raw)
        sent = msg["header"].get("date")
        if sent:
            lag = dt.datetime.now(dt.timezone.utc) - dt.datetime.fromisoformat(sent)
            self.max_lag_s = max(self.max_lag_s, lag.total_seconds())
        return msg, len(raw)

    async def reconnect(self, deadline: float) -> None:
        event = {"at": utc_now(), "t_s": round(time.perf_counter() - self.t0, 1),
                 "close_code": self.ws.close_code, "close_reason": self.ws.close_reason,
                 "after_messages": self.messages, "max_lag_s": round(self.max_lag_s, 1),
                 "load_1min": round(os.getloadavg()[0], 1)}
        self.reconnections.append(event)
        closed = time.perf_counter()
        while True:
            if self.attempt >= RECONNECT_LIMIT:
                raise RuntimeError(f"the kernel's websocket closed ({_close(event)}) and "
                                   f"{RECONNECT_LIMIT} reconnections failed")
            wait = random.uniform(0, 2 ** self.attempt - 1)
            self.attempt += 1
            if time.perf_counter() + wait > deadline:
                raise asyncio.TimeoutError
            await asyncio.sleep(wait)
            try:
                await self.connect()
                break
            except Exception as e:                             # noqa: BLE001
                event.setdefault("failed_tries", []).append(f"{type(e).__name__}: {e}")
        event["reconnected_after_s"] = round(time.perf_counter() - closed, 2)
        await self.kernel_info(deadline)

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()


def _close(event: dict) -> str:
    return (f"code {event['close_code']}, reason {event['close_reason']!r}, at "
            f"{event['at']}")


async def run_chapter(api, ws_base: str, name: str, token: str, stem: str, cells: list[str],
                      notebook: str, t0: float, timeout: float, pump: bool = True) -> dict:
    """Open ``notebook`` as JupyterLab does and Run All; times are from ``t0``."""
    result = {"learner": name, "chapter": stem, "cells": len(cells), "executed": 0,
              "error": None, "reconnections": []}
    user = f"/user/{quote(name)}"
    session = await api.call("POST", f"{user}/api/sessions", token, {
        "path": notebook, "type": "notebook", "name": "", "kernel": {"name": "python3"}})
    sock = KernelSocket(f"{ws_base}{user}/api/kernels/{session['kernel']['id']}/channels",
                        token, t0, pump)
    deadline = time.perf_counter() + timeout
    try:
        await sock.connect()
        await sock.kernel_info(deadline)
        result["kernel_ready_s"] = time.perf_counter() - t0
        pending = {}
        for i, src in enumerate(cells):         # Run All: the kernel queues them
            m = message("execute_request", {"code": src, "silent": False, "store_history": True,
                                            "user_expressions": {}, "allow_stdin": False,
                                            "stop_on_error": True}, sock.client_id)
            pending[m["header"]["msg_id"]] = i
            await sock.send(m)
        output_bytes = 0
        while pending:
            msg, size = await sock.next(deadline)
            kind = msg["header"]["msg_type"]
            if kind in OUTPUTS:
                output_bytes += size
            parent = msg["parent_header"].get("msg_id")
            if kind == "execute_reply" and parent in pending:
                i = pending.pop(parent)
                now = time.perf_counter() - t0
                c = msg["content"]
                if c["status"] != "ok":
                    result["error"] = (f"cell {i}: {c['status']} {c.get('ename', '')}: "
                                       f"{str(c.get('evalue', ''))[:200]}")
                    break
                result["executed"] += 1
                result.setdefault("first_cell_s", now)
                result["last_cell_s"] = now
        result["output_mib"] = output_bytes / MIB
    except asyncio.TimeoutError:
        result["error"] = f"timed out after {timeout:.0f} s ({result['executed']} cells run)"
    except Exception as e:                                     # noqa: BLE001
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        result["reconnections"] = sock.reconnections
        result["max_lag_s"] = round(sock.max_lag_s, 2)
        sock.close()
        try:        # closing the notebook: JupyterLab shuts its kernel down
            await api.call("DELETE", f"{user}/api/sessions/{session['id']}", token)
        except Exception as e:                                 # noqa: BLE001
            result["error"] = result["error"] or f"could not close the session: {e}"
    return result
