// Experiment links (lab/link.js): a round trip restores every field, and
// 10 hostile or stale links restore what is valid, say in one line what
// they ignored, and inject nothing.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  encodeExperiment,
  decodeExperiment,
  defaultExperiment,
  pythonLine,
  patchChoice,
} from "../../assets/site/explorer/lab/link.js";
import { KNOBS, PATCH, withDefaults } from "./knobs.mjs";

const bank = JSON.parse(
  readFileSync(new URL("../../code/mhacourse/data/questions.json", import.meta.url)),
);
// the manifest's train limits (mhacourse.web_train: limits(), steps_for)
const stepsFor = {};
for (let d = 1; d <= 256; d++) {
  stepsFor[d] = d <= 16 ? 1500 : d <= 32 ? 1200 : d <= 64 ? 800 : d <= 128 ? 500 : 400;
}
const LIMITS = {
  h_max: 16,
  d_k_min: 2,
  d_k_max: 64,
  d_model_max: 256,
  max_steps: 1500,
  budget: 64,
  n_layers: 2,
  steps_for: stepsFor,
  knobs: KNOBS,
  patch: PATCH,
};

test("a link round-trips every field", () => {
  const e = {
    h: 8,
    d_k: 8,
    budget: true,
    seed: 7,
    steps: 640,
    layers: 1,
    warmup: false,
    identical: true,
    clip: false,
    off: [
      [1, 2],
      [1, 8],
    ],
    text: "a b c, a b — «ça» & <b>",
    predict: { one_layer: "no", phase_step: "never" },
    corruption: "query",
    pairs: 32,
  };
  const r = decodeExperiment(encodeExperiment(e, KNOBS), LIMITS, bank);
  assert.equal(r.ignored, "");
  assert.deepEqual(r.experiment, withDefaults(e));
  assert.equal(
    pythonLine(r.experiment, KNOBS),
    "model, metrics = tm.train(tm.TinyConfig(h=8, d_k=8, n_layers=1, warmup=0), steps=640, " +
      "seed=7, identical_heads=True, clip=None)",
  );
  const plain = decodeExperiment("", LIMITS, bank, { h: 1, d_k: 64 });
  assert.deepEqual(plain, {
    experiment: defaultExperiment(LIMITS, { h: 1, d_k: 64 }),
    ignored: "",
  });
  assert.equal(
    pythonLine(plain.experiment, KNOBS),
    "model, metrics = tm.train(tm.TinyConfig(h=1, d_k=64), steps=800, seed=0)",
  );
});

