// The record of a page run that grade.js grades (its format: grade.js's
// header), made from what the trainer panel already holds: its settings,
// its step, the read-outs the read-out worker returned (each
// {step, accuracy: [overall, previous, lookup], stats: layers*h*5 numbers,
// layers, h, roleNames, circuits: {baseline: {column: number}, and each
// read-out's output: numbers}}) and the ablations read on the model. The
// composition is read from the manifest's map read-outs (train.readouts,
// passed in as maps): each a map of its output, against the baseline
// column it names, as the panel draws it. Pure functions; no DOM, no
// globals.

const KINDS = ["q", "k", "v"];
const STATS = 5;

const finite = (xs) =>
  Array.isArray(xs) && xs.every((x) => typeof x === "number" && Number.isFinite(x));

// The mean over a map's pairs (a layer-1 head, a layer-2 head): like with
// like against the baseline's one random pair (chapter 11: the largest of
// h x h pairs would be judged against the largest of as many random pairs).
function mean(xs) {
  return finite(xs) && xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

// The panel's switched-off heads ({layer * h + head: true}, from 0) as
// [[layer, head], ...] from 1, sorted: the record's and the link's form.
export function offPairs(off, h) {
  return Object.keys(off || {})
    .filter((k) => off[k])
    .map(Number)
    .filter((k) => Number.isInteger(k) && k >= 0)
    .sort((a, b) => a - b)
    .map((k) => [Math.floor(k / h) + 1, (k % h) + 1]);
}

// stats (layers * h * 5 numbers) as [layer][head][5].
function statsTable(stats, layers, h) {
  const out = [];
  for (let l = 0; l < layers; l++) {
    const row = [];
    for (let i = 0; i < h; i++) {
      row.push(stats.slice((l * h + i) * STATS, (l * h + i + 1) * STATS));
    }
    out.push(row);
  }
  return out;
}

// The map read-out of each kind of composition (q, k, v: the grader's
// kinds): the one whose output ends in _q, _k or _v.
function mapOf(maps, kind) {
  return (
    (maps || []).find(
      (R) => R.draw === "map" && R.baseline && R.output.split("_").pop() === kind,
    ) || null
  );
}

function finalOf(e, maps) {
  if (!e || !finite(e.stats) || e.stats.length !== e.layers * e.h * STATS) {
    return null;
  }
  const f = {
    step: e.step,
    stats: statsTable(e.stats, e.layers, e.h),
    composition: null,
    baseline: null,
  };
  const c = e.circuits,
    comp = {},
    base = {};
  if (c && c.baseline) {
    // (a one-layer run's is never asked: its question requires two layers)
    KINDS.forEach((kind) => {
      const R = mapOf(maps, kind),
        v = R ? mean(c[R.output]) : null,
        b = R ? c.baseline[R.baseline] : NaN;
      if (v !== null && Number.isFinite(b)) {
        comp[kind] = v;
        base[kind] = b;
      }
    });
  }
  if (KINDS.every((k) => k in comp)) {
    f.composition = comp;
    f.baseline = base;
  }
  return f;
}

// The record of a run. settings: {h, d_k, seed, steps, and each knob by
// its name (the manifest's train.knobs)}; step: the steps done; ruleLookup: the manifest's
// train.baselines["previous word"].lookup; readouts: the panel's read-outs
// (any order; one with a number that is not finite is left out, as the
// page never draws it); ablations: [{step, off: [[layer, head]] from 1,
// accuracy: [overall, previous, lookup]}]; maps: the manifest's
// train.readouts.
export function recordFromReadouts({ settings, step, ruleLookup, readouts, ablations, maps }) {
  const evals = (readouts || [])
    .filter(
      (e) =>
        e &&
        Number.isInteger(e.step) &&
        finite(e.accuracy) &&
        e.accuracy.length === 3 &&
        Array.isArray(e.roleNames),
    )
    .slice()
    .sort((a, b) => a.step - b.step);
  const history = [];
  evals.forEach((e) => {
    if (history.length && history[history.length - 1].step === e.step) {
      return;
    } // read once
    history.push({ step: e.step, lookup: e.accuracy[2], roles: e.roleNames });
  });
  const last = evals[evals.length - 1];
  return {
    settings: Object.assign({}, settings),
    step: step,
    rule_lookup: ruleLookup,
    history: history,
    final: last && last.step === step ? finalOf(last, maps) : null,
    ablations: (ablations || [])
      .filter((a) => a && finite(a.accuracy) && a.accuracy.length === 3)
      .map((a) => ({ step: a.step, off: a.off, lookup: a.accuracy[2] })),
  };
}
