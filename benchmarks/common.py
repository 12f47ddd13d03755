"""Timing, memory and reporting helpers for the course's CPU benchmarks.

These are measuring scripts, not tests: they print tables and assert nothing
about speed. Three rules keep the numbers honest on a small, shared machine:

* **Timing** (:func:`time_interleaved`): one untimed warm-up call per method,
  then *rounds* in which every method runs once, in a fixed order, so a burst
  of load from other processes hits all methods of a round alike. We report
  the **median** of the rounds, and for two methods run in the same rounds
  the median of their per-round ratio (:func:`paired_ratio`).
* **Which clock** (:func:`default_clock`): with one thread we time the
  process's *CPU time* (``time.process_time``), which on an idle machine
  equals the wall-clock time of a one-thread call but does not count the
  time the process sat waiting while other jobs had the CPU. On a small
  shared machine that removes most of the noise. With more threads CPU time
  adds up the threads, so there we time the wall clock
  (``time.perf_counter``) and the tables say so. Both are kept per call.
* **Memory** (:func:`peak_extra_rss`): the peak *extra resident memory* of
  one call, measured in a fresh subprocess per case. ``tracemalloc`` sees
  NumPy but not PyTorch, and PyTorch keeps no allocator statistics on CPU, so
  we ask the kernel: reset the process's resident high-water mark
  (``/proc/self/clear_refs``, value 5), run the call, and read ``VmHWM``
  minus the resident size just before the call. That counts every byte the
  call touched (PyTorch, NumPy, BLAS work buffers, the returned tensors), not
  bytes merely reserved. Where ``clear_refs`` is not writable it falls back
  to the ``getrusage`` ``ru_maxrss`` difference, which can only under-count.
* **Context** (:func:`machine_info`, :func:`load_line`): every table is
  printed with the thread count and the load average at its start and end.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from mhacourse.machine import cpu_model

try:  # optional: lets NumPy's BLAS thread count be set at run time
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # pragma: no cover - then NumPy uses its own default
    threadpool_info = threadpool_limits = None


# ---------------------------------------------------------------- threads

_blas_limit = None  # keeps threadpoolctl's limit alive


def set_threads(n: int) -> None:
    """Run PyTorch (intra-op) and NumPy's BLAS on ``n`` threads."""
    global _blas_limit
    torch.set_num_threads(n)
    if threadpool_limits is not None:
        _blas_limit = threadpool_limits(limits=n, user_api="blas")


def numpy_blas() -> str:
    """NumPy's BLAS library and its thread count, as threadpoolctl sees it."""
    if threadpool_info is None:
        return "unknown (threadpoolctl not installed: thread count not set)"
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"
            and "torch" not in i.get("filepath", "")]
    return ", ".join(f"{i['internal_api']} {i.get('version')} "
                     f"({i['num_threads']} threads)" for i in libs) \
        or "none found"


# ---------------------------------------------------------------- timing

