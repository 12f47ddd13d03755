// The lab under a trainer panel (issue 35): predict, then run; the grades
// from the run's own read-outs; the experiment in the page's address and
// "Copy link"; the book's run of the same settings drawn faintly under the
// reader's curves, with the line saying where hers differs most; the
// model file out and in (trainer-lab-file.js); "Export report" for the
// class page (report-view.js). It composes the pure modules of
// lab/ and the panel's parts; the panel calls it at a few points (made,
// configured, locked, each read-out, each ablation), and it changes no
// step: grading runs on read-outs the panel already has.
import { LAB, MAN, STATIC } from "./data.js";
import { el } from "./dom.js";
import { grade, gradeModel } from "./lab/grade.js";
import { decodeExperiment, encodeExperiment, patchChoice, patchDefault } from "./lab/link.js";
import { offPairs, recordFromReadouts } from "./lab/record.js";
import { compareRun } from "./lab/compare.js";
import { copyLink, gradeList, predictionForm } from "./lab/ui.js";
import { LabFiles } from "./trainer-lab-file.js";
import { faintCurves } from "./trainer-lab-draw.js";
import { REBUILD, headName } from "./trainer-text.js";
import { buildId } from "./lab/report.js";
import { exportControls } from "./report-view.js";

// The bank and the book's runs, from the page's lab.js (read when the
// page's code runs: a link's predictions are restored at once), and the
// build's id (a SHA-256 of the manifest, which the browser computes on its
// own time: only a report needs it, long after).
let data = null;
function labData() {
  if (!data) {
    if (!LAB || !LAB.questions || !LAB.book_runs) {
      throw new Error("explorer-data/lab/lab.js did not load");
    }
    data = { bank: LAB.questions, runs: LAB.book_runs, build: null };
    buildId(MAN).then(
      (id) => {
        data.build = id;
      },
      () => {}, // a report then says "no build id" (report.js)
    );
  }
  return data;
}

// What a link may hold: the manifest's limits with the budget, the layers,
// each size's steps, the knobs and the Patch view's corruptions.
export function linkLimits() {
  const T = MAN.train;
  return Object.assign({}, T.limits, {
    budget: T.budget,
    n_layers: T.n_layers,
    steps_for: T.steps_for,
    knobs: T.knobs,
    patch: T.patch,
    max_steps: T.limits.max_steps || Math.max.apply(null, Object.values(T.steps_for)),
  });
}

export class Lab {
  // P: the panel. The first panel of a page reads the page's address (a
  // link) and keeps it up to date.
  constructor(P) {
    this.P = P;
    this.owner = P.index === 0 && !P.headless && !document.querySelector(".mha-lab[data-address]");
    this.predictions = {};
    this.ablations = [];
    this.grades = [];
    this.timings = {};
    this.ready = false;
    this.line = el("p", { class: "mha-lab-line", role: "status" });
    this.form = el("div", { class: "mha-lab-form" });
    this.gradesBox = el("div", { class: "mha-lab-results", "aria-live": "polite" });
    this.compare = el("p", { class: "mha-lab-compare" });
    this.copy = el("button", { type: "button", class: "mha-lab-copy", text: "Copy link" });
    this.address = el("input", {
      type: "text",
      class: "mha-lab-address",
      readonly: "",
      id: P.tag + "-address",
      "aria-label": "The experiment's link",
      hidden: "",
    });
    this.files = new LabFiles(this);
    this.report = exportControls(
      () => this.reportRun(),
      MAN.train.baselines["previous word"].lookup,
      P.tag + "-report",
      MAN.train.knobs,
    );
    this.report.hidden = true;
    this.element = el(
      "section",
      { class: "mha-lab", "aria-label": (P.index ? "Run B: " : "") + "Predict, run, keep" },
      [
        el("h4", { class: "mha-lab-title", text: "Predict, then run" }),
        el("p", {
          class: "mha-lab-intro",
          text:
            "Before you press Train, say what you expect; skip any question. " +
            "Training never waits for it: the grades come from this run's own read-outs.",
        }),
        this.form,
        this.gradesBox,
        this.compare,
        el("div", { class: "mha-lab-buttons" }, [this.copy, this.files.element]),
        this.address,
        this.line,
        this.report,
      ],
    );
    if (this.owner) {
      this.element.setAttribute("data-address", "");
    }
    // "Run B: " on a page of two runs
    this.who = (P.view.hIn.getAttribute("aria-label") || "h").slice(0, -1);
    this.name(this.element);
    P.view.left.appendChild(this.element);
    this.copy.addEventListener("click", () => this.copyLink());
    P.view.sentence.addEventListener("change", () => this.remember());
    this.search = this.owner ? location.search : ""; // the link the page was opened with
    if (this.search) {
      this.restore(decodeExperiment(this.search, linkLimits(), null, this.start()).experiment);
    }
    // once the panel that makes this lab is made (as when the data came by
    // fetch), yet before the page's deferred scripts run
    queueMicrotask(() => this.load());
  }

