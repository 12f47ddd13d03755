// Reading a class's reports (the class page, class.js): each file is checked
// against the format (report.schema.json), its own checksum, the build of
// this site and itself; a file that fails gets one line, and the others are
// read. Pure functions: the files' texts come in, nothing goes out (no
// request is made with a report).
import { check } from "./schema-lite.js";
import { headName } from "../explorer/lab/heads.js";
import { knobFromText, knobValue, knobWords } from "../explorer/lab/knobs.js";
import { patchChoice } from "../explorer/lab/link.js";
import {
  REPORT_FORMAT,
  REPORT_VERSION,
  phaseStep,
  verifyChecksum,
} from "../explorer/lab/report.js";

export const MAX_BYTES = 1000000; // a report of 1,500 steps at h = 16 is under 100 KB
// A re-run agrees with its report when every loss is within LOSS_REL of the
// report's (relative) and every held-out accuracy within POSITIONS scored
// positions of the held-out set's (class.js states both, and why, on the page).
export const TOLERANCE = { lossRel: 1e-3, positions: 5 };

const who = (r) => r.student.trim().replace(/\s+/g, " ").toLowerCase();
const graded = (p) => p.grade === "right" || p.grade === "wrong";

// What an experiment's link says about its run: whichever of h, d_k, seed,
// steps and the knobs (the manifest's train.knobs) it names (in its query
// or after #; the lab's link.js writes ?v=1&h=4&dk=16&...&KNOB=VALUE). A
// value that is not one of its knob's is kept as text (a mismatch).
export function parseLink(link, knobs) {
  let url;
  try {
    url = new URL(link, "https://course.invalid/");
  } catch (e) {
    return {};
  }
  const params = new URLSearchParams(url.search);
  const hash = url.hash.replace(/^#/, "");
  if (hash.includes("=")) {
    new URLSearchParams(hash.replace(/^[^?]*\?/, "")).forEach((v, k) => params.set(k, v));
  }
  const out = {},
    int = (v) => (/^\d+$/.test(v) ? Number(v) : v);
  [
    ["h", "h"],
    ["d_k", "d_k"],
    ["dk", "d_k"],
    ["seed", "seed"],
    ["steps", "steps"],
  ].forEach(([k, name]) => {
    if (params.has(k)) {
      out[name] = int(params.get(k));
    }
  });
  (knobs || []).forEach((k) => {
    if (!params.has(k.name)) {
      return;
    }
    const v = knobFromText(k, params.get(k.name));
    out[k.name] = v === null ? params.get(k.name) : v;
  });
  return out;
}

// The settings a report's link names and its report gives otherwise:
// ["h: the link says 4, the report 8", ...]; [] when they agree.
export function linkMismatch(report, parse = parseLink, knobs = []) {
  const said = parse(report.link, knobs) || {};
  return Object.keys(said)
    .filter((k) => k in report.settings && said[k] !== report.settings[k])
    .map((k) => k + ": the link says " + said[k] + ", the report " + report.settings[k]);
}

// How the report contradicts itself (an edit that kept the checksum, or
// recomputed it): the first contradiction, or null. Its settings hold every
// knob of this build (ctx.knobs) with one of the knob's values, and no other.
function contradiction(r, ctx) {
  const s = r.settings,
    c = r.curves,
    knobs = ctx.knobs || [];
  const base = ["h", "d_k", "d_model", "seed", "steps"],
    names = knobs.map((k) => k.name);
  const stray = Object.keys(s).find((k) => base.indexOf(k) < 0 && names.indexOf(k) < 0);
  if (stray !== undefined) {
    return "its settings name " + JSON.stringify(stray).slice(0, 30) + ", not a knob of this build";
  }
  const off = knobs.find((k) => knobValue(k, s[k.name]) === null);
  if (off) {
    return (
      "its settings give the knob " +
      off.name +
      " " +
      JSON.stringify(s[off.name]) +
      ", not one of its values"
    );
  }
  const patch =
    r.patch && ctx.patch ? patchChoice(ctx.patch, r.patch.corruption, r.patch.pairs) : null;
  if (patch && patch.bad) {
    return (
      "its Patch view's " +
      patch.bad +
      " " +
      JSON.stringify(r.patch[patch.bad]).slice(0, 30) +
      " is not one of this build's"
    );
  }
  if (s.d_model !== s.h * s.d_k) {
    return "its d_model " + s.d_model + " is not h × d_k = " + s.h * s.d_k;
  }
  if (r.step > s.steps) {
    return "it ran " + r.step + " steps of a " + s.steps + "-step run";
  }
  if (c.loss.length !== r.step) {
    return "it has " + c.loss.length + " losses for " + r.step + " steps";
  }
  if (c.steps.length !== c.accuracy.length) {
    return (
      "its read-outs have " + c.steps.length + " steps and " + c.accuracy.length + " accuracies"
    );
  }
  for (let i = 0; i < c.steps.length; i++) {
    if (c.steps[i] > r.step || (i && c.steps[i] <= c.steps[i - 1])) {
      return "its read-out steps are out of order or past step " + r.step;
    }
  }
  const bad = r.roles.heads.find(
    (layers) => layers.length > 8 || layers.some((row) => row.length !== s.h),
  );
  if (bad || r.roles.steps.length !== r.roles.heads.length) {
    return "its roles are not one per head (h = " + s.h + ") at each read-out";
  }
  const phase = phaseStep(c.steps, c.accuracy, ctx.ruleLookup, ctx.margin);
  if (phase !== r.phase_step) {
    return (
      "its phase-change step " +
      r.phase_step +
      " does not follow from its own curves (" +
      phase +
      ")"
    );
  }
  const p = r.predictions.find((q) => q.id === "phase_step" && graded(q));
  if (p && p.value !== phase) {
    return "its phase-change prediction was graded against " + p.value + ", not its run's " + phase;
  }
  if (ctx.paramCount && r.model.params !== ctx.paramCount(s.d_model)) {
    return (
      "its model has " +
      r.model.params +
      " parameters; a model of d_model " +
      s.d_model +
      " has " +
      ctx.paramCount(s.d_model)
    );
  }
  const a = r.ablations.find((x) => x.step > r.step);
  return a ? "an ablation at step " + a.step + " is past the run's last step " + r.step : null;
}

// One file: {report} or {problem: one line}. text: the file's text (null
// when it was too large to read: size says how large). ctx: {schema,
// build, ruleLookup, paramCount, knobs (the manifest's train.knobs), patch
// (its train.patch)}.
export async function readReport(text, ctx, size = text ? text.length : 0) {
  if (text === null || text.length > MAX_BYTES) {
    return {
      problem:
        ": " +
        Math.round(size / 1000) +
        " KB, too large to be a report (at most " +
        MAX_BYTES / 1000 +
        " KB)",
    };
  }
  let r;
  try {
    r = JSON.parse(text);
  } catch (e) {
    return {
      problem:
        ": not a report: a report is the .json file the trainer's Export report saves, and this " +
        "file is not JSON" +
        (/^\s*</.test(text) ? " (it looks like a web page: save the report, not the page)" : ""),
    };
  }
  if (!r || typeof r !== "object" || r.format !== REPORT_FORMAT) {
    return { problem: ': not a report: it has no "format": "' + REPORT_FORMAT + '"' };
  }
  if (r.version !== REPORT_VERSION) {
    return {
      problem:
        ": a report of format version " +
        JSON.stringify(r.version) +
        "; this page reads version " +
        REPORT_VERSION +
        (r.version < REPORT_VERSION ? " (an older build of the course made it)" : ""),
    };
  }
  const bad = check(ctx.schema, r);
  if (bad) {
    return { problem: ": not a valid report: " + bad };
  }
  const name =
    " (" + r.student.trim() + ", h = " + r.settings.h + ", d_k = " + r.settings.d_k + "): ";
  if (r.course.build !== ctx.build) {
    return {
      problem:
        name +
        "a report from another build of the course (build " +
        r.course.build +
        (r.course.version ? ", version " + r.course.version : "") +
        "; this page is build " +
        ctx.build +
        "): its run may give other numbers here, so it is left out",
      student: r.student,
    };
  }
  if (!(await verifyChecksum(r))) {
    return {
      problem: name + "edited after it was saved: its checksum does not match its content",
      student: r.student,
    };
  }
  const odd = contradiction(r, ctx);
  if (odd) {
    return { problem: name + "edited: " + odd, student: r.student };
  }
  return { report: r };
}

// Every file: {runs: [{file, report, mismatch}], problems: [{file, line}]}.
// A student's second report gets a line and is left out (the first by file
// name is kept); so does an exact copy of a file.
export async function readClass(files, ctx) {
  const sorted = files.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const read = await Promise.all(sorted.map((f) => readReport(f.text, ctx, f.size)));
  const runs = [],
    problems = [],
    seen = new Map();
  read.forEach((got, i) => {
    const file = sorted[i].name;
    if (got.problem) {
      problems.push({ file, line: file + got.problem + "." });
      return;
    }
    const r = got.report,
      first = seen.get(who(r));
    if (first) {
      const same = first.report.checksum === r.checksum;
      problems.push({
        file,
        line:
          file +
          " (" +
          r.student +
          "): " +
          (same
            ? "a copy of " + first.file
            : "a second report from " +
              r.student +
              " (the first is " +
              first.file +
              "); only the first is shown") +
          ".",
      });
      return;
    }
    const run = { file, report: r, mismatch: linkMismatch(r, ctx.parseLink, ctx.knobs) };
    seen.set(who(r), run);
    runs.push(run);
  });
  return { runs, problems };
}

// How close a re-run of a report's link came: the largest relative loss
// difference and the largest accuracy difference in scored positions, over
// the steps both have; `agrees` within TOLERANCE. rerun: {loss, steps,
// accuracy, sha256?}; positions: the held-out set's scored positions.
export function compareRerun(report, rerun, positions) {
  const c = report.curves;
  let lossRel = 0,
    acc = 0,
    n = 0;
  const m = Math.min(c.loss.length, rerun.loss.length);
  for (let i = 0; i < m; i++) {
    lossRel = Math.max(
      lossRel,
      Math.abs(rerun.loss[i] - c.loss[i]) / Math.max(Math.abs(c.loss[i]), 1e-12),
    );
  }
  const at = new Map(rerun.steps.map((s, i) => [s, rerun.accuracy[i]]));
  c.steps.forEach((s, i) => {
    const b = at.get(s);
    if (!b) {
      return;
    }
    n++;
    c.accuracy[i].forEach((x, k) => {
      acc = Math.max(acc, Math.abs(x - b[k]) * positions);
    });
  });
  const complete = m === c.loss.length && n === c.steps.length;
  return {
    lossRel,
    positions: acc,
    complete,
    sameBits: !!rerun.sha256 && rerun.sha256 === report.model.sha256,
    agrees: complete && lossRel <= TOLERANCE.lossRel && acc <= TOLERANCE.positions,
  };
}

// The book's runs as the class page draws them ({points, sweep}), from the
// lab's table (explorer-data/lab/book_runs.json, mhacourse.book_runs) when
// the site has it: the same runs and rule as scripts/class_reference.py.
// knobs: the manifest's; a point's knobs are those off their defaults.
export function referenceFromBookRuns(t, knobs) {
  const odd = (r) => {
    const out = {};
    (knobs || []).forEach((k) => {
      if (r[k.name] !== undefined && r[k.name] !== k.default) {
        out[k.name] = r[k.name];
      }
    });
    return out;
  };
  return {
    rule_lookup: t.rule_lookup,
    phase_margin: t.phase_margin,
    points: t.runs.map((r) => ({
      source: /metrics/.test(r.source) ? "grid" : "chapter 11",
      name: r.name,
      h: r.h,
      d_k: r.d_k,
      seed: r.seed,
      steps: r.steps,
      every: r.every,
      knobs: odd(r),
      phase_step: r.phase_step,
    })),
    sweep: t.sweep.runs.map((r) => ({
      source: "chapter 8",
      h: r.h,
      d_k: r.d_k,
      seed: r.seed,
      steps: t.sweep.steps,
      lookup: r.lookup,
      left: r.lookup > t.rule_lookup + t.phase_margin,
    })),
  };
}

// The group a run belongs to: its size and every knob off its default, in
// words ("4 × 16", "4 × 16, warm-up off").
export function groupOf(s, knobs) {
  return [s.h + " × " + s.d_k].concat(knobWords(knobs, s)).join(", ");
}

const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b),
    k = s.length;
  return k ? (k % 2 ? s[(k - 1) / 2] : (s[k / 2 - 1] + s[k / 2]) / 2) : null;
};

