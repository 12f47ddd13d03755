// Your run against the book's (lab/compare.js), on a small table of the
// form mhacourse.book_runs writes; tests/test_lab.py runs it on the real one.
import test from "node:test";
import assert from "node:assert/strict";
import {
  compareRun,
  nearestSweepSize,
  phaseStepOf,
} from "../../assets/site/explorer/lab/compare.js";
import { KNOBS } from "./knobs.mjs";

const hist = (jump, steps, every) => {
  const out = [];
  for (let s = every; s <= steps; s += every) {
    const up = jump !== null && s >= jump;
    out.push({
      step: s,
      accuracy: up ? 0.9 : 0.6,
      previous: 0.95,
      lookup: up ? 0.9 : 0.3,
      loss: 1,
    });
  }
  return out;
};
const run = (name, over) =>
  Object.assign(
    {
      name: name,
      source: "x",
      h: 4,
      d_k: 16,
      seed: 0,
      steps: 800,
      layers: 2,
      warmup: true,
      identical: false,
      page_run: true,
      every: 20,
      history: hist(200, 800, 20),
      phase_step: 200,
    },
    over || {},
  );
const TABLE = {
  rule_lookup: 0.2917,
  phase_margin: 0.1,
  runs: [
    run("main"),
    run("seed1", { seed: 1, history: hist(280, 800, 20), phase_step: 280 }),
    run("h4_dk16", { every: 50, history: hist(200, 800, 50) }),
    run("one_layer", { layers: 1, steps: 1600, page_run: false, phase_step: null }),
  ],
  sweep: {
    d_model: 64,
    steps: 800,
    seeds: [0, 1],
    summary: [
      { h: 1, d_k: 64, accuracy_min: 0.941, accuracy_max: 0.9465 },
      { h: 4, d_k: 16, accuracy_min: 0.9238, accuracy_max: 0.9376 },
      { h: 16, d_k: 4, accuracy_min: 0.6281, accuracy_max: 0.8011 },
    ],
    runs: [],
  },
};
const S = { h: 4, d_k: 16, seed: 0, steps: 800, layers: 2, warmup: true, identical: false };

test(
  "the same settings: the book's run is drawn faintly, and the line says where they differ " +
    "most",
  () => {
    const same = compareRun(TABLE, { settings: S, step: 800, history: hist(200, 800, 20) }, KNOBS);
    assert.equal(same.faint[0].name, "main"); // read every 20 steps, before the grid's 50
    assert.match(
      same.line,
      new RegExp(
        "^Within 0\\.02 of the book's run with these settings.*" +
          "phase change at step 200; the book's: phase change at step 200",
      ),
    );
    const late = compareRun(TABLE, { settings: S, step: 800, history: hist(260, 800, 20) }, KNOBS);
    assert.equal(
      late.line,
      "phase change at step 260; the book's run with these settings: phase change at step 200.",
    );
    const other = compareRun(
      TABLE,
      { settings: Object.assign({}, S, { seed: 7 }), step: 800, history: hist(220, 800, 20) },
      KNOBS,
    );
    assert.deepEqual(other.faint, []);
    assert.match(
      other.line,
      new RegExp(
        "Largest difference: lookup accuracy 0\\.300 at step 200; " +
          "the book's run of this size, seed 0: 0\\.900\\.",
      ),
    );
    const never = compareRun(
      TABLE,
      { settings: S, step: 800, history: hist(null, 800, 20) },
      KNOBS,
    );
    assert.equal(
      never.line,
      "no phase change in 800 steps; the book's run with these settings: phase change at step 200.",
    );
  },
);

test("a run under way is compared only where it has got to", () => {
  const early = compareRun(TABLE, { settings: S, step: 100, history: hist(null, 100, 20) }, KNOBS);
  assert.match(early.line, /^Within 0\.02/); // the book's run had not jumped by step 100 either
  const behind = compareRun(TABLE, { settings: S, step: 300, history: hist(null, 300, 20) }, KNOBS);
  assert.equal(
    behind.line,
    "no phase change yet at step 300; the book's run with these settings: phase change at step " +
      "200.",
  );
});

test("other sizes: the nearest size of chapter 8's sweep, named", () => {
  assert.deepEqual([nearestSweepSize(TABLE, 3, 20).h, nearestSweepSize(TABLE, 3, 20).d_k], [4, 16]);
  assert.deepEqual([nearestSweepSize(TABLE, 16, 2).h, nearestSweepSize(TABLE, 16, 2).d_k], [16, 4]);
  const r = compareRun(
    TABLE,
    { settings: Object.assign({}, S, { h: 3, d_k: 20 }), step: 1200, history: hist(400, 1200, 20) },
    KNOBS,
  );
  assert.equal(r.ref, null);
  assert.equal(
    r.line,
    "The book has no run of h = 3, d_k = 20 with these settings; chapter 8's sweep at the " +
      "nearest size, " +
      "h = 4, d_k = 16 (d_model 64, 800 steps, seeds 0 and 1), ends at accuracy 0.924 to 0.938; " +
      "yours: 0.900.",
  );
  const one = compareRun(
    TABLE,
    { settings: Object.assign({}, S, { layers: 1 }), step: 800, history: hist(null, 800, 20) },
    KNOBS,
  );
  assert.match(one.line, /no run of h = 4, d_k = 16 with these knobs \(layers 1\)/);
  assert.equal(
    phaseStepOf(
      [
        { step: 20, lookup: NaN },
        { step: 40, lookup: 0.5 },
      ],
      0.29,
      0.1,
    ),
    40,
  );
});
