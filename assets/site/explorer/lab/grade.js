// Chapter 11's predictions, graded from the reader's own run: the page's
// twin of mhacourse.checks.predictions, evaluating the same question bank
// (mhacourse/data/questions.json, which the build copies to
// explorer-data/lab/questions.json) with the same rules on the same record
// of a run (record.js makes it from the panel's read-outs):
//
//   { settings: {h, d_k, seed, steps, and each knob by its name},
//     step, rule_lookup,
//     history: [{step, lookup, roles: [[name per head] per layer]}],
//     final: null | {step, stats: [layer][head][5], composition: {q,k,v}|null,
//                    baseline: {q,k,v}|null},
//     ablations: [{step, off: [[layer, head], ...] (from 1), lookup}] }
//
// The knobs are the manifest's (train.knobs, passed in: knobs.js): a count
// is a whole number, a switch true or false, and a knob the record lacks
// stood at its default. A question whose read-out is not ready waits; it
// is never graded on part of a run. Bad input throws a LabError with one
// line. No DOM, no globals.

import { knobDefaults } from "./knobs.js";

export class LabError extends Error {}

const SETTINGS = ["h", "d_k", "seed", "steps"]; // and the knobs
const KINDS = ["q", "k", "v"];
const STATISTICS = ["previous", "induction", "duplicate", "self", "first"];

function fail(line) {
  throw new LabError(line);
}

function shown(v) {
  if (v === undefined) {
    return "nothing";
  }
  let s;
  try {
    s = JSON.stringify(v);
  } catch (e) {
    s = String(v);
  }
  s = s === undefined ? String(v) : s;
  return s.length > 60 ? s.slice(0, 57) + "..." : s;
}

const isDict = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function dict(where, v, keys) {
  if (!isDict(v)) {
    fail(where + " must be an object; got " + shown(v) + ".");
  }
  const missing = (keys || []).filter((k) => !(k in v));
  if (missing.length) {
    fail(where + " lacks " + missing.join(", ") + ": make it with record.js.");
  }
  return v;
}

function list(where, v) {
  if (!Array.isArray(v)) {
    fail(where + " must be a list; got " + shown(v) + ".");
  }
  return v;
}

function real(where, v) {
  if (typeof v !== "number" || !Number.isFinite(v)) {
    fail(where + " must be a finite number; got " + shown(v) + ".");
  }
  return v;
}

function share(where, v, what) {
  real(where, v);
  if (v < 0 || v > 1) {
    fail(where + " must be " + (what || "an accuracy") + " from 0 to 1; got " + v + ".");
  }
  return v;
}

function whole(where, v, low) {
  low = low || 0;
  if (!Number.isSafeInteger(v) || v < low) {
    fail(where + " must be a whole number >= " + low + "; got " + shown(v) + ".");
  }
  return v;
}

function bool(where, v) {
  if (typeof v !== "boolean") {
    fail(where + " must be true or false; got " + shown(v) + ".");
  }
}

function checkRoles(where, roles, layers, h) {
  list(where, roles);
  const names = STATISTICS.concat(["mixed"]);
  const bad =
    roles.length < layers ||
    roles
      .slice(0, layers)
      .some((r) => !Array.isArray(r) || r.length !== h || r.some((n) => names.indexOf(n) < 0));
  if (bad) {
    fail(
      where + " must be " + layers + " lists of " + h + " role names; got " + shown(roles) + ".",
    );
  }
}

