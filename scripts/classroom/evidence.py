"""What the machine and the servers did during a run, with times: the
evidence a failure or a reconnection is read against.

- ``LoadLog``: every second, the load average, the machine's CPU use and the
  test client's own CPU use (the client is one process for every learner);
- ``kernel_log``: the machine's kernel log (``dmesg``), for processes the
  kernel killed for want of memory during the run;
- ``websocket_events``: from the hub's log (the hub, the proxy and every
  learner's server write there), each kernel websocket the servers closed
  for a missing pong ("WebSocket ping timeout"), each one that closed
  ("Starting buffering"), each reconnection that got its messages back
  ("Replaying"), the proxy's errors, and kernels that died because their
  port was taken ("Address already in use", "died, removing from map").
"""
from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
import threading

import psutil

# one pattern per event; the log lines carry their own times
EVENTS = {
    "ping_timeout": re.compile(r"WebSocket ping timeout after (\d+) ms"),
    "ws_closed": re.compile(r"Starting buffering for (\S+)"),
    "restored": re.compile(r"Restoring connection for (\S+)"),
    "replayed": re.compile(r"Replaying (\d+) buffered messages"),
    "stale_replaced": re.compile(r"Replacing stale connection"),
    "proxy_error": re.compile(r"\[ConfigProxy\] \S*error\S*: (.*)"),
    # a kernel that could not bind its port (TCP transport), and its end
    "port_in_use": re.compile(r"ZMQError: Address already in use \(addr='([^']+)'\)"),
    "kernel_died": re.compile(r"Kernel (\S+) died, removing from map"),
}
# "[W 2026-11-26 19:54:52.896 ServerApp]" (Python) or "2026-11-26T19:55:32.999Z" (the proxy)
STAMP = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d\.\d+)")
# who wrote a line: "ServerApp" (a learner's server), "JupyterHub", "ConfigProxy"
SOURCE = re.compile(r"\b(ServerApp|JupyterHub|ConfigProxy)\b")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class LoadLog(threading.Thread):
    """Samples, every ``every`` seconds: the time (UTC), the 1-minute load
    average, the CPU busy share of the whole machine (%) and of this process."""

    def __init__(self, every: float = 1.0):
        super().__init__(daemon=True)
        self.every = every
        self.rows: list[dict] = []
        self.stop_event = threading.Event()
        self.me = psutil.Process()

    def run(self) -> None:
        psutil.cpu_percent(None)
        self.me.cpu_percent(None)
        while not self.stop_event.wait(self.every):
            self.rows.append({"at": utc_now(), "load_1min": round(psutil.getloadavg()[0], 1),
                              "cpu_percent": psutil.cpu_percent(None),
                              "client_cpu_percent": self.me.cpu_percent(None)})

    def stop(self) -> None:
        self.stop_event.set()
        self.join()

    def summary(self) -> dict:
        if not self.rows:
            return {}
        load = [r["load_1min"] for r in self.rows]
        busy = [r["cpu_percent"] for r in self.rows]
        return {"samples": len(self.rows), "load_1min_max": max(load),
                "load_1min_mean": round(sum(load) / len(load), 1),
                "cpu_percent_mean": round(sum(busy) / len(busy), 1),
                "seconds_cpu_saturated": sum(b >= 99 for b in busy) * self.every}

    def around(self, at: str, seconds: float = 10) -> list[dict]:
        """The samples within ``seconds`` of ``at`` (an ISO time)."""
        t = dt.datetime.fromisoformat(at).timestamp()
        return [r for r in self.rows
                if abs(dt.datetime.fromisoformat(r["at"]).timestamp() - t) <= seconds]


def websocket_events(log: str) -> list[dict]:
    """The kernel websocket events of a hub log, in order, with their times."""
    out = []
    for line in log.splitlines():
        for kind, pattern in EVENTS.items():
            m = pattern.search(line)
            if not m:
                continue
            stamp, source = STAMP.search(line), SOURCE.search(line)
            out.append({"event": kind, "at": f"{stamp.group(1)}T{stamp.group(2)}" if stamp
                        else None, "source": source.group(1) if source else None,
                        "detail": m.group(1) if m.groups() else "", "line": line.strip()[:300]})
    return out


def count(events: list[dict]) -> dict[str, int]:
    return {kind: sum(e["event"] == kind for e in events) for kind in EVENTS}



def kernel_log() -> list[str]:
    """The kernel's log lines (``dmesg``); [] where it cannot be read."""
    if shutil.which("dmesg") is None:
        return []
    proc = subprocess.run(["dmesg"], capture_output=True, text=True)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def out_of_memory(before: list[str], after: list[str]) -> list[str]:
    """The lines ``after`` added to ``before`` that tell of a process killed
    for want of memory."""
    new = after[len(before):] if after[:len(before)] == before else after
    return [line for line in new if re.search(r"out of memory|oom-kill|killed process", line,
                                              re.I)]