const HOSTILE = [
  ["?h=0&dk=16", /the size \(h/],
  ["?h=16&dk=64", /the size \(d_model/],
  ["?h=3&budget=1", /the size \(budget/],
  ["?h=4&dk=16&seed=-1&steps=99999&layers=3", /seed; steps; layers/],
  ["?h=4&dk=1e1&warmup=yes", /size \(d_k.*warmup/],
  ["?text=" + encodeURIComponent("<img src=x onerror=alert(1)>") + "&h=%3Cscript%3E", /the size/],
  ["?off=1.1,9.9,0.1,1.1,%3Cb%3E&h=4&dk=16", /4 head switches/],
  [
    "?predict=__proto__:yes,phase_step:soon,one_layer:no,one_layer:yes,constructor:x",
    /4 predictions/,
  ],
  [
    "?v=99&h=4&dk=16&javascript:alert(1)=1&__proto__=1&onload=x",
    /unknown fields javascript\?alert\?1\?, __proto__, onload.*v \(a link from another build\)/,
  ],
  ["?" + "x".repeat(5000), /not read \(over 4000 characters\)/],
  ["?corruption=%3Cscript%3E&pairs=257", /corruption \(\?script\?\); pairs \(257\)\.$/],
  ["?corruption=__proto__&pairs=0", /corruption \(__proto__\); pairs \(0\)\.$/],
];

test(
  "12 hostile or stale links: what is valid is restored, one line for the rest, nothing " +
    "injected",
  () => {
    for (const [link, words] of HOSTILE) {
      const { experiment: e, ignored } = decodeExperiment(link, LIMITS, bank);
      assert.match(ignored, words, link);
      assert.ok(!ignored.includes("\n") && ignored.length < 300, ignored);
      assert.ok(!/[<>]/.test(ignored), ignored); // the line quotes no markup
      assert.deepEqual(Object.keys(e).sort(), Object.keys(defaultExperiment(LIMITS)).sort());
      assert.equal(Object.getPrototypeOf(e.predict), Object.prototype);
      assert.equal({}.polluted, undefined);
      for (const [k, v] of Object.entries(e)) {
        // data only: numbers, booleans, [[l, h]], answers, the text
        if (k === "text") {
          assert.equal(typeof v, "string");
          // eslint-disable-next-line no-control-regex -- control characters are what it looks for
          assert.ok(!/[\u0000-\u001f]/.test(v));
        } else if (k === "off") {
          v.forEach((p) => {
            assert.ok(p.every(Number.isInteger));
          });
        } else if (k === "corruption") {
          assert.ok(
            PATCH.corruptions.some((c) => c.name === v),
            v,
          );
        } else if (k === "predict") {
          Object.entries(v).forEach(([id, a]) => {
            assert.ok(bank.questions.some((q) => q.id === id && a in q.answers));
          });
        } else {
          assert.ok(typeof v === "number" || typeof v === "boolean", k);
        }
      }
      assert.ok(e.h * e.d_k <= LIMITS.d_model_max && e.steps <= LIMITS.max_steps);
    }
    // what was valid in a partly bad link is kept
    const r = decodeExperiment(
      "?h=2&dk=32&seed=5&warmup=maybe&off=2.2,7.7&predict=one_layer:no,x:y",
      LIMITS,
      bank,
    );
    assert.deepEqual(
      [r.experiment.h, r.experiment.d_k, r.experiment.seed, r.experiment.warmup],
      [2, 32, 5, true],
    );
    assert.deepEqual(r.experiment.off, [[2, 2]]);
    assert.deepEqual(r.experiment.predict, { one_layer: "no" });
    // the sentence stays data: the markup a hostile link carries is text
    const t = decodeExperiment(
      "?text=" + encodeURIComponent("<img src=x onerror=alert(1)>"),
      LIMITS,
      bank,
    ).experiment.text;
    assert.equal(t, "<img src=x onerror=alert(1)>");
  },
);

test(
  "the Patch view's corruption and pairs: the manifest's names and range, the default where " +
    "a link gives none or a bad one",
  () => {
    const plain = decodeExperiment("?h=4&dk=16", LIMITS, bank).experiment;
    assert.deepEqual([plain.corruption, plain.pairs], [PATCH.default, PATCH.n_pairs]);
    for (const c of PATCH.corruptions) {
      const r = decodeExperiment(
        encodeExperiment(Object.assign({}, plain, { corruption: c.name, pairs: 1 }), KNOBS),
        LIMITS,
        bank,
      );
      assert.deepEqual([r.ignored, r.experiment.corruption, r.experiment.pairs], ["", c.name, 1]);
    }
    const half = decodeExperiment("?corruption=occurrence&pairs=1e2", LIMITS, bank);
    assert.deepEqual(
      [half.experiment.corruption, half.experiment.pairs],
      ["occurrence", PATCH.n_pairs],
    );
    assert.equal(
      half.ignored,
      "Ignored from the link (not valid here; the defaults stand): pairs (1e2).",
    );
    assert.deepEqual(patchChoice(PATCH, "query", 256), { corruption: "query", pairs: 256 });
    assert.deepEqual(
      [
        patchChoice(PATCH, "Query", 8),
        patchChoice(PATCH, "query", 8.5),
        patchChoice(null, "query", 8),
      ],
      [{ bad: "corruption" }, { bad: "pairs" }, { bad: "corruption" }],
    );
    // a build without a Patch view: the fields are not made up, and a link's are named
    const old = Object.assign({}, LIMITS, { patch: undefined });
    assert.equal(defaultExperiment(old).corruption, undefined);
    assert.match(decodeExperiment("?corruption=query", old, bank).ignored, /corruption \(query\)/);
  },
);
