"""The classroom measurements the instructor guide shows: what
`make classroom-check` (scripts/classroom_check.py, a real JupyterHub, about
3 minutes, not run here) and `classroom_check.py --binder` last wrote to
benchmarks/results/. These tests do not start a hub: they check that the
committed figures are a passing run, that the guide shows them as the script
wrote them, and that the settings follow from them by the script's rules."""
from __future__ import annotations

import json
import re
import sys

import pytest

from test_book import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import classroom_check as cc  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def load(name: str) -> dict:
    path = RESULTS / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make classroom-check` "
                    "(and `scripts/classroom_check.py --binder`)")
    return json.loads(path.read_text())


def test_the_recorded_run_passed_with_at_least_8_learners():
    s = load("classroom_cpu.json")
    assert s["learners"] >= 8, \
        f"the recorded run had {s['learners']} learners, the issue asks for >= 8"
    assert s["succeeded"] == s["learners"], \
        f"{s['succeeded']} of {s['learners']} learners succeeded"
    assert set(cc.DEFAULT_CHAPTERS) <= {r["chapter"] for r in s["rounds"]}, \
        "the class must run chapter 3 and the heavier chapter 4"
    for r in s["rounds"]:
        assert r["failed"] == 0 and r["succeeded"] == s["learners"], r
        assert 0 < r["first_cell_s_median"] <= r["last_cell_s_median"] <= r["last_cell_s_max"], r
        assert (0 < r["peak_rss_mib_median"] <= r["peak_rss_mib_max"]
                <= s["peak_rss_mib_per_learner"])
    assert not s["leftover_processes"] and not s["ports_still_bound"], \
        "the recorded run left processes or ports behind"


def test_every_chapter_fits_binder():
    s = load("classroom_cpu.json")
    assert sorted(r["chapter"] for r in s["every_chapter"]) == CHAPTERS, \
        "the recorded run must have run every chapter alone"
    for r in s["every_chapter"]:
        assert r["ok"], f"{r['chapter']} failed in the recorded run"
        assert r["fits_binder"] == (r["peak_rss_mib"] <= cc.BINDER_LIMIT_MIB)
        assert r["fits_binder"], f"{r['chapter']}: {r['peak_rss_mib']} MiB, over Binder's 2 GB"


def test_the_settings_follow_from_the_figures():
    s = load("classroom_cpu.json")
    worst_mib = max([s["peak_rss_mib_per_learner"]]
                    + [r["peak_rss_mib"] for r in s["every_chapter"]])
    worst_cpu = max([r["kernel_cpu_s_max"] for r in s["rounds"]]
                    + [r["kernel_cpu_s"] for r in s["every_chapter"]])
    z = cc.sizing(worst_mib, worst_cpu, s["hub_and_proxy_peak_rss_mib"])
    assert z == s["sizing"], f"sizing() gives {z}, the file says {s['sizing']}"
    # the rules themselves: every learner's peak fits the guarantee, the limit
    # leaves room, and the class total is the guarantee times the class
    assert worst_mib <= z["memory_guarantee_mib"] < worst_mib + 256
    assert z["memory_guarantee_mib"] <= z["memory_limit_mib"] <= cc.BINDER_LIMIT_MIB
    assert z["class_memory_gib"] * 1024 >= z["class_size"] * z["memory_guarantee_mib"]
    assert z["class_size"] == 100


def test_the_guide_shows_what_the_scripts_wrote():
    s = load("classroom_cpu.json")
    assert (RESULTS / "classroom_cpu.md").read_text() == cc.markdown(s), \
        "classroom_cpu.md differs from what classroom_check.py writes for classroom_cpu.json"
    b = load("classroom_binder.json")
    assert (RESULTS / "classroom_binder.md").read_text() == cc.binder_markdown(b)
    assert b["venv_mib"] > b["torch_mib"] > 0 and b["reuse"]["open_chapter_1_s"] > 0
    guide = (ROOT / "chapters" / "instructor_guide.md").read_text()
    for name in ("classroom_cpu.md", "classroom_binder.md"):
        assert re.search(rf"```{{include}} \.\./benchmarks/results/{name}\s*\n```", guide), \
            f"the instructor guide must include benchmarks/results/{name}"


def test_the_hub_software_is_pinned():
    reqs = (ROOT / "requirements-classroom.txt").read_text()
    for name in ("jupyterhub", "jupyterlab", "nbgitpuller", "psutil"):
        assert re.search(rf"(?m)^{name}==\d+(\.\d+)+\s*$", reqs), f"{name} is not pinned"
    deps = json.loads((ROOT / "package.json").read_text())["dependencies"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", deps.get("configurable-http-proxy", "")), \
        "package.json must pin configurable-http-proxy exactly"
    assert "classroom-check:" in (ROOT / "Makefile").read_text()
