// The trainer's read-outs: what the page reads from the model it trains,
// and how it is read. The baselines the curves are read against, the phase
// change's rule, each head's roles over the run, the ablation (some heads
// switched off: every head's pattern, role and per-part accuracy again)
// and the circuits. The numbers come from the exported graphs, run by the
// page's one read-out worker (Reader); a Readouts keeps one panel's in
// order, draws them, and tells each one kept as a "read" event (detail:
// the read-out; class/rerun.js listens). It owns evals, roles, the phase
// step and the ablated read-out; the panel reads them through its getters.
import { MAN, STATIC } from "./data.js";
import { Reader } from "./trainer-client.js";
import { curves, chart } from "./trainer-charts.js";
import { circuits } from "./trainer-circuits.js";
import { ADVICE, ALL_OFF, ablation, phase, readouts, timeline } from "./trainer-text.js";

// The phase change: the first read-out at which lookup accuracy is more
// than PHASE_MARGIN above the previous-word rule's (which answers a lookup
// right only when the answer happens to be the previous word). Runs that
// have not formed induction heads stay within a few points of it (a
// one-layer model reaches 0.33 after 1,600 steps); the jump goes far past.
// The margin is the question bank's (constants.phase_margin), which the
// build copies into the manifest: the marks and the grades use one rule.
export const PHASE_MARGIN = MAN && MAN.train ? MAN.train.phase_margin : null;
const READER = new URL("readout-worker.js", import.meta.url).href;

let shared = null; // the page's one read-out worker, started with the first read
export function reader() {
  return shared || (shared = new Reader(READER, STATIC, MAN));
}
// After a failure to load: a new worker, which loads everything again.
export function renewReader() {
  if (shared && shared.failed) {
    shared = null;
  }
}

// The rules the curves are read against, on the held-out set: a uniform
// guess (chance, 1 / V) and "always answer the previous word", per part:
// the manifest's train.baselines (mhacourse.web_train.heldout_baselines).
export function baselines() {
  const b = MAN.train.baselines,
    p = b["previous word"];
  return { chance: b.uniform.all, previousWord: [p.all, p.previous, p.lookup] };
}

// Each head's role in a read-out, for the layers the run has: the name of
// its largest statistic if the graph named it (head_roles), else "mixed".
function rolesOf(role, named, h, layers) {
  const names = MAN.train.statistics,
    roles = [];
  for (let l = 0; l < layers; l++) {
    const row = [];
    for (let i = 0; i < h; i++) {
      const k = l * h + i;
      row.push(named[k] ? names[role[k]] : "mixed");
    }
    roles.push(row);
  }
  return roles;
}

// For each head: the first read-out step at which it was named
// previous-token, and induction ({previous, induction}: a step or null).
function roleSteps(evals) {
  const out = [];
  evals.forEach((r) =>
    r.roleNames.forEach((row, l) => {
      out[l] = out[l] || [];
      row.forEach((name, i) => {
        const s = (out[l][i] = out[l][i] || { previous: null, induction: null });
        if (name in s && s[name] == null) {
          s[name] = r.step;
        }
      });
    }),
  );
  return out;
}

export class Readouts extends EventTarget {
  constructor(panel) {
    super();
    this.P = panel;
    this.ablating = false;
    this.ablateAgain = false;
    this.clear();
  }

  clear() {
    this.evals = [];
    this.phaseStep = null;
    this.roleSteps = null;
    this.roleNames = null;
    this.ablated = null;
    this.readSteps = {};
  }

  // Each read names the panel's run (its model now); mine(r) says whether
  // an answer is about it (a Reset, a new size or a file opened since makes
  // a new run, and the earlier model's answers are dropped).
  opts(extra) {
    return Object.assign({ feeds: this.P.knobs.feeds(), run: this.P.run.id }, extra || {});
  }
  mine(r, key) {
    return r.run === this.P.run.id && key === this.P.run.key;
  }

  // Score a copy of the weights on the held-out set, beside training. Every
  // copy the worker sends is read once.
  read(snap) {
    const P = this.P,
      key = P.run.key;
    if (!snap || this.readSteps[snap.step]) {
      return;
    }
    this.readSteps[snap.step] = true;
    const opts = this.opts();
    reader()
      .read(snap.params, snap.h, snap.step, opts)
      .then((r) => {
        if (this.mine(r, key)) {
          this.show(r);
        }
      })
      .catch((err) => {
        if (!this.mine(opts, key)) {
          return;
        }
        P.view.say({
          accuracy:
            "The held-out read-out failed: " +
            err.message +
            "." +
            (err.stage === "load" ? ADVICE : ""),
        });
      });
  }

