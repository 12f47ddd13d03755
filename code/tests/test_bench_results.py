"""benchmarks/results/mha_cpu.json is the committed markdown's tables, as chapter 9 reads them."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import common  # noqa: E402  (benchmarks/common.py)


def test_json_cells():
    assert common.json_cell("1.23") == 1.23
    assert common.json_cell("16") == 16 and isinstance(common.json_cell("16"), int)
    assert common.json_cell("10.6 ms") == 10.6
    assert common.json_cell("1.15 GiB") == 1.15 * 1024
    assert common.json_cell("512 KiB") == 0.5
    assert common.json_cell("skip") is None and common.json_cell("–") is None
    assert common.json_cell("10.6 (7)") == "10.6 (7)"


def test_committed_json_matches_committed_markdown():
    md = ROOT / "benchmarks" / "results" / "mha_cpu.md"
    got = json.loads((ROOT / "benchmarks" / "results" / "mha_cpu.json").read_text())
    assert got == json.loads(json.dumps(
        common.md_to_json(md.read_text(), "benchmarks/results/mha_cpu.md"))), \
        "re-run python benchmarks/bench_mha.py --from-markdown benchmarks/results/mha_cpu.md"
    assert got["machine"]["CPU"] and got["machine"]["date (UTC)"].startswith("20")
    rel = next(t for k, t in got["tables"].items() if k.startswith("Time relative"))
    ref = next(r for r in rel if r["method"] == "PyTorch fused (reference)")
    fast = next(r for r in rel if r["method"] == "course fast path")
    cols = [c for c in rel[0] if c.startswith("B=")]
    assert len(cols) == 8 and all(isinstance(ref[c], (int, float)) for c in cols)
    assert all(0.5 < fast[c] < 2 for c in cols)  # ratios, not times
