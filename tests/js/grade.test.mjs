// The page's grading (lab/grade.js, lab/record.js) on records made by
// hand: right, wrong, waiting and not applicable, and bad input refused in
// one line. tests/test_lab.py checks it against the package's grades of
// real runs.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  grade,
  gradeModel,
  LabError,
  MODEL_FILE_LINE,
} from "../../assets/site/explorer/lab/grade.js";
import { recordFromReadouts, offPairs } from "../../assets/site/explorer/lab/record.js";
import { READOUTS } from "./knobs.mjs";

const bank = JSON.parse(
  readFileSync(new URL("../../code/mhacourse/data/questions.json", import.meta.url)),
);
const roles = (a, b) => [Array(2).fill(a), Array(2).fill(b)];

function run(overrides) {
  const history = [];
  for (let s = 20; s <= 400; s += 20) {
    history.push({
      step: s,
      lookup: s < 260 ? 0.3 : 0.9,
      roles: s < 260 ? roles("previous", "mixed") : roles("previous", "induction"),
    });
  }
  const stats = [
    [
      [0.9, 0, 0, 0, 0],
      [0.8, 0, 0, 0, 0],
    ],
    [
      [0, 0.9, 0, 0, 0],
      [0, 0.7, 0, 0, 0],
    ],
  ];
  return Object.assign(
    {
      settings: { h: 2, d_k: 8, seed: 3, steps: 400, layers: 2, warmup: true, identical: false },
      step: 400,
      rule_lookup: 0.2917,
      history: history,
      final: {
        step: 400,
        stats: stats,
        composition: { q: 0.1, k: 0.3, v: 0.12 },
        baseline: { q: 0.12, k: 0.12, v: 0.13 },
      },
      ablations: [
        {
          step: 400,
          off: [
            [1, 1],
            [1, 2],
          ],
          lookup: 0.05,
        },
      ],
    },
    overrides || {},
  );
}
const byId = (gs) => Object.fromEntries(gs.map((g) => [g.id, g]));