@dataclass
class Timing:
    """The timed calls of one method in one case (seconds)."""

    times: list[float] = field(default_factory=list)  # on the chosen clock
    wall: list[float] = field(default_factory=list)  # wall clock, same calls
    warmup: float | None = None
    skipped: str | None = None  # why it was not run, if it was not

    @property
    def n(self) -> int:
        return len(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    def quartiles(self) -> tuple[float, float]:
        if len(self.times) < 2:
            return self.median, self.median
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[0], q[2]


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def default_clock() -> str:
    """``"cpu"`` when PyTorch runs on one thread, else ``"wall"``."""
    return "cpu" if torch.get_num_threads() == 1 else "wall"


def clock_note(clock: str) -> str:
    return ("process CPU time (one thread: excludes time lost to other jobs)"
            if clock == "cpu" else "wall-clock time")


def _clock(fn: Callable[[], object], clock: str) -> tuple[float, float]:
    """Time one call: (seconds on ``clock``, wall seconds)."""
    c = CLOCKS[clock]
    w0, c0 = time.perf_counter(), c()
    fn()
    c1, w1 = c(), time.perf_counter()
    return c1 - c0, w1 - w0


def time_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    cell_budget_s: float,
    min_reps: dict[str, int] | int = 3,
    max_reps: int = 7,
    skip: dict[str, str] | None = None,
    warmup: Callable[[str, Callable[[], object]], object] | None = None,
    clock: str | None = None,
) -> dict[str, Timing]:
    """Time each function in ``fns`` by interleaved rounds.

    1. Warm-up: each function is called once, untimed for the statistics
       (its time is kept in ``Timing.warmup``). ``warmup(name, fn)``, if
       given, is what is called instead, e.g. to also check the output.
    2. Each method gets ``n = cell_budget_s / warm-up time`` repetitions,
       clipped to ``[min_reps, max_reps]``: slow cells get few repeats, so
       one slow method cannot eat the whole run.
    3. Rounds: in round ``r`` every method with ``n > r`` runs once, in the
       order of ``fns``.

    ``skip`` maps names to a reason; those are not run at all. ``clock``:
    ``"cpu"`` or ``"wall"`` (default: :func:`default_clock`).
    """
    skip = skip or {}
    clock = clock or default_clock()
    out = {name: Timing(skipped=skip.get(name)) for name in fns}
    live = [name for name in fns if name not in skip]
    for name in live:
        fn = fns[name]
        call = (lambda: warmup(name, fn)) if warmup else fn
        out[name].warmup = _clock(call, clock)[0]
    reps = {}
    for name in live:
        lo = min_reps if isinstance(min_reps, int) else min_reps.get(name, 1)
        fit = int(cell_budget_s / max(out[name].warmup, 1e-9))
        reps[name] = max(lo, min(max_reps, fit))
    for r in range(max(reps.values(), default=0)):
        for name in live:
            if reps[name] > r:
                t, wall = _clock(fns[name], clock)
                out[name].times.append(t)
                out[name].wall.append(wall)
    return out


def paired_ratio(a: Timing, b: Timing) -> tuple[float, float, float]:
    """Median, min and max over rounds of ``a[r] / b[r]``.

    ``a`` and ``b`` must come from the same :func:`time_interleaved` call, so
    that round ``r`` of each ran back to back under the same load.
    """
    k = min(a.n, b.n)
    if k == 0:
        nan = float("nan")
        return nan, nan, nan
    ratios = [a.times[i] / b.times[i] for i in range(k)]
    return statistics.median(ratios), min(ratios), max(ratios)


# ---------------------------------------------------------------- memory

def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # 5: reset the peak RSS to the current RSS
        return True
    except OSError:
        return False


def _malloc_trim() -> None:
    """Give freed heap memory back to the OS, so the call cannot re-use
    already-resident pages and look smaller than it is (glibc only)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def measure_call_rss(fn: Callable[[], object]) -> dict:
    """Peak extra resident bytes of one call of ``fn``, in *this* process.

    Meant to run in a fresh subprocess (see :func:`peak_extra_rss`).
    """
    gc.collect()
    _malloc_trim()
    exact = _reset_high_water_mark()
    before_rss = _status_kib("VmRSS")
    before_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = fn()
    after_hwm = _status_kib("VmHWM")
    after_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del result
    if exact and after_hwm is not None and before_rss is not None:
        extra_kib, how = after_hwm - before_rss, "VmHWM - VmRSS"
    else:
        extra_kib, how = after_max - before_max, "ru_maxrss delta (lower bound)"
    return {"extra_bytes": 1024 * max(extra_kib, 0), "how": how,
            "baseline_bytes": 1024 * (before_rss or before_max)}


def peak_extra_rss(argv: Sequence[str], timeout_s: float = 300) -> dict:
    """Run ``python argv...`` in a subprocess that prints one JSON line from
    :func:`measure_call_rss`; return that dict (or ``{"error": ...}``)."""
    try:
        done = subprocess.run([sys.executable, *argv], capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
    return {"error": f"exit {done.returncode}: {' '.join(tail)[:200]}"}


# ---------------------------------------------------------------- context

def load_avg() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def load_line(threads: int, load_start: str, clock: str | None = None) -> str:
    """The line printed above every table: threads, clock, load at start/end."""
    clock = clock or default_clock()
    timed = "" if clock == "none" else f"timed: {clock_note(clock)} · "
    return (f"*threads: {threads} · {timed}load average (1/5/15 min) at "
            f"start {load_start}, at end {load_avg()} · "
            f"{os.cpu_count()} logical CPUs*")


def machine_info() -> list[tuple[str, str]]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem = _meminfo_gib()
    return [
        ("date (UTC)", _dt.datetime.now(_dt.timezone.utc)
         .strftime("%Y-%m-%d %H:%M")),
        ("CPU", cpu_model()),
        ("logical CPUs (usable)", f"{os.cpu_count()} ({usable})"),
        ("memory", f"{mem:.0f} GiB" if mem else "unknown"),
        ("PyTorch", f"{torch.__version__}, default threads "
         f"{torch.get_num_threads()}, CPU capability "
         f"{torch.backends.cpu.get_cpu_capability()}, "
         f"MKL {'yes' if torch.backends.mkl.is_available() else 'no'}"),
        ("NumPy", f"{np.__version__}, BLAS {numpy_blas()}"),
        ("Python", f"{platform.python_version()} on {platform.system()} "
         f"{platform.release()}"),
        ("load average (1/5/15 min) at start", load_avg()),
    ]


def _meminfo_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- output

def md_table(headers: Sequence[str], rows: Iterable[Sequence[object]],
             right: Sequence[bool] | None = None) -> str:
    """A GitHub/MyST markdown table; numbers are right-aligned by default."""
    rows = [[str(c) for c in r] for r in rows]
    if right is None:
        right = [i > 0 for i in range(len(headers))]
    rule = ["---:" if r else ":---" for r in right]
    lines = [headers, rule, *rows]
    return "\n".join("| " + " | ".join(map(str, l)) + " |" for l in lines)


class Report:
    """Markdown printed as it is produced, and written to a file at the end."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        text = text.rstrip() + "\n"
        self.parts.append(text)
        print(text, flush=True)

    def write(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(self.parts))


