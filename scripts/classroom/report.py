"""The classroom check's report: its figures summarised, the Zero to
JupyterHub settings that follow from them (``sizing``), and the Markdown the
instructor guide includes (benchmarks/results/classroom_cpu.md,
classroom_binder.md). Pure functions of the measurements.
"""
from __future__ import annotations

import math

from classroom.evidence import utc_now

BINDER_LIMIT_MIB = 2048               # mybinder.org: 2 GB per user (its documented guarantee)



def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))] if xs else float("nan")


def round_up(x: float, step: float) -> float:
    return math.ceil(x / step - 1e-9) * step


def sizing(peak_mib: float, cpu_s: float, hub_mib: float, class_size: int = 100) -> dict:
    """The Zero to JupyterHub settings, from the measured figures.

    - memory guarantee: the worst learner's peak (server + kernel), rounded up
      to 256 MiB: a class runs the same chapter in the same minute, so every
      learner is at their peak at once and the nodes must hold all of them;
    - memory limit: twice the guarantee (room for a learner's own experiments
      in the exercises), at most Binder's 2 GiB, the budget chapters are held to;
    - CPU guarantee: the worst kernel's CPU seconds for a chapter spread over
      one minute (a class's "run all" finishing within about a minute when
      every learner gets it), rounded up to 0.05; CPU limit 1 (the kernels run
      PyTorch with one thread, OMP_NUM_THREADS=1);
    - a class: guarantee x learners, plus the hub and proxy as measured.
    """
    guarantee = round_up(peak_mib, 256)
    limit = min(2 * guarantee, BINDER_LIMIT_MIB)
    cpu_guarantee = max(0.05, round_up(cpu_s / 60, 0.05))
    mem_total_gib = (class_size * guarantee + hub_mib) / 1024
    cores = class_size * cpu_guarantee
    return {"memory_guarantee_mib": guarantee, "memory_limit_mib": limit,
            "cpu_guarantee": round(cpu_guarantee, 2), "cpu_limit": 1,
            "class_size": class_size, "class_memory_gib": round(mem_total_gib, 1),
            "class_cores": round(cores, 1),
            # example: nodes of 8 vCPU / 32 GiB, ~2 GiB and ~0.5 vCPU kept by the system
            "nodes_8cpu_32gib": max(math.ceil(mem_total_gib / 30), math.ceil(cores / 7.5))}


def summarise(run: dict, learners: int) -> dict:
    per_learner_peak: dict[str, float] = {}
    succeeded = set(f"learner{i:02d}" for i in range(1, learners + 1))
    for rnd in run["rounds"]:
        for r in rnd["learners"]:
            per_learner_peak[r["learner"]] = max(per_learner_peak.get(r["learner"], 0.0),
                                                 r["peak_rss_mib"])
            if r["error"] is not None or r["executed"] != r["cells"]:
                succeeded.discard(r["learner"])
    peaks = list(per_learner_peak.values())
    rounds = []
    for rnd in run["rounds"]:
        rs = rnd["learners"]
        good = [r for r in rs if r["error"] is None]
        col = lambda k: [r[k] for r in good if k in r]  # noqa: E731
        rounds.append({
            "chapter": rnd["chapter"], "cells": rs[0]["cells"], "wall_s": round(rnd["wall_s"], 1),
            "succeeded": len(good), "failed": len(rs) - len(good),
            "kernel_ready_s_median": round(quantile(col("kernel_ready_s"), 0.5), 1),
            "first_cell_s_median": round(quantile(col("first_cell_s"), 0.5), 1),
            "first_cell_s_max": round(max(col("first_cell_s"), default=float("nan")), 1),
            "last_cell_s_median": round(quantile(col("last_cell_s"), 0.5), 1),
            "last_cell_s_max": round(max(col("last_cell_s"), default=float("nan")), 1),
            "peak_rss_mib_median": round(quantile([r["peak_rss_mib"] for r in rs], 0.5)),
            "peak_rss_mib_max": round(max(r["peak_rss_mib"] for r in rs)),
            "kernel_cpu_s_max": round(max(r["kernel_cpu_s"] for r in rs), 1),
            "reconnections": sum(len(r["reconnections"]) for r in rs),
            "client_lag_s_max": round(max(r.get("max_lag_s", 0.0) for r in rs), 1),
        })
    idle = list(run["idle_server_rss_mib"].values())
    every = [{"chapter": r["chapter"], "wall_s": round(r["wall_s"], 1),
              "peak_rss_mib": round(r["peak_rss_mib"]), "kernel_cpu_s": round(r["kernel_cpu_s"], 1),
              "ok": r["error"] is None, "fits_binder": r["peak_rss_mib"] <= BINDER_LIMIT_MIB}
             for r in run["every_chapter"]]
    peak = max(peaks) if peaks else 0.0
    # the settings cover the worst chapter, whether run by the class or alone
    worst_cpu = max([r["kernel_cpu_s_max"] for r in rounds] + [r["kernel_cpu_s"] for r in every])
    worst_mib = max([peak] + [r["peak_rss_mib"] for r in every])
    return {
        "learners": learners, "succeeded": len(succeeded),
        "peak_rss_mib_per_learner": round(peak),
        "median_peak_rss_mib_per_learner": round(quantile(peaks, 0.5)),
        "idle_server_rss_mib_median": round(quantile(idle, 0.5)) if idle else None,
        "hub_and_proxy_peak_rss_mib": round(run["hub_and_proxy_peak_rss_mib"]),
        "servers_ready_s": round(run["spawn_s"], 1), "servers_stopped_s": round(run["stop_s"], 1),
        "nbgitpuller_s_max": round(run["pull_s"], 1),
        "rounds": rounds, "every_chapter": every,
        "sizing": sizing(worst_mib, worst_cpu, run["hub_and_proxy_peak_rss_mib"]),
        # a learner whose kernel websocket closed and who reconnected, as
        # JupyterLab does, and carried on: counted apart, not a failure
        "reconnections": [{"phase": "class", "learner": r["learner"],
                           "chapter": r["chapter"], **e}
                          for rnd in run["rounds"] for r in rnd["learners"]
                          for e in r["reconnections"]]
        + [{"phase": "alone", "learner": r["learner"], "chapter": r["chapter"], **e}
           for r in run["every_chapter"] for e in r["reconnections"]],
        "refusals": run["refusals"],
        # the account each learner's server process ran as
        "server_process_accounts": run["server_process_accounts"],
        "server_restarts": run["server_restarts"],
    }