// Everything that makes a run but its seed, in words: the size, the knobs
// off their defaults, the steps and, for a run stopped early, where it
// stopped ("4 × 16, 800 steps", "4 × 16, layers 1, 800 steps, stopped at
// 300"). Runs of one setting differ only by their seed.
export function settingsOf(r, knobs) {
  const s = r.settings;
  return (
    groupOf(s, knobs) +
    ", " +
    s.steps +
    " steps" +
    (r.step < s.steps ? ", stopped at " + r.step : "")
  );
}

// The class's distinct runs: the same link gives the same run to the bit,
// so reports of one setting and one seed are copies of one run. Returns
// [{report (the first), students, reports (how many), setting}], in the
// order of the first report of each.
export function distinctRuns(runs, knobs) {
  const out = new Map();
  runs.forEach((x) => {
    const r = x.report,
      setting = settingsOf(r, knobs),
      id = setting + " | seed " + r.settings.seed;
    if (!out.has(id)) {
      out.set(id, { report: r, students: [], reports: 0, setting });
    }
    const d = out.get(id);
    d.students.push(r.student);
    d.reports++;
  });
  return Array.from(out.values());
}

// Which layers hold a head of `role` at the run's last read-out: "layer 1",
// "layer 2", "both" or "neither" (the question bank's previous_layers).
export function layersWith(report, role) {
  const last = report.roles.heads[report.roles.heads.length - 1] || [];
  const has = last.map((row) => row.includes(role));
  return has[0] && has[1] ? "both" : has[0] ? "layer 1" : has[1] ? "layer 2" : "neither";
}