  // One read-out: kept in step order, drawn as curves; the heads' roles,
  // the step each first became previous-token or induction, and the phase
  // change once lookup leaves the plateau.
  show(e) {
    const P = this.P,
      a = e.accuracy,
      layers = P.knobs.layers();
    if (a.some((x) => !Number.isFinite(x))) {
      return;
    } // never drawn: not a number
    if (a[0] >= 0.9 && P.timings.ninety == null && P.timings.trainPressed != null) {
      P.run.mark("ninety", performance.now() - P.timings.trainPressed);
      P.run.mark("ninetyStep", e.step);
    }
    let at = 0;
    while (at < this.evals.length && this.evals[at].step < e.step) {
      at++;
    }
    this.evals.splice(at, 0, e);
    e.roleNames = rolesOf(e.role, e.named, e.h, layers);
    const last = this.evals[this.evals.length - 1],
      base = P.base.previousWord[2];
    this.roleNames = last.roleNames;
    this.roleSteps = roleSteps(this.evals);
    const jump = this.evals.find((r) => r.accuracy[2] > base + PHASE_MARGIN);
    this.phaseStep = jump ? jump.step : null;
    readouts(P, last);
    P.pictures.titles();
    curves(P);
    chart(P);
    phase(P, PHASE_MARGIN);
    timeline(P);
    if (last.circuits) {
      // the quick read-out's roles, on the first probe_n held-out sequences
      last.quickRoles = rolesOf(
        last.circuits.probe_role,
        last.circuits.probe_named,
        last.h,
        layers,
      );
      circuits(P, last);
    }
    if (P.lab) {
      P.lab.readout();
    } // grades, the book's run
    this.dispatchEvent(new CustomEvent("read", { detail: e }));
  }

  // The ablation: the heads switched off on the model now; its pictures
  // (the panel's probe) and its read-out (accuracy, roles), again.
  ablate() {
    const P = this.P,
      snap = P.snapshot,
      key = P.run.key;
    if (!snap) {
      return;
    }
    const mask = P.switches.mask(snap.h);
    if (!mask) {
      this.ablated = null;
      P.view.say({ ablation: "" });
      P.pictures.probe();
      P.pictures.titles();
      return;
    }
    if (P.switches.allOff(snap.h, P.knobs.layers())) {
      this.ablated = null;
      // no pictures; the switches stay, to switch back on
      P.view.heads.classList.add("mha-train-all-off");
      P.view.say({ ablation: ALL_OFF });
      return;
    }
    P.pictures.probe();
    if (this.ablating) {
      this.ablateAgain = true;
      return;
    } // one at a time; the newest next
    this.ablating = true;
    this.ablateAgain = false;
    const opts = this.opts({ mask: mask });
    const off = Object.assign({}, P.switches.off); // the switches this read-out is computed with
    // the switches moved meanwhile (or all went back on): this read-out is not theirs
    const moved = () => {
      const now = P.switches.mask(snap.h);
      return !now || now.some((x, k) => x !== mask[k]);
    };
    reader()
      .read(snap.params, snap.h, snap.step, opts)
      .then((r) => {
        if (!this.mine(r, key) || !P.switches.mask(snap.h)) {
          return;
        }
        r.roleNames = rolesOf(r.role, r.named, r.h, P.knobs.layers());
        if (P.lab) {
          P.lab.ablated(r, snap, off); // recorded under the switches it was computed with
        }
        if (moved()) {
          return; // the next read-out, or the all-off line, shows
        }
        this.ablated = r;
        ablation(P, P.switches.names(snap.h, off));
        P.pictures.titles();
      })
      .catch((err) => {
        if (!this.mine(opts, key) || moved()) {
          return; // a failure of switches since moved would hide the line they show now
        }
        P.view.say({
          ablation:
            "The ablated read-out failed: " +
            err.message +
            "." +
            (err.stage === "load" ? ADVICE : ""),
        });
      })
      .then(() => {
        this.ablating = false;
        if (this.ablateAgain) {
          this.ablate();
        }
      });
  }

  // One read-out of the model now (the benchmark times it).
  now(opts) {
    const snap = this.P.snapshot;
    return reader().read(snap.params, snap.h, snap.step, this.opts(opts));
  }
}