// The record, if it is one (its settings with every knob: a missing one at
// its default); else a LabError naming the field.
export function checkRecord(record, knobs) {
  const r0 = dict("record", record, ["settings", "step", "rule_lookup", "history"]);
  const s = Object.assign(knobDefaults(knobs), dict("record.settings", r0.settings, SETTINGS));
  const r = Object.assign({}, r0, { settings: s });
  (knobs || []).forEach((k) => {
    if (k.control === "count") {
      whole("settings." + k.name, s[k.name], k.min);
    } else {
      bool("settings." + k.name, s[k.name]);
    }
  });
  const h = whole("settings.h", s.h, 1),
    layers = whole("settings.layers", s.layers, 1);
  whole("settings.d_k", s.d_k, 1);
  whole("settings.steps", s.steps, 1);
  whole("settings.seed", s.seed);
  whole("record.step", r.step);
  if (r.step > s.steps) {
    fail("record.step is " + r.step + ", past the run's " + s.steps + " steps (settings.steps).");
  }
  share("record.rule_lookup", r.rule_lookup);
  let last = -1;
  list("record.history", r.history).forEach((e, i) => {
    dict("history[" + i + "]", e, ["step", "lookup", "roles"]);
    const step = whole("history[" + i + "].step", e.step);
    if (step <= last) {
      fail(
        "history must be in step order; history[" +
          i +
          "] is at step " +
          step +
          ", after step " +
          last +
          ".",
      );
    }
    last = step;
    share("history[" + i + "].lookup", e.lookup);
    checkRoles("history[" + i + "].roles", e.roles, layers, h);
  });
  if (r.final !== undefined && r.final !== null) {
    const f = dict("record.final", r.final, ["step", "stats"]);
    whole("final.step", f.step);
    const stats = list("final.stats", f.stats);
    const shape =
      stats.length >= layers &&
      stats
        .slice(0, layers)
        .every(
          (row) =>
            Array.isArray(row) &&
            row.length === h &&
            row.every((st) => Array.isArray(st) && st.length === STATISTICS.length),
        );
    if (!shape) {
      fail(
        "final.stats must be (" + layers + ", " + h + ", 5) numbers (layers, heads, statistics).",
      );
    }
    stats
      .slice(0, layers)
      .forEach((row) => row.forEach((st) => st.forEach((v) => real("final.stats", v))));
    ["composition", "baseline"].forEach((key) => {
      if (f[key] !== undefined && f[key] !== null) {
        dict("final." + key, f[key], KINDS);
        // a ratio of norms
        KINDS.forEach((k) => share("final." + key + "." + k, f[key][k], "a composition score"));
      }
    });
  }
  list("record.ablations", r.ablations === undefined ? [] : r.ablations).forEach((a, i) => {
    dict("ablations[" + i + "]", a, ["step", "off", "lookup"]);
    whole("ablations[" + i + "].step", a.step);
    share("ablations[" + i + "].lookup", a.lookup);
    list("ablations[" + i + "].off", a.off).forEach((p) => {
      if (!Array.isArray(p) || p.length !== 2) {
        fail(
          "ablations[" + i + "].off must list [layer, head] pairs (from 1); got " + shown(p) + ".",
        );
      }
      const l = whole("ablations[" + i + "].off layer", p[0], 1),
        hd = whole("ablations[" + i + "].off head", p[1], 1);
      if (l > layers || hd > h) {
        fail(
          "ablations[" +
            i +
            "].off switches off layer " +
            l +
            " head " +
            hd +
            "; the run has " +
            layers +
            " layer(s) of " +
            h +
            " heads (counted from 1).",
        );
      }
    });
  });
  return r;
}

// The predictions ({question id: answer}), if every id and answer is the
// bank's; else a LabError naming the choices.
export function checkPredictions(bank, predictions) {
  const p = dict("predictions", predictions);
  const byId = {};
  bank.questions.forEach((q) => {
    byId[q.id] = q;
  });
  Object.keys(p).forEach((id) => {
    if (!Object.prototype.hasOwnProperty.call(byId, id)) {
      fail(
        "no question " +
          shown(id) +
          "; the bank's are " +
          Object.keys(byId).sort().join(", ") +
          ".",
      );
    }
    if (
      typeof p[id] !== "string" ||
      !Object.prototype.hasOwnProperty.call(byId[id].answers, p[id])
    ) {
      fail(
        shown(p[id]) +
          " is not an answer to " +
          shown(id) +
          "; pick one of " +
          Object.keys(byId[id].answers).sort().join(", ") +
          ".",
      );
    }
  });
  return p;
}

// --- the read-outs (the same in Python) ----------------------------------

const done = (r) => r.step >= r.settings.steps;

function lastReadout(r) {
  const hist = r.history,
    e = hist[hist.length - 1];
  return done(r) && e && e.step === r.step ? e : null;
}

function finalReadout(r) {
  const f = r.final;
  return done(r) && f && f.step === r.step ? f : null;
}

function phaseStep(r, c) {
  for (const e of r.history) {
    if (e.lookup > r.rule_lookup + c.phase_margin) {
      return [true, e.step];
    }
  }
  return [done(r), null];
}

function layersNamed(r, role) {
  const e = lastReadout(r);
  if (!e) {
    return [false, null];
  }
  const has = e.roles.slice(0, r.settings.layers).map((row) => row.some((n) => n === role));
  const one = !!has[0],
    two = !!has[1];
  return [true, one && two ? "both" : one ? "layer 1" : two ? "layer 2" : "neither"];
}

// [ready, value] of the read-out `name` on a checked record.
export function readout(name, r, c) {
  if (name === "phase_step") {
    return phaseStep(r, c);
  }
  if (name === "leaves_plateau") {
    const [ready, step] = phaseStep(r, c);
    return [ready, !ready ? null : step === null ? "no" : "yes"];
  }
  if (name === "previous_layers") {
    return layersNamed(r, "previous");
  }
  if (name === "induction_layers") {
    return layersNamed(r, "induction");
  }
  if (name === "layer1_off_lookup") {
    const h = r.settings.h;
    const hits = done(r)
      ? (r.ablations || []).filter((a) => {
          if (a.step !== r.step) {
            return false;
          }
          const off = new Set(a.off.map((p) => p[0] + "/" + p[1]));
          if (off.size !== h) {
            return false;
          }
          for (let i = 1; i <= h; i++) {
            if (!off.has("1/" + i)) {
              return false;
            }
          }
          return true;
        })
      : [];
    return hits.length ? [true, hits[hits.length - 1].lookup] : [false, null];
  }
  if (name === "rising_composition") {
    const f = finalReadout(r);
    if (!f || !f.composition || !f.baseline) {
      return [false, null];
    }
    let best = "none",
      bestRatio = -Infinity;
    KINDS.forEach((k) => {
      const b = f.baseline[k],
        v = f.composition[k];
      if (b > 0 && v > b && v / b > bestRatio) {
        best = k;
        bestRatio = v / b;
      }
    });
    return [true, best];
  }
  if (name === "heads_identical") {
    const f = finalReadout(r);
    if (!f) {
      return [false, null];
    }
    let spread = 0;
    f.stats.slice(0, r.settings.layers).forEach((row) =>
      row.forEach((st) =>
        st.forEach((v, k) => {
          spread = Math.max(spread, Math.abs(v - row[0][k]));
        }),
      ),
    );
    return [true, spread <= c.identical_tolerance ? "yes" : "no"];
  }
  fail("no read-out " + shown(name) + ".");
}

