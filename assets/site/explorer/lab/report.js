// A student's report: one run of the trainer, as a small JSON file she hands
// in and the class page (class/class.js) reads. Pure functions, no DOM and no
// globals: the trainer page builds a report with buildReport, the class page
// checks one with verifyChecksum and reads its phase change with phaseStep.
// The format is class/report.schema.json (the class page checks every report
// against it); REPORT_VERSION is its version. Every hash is SHA-256 from the browser's
// crypto.subtle (Node's
// global crypto too: the tests' generator imports this file); where the
// browser has none (a page over plain http from an address that is not this
// machine's: a laptop serving a school's network), from @noble/hashes,
// which the build copies to _static/noble-hashes/ (scripts/vendor_js.py)
// and which is loaded only then.

import { knobSettings } from "./knobs.js";
import { patchChoice } from "./link.js";

export const REPORT_FORMAT = "mhacourse-report";
export const REPORT_VERSION = 1;
// The phase change: the first read-out at which held-out lookup accuracy is
// more than PHASE_MARGIN above the previous-word rule's. The trainer's rule
// (trainer-readout.js) and the question bank's constants.phase_margin; the
// pages pass the manifest's train.phase_margin (the bank's, copied by the
// build), and this value stands only where none is given.
export const PHASE_MARGIN = 0.1;
// How a report rounds its numbers (readable JSON, and small): losses to 6
// significant digits, accuracies to 6 decimals (one scored position of the
// 15,360 held-out ones is 6.5e-5, so no position is lost).
const LOSS_DIGITS = 6;
const ACC_DECIMALS = 6;
const MAX_STUDENT = 80;

export function roundLoss(x) {
  return Number.isFinite(x) ? Number(x.toPrecision(LOSS_DIGITS)) : null;
}
export function roundAcc(x) {
  return Number.isFinite(x) ? Number(x.toFixed(ACC_DECIMALS)) : null;
}

// JSON with every object's keys sorted and no spaces: the text the checksum
// is taken of, the same in every browser (and in Node) for the same values.
export function canonicalJSON(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      return "null";
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return "[" + value.map(canonicalJSON).join(",") + "]";
  }
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalJSON(value[k])).join(",") + "}";
}

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

const NOBLE = "../../noble-hashes/sha2.js"; // from _static/explorer/lab/ in the built site
let noble = null; // the library, loaded once, where crypto.subtle is missing

// Which SHA-256 this page uses: "crypto.subtle" or "@noble/hashes".
export function hashSource() {
  return globalThis.crypto && globalThis.crypto.subtle ? "crypto.subtle" : "@noble/hashes";
}

// SHA-256 of text (UTF-8) or bytes, as 64 hex digits.
export async function sha256Hex(data) {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const c = globalThis.crypto;
  if (c && c.subtle) {
    return hex(await c.subtle.digest("SHA-256", bytes));
  }
  try {
    noble = noble || (await import(new URL(NOBLE, import.meta.url).href));
  } catch (e) {
    throw new Error(
      "this page has no crypto.subtle (plain http from another machine) and could not load its " +
        "own " +
        "SHA-256 (" +
        NOBLE +
        "): rebuild the site with `make book`, or serve it over https",
    );
  }
  return hex(noble.sha256(bytes));
}

// The model's checksum: SHA-256 of its float32 weights, tensor after tensor
// in the order the trainer holds them (the manifest's train.params), each
// little-endian as the page holds it.
export async function modelChecksum(arrays) {
  // Float32Arrays, or the worker's copies {data: Float32Array, dims}
  const list = (ArrayBuffer.isView(arrays) ? [arrays] : Array.from(arrays)).map((a) => a.data || a);
  let n = 0;
  list.forEach((a) => {
    n += a.length;
  });
  const all = new Float32Array(n);
  let at = 0;
  list.forEach((a) => {
    all.set(a, at);
    at += a.length;
  });
  return { sha256: await sha256Hex(new Uint8Array(all.buffer)), params: n, dtype: "float32" };
}

// Which build of the course made a run: SHA-256 (16 hex digits) of what
// fixes a run's numbers, the manifest's training section (graphs, data, sizes,
// schedule, baselines), without the seconds the export took (they change with
// every build, the numbers do not).
export async function buildId(manifest) {
  const strip = (v) => {
    if (Array.isArray(v)) {
      return v.map(strip);
    }
    if (v === null || typeof v !== "object") {
      return v;
    }
    const out = {};
    Object.keys(v).forEach((k) => {
      if (!/_seconds$/.test(k)) {
        out[k] = strip(v[k]);
      }
    });
    return out;
  };
  if (!manifest || !manifest.train) {
    throw new Error("the manifest has no training section");
  }
  return (await sha256Hex(canonicalJSON(strip(manifest.train)))).slice(0, 16);
}

// The phase change of a run: the first read-out whose lookup accuracy
// (accuracy[2]) is more than `margin` above the previous-word rule's lookup
// accuracy `ruleLookup`; null if none is.
export function phaseStep(steps, accuracy, ruleLookup, margin = PHASE_MARGIN) {
  for (let i = 0; i < steps.length; i++) {
    if (accuracy[i][2] > ruleLookup + margin) {
      return steps[i];
    }
  }
  return null;
}

// The checksum of a report: SHA-256 of its canonical JSON without the
// checksum itself. It catches a hand edit that did not recompute it; it is
// no signature (a static site holds no secret), so the class page also
// checks the report against itself and can re-run its link.
export async function reportChecksum(report) {
  const rest = Object.assign({}, report);
  delete rest.checksum;
  return sha256Hex(canonicalJSON(rest));
}