test("a finished run grades right and wrong answers from its read-outs", () => {
  const g = byId(
    grade(
      bank,
      {
        phase_step: "200_399",
        previous_layer: "layer 1",
        induction_layer: "layer 1",
        layer1_off: "near_chance",
        composition: "k",
        one_layer: "no",
        identical_start: "yes",
      },
      run(),
    ),
  );
  assert.equal(g.phase_step.status, "right");
  assert.equal(g.phase_step.value, 260);
  assert.match(g.phase_step.line, /step 260 \(steps 200-399\).*seed 3/);
  assert.equal(g.induction_layer.status, "wrong");
  assert.equal(g.induction_layer.answer, "layer 2");
  assert.equal(g.layer1_off.status, "right");
  assert.match(g.layer1_off.line, /5\.0 % \(near chance/);
  assert.equal(g.composition.answer, "k");
  assert.equal(g.one_layer.status, "not_applicable");
  assert.equal(g.identical_start.status, "not_applicable");
  assert.equal(
    g.phase_step.link,
    "chapters/11_how_heads_form.html#the-curves-and-the-baselines-they-must-beat",
  );
});

test("a run under way waits, and never grades part of a run", () => {
  const r = run({ step: 240 });
  r.history = r.history.filter((e) => e.step <= 240);
  const g = byId(
    grade(
      bank,
      {
        phase_step: "never",
        previous_layer: "layer 1",
        layer1_off: "near_chance",
        composition: "k",
      },
      r,
    ),
  );
  Object.values(g).forEach((x) => {
    assert.equal(x.status, "waiting");
    assert.equal(x.answer, null);
  });
  const stale = run();
  stale.ablations[0].step = 200; // read on an older model
  assert.equal(grade(bank, { layer1_off: "near_chance" }, stale)[0].status, "waiting");
  const noPhase = run();
  noPhase.history.forEach((e) => {
    e.lookup = 0.3;
  });
  const n = grade(bank, { phase_step: "never" }, noPhase)[0];
  assert.equal(n.status, "right");
  assert.match(n.line, /no phase change in 400 steps/);
});

test("identical heads and the one-layer run", () => {
  const r = run({
    settings: { h: 2, d_k: 8, seed: 0, steps: 400, layers: 2, warmup: true, identical: true },
  });
  r.final.stats = [
    [
      [0.9, 0, 0, 0, 0],
      [0.9, 0, 0, 0, 0.0005],
    ],
    [
      [0, 0.2, 0, 0, 0],
      [0, 0.2, 0, 0, 0],
    ],
  ];
  assert.equal(grade(bank, { identical_start: "yes" }, r)[0].status, "right");
  r.final.stats[1][1][1] = 0.25;
  assert.equal(grade(bank, { identical_start: "yes" }, r)[0].answer, "no");
  const one = run({
    settings: { h: 2, d_k: 8, seed: 0, steps: 400, layers: 1, warmup: true, identical: false },
  });
  one.history.forEach((e) => {
    e.lookup = 0.33;
    e.roles = [["previous", "previous"]];
  });
  assert.equal(grade(bank, { one_layer: "no" }, one)[0].status, "right");
});

test("bad input: one line, a LabError", () => {
  const bad = [
    [{ nope: "yes" }, run(), /no question/],
    [{ one_layer: "maybe" }, run(), /not an answer/],
    [{ one_layer: ["no"] }, run(), /not an answer/],
    ["phase_step", run(), /predictions must be an object/],
    [{}, 3, /record must be an object/],
    [{}, run({ rule_lookup: NaN }), /finite number/],
    [{}, run({ step: -1 }), /whole number/],
    [
      {},
      run({ history: [{ step: 20, lookup: 2, roles: roles("previous", "mixed") }] }),
      /from 0 to 1/,
    ],
    [{}, run({ history: [{ step: 20, lookup: 0.1, roles: [["<img src=x>"]] }] }), /role names/],
    [{}, run({ ablations: [{ step: 1, off: [[0, 1]], lookup: 0.1 }] }), /whole number >= 1/],
    // an own key, as a link or file gives it
    [JSON.parse('{"__proto__": "yes"}'), run(), /no question/],
  ];
  for (const [p, r, words] of bad) {
    let err = null;
    try {
      grade(bank, p, r);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof LabError, String(err));
    assert.match(err.message, words);
    assert.ok(!err.message.includes("\n"));
  }
});

test("record.js builds the record from the panel's read-outs", () => {
  const e = (step, lookup, extra) =>
    Object.assign(
      {
        step: step,
        accuracy: [0.5, 0.6, lookup],
        layers: 2,
        h: 2,
        roleNames: roles("previous", "induction"),
      },
      extra || {},
    );
  const stats = Array.from({ length: 20 }, (_, k) => (k % 5 === 0 ? 0.9 : 0));
  // as the read-out worker sends them: each read-out's output, and the
  // build's random baseline by column (readout-worker.js)
  const circuits = {
    comp_q: [0.1, 0.05, 0.02, 0.03],
    comp_k: [0.3, 0.1, 0.1, 0.2],
    comp_v: [0.1, 0.1, 0.1, 0.1],
    baseline: { d_model: 16, d_k: 8, comp_q: 0.12, comp_k: 0.12, comp_v: 0.13 },
  };
  const r = recordFromReadouts({
    settings: { h: 2, d_k: 8, seed: 0, steps: 40, layers: 2, warmup: true, identical: false },
    step: 40,
    ruleLookup: 0.29,
    readouts: [
      e(40, 0.9, { stats: stats, circuits: circuits }),
      e(20, 0.3),
      e(20, 0.3),
      e(30, NaN),
    ],
    ablations: [
      { step: 40, off: offPairs({ 0: true, 1: true, 3: false }, 2), accuracy: [0.1, 0.1, 0.04] },
    ],
    maps: READOUTS,
  });
  assert.deepEqual(
    r.history.map((x) => x.step),
    [20, 40],
  );
  // the mean over the h x h pairs (like with like against one random pair)
  assert.deepEqual(r.final.composition, { q: 0.05, k: 0.175, v: 0.1 });
  assert.deepEqual(r.final.baseline, { q: 0.12, k: 0.12, v: 0.13 });
  assert.deepEqual(r.ablations[0].off, [
    [1, 1],
    [1, 2],
  ]);
  const g = byId(
    grade(bank, { phase_step: "before_200", layer1_off: "near_chance", composition: "k" }, r),
  );
  assert.deepEqual(
    [g.phase_step.status, g.layer1_off.status, g.composition.status],
    ["right", "right", "right"],
  );
});

test("a model read from a file is graded as a model: the run's history is not", () => {
  const stats = Array.from({ length: 20 }, (_, k) => (k % 5 === 0 ? 0.9 : 0));
  const circuits = {
    comp_q: [0.1, 0, 0, 0],
    comp_k: [0.3, 0.2, 0.1, 0.2],
    comp_v: [0.1, 0, 0, 0],
    baseline: { d_model: 16, d_k: 8, comp_q: 0.12, comp_k: 0.12, comp_v: 0.13 },
  };
  const r = recordFromReadouts({
    settings: { h: 2, d_k: 8, seed: 0, steps: 800, layers: 2, warmup: true, identical: false },
    step: 800,
    ruleLookup: 0.29,
    maps: READOUTS,
    readouts: [
      {
        step: 800,
        accuracy: [0.9, 0.9, 0.9],
        layers: 2,
        h: 2,
        roleNames: roles("previous", "induction"),
        stats: stats,
        circuits: circuits,
      },
    ],
  });
  const g = byId(
    gradeModel(bank, { phase_step: "before_200", composition: "k", previous_layer: "layer 1" }, r),
  );
  assert.deepEqual([g.phase_step.status, g.phase_step.line], ["not_applicable", MODEL_FILE_LINE]);
  assert.deepEqual([g.composition.status, g.previous_layer.status], ["right", "right"]);
});