def fmt_ms(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "–"
    ms = seconds * 1e3
    digits = 0 if ms >= 100 else 1 if ms >= 10 else 2
    return f"{ms:.{digits}f}"


def fmt_bytes(n: float) -> str:
    if n < 2**20:
        return f"{n / 2**10:.0f} KiB"
    if n < 2**30:
        return f"{n / 2**20:.1f} MiB"
    return f"{n / 2**30:.2f} GiB"


# ---------------------------------------------------------------- JSON results

_TO_MIB = {"B": 2**-20, "KiB": 2**-10, "MiB": 1.0, "GiB": 2**10}
JSON_UNITS = ("cells are numbers where the markdown has one: times in ms, sizes in MiB, "
              "ratios and counts as written; null where the markdown says skip, – or n/a; "
              "other cells stay strings")


def json_cell(cell: str):
    """One markdown table cell as JSON: '1.23' -> 1.23, '10.6 ms' -> 10.6,
    '16' -> 16, '1.15 GiB' -> 1177.6 (MiB), 'skip' / '–' / 'n/a' -> None,
    else the text."""
    text = cell.strip().strip("*")
    if text in ("skip", "–", "-", "n/a", ""):
        return None if text else ""
    value, _, unit = text.partition(" ")
    digits = value.replace(",", "")
    try:
        number = int(digits) if digits.lstrip("-").isdigit() else float(digits)
    except ValueError:
        return text
    if unit == "" or unit == "ms":
        return number
    if unit in _TO_MIB:
        return number * _TO_MIB[unit]
    return text


def md_to_json(text: str, source: str) -> dict:
    """The pipe tables of a benchmark's markdown report as JSON:
    ``{"source", "units", "machine": {name: value}, "tables": {heading:
    [{column: cell}]}}``; each table is keyed by the heading above it, and the
    machine is the first table (the one whose first column is ``machine``)."""
    tables, heading, rows = {}, "", []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if rows:
            body = [r for r in rows[1:] if set("".join(r)) - set(":- ")]  # drop the rule
            tables[heading] = [dict(zip(rows[0], r)) for r in body]
            rows = []
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
    machine = next(({r["machine"]: r[""] for r in t} for t in tables.values()
                    if t and "machine" in t[0]), {})
    return {
        "source": source, "units": JSON_UNITS, "machine": machine,
        "tables": {k: [{c: (v.strip("*") if c in ("method", "") else json_cell(v))
                            for c, v in r.items()}
                       for r in t]
                   for k, t in tables.items() if not (t and "machine" in t[0])},
    }


def write_json_from_markdown(md_path: str, json_path: str | None = None) -> str:
    """Write ``md_path``'s tables as JSON next to it (``.md`` -> ``.json``)."""
    json_path = json_path or os.path.splitext(md_path)[0] + ".json"
    with open(md_path) as f:
        data = md_to_json(f.read(), os.path.relpath(md_path))
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return json_path