function answerOf(rule, value) {
  if (rule.kind === "equal") {
    return value;
  }
  if (value === null) {
    return rule.none;
  }
  for (const b of rule.bands) {
    if (value >= b.lo && (b.hi === null || value < b.hi)) {
      return b.answer;
    }
  }
  return rule.none;
}

// null if question q is asked of a run with settings s (its "requires"),
// else why not, in words.
export function notApplicable(q, s) {
  for (const k of Object.keys(q.requires)) {
    const v = q.requires[k];
    if (k === "h_min") {
      if (s.h < v) {
        return "it needs at least " + v + " heads; this run has h = " + s.h;
      }
    } else if (s[k] !== v) {
      return (
        "it is about runs with " +
        k +
        " = " +
        JSON.stringify(v) +
        "; this run has " +
        JSON.stringify(s[k])
      );
    }
  }
  return null;
}

// What the run showed, in words (as Python's _observed).
function observed(q, answer, value, step) {
  const label = q.answers[answer];
  if (value === null) {
    return "no phase change in " + step + " steps";
  }
  if (q.rule.unit === "step") {
    return "step " + value + " (" + label + ")";
  }
  if (q.rule.unit === "share") {
    return (Math.floor(1000 * value + 0.5) / 10).toFixed(1) + " % (" + label + ")";
  }
  return label;
}

function gradeOne(q, prediction, r, c, chapter) {
  const base = {
    id: q.id,
    prediction: prediction,
    link: (q.chapter || chapter) + "#" + q.section,
    explain: q.explain,
    answer: null,
    value: null,
  };
  const why = notApplicable(q, r.settings);
  if (why) {
    return Object.assign(base, {
      status: "not_applicable",
      line: "Not graded on this run: " + why + ".",
    });
  }
  const [ready, value] = readout(q.readout, r, c);
  if (!ready) {
    return Object.assign(base, {
      status: "waiting",
      line: q.waiting || "Waiting for the run: its read-out is not ready yet.",
    });
  }
  const phase = readout("phase_step", r, c);
  if (q.explain_plateau && phase[0] && phase[1] === null) {
    base.explain = q.explain_plateau;
  } // this run showed no phase change
  const answer = answerOf(q.rule, value),
    ok = answer === prediction;
  const seed = q.seed_dependent
    ? " Graded against this run (seed " + r.settings.seed + "): another seed or size may differ."
    : "";
  return Object.assign(base, {
    status: ok ? "right" : "wrong",
    answer: answer,
    value: value,
    line:
      (ok ? "Right" : "Not this time") +
      ": you said " +
      q.answers[prediction] +
      "; this run: " +
      observed(q, answer, value, r.step) +
      "." +
      seed,
  });
}

// The read-outs of a run's history (when lookup left its plateau), which
// a model read from a file does not hold: it holds the finished weights.
const OF_THE_RUN = ["phase_step", "leaves_plateau"];
export const MODEL_FILE_LINE =
  "Not graded on a model file: it holds the finished model, not the run's history " +
  "(train it here, or open its run's report, to grade this).";

// Grade predictions against a model read from a file (its record's
// history: its one read-out): a model, not a run. The questions about the
// run's history are not graded and say so; the others are, on the model.
export function gradeModel(bank, predictions, record, knobs) {
  const ofRun = (id) =>
    bank.questions.some((q) => q.id === id && OF_THE_RUN.indexOf(q.readout) >= 0);
  return grade(bank, predictions, record, knobs).map((g) =>
    ofRun(g.id) && g.status !== "not_applicable"
      ? Object.assign(g, {
          status: "not_applicable",
          answer: null,
          value: null,
          line: MODEL_FILE_LINE,
        })
      : g,
  );
}

// Grade predictions ({question id: answer}) against a run's record: one
// object per prediction, in the bank's order: {id, status ("right",
// "wrong", "waiting", "not_applicable"), prediction, answer, value, line,
// explain, link}. knobs: the manifest's train.knobs. Throws a LabError
// (one line) on bad input.
export function grade(bank, predictions, record, knobs) {
  dict("bank", bank, ["questions", "constants", "chapter"]);
  const p = checkPredictions(bank, predictions);
  const r = checkRecord(record, knobs);
  return bank.questions
    .filter((q) => Object.prototype.hasOwnProperty.call(p, q.id))
    .map((q) => gradeOne(q, p[q.id], r, bank.constants, bank.chapter));
}
