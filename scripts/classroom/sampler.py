"""The memory sampler: every ``SAMPLE_S`` seconds, the resident memory of
each learner's server and its kernel, and of the hub and its proxy; the CPU
seconds of each kernel; who each server runs as, and its process ids (a
changed id is a server that died and restarted)."""
from __future__ import annotations

import threading

import psutil

SAMPLE_S = 0.2
MIB = 1024 * 1024



class Sampler(threading.Thread):
    """Every SAMPLE_S: RSS of each learner's server + its children (the
    kernel), and of the hub + proxy. Peaks are kept per phase."""

    def __init__(self, hub_pid: int):
        super().__init__(daemon=True)
        self.hub_pid = hub_pid
        self.phase = "idle"
        self.peaks: dict[str, dict[str, float]] = {}     # phase -> learner -> MiB
        self.hub_peak = 0.0
        self.cpu: dict[str, float] = {}                  # kernel pid -> CPU seconds
        self.kernel_owner: dict[int, tuple[str, str]] = {}
        self.stop_event = threading.Event()
        self.samples = 0
        self.accounts: dict[str, str] = {}               # learner -> who their server runs as
        self.server_pids: dict[str, set[int]] = {}       # learner -> their server's pid(s)

    @staticmethod
    def tree_rss(p: psutil.Process) -> tuple[float, list[psutil.Process]]:
        procs = [p] + p.children(recursive=True)
        total = 0
        for q in procs:
            try:
                total += q.memory_info().rss
            except psutil.Error:
                pass
        return total / MIB, procs

    def sample(self) -> None:
        try:
            hub = psutil.Process(self.hub_pid)
            children = hub.children()
        except psutil.Error:
            return
        hub_total = hub.memory_info().rss
        phase = self.peaks.setdefault(self.phase, {})
        for child in children:
            try:
                user = child.environ().get("JUPYTERHUB_USER")
            except psutil.Error:
                continue
            if not user:            # the proxy
                try:
                    hub_total += child.memory_info().rss
                except psutil.Error:
                    pass
                continue
            self.server_pids.setdefault(user, set()).add(child.pid)
            try:
                self.accounts[user] = child.username()
            except psutil.Error:
                pass
            mib, procs = self.tree_rss(child)
            phase[user] = max(phase.get(user, 0.0), mib)
            for q in procs[1:]:
                try:
                    t = q.cpu_times()
                    self.cpu[f"{self.phase}/{user}/{q.pid}"] = t.user + t.system
                except psutil.Error:
                    pass
        self.hub_peak = max(self.hub_peak, hub_total / MIB)
        self.samples += 1

    def run(self) -> None:
        while not self.stop_event.wait(SAMPLE_S):
            self.sample()

    def kernel_cpu_s(self, phase: str) -> dict[str, float]:
        """Learner -> CPU seconds of their kernel(s) during ``phase``."""
        out: dict[str, float] = {}
        for key, secs in self.cpu.items():
            ph, user, _ = key.split("/")
            if ph == phase:
                out[user] = out.get(user, 0.0) + secs
        return out
