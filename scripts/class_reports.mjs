// Reports of known content for the class page's tests and benchmark, made
// with the page's own buildReport (assets/site/explorer/lab/report.js), from runs
// this script synthesizes to a specification read on stdin:
//
//   {"manifest": "path/to/manifest.json", "runs": [RUN, ...]}
//   RUN: {student, h, d_k, seed, steps, step?, layers?, warmup?, identical?,
//         phase: step | null, final: [all, previous, lookup], every?,
//         predict?: the student's answer to the phase_step question, band?:
//         the run's answer, grade?: right | wrong,
//         ablations?: [{step, off, accuracy}], link?: override, build?: override,
//         created?: ISO time}
//   or {"resum": [report, ...]}: the same reports with their checksums recomputed
//
// Writes {"reports": [report, ...]} to stdout. The curves are synthetic but
// keep the rules the page checks: lookup accuracy stays below the
// previous-word rule's + PHASE_MARGIN until `phase` and is above it from
// there; the last read-out's accuracy is `final`; the roles are previous
// token in layer 1 from step 100 and induction in layer 2 from the phase
// change. Usage: node scripts/class_reports.mjs < spec.json
import { readFileSync } from "node:fs";
// a module whatever Node's default for .js: lab/'s package.json says so
import * as R from "../assets/site/explorer/lab/report.js";

const spec = JSON.parse(readFileSync(0, "utf8"));

function rng(seed) {
  // a small deterministic generator (mulberry32)
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function paramCount(man, d) {
  return man.train.params.reduce(
    (n, p) => n + p.dims.reduce((m, ab) => m * (ab[0] * d + ab[1]), 1),
    0,
  );
}

async function make(run, man, build, rule) {
  const steps = run.steps,
    step = run.step ?? steps,
    every = run.every ?? 20,
    h = run.h;
  const rand = rng(run.seed * 7919 + h * 31 + run.d_k);
  const losses = [];
  for (let s = 1; s <= step; s++) {
    losses.push(5.66 * Math.exp(-s / (steps / 3)) + 0.2 + 0.01 * rand());
  }
  const evals = [];
  const reads = [];
  for (let s = every; s <= step; s += every) {
    reads.push(s);
  }
  if (reads[reads.length - 1] !== step) {
    reads.push(step);
  }
  reads.forEach((s, i) => {
    const last = i === reads.length - 1;
    const after = run.phase !== null && s >= run.phase;
    const lookup = last
      ? run.final[2]
      : after
        ? Math.max(run.final[2] - 0.01 * (reads.length - i), rule + 0.2)
        : Math.min(rule + 0.05, (rule * s) / (run.phase ?? steps));
    const acc = last
      ? run.final
      : [Math.min(0.9, 0.3 + lookup / 2), Math.min(0.95, 0.5 + s / steps / 2), lookup];
    const layer1 = Array.from({ length: h }, (_, k) =>
      s >= 100 && k < Math.max(1, h - 1) ? "previous" : "mixed",
    );
    const layer2 = Array.from({ length: h }, (_, k) => (after && k === 0 ? "induction" : "mixed"));
    const roles = run.layers === 1 ? [layer1, Array(h).fill("mixed")] : [layer1, layer2];
    evals.push({ step: s, accuracy: acc, roles });
  });
  const settings = {
    h,
    d_k: run.d_k,
    seed: run.seed,
    steps,
    layers: run.layers ?? 2,
    warmup: run.warmup ?? true,
    identical: run.identical ?? false,
  };
  // the lab's link format (assets/site/explorer/lab/link.js)
  const link =
    run.link ??
    "http://127.0.0.1/chapters/explorer.html?v=1&h=" +
      h +
      "&dk=" +
      run.d_k +
      "&budget=0&seed=" +
      run.seed +
      "&steps=" +
      steps +
      "&layers=" +
      settings.layers +
      "&warmup=" +
      (settings.warmup ? 1 : 0) +
      "&identical=" +
      (settings.identical ? 1 : 0) +
      "#explorer-train";
  const phase = R.phaseStep(
    evals.map((e) => e.step),
    evals.map((e) => e.accuracy.map(R.roundAcc)),
    rule,
  );
  const predictions = run.predict
    ? [
        {
          id: "phase_step",
          prediction: run.predict,
          answer: run.band ?? null,
          value: phase,
          status: run.grade ?? "right",
        },
      ]
    : [];
  const n = paramCount(man, h * run.d_k),
    w = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    w[i] = rand() - 0.5;
  }
  return R.buildReport({
    student: run.student,
    link,
    course: { version: "0.1.0", build: run.build ?? build },
    settings,
    knobs: man.train.knobs,
    state: step === steps ? "done" : "paused",
    step,
    losses,
    evals,
    ruleLookup: rule,
    predictions,
    ablations: run.ablations ?? [],
    weights: w,
    created: run.created ?? "2026-11-27T09:00:00.000Z",
  });
}

let reports;
if (spec.resum) {
  reports = await Promise.all(
    spec.resum.map(async (r) => Object.assign(r, { checksum: await R.reportChecksum(r) })),
  );
} else {
  const man = JSON.parse(readFileSync(spec.manifest, "utf8"));
  const build = await R.buildId(man),
    rule = man.train.baselines["previous word"].lookup;
  reports = await Promise.all(spec.runs.map((run) => make(run, man, build, rule)));
}
process.stdout.write(JSON.stringify({ reports, texts: reports.map(R.reportText) }));
