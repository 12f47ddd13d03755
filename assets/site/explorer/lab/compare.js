// Your run against the book's runs: the table the build writes
// (explorer-data/lab/book_runs.json, mhacourse.book_runs) holds the runs
// chapter 11 recorded, the trained grid's histories and chapter 8's sweep.
// compareRun picks the book's run with the reader's settings (drawn
// faintly under hers), or the book's run of her size with another seed,
// or else the nearest size of chapter 8's sweep, and says in one line
// where her run differs most. The knobs are the manifest's (train.knobs,
// passed in): a book's run matches on h, d_k and every knob (a knob the
// table does not record stood at its default). Pure functions; no DOM, no
// globals.

import { knobSettings, knobWords } from "./knobs.js";

const SAME = ["h", "d_k"]; // and every knob
const PARTS = ["accuracy", "previous", "lookup"];
const PART_WORDS = { accuracy: "overall", previous: "previous-word", lookup: "lookup" };
const CLOSE = 0.02; // accuracy: closer than this at every common read-out is "the same run"

// The first step at which lookup is more than margin above the
// previous-word rule's (the page's and chapter 11's rule), or null.
export function phaseStepOf(history, rule, margin) {
  for (const e of history || []) {
    if (e.lookup > rule + margin) {
      return e.step;
    }
  }
  return null;
}

// {same, size}: the book's page runs with exactly these settings (seed and
// steps too), and those of this size and knobs with any seed; each list
// with the most often read first.
export function findBookRuns(table, s, knobs) {
  const mine = knobSettings(knobs, s);
  const sameKnobs = (r) => {
    const theirs = knobSettings(knobs, r);
    return Object.keys(mine).every((k) => theirs[k] === mine[k]);
  };
  const bySize = table.runs
    .filter((r) => r.page_run && SAME.every((k) => r[k] === s[k]) && sameKnobs(r))
    .sort((a, b) => a.every - b.every || a.seed - b.seed);
  return { same: bySize.filter((r) => r.seed === s.seed && r.steps === s.steps), size: bySize };
}

// The size of chapter 8's sweep nearest (h, d_k), on a log scale:
// {h, d_k, row (its summary), runs (its seeds)}.
export function nearestSweepSize(table, h, dk) {
  const sw = table.sweep,
    dist = (r) => Math.abs(Math.log2(r.h / h)) + Math.abs(Math.log2(r.d_k / dk));
  const row = sw.summary.slice().sort((a, b) => dist(a) - dist(b) || a.h - b.h)[0];
  return {
    h: row.h,
    d_k: row.d_k,
    row: row,
    runs: sw.runs.filter((r) => r.h === row.h && r.d_k === row.d_k),
  };
}

const f3 = (x) => x.toFixed(3);

function phaseWords(step, steps, done, at) {
  if (step !== null) {
    return "phase change at step " + step;
  }
  return done ? "no phase change in " + steps + " steps" : "no phase change yet at step " + at;
}

// The largest difference of accuracy (any part) at a step both histories read.
function largestGap(mine, ref) {
  const theirs = {};
  ref.history.forEach((e) => {
    theirs[e.step] = e;
  });
  let best = null;
  mine.forEach((e) => {
    const t = theirs[e.step];
    if (!t) {
      return;
    }
    PARTS.forEach((p) => {
      if (!Number.isFinite(e[p])) {
        return;
      }
      const gap = Math.abs(e[p] - t[p]);
      if (!best || gap > best.gap) {
        best = { gap: gap, step: e.step, part: p, mine: e[p], theirs: t[p] };
      }
    });
  });
  return best;
}

// Compare the reader's run, mine = {settings: {h, d_k, seed, steps, and
// each knob}, step, history: [{step, accuracy, previous, lookup}]}, with
// the book's; knobs: the manifest's train.knobs. Returns {faint: the book's runs to draw
// under hers (same settings), ref: the run the line compares with (or
// null), sweep: the nearest sweep size when there is no ref (or null),
// line: one sentence}.
export function compareRun(table, mine, knobs) {
  const s = mine.settings,
    hist = (mine.history || []).filter((e) => Number.isFinite(e.lookup));
  const done = mine.step >= s.steps;
  const found = findBookRuns(table, s, knobs);
  const ref = found.same[0] || found.size.find((r) => r.steps === s.steps) || null;
  const out = { faint: found.same.slice(0, 1), ref: ref, sweep: null, line: "" };
  if (ref) {
    const who = found.same.length
      ? "the book's run with these settings"
      : "the book's run of this size, seed " + ref.seed;
    const mineStep = phaseStepOf(hist, table.rule_lookup, table.phase_margin);
    const phaseKnown =
      mineStep !== null || done || (ref.phase_step !== null && ref.phase_step <= mine.step);
    const apart =
      (mineStep === null) !== (ref.phase_step === null) ||
      (mineStep !== null && Math.abs(mineStep - ref.phase_step) > Math.max(ref.every, 20));
    if (phaseKnown && apart) {
      out.line =
        phaseWords(mineStep, s.steps, done, mine.step) +
        "; " +
        who +
        ": " +
        phaseWords(ref.phase_step, ref.steps, true, ref.steps) +
        ".";
      return out;
    }
    const gap = largestGap(hist, ref);
    if (!gap) {
      out.line = "No read-out yet at a step " + who + " read (every " + ref.every + " steps).";
    } else if (gap.gap < CLOSE) {
      out.line =
        "Within " +
        CLOSE +
        " of " +
        who +
        " at every read-out both have (" +
        phaseWords(mineStep, s.steps, done, mine.step) +
        "; the book's: " +
        phaseWords(ref.phase_step, ref.steps, true, ref.steps) +
        ").";
    } else {
      out.line =
        "Largest difference: " +
        PART_WORDS[gap.part] +
        " accuracy " +
        f3(gap.mine) +
        " at step " +
        gap.step +
        "; " +
        who +
        ": " +
        f3(gap.theirs) +
        ".";
    }
    return out;
  }
  const odd = knobWords(knobs, knobSettings(knobs, s));
  if (odd.length) {
    // the sweep ran every knob at its default
    out.line =
      "The book has no run of h = " +
      s.h +
      ", d_k = " +
      s.d_k +
      " with these knobs (" +
      odd.join(", ") +
      ") to compare with.";
    return out;
  }
  const near = nearestSweepSize(table, s.h, s.d_k),
    row = near.row;
  out.sweep = near;
  const last = hist[hist.length - 1];
  const yours =
    last && Number.isFinite(last.accuracy)
      ? "yours: " + f3(last.accuracy) + (done ? "" : " at step " + last.step)
      : "yours: no read-out yet";
  out.line =
    "The book has no run of h = " +
    s.h +
    ", d_k = " +
    s.d_k +
    " with these settings; chapter 8's sweep at the nearest size, h = " +
    near.h +
    ", d_k = " +
    near.d_k +
    " (d_model " +
    table.sweep.d_model +
    ", " +
    table.sweep.steps +
    " steps, seeds " +
    table.sweep.seeds.join(" and ") +
    "), ends at accuracy " +
    f3(row.accuracy_min) +
    " to " +
    f3(row.accuracy_max) +
    "; " +
    yours +
    ".";
  return out;
}