  load() {
    try {
      this.data = labData();
    } catch (err) {
      this.form.textContent = "The questions did not load (" + err.message + "); " + REBUILD + ".";
      return;
    }
    this.ready = true;
    if (this.search) {
      const got = decodeExperiment(this.search, linkLimits(), this.data.bank, this.start());
      this.predictions = got.experiment.predict;
      if (got.ignored) {
        this.line.textContent = got.ignored;
      }
    }
    this.refresh();
    // since the page began to load: the link restored, the questions shown
    this.timings.ready = performance.now();
  }

  version() {
    return MAN.train.course_version || "";
  }

  start() {
    return { h: Number(this.P.view.hIn.value), d_k: Number(this.P.view.dkIn.value) };
  }

  // A link's experiment on the controls (before the panel builds its
  // model); a model file's (linked false) sets no steps of its own.
  restore(e, linked = true) {
    const P = this.P;
    P.view.set(e);
    P.knobs.show(e); // the knobs a link (or a file) names, by the knob's name
    P.switches.set(e.off, e.h);
    this.linkSteps = linked ? { h: e.h, d_k: e.d_k, steps: e.steps } : null;
    // the Patch view's (trainer-patch.js reads it)
    this.linkPatch = { corruption: e.corruption, pairs: e.pairs };
    if (P.patch) {
      P.patch.choose(this.linkPatch);
    }
  }

  // The Patch view's corruption and pairs now: its controls', checked
  // against the manifest's train.patch (the default where they are not
  // valid); {} without a Patch view.
  patchNow() {
    const V = this.P.patch,
      S = MAN.train.patch;
    if (!V || !S) {
      return patchDefault(S);
    }
    const got = patchChoice(S, V.choice.value, V.count.value.trim());
    return got.bad ? patchDefault(S) : got;
  }

  // The steps of the size c ({h, dk}) the panel chose: a link's hold while
  // its size does; else `steps`, the size's own.
  stepsFor(c, steps) {
    const s = this.linkSteps;
    return s && s.h === c.h && s.d_k === c.dk ? s.steps : steps;
  }

  // The run's settings, as the bank and the link name them.
  settings() {
    const P = this.P,
      c = P.config || {};
    return Object.assign({}, P.knobs.chosen, {
      h: c.h,
      d_k: c.dk,
      seed: c.seed,
      steps: c.steps,
      layers: P.knobs.layers(),
    });
  }

  experiment() {
    const P = this.P,
      s = this.settings();
    return Object.assign(
      {},
      s,
      {
        budget: P.view.budget.checked,
        off: offPairs(P.switches.off, s.h),
        text: P.view.sentence.value.trim(),
        predict: Object.assign({}, this.predictions),
      },
      this.patchNow(),
    );
  }

  // The page's address follows the experiment (the first panel's).
  remember() {
    if (!this.owner || !this.ready || !this.P.config) {
      return;
    }
    history.replaceState(
      history.state,
      "",
      location.pathname + encodeExperiment(this.experiment(), MAN.train.knobs) + location.hash,
    );
  }

  async copyLink() {
    if (!this.P.config) {
      this.line.textContent = "Pick a valid size first: there is no experiment to link to.";
      return;
    }
    const url = await copyLink(
      window,
      encodeExperiment(this.experiment(), MAN.train.knobs),
      this.element,
    );
    this.address.value = url;
    this.address.hidden = false;
    this.line.textContent =
      "Link copied (if the browser allowed it; else copy it from the box): it opens this " +
      "experiment.";
    return url;
  }

  // The questions for the settings now: "before the run" while none has
  // begun, "before switching heads off" once there is a model.
  refresh() {
    const P = this.P;
    if (!this.ready || !P.config) {
      this.form.textContent = "";
      this.gradesBox.textContent = "";
      return;
    }
    const s = this.settings(),
      locked = P.locked();
    const onChange = (when) => (values) => {
      Object.keys(this.predictions).forEach((id) => {
        if (this.data.bank.questions.some((q) => q.id === id && q.when === when)) {
          delete this.predictions[id];
        }
      });
      Object.assign(this.predictions, values);
      this.remember();
      this.regrade();
    };
    const before = predictionForm(
      document,
      this.data.bank,
      s,
      "before_run",
      this.predictions,
      onChange("before_run"),
      P.tag + "-p",
    );
    before.lock(locked);
    const abl = predictionForm(
      document,
      this.data.bank,
      s,
      "before_ablation",
      this.predictions,
      onChange("before_ablation"),
      P.tag + "-a",
    );
    abl.lock(this.ablations.length > 0 || !!P.switches.mask(s.h));
    this.form.textContent = "";
    if (before.element.childNodes.length) {
      this.form.appendChild(before.element);
    }
    if (abl.element.childNodes.length) {
      this.form.appendChild(
        el("p", { class: "mha-lab-when", text: "Before you switch heads off:" }),
      );
      this.form.appendChild(abl.element);
    }
    this.name(this.form);
    this.regrade();
  }

