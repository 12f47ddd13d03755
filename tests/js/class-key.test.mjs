// The class page's quiz key (issue 47, item 4): copies of one run count
// once, every answer is grouped by every setting but the seed and says how
// many runs it rests on, and the class's predictions are judged against the
// best constant answer. And the links that give each student her own seed.
import test from "node:test";
import assert from "node:assert/strict";
import { KNOBS } from "./knobs.mjs";
import { classStats, distinctRuns, settingsOf } from "../../assets/site/class/class-read.js";
import { classLinks } from "../../assets/site/class/links.js";

const DEFAULTS = Object.fromEntries(KNOBS.map((k) => [k.name, k.default]));
const layers = KNOBS.find((k) => k.name === "layers");

// One report: h x d_k, seed, phase step (null: never), the predicted band
// and the band the run showed, the lookup with layer 1 off (or none).
function run(student, h, d_k, seed, phase, predicted, shown, off = null, knobs = {}) {
  const settings = Object.assign({ h, d_k, d_model: h * d_k, seed, steps: 800 }, DEFAULTS, knobs);
  const l1 = Array.from({ length: h }, (_, i) => "L1H" + (i + 1));
  return {
    file: student + ".json",
    mismatch: [],
    report: {
      student,
      settings,
      step: 800,
      phase_step: phase,
      predictions: [
        {
          id: "phase_step",
          prediction: predicted,
          answer: shown,
          value: phase,
          grade: predicted === shown ? "right" : "wrong",
        },
      ],
      roles: { steps: [800], heads: [[Array(h).fill("previous"), Array(h).fill("induction")]] },
      ablations: off === null ? [] : [{ step: 800, off: l1, accuracy: [0.4, 0.3, off] }],
    },
  };
}

const CLASS = [
  run("Ana", 4, 16, 0, 300, "200_399", "200_399", 0.2),
  run("Ben", 4, 16, 0, 300, "400_799", "200_399", 0.2), // Ana's link: the same run
  run("Cy", 4, 16, 0, 300, "400_799", "200_399"),
  run("Di", 4, 16, 1, 500, "400_799", "400_799", 0.3),
  run("Ed", 4, 16, 2, null, "never", "never"),
  run("Flo", 4, 16, 3, 420, "200_399", "400_799", null, { layers: layers.default === 2 ? 1 : 2 }),
];

test("copies of one run are one run; groups are every setting but the seed", () => {
  const d = distinctRuns(CLASS, KNOBS);
  assert.deepEqual(
    d.map((x) => [x.students.join("="), x.reports]),
    [
      ["Ana=Ben=Cy", 3],
      ["Di", 1],
      ["Ed", 1],
      ["Flo", 1],
    ],
  );
  assert.equal(settingsOf(CLASS[0].report, KNOBS), "4 × 16, 800 steps");
  assert.match(settingsOf(CLASS[5].report, KNOBS), /^4 × 16, layers \d, 800 steps$/);
  const s = classStats(CLASS, KNOBS);
  assert.equal(s.runs, 4);
  assert.equal(s.reports, 6);
  assert.equal(s.left, 3);
  const g = s.groups[0];
  assert.deepEqual(
    [g.setting, g.n, g.reports, g.seeds, g.left, g.lo, g.hi, g.never],
    ["4 × 16, 800 steps", 3, 5, [0, 1, 2], 2, 300, 500, 1],
  );
  assert.deepEqual(g.layer1Off, { n: 2, median: 0.25 }); // Ana's run once, Di's
  assert.deepEqual(s.groups[1].seeds, [3]); // the one-layer run is not in the seed spread
  // Q2 over default-knob whole runs of d_model 64 only
  assert.deepEqual(s.byH, [{ h: 4, median: 400, left: 2, n: 3, setting: "4 × 16, 800 steps" }]);
});

test("the class's predictions are judged against the best constant answer", () => {
  const s = classStats(CLASS, KNOBS);
  assert.deepEqual([s.right, s.predicted], [3, 6]);
  // the runs showed 200-399 three times: always answering it is right 3 of 6
  assert.deepEqual(s.constant, { band: "200_399", right: 3 });
});

test(
  "each student's link is her row's, with her number as its seed and no teacher's " + "answers",
  () => {
    const pages = ["https://school.test/chapters/explorer.html"];
    const row =
      "https://school.test/chapters/explorer.html?v=1&h=4&dk=16&seed=0&steps=800&predict=phase_step:200_399&off=1.1#explorer-train";
    const got = classLinks(row, "Ana\n\n Ben  Lee \n7", 5, pages);
    assert.deepEqual(
      got.links.map((x) => [x.name, x.seed]),
      [
        ["Ana", 5],
        ["Ben Lee", 6],
        ["Student 7", 7],
      ],
    );
    got.links.forEach((x) => {
      const u = new URL(x.href);
      assert.equal(u.searchParams.get("seed"), String(x.seed));
      assert.equal(u.searchParams.get("predict"), null);
      assert.equal(u.searchParams.get("off"), null);
      assert.equal(u.searchParams.get("h"), "4");
      assert.equal(u.hash, "#explorer-train");
    });
    for (const [link, names, first, words] of [
      ["https://elsewhere.test/chapters/explorer.html?h=4", "Ana", 1, /another site/],
      [row, "", 1, /No name/],
      [row, "Ana\nana", 1, /written twice/],
      [row, "Ana\nBen", 999, /from 0 to 998/],
      [row, "Ana", "x", /whole number/],
    ]) {
      const bad = classLinks(link, names, first, pages);
      assert.equal(bad.links, undefined);
      assert.match(bad.problem, words);
      assert.ok(!bad.problem.includes("\n"));
    }
  },
);
