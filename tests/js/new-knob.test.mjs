// A knob added to the manifest (issue 50): the lab's and the class page's
// modules read the knobs from the manifest, so a knob added to a copy of
// its train.knobs travels through the link, the Python line, the report,
// the model file, the comparison with the book's runs and the class page's
// grouping with no file of lab/ or class/ changed. The existing clip knob,
// once missing from the model file, must survive too.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { KNOBS, PATCH, withDefaults } from "./knobs.mjs";
import {
  decodeExperiment,
  encodeExperiment,
  pythonLine,
} from "../../assets/site/explorer/lab/link.js";
import {
  experimentOf,
  readModelFile,
  writeModelFile,
} from "../../assets/site/explorer/lab/model-file.js";
import { compareRun } from "../../assets/site/explorer/lab/compare.js";
import { grade } from "../../assets/site/explorer/lab/grade.js";
import { recordFromReadouts } from "../../assets/site/explorer/lab/record.js";
import { buildReport, reportText } from "../../assets/site/explorer/lab/report.js";
import {
  classStats,
  groupOf,
  linkMismatch,
  parseLink,
  readClass,
} from "../../assets/site/class/class-read.js";

// A toy knob, written as CONTRIBUTING.md's recipe writes one in web_train.KNOBS.
const TOY = {
  name: "toy",
  label: "toy option",
  control: "switch",
  default: false,
  input: "toy",
  on: 1,
  off: 0,
  help: "A knob added by the recipe.",
  python: { call: "train", arg: "toy_option", on: "True", off: "False" },
};
const MAN_KNOBS = KNOBS.concat([TOY]);
const schema = JSON.parse(
  readFileSync(new URL("../../assets/site/class/report.schema.json", import.meta.url)),
);
// The context readClass reads reports in, as class.js builds it.
const CLASS = {
  schema,
  build: "0123456789abcdef",
  ruleLookup: 0.29,
  margin: 0.1,
  knobs: MAN_KNOBS,
  parseLink,
};
const bank = JSON.parse(
  readFileSync(new URL("../../code/mhacourse/data/questions.json", import.meta.url)),
);
const stepsFor = {};
for (let d = 1; d <= 256; d++) {
  stepsFor[d] = 800;
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
  knobs: MAN_KNOBS,
};
const EXP = {
  h: 2,
  d_k: 4,
  budget: false,
  seed: 3,
  steps: 40,
  layers: 2,
  warmup: true,
  identical: false,
  clip: false,
  toy: true,
  off: [],
  text: "a b c",
  predict: {},
};

test("the new knob and clip round-trip through the link and its Python line", () => {
  const search = encodeExperiment(EXP, MAN_KNOBS);
  assert.match(search, /&toy=1/);
  assert.match(search, /&clip=0/);
  const back = decodeExperiment(search, LIMITS, bank);
  assert.equal(back.ignored, "");
  assert.deepEqual(back.experiment, withDefaults(EXP, MAN_KNOBS));
  assert.match(
    pythonLine(back.experiment, MAN_KNOBS),
    /steps=40, seed=3, clip=None, toy_option=True\)$/,
  );
  assert.match(decodeExperiment("?toy=maybe", LIMITS, bank).ignored, /toy/);
});

test("the new knob and clip are written to the model file and read back", async () => {
  const params = [
    {
      name: "W_E",
      dims: [
        [0, 5],
        [1, 0],
      ],
    },
    {
      name: "blocks.0.attn.W_Q",
      dims: [
        [1, 0],
        [1, 0],
      ],
    },
  ];
  const spec = {
    params,
    limits: { h_max: 16, d_k_min: 2, d_k_max: 64, d_model_max: 256 },
    n_layers: 1,
    vocab_size: 5,
    max_len: 4,
    batch: 2,
    knobs: MAN_KNOBS,
    steps_for: stepsFor,
  };
  const run = Object.assign({}, EXP, {
    layers: 1,
    step: 40,
    courseVersion: "x",
    accuracy: 0.5,
    params: params.map((p) => ({
      data: new Float32Array(p.dims.map((ab) => ab[0] * 8 + ab[1]).reduce((a, b) => a * b, 1)).fill(
        0.5,
      ),
    })),
  });
  const m = await readModelFile(await writeModelFile(run, spec), spec);
  assert.deepEqual(
    m.extra.knobs,
    withDefaults({ layers: 1, warmup: true, identical: false, clip: false, toy: true }, MAN_KNOBS),
  );
  assert.equal(m.config.n_layers, 1);
  assert.equal(m.config.warmup, 100);
  const e = experimentOf(m, spec);
  assert.deepEqual([e.toy, e.clip, e.layers, e.warmup, e.step], [true, false, 1, true, 40]);
});

function readouts() {
  const roles = [
    ["previous", "mixed"],
    ["mixed", "induction"],
  ];
  return [20, 40].map((step) => ({
    step,
    accuracy: [0.5, 0.9, step === 40 ? 0.6 : 0.3],
    roleNames: roles,
  }));
}