// The lookup accuracy with every head of layer 1 off (the run's last such
// ablation), or null.
function layer1Off(r) {
  const all = Array.from({ length: r.settings.h }, (_, i) => headName(0, i));
  const a = r.ablations
    .filter((x) => x.off.length === all.length && all.every((n) => x.off.includes(n)))
    .pop();
  return a ? a.accuracy[2] : null;
}

// The quiz key the class's runs give (the lesson's questions). Every count
// is over distinct runs (distinctRuns), grouped by every setting but the
// seed (settingsOf), and says how many runs it rests on. Q4 is over the
// students' predictions (each her own), against the best constant answer:
// the band the most of those runs showed. knobs: the manifest's.
export function classStats(runs, knobs) {
  const distinct = distinctRuns(runs, knobs);
  const groups = new Map();
  distinct.forEach((d) => {
    if (!groups.has(d.setting)) {
      groups.set(d.setting, []);
    }
    groups.get(d.setting).push(d);
  });
  const perGroup = Array.from(groups, ([setting, ds]) => {
    const steps = ds.map((d) => d.report.phase_step).filter((x) => x !== null);
    const prev = {};
    ds.forEach((d) => {
      const k = layersWith(d.report, "previous");
      prev[k] = (prev[k] || 0) + 1;
    });
    const off = ds.map((d) => layer1Off(d.report)).filter((x) => x !== null);
    const r0 = ds[0].report;
    return {
      setting,
      n: ds.length,
      reports: ds.reduce((a, d) => a + d.reports, 0),
      seeds: ds.map((d) => d.report.settings.seed).sort((a, b) => a - b),
      left: steps.length,
      never: ds.length - steps.length,
      lo: steps.length ? Math.min(...steps) : null,
      hi: steps.length ? Math.max(...steps) : null,
      median: median(steps),
      previousIn: prev,
      layer1Off: { n: off.length, median: median(off) },
      h: r0.settings.h,
      d_model: r0.settings.d_model,
      plain: !knobWords(knobs, r0.settings).length && r0.step === r0.settings.steps,
    };
  }).sort((a, b) => b.n - a.n || (a.setting < b.setting ? -1 : 1));
  // Q2: d_model 64, every knob at its default, whole runs: one group per h
  const byH = perGroup.filter((g) => g.d_model === 64 && g.plain).sort((a, b) => a.h - b.h);
  const preds = runs
    .map((x) => x.report.predictions.find((p) => p.id === "phase_step"))
    .filter((p) => p && graded(p));
  const shown = {};
  preds.forEach((p) => {
    shown[p.answer] = (shown[p.answer] || 0) + 1;
  });
  const best = Object.keys(shown).sort((a, b) => shown[b] - shown[a] || (a < b ? -1 : 1))[0];
  return {
    runs: distinct.length,
    reports: runs.length,
    groups: perGroup,
    left: perGroup.reduce((a, g) => a + g.left, 0),
    byH: byH.map((g) => ({ h: g.h, median: g.median, left: g.left, n: g.n, setting: g.setting })),
    predicted: preds.length,
    right: preds.filter((p) => p.grade === "right").length,
    constant: best === undefined ? null : { band: best, right: shown[best] },
  };
}