  // Each control's accessible name, unique on a page of two runs: the run's
  // name, and a question's words before its answer's.
  name(root) {
    root.querySelectorAll("input, button").forEach((c) => {
      const set = c.closest("fieldset"),
        label = c.closest("label") || (c.id && root.querySelector("label[for='" + c.id + "']"));
      const own =
        c.tagName === "BUTTON"
          ? c.textContent
          : label
            ? label.textContent.trim()
            : c.getAttribute("aria-label") || "";
      const legend =
        set && set.querySelector("legend") ? set.querySelector("legend").textContent + ": " : "";
      c.setAttribute("aria-label", this.who + legend + own);
    });
  }

  // The panel's state changed (it locks and unlocks its controls).
  lock() {
    const P = this.P,
      s = P.state;
    if (s !== this.lastState) {
      if (s === "loading" || s === "idle" || s === "ready") {
        this.ablations = [];
        this.compare.textContent = "";
      }
      this.lastState = s;
      this.refresh();
      this.remember();
    }
    this.files.lock();
    this.report.hidden = !(s === "paused" || s === "done" || s === "diverged") || !P.snapshot;
  }

  // Every open prediction graded from the read-outs now (a question whose
  // read-out is not ready waits).
  regrade() {
    const P = this.P;
    this.gradesBox.textContent = "";
    if (!this.ready || !P.config || !P.evals.length || !Object.keys(this.predictions).length) {
      this.grades = [];
      return;
    }
    const t = performance.now(),
      file = this.files.opened; // a model read from a file: a model, not a run
    // its final state
    const settings = Object.assign(this.settings(), file ? { steps: P.step || 0 } : {});
    const record = recordFromReadouts({
      settings: settings,
      step: P.step || 0,
      maps: MAN.train.readouts,
      ruleLookup: MAN.train.baselines["previous word"].lookup,
      readouts: P.evals,
      ablations: this.ablations,
    });
    this.record = record; // what the grades were computed from
    try {
      this.grades = (file ? gradeModel : grade)(
        this.data.bank,
        this.predictions,
        record,
        MAN.train.knobs,
      );
    } catch (err) {
      this.grades = [];
      this.gradesBox.textContent = "The predictions could not be graded: " + err.message;
      return;
    }
    this.timings.grade = performance.now() - t;
    this.gradesBox.appendChild(
      el("h5", {
        text: file
          ? "Your predictions, graded on the model read from " +
            file +
            ": a model, not a run, so only the questions about the finished model are graded"
          : "Your predictions, graded by this run",
      }),
    );
    this.gradesBox.appendChild(gradeList(document, this.grades, new URL("../", STATIC).href));
  }

  // A model file was opened: the previous run's comparison, ablations and
  // grades go; the file's model is graded as a model (regrade).
  fileOpened() {
    this.ablations = [];
    this.compare.textContent = "";
    this.refresh();
  }

  // After each read-out: the grades, the book's run, the line.
  readout() {
    const P = this.P;
    this.regrade();
    if (!this.ready || !P.config || this.files.opened) {
      return;
    }
    const history = P.evals.map((e) => ({
      step: e.step,
      accuracy: e.accuracy[0],
      previous: e.accuracy[1],
      lookup: e.accuracy[2],
    }));
    const got = compareRun(
      this.data.runs,
      { settings: this.settings(), step: P.step || 0, history: history },
      MAN.train.knobs,
    );
    this.compare.textContent = got.line;
    faintCurves(P, got.faint[0] || null);
  }

  // An ablation's read-out (r) on the model at snap.step, computed with
  // the switches `off` (those of its request, not those when it arrives).
  ablated(r, snap, off) {
    this.ablations.push({
      step: snap.step,
      off: offPairs(off, snap.h),
      accuracy: r.accuracy.slice(),
    });
    this.remember();
    this.refresh();
  }

  // What report.js's buildReport needs, or why there is none.
  reportRun() {
    const P = this.P,
      snap = P.snapshot;
    if (!snap || !this.ready || this.files.opened) {
      throw new Error("There is no run to report: train a model first");
    }
    const h = snap.h,
      name = (p) => headName(p[0] - 1, p[1] - 1);
    return {
      link:
        location.origin + location.pathname + encodeExperiment(this.experiment(), MAN.train.knobs),
      knobs: MAN.train.knobs,
      patch: this.patchNow(),
      patchSpec: MAN.train.patch,
      course: { version: this.version(), build: this.data.build },
      settings: this.settings(),
      state: P.state,
      step: P.step,
      losses: P.losses.slice(),
      evals: P.evals.map((e) => ({ step: e.step, accuracy: e.accuracy, roles: e.roleNames })),
      ruleLookup: MAN.train.baselines["previous word"].lookup,
      margin: MAN.train.phase_margin,
      predictions: this.grades,
      ablations: this.ablations.map((a) => ({
        step: a.step,
        off: a.off.map(name),
        accuracy: a.accuracy,
      })),
      weights: snap.params.map((p) => p.data),
      h: h,
    };
  }
}