async function report(student, over, patch) {
  const settings = Object.assign({}, EXP, over);
  const record = recordFromReadouts({
    settings,
    step: 40,
    ruleLookup: 0.29,
    readouts: readouts(),
    ablations: [],
  });
  const grades = grade(bank, { phase_step: "before_200" }, record, MAN_KNOBS);
  return buildReport({
    student,
    link: "http://127.0.0.1/chapters/explorer.html" + encodeExperiment(settings, MAN_KNOBS),
    course: { version: "x", build: "0123456789abcdef" },
    settings,
    knobs: MAN_KNOBS,
    state: "done",
    step: 40,
    losses: Array(40).fill(1),
    evals: readouts().map((e) => ({ step: e.step, accuracy: e.accuracy, roles: e.roleNames })),
    ruleLookup: 0.29,
    predictions: grades,
    ablations: [],
    weights: new Float32Array(4),
    patch: patch,
    patchSpec: patch && PATCH,
  });
}

test(
  "the new knob is in the report, its link is checked by it, and the class page groups by " + "it",
  async () => {
    const a = await report("Ann", {}),
      b = await report("Bo", {}),
      c = await report("Cy", { toy: false });
    assert.equal(a.settings.toy, true);
    assert.equal(a.settings.clip, false);
    assert.equal(a.predictions[0].grade, "right");
    assert.deepEqual(parseLink(a.link, MAN_KNOBS).toy, true);
    const ctx = CLASS;
    const files = [a, b, c].map((r, i) => ({ name: "r" + i + ".json", text: reportText(r) }));
    const got = await readClass(files, ctx);
    assert.deepEqual(got.problems, []);
    assert.deepEqual(
      got.runs.map((x) => x.mismatch),
      [[], [], []],
    );
    const edited = Object.assign({}, a, { link: a.link.replace("toy=1", "toy=0") });
    assert.deepEqual(linkMismatch(edited, parseLink, MAN_KNOBS), [
      "toy: the link says false, the report true",
    ]);
    assert.equal(groupOf(a.settings, MAN_KNOBS), "2 × 4, clip gradients off, toy option on");
    assert.equal(groupOf(c.settings, MAN_KNOBS), "2 × 4, clip gradients off");
    const stats = classStats(got.runs, MAN_KNOBS);
    // a and b: the same settings and seed, so one run handed in twice
    assert.deepEqual(
      stats.groups.map((g) => [g.setting, g.n, g.reports]),
      [
        ["2 × 4, clip gradients off, 40 steps", 1, 1],
        ["2 × 4, clip gradients off, toy option on, 40 steps", 1, 2],
      ],
    );
    // a report of a build without the knob is refused in one line, not shown
    const old = await readClass(
      [{ name: "old.json", text: reportText(a) }],
      Object.assign({}, ctx, { knobs: KNOBS }),
    );
    assert.equal(old.runs.length, 0);
    assert.match(old.problems[0].line, /settings name "toy", not a knob of this build/);
  },
);

test(
  "the book's runs are compared on every knob, the new one too (at its default where the " +
    "table lacks it)",
  () => {
    const hist = [20, 40].map((step) => ({ step, accuracy: 0.5, previous: 0.9, lookup: 0.3 }));
    const table = {
      rule_lookup: 0.29,
      phase_margin: 0.1,
      sweep: { d_model: 8, steps: 40, seeds: [0], summary: [], runs: [] },
      runs: [
        {
          name: "book",
          h: 2,
          d_k: 4,
          seed: 3,
          steps: 40,
          layers: 2,
          warmup: true,
          identical: false,
          page_run: true,
          every: 20,
          history: hist,
          phase_step: null,
        },
      ],
    };
    const mine = (over) => ({
      settings: Object.assign({}, EXP, { clip: true }, over),
      step: 40,
      history: hist,
    });
    assert.equal(compareRun(table, mine({ toy: false }), MAN_KNOBS).faint[0].name, "book");
    const toy = compareRun(table, mine({}), MAN_KNOBS);
    assert.equal(toy.ref, null);
    assert.match(toy.line, /with these knobs \(toy option on\) to compare with/);
  },
);

test(
  "the Patch view's corruption and pairs travel into the report, checked against the " +
    "manifest's train.patch",
  async () => {
    const a = await report("Di", {}, { corruption: "occurrence", pairs: "64" }),
      none = await report("Ed", {});
    assert.deepEqual(a.patch, { corruption: "occurrence", pairs: 64 });
    // a report without the choice (an older trainer) stays valid
    assert.equal("patch" in none, false);
    await assert.rejects(
      report("Fy", {}, { corruption: "<b>", pairs: 8 }),
      new RegExp(
        "^Error: cannot build the report: the Patch view's corruption is not one of " +
          "this build's \\(successor, occurrence, query; 1 to 256 pairs\\)$",
      ),
    );
    await assert.rejects(
      report("Fy", {}, { corruption: "query", pairs: 257 }),
      /Patch view's pairs is not one/,
    );
    const ctx = Object.assign({ patch: PATCH }, CLASS);
    const got = await readClass(
      [a, none].map((r, i) => ({ name: "p" + i + ".json", text: reportText(r) })),
      ctx,
    );
    assert.deepEqual([got.problems, got.runs.length], [[], 2]);
    // a build whose manifest lacks that corruption refuses the report in one line
    const other = Object.assign({}, PATCH, {
      corruptions: PATCH.corruptions.filter((c) => c.name !== "occurrence"),
    });
    const old = await readClass(
      [{ name: "a.json", text: reportText(a) }],
      Object.assign({}, ctx, { patch: other }),
    );
    assert.equal(old.runs.length, 0);
    assert.match(
      old.problems[0].line,
      /its Patch view's corruption "occurrence" is not one of this build's/,
    );
  },
);
