"""The machine a timing ran on, named the same way by the chapters and the
benchmarks (``benchmarks/``)."""
from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else what
    :mod:`platform` knows (``processor()``, then ``machine()``)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