export async function verifyChecksum(report) {
  return typeof report.checksum === "string" && report.checksum === (await reportChecksum(report));
}

function need(cond, what) {
  if (!cond) {
    throw new Error("cannot build the report: " + what);
  }
}

// The report of one run. `run` holds:
//   student        the name the student typed (1-80 characters)
//   link           the experiment's address (the trainer's "Copy link")
//   course         {version, build}: the course's version and buildId(manifest)
//   settings       {h, d_k, seed, steps, and each knob by its name}
//   knobs          the manifest's train.knobs: the report's settings hold
//                  each knob's value (its default where settings lack it)
//   state, step    "done" | "paused" | "diverged", and the steps trained
//   losses         the training loss of every step, in order
//   evals          the read-outs in step order: {step, accuracy: [all,
//                  previous, lookup], roles: [[role of each head] per layer]}
//   ruleLookup     the previous-word rule's lookup accuracy (the manifest's
//                  train.baselines["previous word"].lookup)
//   margin         optional: the phase change's margin (the manifest's
//                  train.phase_margin, the question bank's; default PHASE_MARGIN)
//   predictions    what the lab's grade.js returns, one a question: {id,
//                  prediction (the student's answer), answer (the run's),
//                  value (the read-out), status: right | wrong | waiting |
//                  not_applicable}
//   ablations      [{step, off: ["L1H2", ...], accuracy: [all, previous, lookup]}]
//   patch          optional: the Patch view's {corruption, pairs} (the
//                  trainer's, as its link holds them)
//   patchSpec      with patch: the manifest's train.patch, which the
//                  choice is checked against (its corruptions' names, 1 to
//                  n_pairs pairs); the report's patch is left out without it
//   weights        the model's float32 tensors (or one Float32Array)
//   created        optional: an ISO time (default: now)
// Returns a promise of the report (an object; JSON.stringify it to save).
export async function buildReport(run) {
  const s = run.settings || {};
  need(typeof run.student === "string" && run.student.trim().length > 0, "no student name");
  need(
    run.student.trim().length <= MAX_STUDENT,
    "the name is longer than " + MAX_STUDENT + " characters",
  );
  need(typeof run.link === "string" && run.link.length > 0, "no link");
  need(run.course && run.course.build, "no build id");
  need(Number.isInteger(s.h) && Number.isInteger(s.d_k), "no size");
  need(Array.isArray(run.losses) && Array.isArray(run.evals), "no curves");
  need(run.weights, "no weights");
  const patch =
    run.patch && run.patchSpec
      ? patchChoice(run.patchSpec, run.patch.corruption, run.patch.pairs)
      : null;
  need(
    !patch || !patch.bad,
    "the Patch view's " +
      (patch && patch.bad) +
      " is not one of this build's (" +
      (run.patchSpec && run.patchSpec.corruptions
        ? run.patchSpec.corruptions.map((c) => c.name).join(", ") +
          "; 1 to " +
          run.patchSpec.n_pairs +
          " pairs"
        : "none") +
      ")",
  );
  const evals = run.evals.filter((e) => e.accuracy.every(Number.isFinite));
  const steps = evals.map((e) => e.step);
  const accuracy = evals.map((e) => e.accuracy.map(roundAcc));
  const report = {
    format: REPORT_FORMAT,
    version: REPORT_VERSION,
    course: { version: String(run.course.version || ""), build: String(run.course.build) },
    student: run.student.trim(),
    created: run.created || new Date().toISOString(),
    link: run.link,
    settings: Object.assign(
      { h: s.h, d_k: s.d_k, d_model: s.h * s.d_k, seed: s.seed, steps: s.steps },
      knobSettings(run.knobs, s),
    ),
    state: run.state,
    step: run.step,
    curves: { loss: run.losses.map(roundLoss), steps, accuracy },
    phase_step: phaseStep(steps, accuracy, run.ruleLookup, run.margin),
    roles: {
      steps: evals.filter((e) => e.roles).map((e) => e.step),
      heads: evals.filter((e) => e.roles).map((e) => e.roles),
    },
    predictions: (run.predictions || []).map((p) => ({
      id: String(p.id),
      prediction: String(p.prediction),
      answer: p.answer == null ? null : String(p.answer),
      value: p.value === undefined ? null : p.value,
      grade: p.status || p.grade || "waiting",
    })),
    ablations: (run.ablations || []).map((a) => ({
      step: a.step,
      off: a.off.slice(),
      accuracy: a.accuracy.map(roundAcc),
    })),
    model: await modelChecksum(run.weights),
  };
  if (patch) {
    report.patch = patch;
  }
  report.checksum = await reportChecksum(report);
  return report;
}

// The file name a report is saved under: the student and the run's size.
export function reportFileName(report) {
  const who =
    report.student
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "") || "student";
  return "report-" + who + "-h" + report.settings.h + "-dk" + report.settings.d_k + ".json";
}

// The report as the text of its file: readable JSON, one field a line at
// the top, the long arrays each on one line.
export function reportText(report) {
  return (
    JSON.stringify(report, null, 1).replace(
      /\[\s+([^[\]{}]*?)\s+\]/g,
      (all, inner) => "[" + inner.replace(/\s*\n\s*/g, " ") + "]",
    ) + "\n"
  );
}
