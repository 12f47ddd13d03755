"""scripts/busy.py, the busy machine that issue 49's CI check runs beside:
its loops really take CPU while the command runs, the command's status comes
back, and no loop outlives it."""
from __future__ import annotations

import subprocess
import sys
import time

from site_browser import ROOT

BUSY = ROOT / "scripts" / "busy.py"

PROBE = "import sys, time; time.sleep(1); sys.exit(7)"  # a command that fails with 7


def test_the_loops_take_cpu_and_the_status_comes_back():
    start = time.monotonic()
    run = subprocess.run([sys.executable, str(BUSY), "2", "--", sys.executable, "-c", PROBE],
                         capture_output=True, text=True, timeout=60)
    wall = time.monotonic() - start
    assert run.returncode == 7, run.stdout + run.stderr
    assert "beside 2 loops and exited 7" in run.stdout, run.stdout
    left = subprocess.run(["pgrep", "-f", str(BUSY)], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"busy loops outlived the command: {left.stdout}"
    assert wall < 30, wall


def test_the_loops_spin():
    """Two loops for a second use well over half a CPU second between them
    (a loop that slept would use none)."""
    code = (f"import resource, subprocess, sys; "
            f"subprocess.call([sys.executable, {str(BUSY)!r}, '2', '--', "
            f"sys.executable, '-c', 'import time; time.sleep(1.5)']); "
            f"print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert float(out.stdout.split()[-1]) > 0.5, out.stdout + out.stderr


def test_a_missing_command_gets_one_line():
    run = subprocess.run([sys.executable, str(BUSY), "2"], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 2
    assert "give the command to run after --" in run.stderr
    assert "Traceback" not in run.stderr
