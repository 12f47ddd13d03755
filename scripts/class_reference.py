"""Write the book's own runs for the class page (chapters/class.md).

The class page draws the step of the phase change of a class's runs against
h and d_k, over the book's committed runs. This script reads those runs and
writes what the page needs, once, at build time (`make book` runs it after
the pages are built):

- the trained grid of ``assets/models/metrics.json`` (every model's recorded
  history: lookup accuracy every 50 to 150 steps);
- chapter 11's runs of ``assets/runs/*.json`` (every 20 steps; with their
  knobs: seed, warm-up, one layer, identical start);
- chapter 8's sweep, ``assets/models/heads_sweep.json`` (d_model = 64, h up
  to 64): it kept only each run's final accuracy, so it says whether a run
  left the plateau by its last step, not when.

The phase change is the rule of the trainer and of chapter 11: the first
read-out at which lookup accuracy is more than PHASE_MARGIN above the
previous-word rule's.

    python scripts/class_reference.py [OUT_DIR]   # default _build/html/_static/class-data
"""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
PHASE_MARGIN = 0.10  # the trainer's (trainer-readout.js) and report.js's


def phase_step(history: list[dict], rule_lookup: float) -> int | None:
    """The first recorded step whose lookup beats the rule's by the margin."""
    return next((e["step"] for e in history if e["lookup"] > rule_lookup + PHASE_MARGIN), None)


def every(history: list[dict]) -> int | None:
    steps = [e["step"] for e in history]
    return min(b - a for a, b in zip(steps, steps[1:])) if len(steps) > 1 else None


def reference() -> dict:
    metrics = json.loads((ASSETS / "models" / "metrics.json").read_text())
    sweep = json.loads((ASSETS / "models" / "heads_sweep.json").read_text())
    rule = metrics["baselines"]["previous word"]["lookup"]
    points = []
    for m in metrics["models"]:
        if m.get("trained") and m.get("history"):
            points.append(
                {
                    "source": "grid",
                    "name": m["name"],
                    "h": m["h"],
                    "d_k": m["d_k"],
                    "seed": m["seed"],
                    "steps": m["steps"],
                    "every": every(m["history"]),
                    "knobs": {},
                    "phase_step": phase_step(m["history"], rule),
                }
            )
    index = json.loads((ASSETS / "runs" / "index.json").read_text())["runs"]
    for name in sorted(index):
        run = json.loads((ASSETS / "runs" / f"{name}.json").read_text())
        cfg, train = run["config"], run["train"]
        knobs = {
            k: v
            for k, v in {
                "layers": cfg["n_layers"] if cfg["n_layers"] != 2 else None,
                "warmup": False if cfg["warmup"] == 0 else None,
                "identical": train.get("identical_heads") or None,
            }.items()
            if v is not None
        }
        points.append(
            {
                "source": "chapter 11",
                "name": name,
                "h": cfg["h"],
                "d_k": cfg["d_k"],
                "seed": train["seed"],
                "steps": train["steps"],
                "every": run["eval_every"],
                "knobs": knobs,
                "phase_step": phase_step(run["history"], rule),
            }
        )
    sweep_rule = sweep["baselines"]["previous word"]["lookup"]
    finals = [
        {
            "source": "chapter 8",
            "h": r["h"],
            "d_k": r["d_k"],
            "seed": r["seed"],
            "steps": r["steps"],
            "lookup": r["lookup"],
            "left": r["lookup"] > sweep_rule + PHASE_MARGIN,
        }
        for r in sweep["runs"]
    ]
    version = tomllib.loads((ROOT / "code" / "pyproject.toml").read_text())["project"]["version"]
    return {
        "about": __doc__.split("\n\n")[0],
        "course_version": version,
        "phase_margin": PHASE_MARGIN,
        "rule_lookup": rule,
        "points": points,
        "sweep": finals,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "out", nargs="?", type=Path, default=ROOT / "_build" / "html" / "_static" / "class-data"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ref = reference()
    (args.out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print(
        f"class page: {len(ref['points'])} book runs with a history, {len(ref['sweep'])} sweep runs"
    )


if __name__ == "__main__":
    main()