def markdown(s: dict) -> str:
    z = s["sizing"]
    lines = [
        f"Measured on {s['date']} by `scripts/classroom_check.py` ({s['machine']}): "
        f"JupyterHub {s['versions']['jupyterhub']}, configurable-http-proxy "
        f"{s['versions']['configurable-http-proxy']}, JupyterLab "
        f"{s['versions']['jupyterlab']}, {s['learners']} learners on one machine "
        f"(its load average {s['load_average'][0]} before the run, "
        f"{s['load_average'][1]} after: other work shared its cores).",
        "",
        f"- {s['learners']} servers started at once, and each learner followed the chapter's "
        f"JupyterHub (nbgitpuller) link, which cloned the course into their home: "
        f"{s['servers_ready_s']} s in all (the slowest clone {s['nbgitpuller_s_max']} s); "
        f"an idle server (no kernel) holds {s['idle_server_rss_mib_median']} MiB; "
        f"the hub and proxy together at most {s['hub_and_proxy_peak_rss_mib']} MiB.",
        f"- **{s['succeeded']} of {s['learners']}** learners ran every chapter without an error; "
        f"peak memory of one learner (server + kernel): **{s['peak_rss_mib_per_learner']} MiB** "
        f"(median learner {s['median_peak_rss_mib_per_learner']} MiB).",
        f"- The hub's login (NativeAuthenticator: the class list approved at sign-up, a "
        f"password each) refused **{sum(r['refused'] for r in s['refusals'])} of "
        f"{len(s['refusals'])}** logins it must refuse: "
        + "; ".join(r["who"] for r in s["refusals"]) + ". " + server_accounts(s) + ".",
        f"- Kernel websockets: **{len(s['reconnections'])}** reconnection(s) (the learner's "
        f"client reconnected as JupyterLab does and carried on), "
        f"{s['websocket_events']['ping_timeout']} closed by a server for a late pong; the "
        f"test client was at most {max(r['client_lag_s_max'] for r in s['rounds'])} s behind "
        f"a kernel's messages (the servers allow 90 s for a pong); learners' servers that "
        f"died and restarted: {len(s['server_restarts'])}; kernels that died because "
        f"their port was taken: {s['websocket_events'].get('kernel_died', 0)}; processes "
        f"the kernel killed for want of memory: {len(s['out_of_memory'])}.",
        "",
        "| chapter (all learners at once) | cells | ok | kernel ready (median s) "
        "| first cell (median / max s) | last cell (median / max s) "
        "| peak MiB per learner (median / max) | kernel CPU s (max) | reconnections |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in s["rounds"]:
        lines.append(
            f"| {r['chapter']} | {r['cells']} | {r['succeeded']}/{r['succeeded'] + r['failed']} "
            f"| {r['kernel_ready_s_median']} "
            f"| {r['first_cell_s_median']} / {r['first_cell_s_max']} "
            f"| {r['last_cell_s_median']} / {r['last_cell_s_max']} "
            f"| {r['peak_rss_mib_median']} / {r['peak_rss_mib_max']} | {r['kernel_cpu_s_max']} "
            f"| {r['reconnections']} |")
    if s["every_chapter"]:
        lines += ["", "One learner, every chapter in turn (server + kernel, the whole "
                  "memory of a Binder session):", "",
                  "| chapter | seconds | peak MiB | kernel CPU s | under Binder's 2 GB "
                  "| under 1 GiB |",
                  "|---|---|---|---|---|---|"]
        yes = lambda ok: "yes" if ok else "**no**"  # noqa: E731
        for r in s["every_chapter"]:
            lines.append(f"| {r['chapter']} | {r['wall_s']} | {r['peak_rss_mib']} "
                         f"| {r['kernel_cpu_s']} | {yes(r['fits_binder'])} "
                         f"| {yes(r['peak_rss_mib'] <= 1024)} |")
    lines += [
        "", "Zero to JupyterHub settings derived from these figures "
        "(the rules are in `sizing()` of the script):", "",
        "```yaml", "singleuser:",
        "  memory:",
        f"    guarantee: {z['memory_guarantee_mib']}M   # the worst learner's peak, rounded up",
        f"    limit: {z['memory_limit_mib']}M       # twice that, at most Binder's 2 GB",
        "  cpu:",
        f"    guarantee: {z['cpu_guarantee']}       # worst chapter's kernel CPU seconds / 60 s",
        f"    limit: {z['cpu_limit']}",
        "  extraEnv:",
        '    OMP_NUM_THREADS: "1"   # as measured: one PyTorch thread per kernel',
        "```", "",
        f"A class of {z['class_size']}: {z['class_size']} x {z['memory_guarantee_mib']} MiB "
        f"+ the hub = **{z['class_memory_gib']} GiB** of memory and **{z['class_cores']} cores** "
        f"guaranteed, e.g. **{z['nodes_8cpu_32gib']} nodes of 8 vCPU / 32 GiB**.",
    ]
    return "\n".join(lines) + "\n"


def server_accounts(s: dict) -> str:
    """Who the learners' servers ran as, in words."""
    accts = s["server_process_accounts"]
    if accts and all(a == learner for learner, a in accts.items()):
        return ("Each learner's server ran as that learner's own system account, "
                "none as root")
    return f"The learners' servers ran as {', '.join(sorted(set(accts.values())))}"


def run_record(s: dict) -> dict:
    """One line of benchmarks/results/classroom_runs.jsonl: a run's outcome."""
    return {"at": utc_now(), "learners": s["learners"], "succeeded": s["succeeded"],
            "reconnections": len(s["reconnections"]),
            "server_ping_timeouts": s["websocket_events"]["ping_timeout"],
            "client_lag_s_max": max(r["client_lag_s_max"] for r in s["rounds"]),
            "refused": f"{sum(r['refused'] for r in s['refusals'])}/{len(s['refusals'])}",
            "rounds_wall_s": {r["chapter"]: r["wall_s"] for r in s["rounds"]},
            "total_s": s["total_s"], "load_1min_max": s["load"].get("load_1min_max"),
            "server_accounts": sorted(set(s["server_process_accounts"].values()))}


def binder_markdown(out: dict) -> str:
    index = ("torch came from download.pytorch.org" if out["fresh"]["torch_from_pytorch_index"]
             else "download.pytorch.org could not be reached from that machine, so "
                  "check_binder.py installed the same torch CPU wheel from a local copy; "
                  "everything else came from PyPI")
    return (f"Measured on {out['date']} by `scripts/classroom_check.py --binder` "
            f"({out['machine']}), which runs `scripts/check_binder.py` twice: the Binder "
            f"environment (binder/requirements.txt and the course's package) takes "
            f"**{out['venv_mib']} MiB** installed, {out['torch_mib']} MiB of it PyTorch's CPU "
            f"build. Creating it and opening chapter 1 took {out['fresh']['total_s']} s "
            f"({out['fresh']['environment_s']:.0f} s of installing; {index}). With the "
            f"environment already built, as a Binder image is, starting JupyterLab, opening "
            f"chapter 1 and running its first cells took "
            f"**{out['reuse']['open_chapter_1_s']} s**.\n")
