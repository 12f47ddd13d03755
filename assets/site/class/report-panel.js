// The trainer panel's run, as buildReport (explorer/lab/report.js) takes it: the one
// place that knows which of the panel's fields a report reads. The trainer
// wires "Export report" with
//   exportControls(() => runFromPanel(panel, extra), ruleLookup)
// (explorer/report-view.js), where extra = {link, course: {version, build},
// predictions, ablations, knobs (the manifest's train.knobs)}: the lab's link and grades, and the ablations the
// panel read (each {step, off: ["L1H2", ...], accuracy}).
export function runFromPanel(P, extra = {}) {
  if (!P.config || !P.snapshot || !P.losses.length) { throw new Error("there is no run to report yet: train first"); }
  if (P.state === "running") { throw new Error("the run is still training: pause it or let it finish first"); }
  const c = P.config, k = P.knobs || {};
  return {
    link: extra.link, course: extra.course,
    settings: Object.assign({}, k.chosen || {}, { h: c.h, d_k: c.dk, seed: c.seed, steps: P.stepsTotal || c.steps }),
    knobs: extra.knobs || [],
    state: P.state, step: P.step,
    losses: P.losses.slice(),
    evals: P.evals.map((e) => ({ step: e.step, accuracy: e.accuracy.slice(0, 3), roles: e.roleNames })),
    ruleLookup: P.base.previousWord[2],
    predictions: extra.predictions || [], ablations: extra.ablations || [],
    weights: P.snapshot.params,
  };
}
