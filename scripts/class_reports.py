"""A class of reports of known content, for the class page's tests and its
benchmark: the specification of 30 runs (sizes, seeds, phase changes,
final accuracies, predictions, ablations), the reports the page's own
``buildReport`` makes from it (``class_reports.mjs``, run with Node), and
ten bad files, each with the words its one line on the page must hold.
Imports no test dependency: the tests and benchmarks/bench_class_page.py
import it from here."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = ROOT / "_build" / "html" / "_static" / "explorer-data" / "manifest.json"
NODE = shutil.which("node") or "node"
POSITIONS = 15360  # 1,024 held-out sequences x 15 scored positions
BANDS = [
    ("before_200", 0, 200),
    ("200_399", 200, 400),
    ("400_799", 400, 800),
    ("800_or_later", 800, None),
]


def band_words(answer: str) -> str:
    """A band as the class page writes it."""
    return {"before_200": "before 200", "200_399": "200–399", "400_799": "400–799",
            "800_or_later": "800 or later", "never": "never"}[answer]


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def band(step: int | None) -> str:
    if step is None:
        return "never"
    return next(name for name, lo, hi in BANDS if step >= lo and (hi is None or step < hi))


def accuracy(rng: random.Random, lo: float, hi: float) -> float:
    """A held-out accuracy as the page has it (k of the scored positions, 6
    decimals), never on a tie of the page's one-decimal percentage."""
    while True:
        x = round(rng.randint(round(lo * POSITIONS), round(hi * POSITIONS)) / POSITIONS, 6)
        if abs((x * 1000) % 1 - 0.5) > 0.01:
            return x


def class_spec(n: int = 30, seed: int = 0) -> list[dict]:
    """n students' runs: most of d_model = 64 cut into h = 1..16 heads, some
    wider or narrower; a few that never leave the plateau (one layer, or
    d_k = 2), two paused, two whose link names another size, predictions
    right and wrong, and the layer-1 ablation in some."""
    man = manifest()
    rule = man["train"]["baselines"]["previous word"]["lookup"]
    steps_for = man["train"]["steps_for"]
    rng = random.Random(seed)
    sizes = [
        (1, 64),
        (2, 32),
        (4, 16),
        (8, 8),
        (16, 4),
        (4, 16),
        (4, 8),
        (8, 16),
        (2, 16),
        (16, 2),
        (4, 16),
    ]
    runs = []
    for i in range(n):
        h, d_k = sizes[i % len(sizes)]
        steps = steps_for[str(h * d_k)]
        layers = 1 if i % 13 == 7 else 2
        stuck = layers == 1 or d_k == 2
        phase = None if stuck else 20 * rng.randint(6, min(30, steps // 20 - 2))
        final = (
            [accuracy(rng, 0.55, 0.64), accuracy(rng, 0.9, 0.98), accuracy(rng, 0.2, rule + 0.05)]
            if stuck
            else [
                accuracy(rng, 0.8, 0.96),
                accuracy(rng, 0.85, 0.98),
                accuracy(rng, rule + 0.3, 0.95),
            ]
        )
        guess = rng.choice([b[0] for b in BANDS] + ["never"])
        run = {
            "student": f"Student {i + 1:02d}",
            "h": h,
            "d_k": d_k,
            "seed": i,  # a seed a student: no two reports are one run
            "steps": steps,
            "layers": layers,
            "warmup": i % 10 != 4,
            "phase": phase,
            "final": final,
        }
        if i % 9 == 8:  # paused before the end
            run["step"] = steps - 200
            if phase is not None and phase > run["step"]:
                run["phase"] = None if run["step"] < 140 else 20 * (run["step"] // 40)
        if i % 6 != 5:  # most predicted the band of the phase change
            run["predict"], run["band"] = guess, band(run["phase"])
            run["grade"] = "right" if guess == run["band"] else "wrong"
        if i % 4 == 1:  # every head of layer 1 switched off at the end
            off = [f"L1H{k + 1}" for k in range(h)]
            at = run.get("step", steps)
            run["ablations"] = [
                {
                    "step": at,
                    "off": off,
                    "accuracy": [
                        accuracy(rng, 0.3, 0.5),
                        accuracy(rng, 0.2, 0.4),
                        accuracy(rng, 0.1, 0.3),
                    ],
                }
            ]
        if i in (11, 23):  # the link names another size than the report's
            run["link"] = (
                f"http://127.0.0.1/chapters/explorer.html?h={h * 2}&d_k={d_k}&seed={i}"
                f"&steps={steps}#explorer-train"
            )
        runs.append(run)
    return runs


def expected_phase(run: dict) -> int | None:
    """The phase change the generator puts in a run's curves (its read-outs
    are every 20 steps, and the last one at the last step)."""
    return run["phase"]


def node(spec: dict) -> dict:
    r = subprocess.run(
        [NODE, str(HERE / "class_reports.mjs")],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode:
        raise RuntimeError(f"class_reports.mjs failed: {r.stderr[-1500:]}")
    return json.loads(r.stdout)


def generate(runs: list[dict]) -> tuple[list[dict], list[str]]:
    """The reports of these runs and their files' texts."""
    out = node({"manifest": str(MANIFEST), "runs": runs})
    return out["reports"], out["texts"]


def resum(reports: list[dict]) -> list[str]:
    """These (edited) reports with their checksums recomputed, as file texts."""
    return node({"resum": reports})["texts"]


def bad_files(
    runs: list[dict], reports: list[dict], texts: list[str]
) -> list[tuple[str, str, str]]:
    """Ten files the page must set aside: (file name, text, words its line holds)."""
    edited = json.loads(texts[0])
    edited["curves"]["accuracy"][-1][0] = 0.99
    lied = json.loads(texts[2])
    lied["phase_step"] = 100
    short = json.loads(texts[3])
    short["curves"]["loss"] = short["curves"]["loss"][:-5]
    older = dict(runs[4], student="Student 99")
    older_report = generate([dict(older, build="0123456789abcdef")])[1][0]
    second = generate([dict(runs[5], seed=runs[5]["seed"] + 1)])[1][0]
    v0 = json.loads(texts[6])
    v0["version"] = 0
    schema = json.loads(texts[7])
    del schema["curves"]
    resummed = resum([lied, short])
    return [
        ("zz-01-notes.json", "These are my notes, not a report.\n", "not JSON"),
        ("zz-02-other.json", json.dumps({"name": "something else"}), 'no "format"'),
        ("zz-03-no-curves.json", json.dumps(schema), "the report has no curves"),
        ("zz-04-edited.json", json.dumps(edited), "checksum does not match"),
        ("zz-05-phase.json", resummed[0], "does not follow from its own curves"),
        ("zz-06-losses.json", resummed[1], "losses for"),
        ("zz-07-older-build.json", older_report, "another build"),
        ("zz-08-version.json", json.dumps(v0), "format version 0"),
        ("zz-09-second.json", second, "second report from " + runs[5]["student"]),
        ("zz-10-copy.json", texts[8], "a copy of report-09.json"),
    ]


def file_name(i: int) -> str:
    return f"report-{i + 1:02d}.json"
