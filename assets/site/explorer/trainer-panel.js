// A trainer panel (Panel): one run of "Train it yourself" (trainer.js
// mounts them). It composes its parts, each the one owner of its state and
// changed only through its methods: the run (trainer-run.js: its life,
// step, losses, weights, identity and worker; it tells what happens as
// events), the knobs and switches (trainer-knobs.js), the read-outs
// (trainer-readout.js), the heads' pictures (trainer-heads.js), the
// elements (trainer-view.js), the lab (trainer-lab.js) and the Patch view
// (trainer-patch.js). What it offers the lab, the explorer and the tests
// (contract 2, CONTRIBUTING.md) is read through its getters. The worker
// sends a copy of the weights every READ_EVERY steps; the pictures come
// from the package's forward graph on that copy (engine.forwardWith), so a
// typed sentence is answered while the worker is busy with a step.
import { MAN, STATIC } from "./data.js";
import { engine as E } from "./engine.js";
import { chart } from "./trainer-charts.js";
import { Pictures } from "./trainer-heads.js";
import { Knobs, Switches } from "./trainer-knobs.js";
import { Readouts, baselines, renewReader } from "./trainer-readout.js";
import { Run, unavailable } from "./trainer-run.js";
import { ADVICE, lossNote, lines, timeline, showPython } from "./trainer-text.js";
import { View } from "./trainer-view.js";
import { Lab } from "./trainer-lab.js";
import { PatchView } from "./trainer-patch.js";
import { checkSizes, paramCount } from "./sizes.js";

export const READ_EVERY = 20; // steps between two copies of the weights (pictures and read-outs)
let made = 0; // panels made on this page: each gets its own id prefix

export class Panel {
  constructor(root, index, defaults, who, onChange) {
    this.index = index;
    this.tag = "mha-train-" + ++made;
    this.base = baselines(); // what the curves are read against
    this.vocab = MAN.train.vocab_size;
    this.readEvery = READ_EVERY;
    this.onChange = onChange || (() => {});
    this.canAblate = true; // the graphs take head_mask (the schema says so)
    this.run = new Run();
    this.knobs = new Knobs(
      this.tag,
      who,
      () => this.sizeChanged(),
      (line) => this.view.say({ message: line }),
    );
    this.switches = new Switches(this.tag, who, () => this.readout.ablate());
    this.view = new View(this.tag, index, defaults, who, this.knobs.element);
    root.appendChild(this.view.box);
    this.readout = new Readouts(this);
    this.pictures = new Pictures(this);
    this.listen();
    this.lab = new Lab(this);
    this.patch = new PatchView(this); // trainer-lab.js, trainer-patch.js
    // The worker (onnxruntime's WebAssembly, the graphs, the data: about
    // 17 MB and a second or two of a core) starts when the panel comes near
    // the screen, not with the page: the explorer above stays quick.
    this.seen = typeof IntersectionObserver !== "function";
    if (!this.seen) {
      const watch = new IntersectionObserver(
        (entries) => {
          if (entries.some((e) => e.isIntersecting)) {
            watch.disconnect();
            this.shown();
          }
        },
        { rootMargin: "200px" },
      );
      watch.observe(this.view.box);
    }
    const V = this.view;
    V.inputs.forEach((i) => i.addEventListener("input", () => this.sizeChanged()));
    V.budget.addEventListener("change", () => this.sizeChanged());
    V.train.addEventListener("click", () => this.start());
    V.pause.addEventListener("click", () => this.stop());
    V.reset.addEventListener("click", () => this.resetRun());
    this.sizeChanged();
  }

  // The run's fields, the read-outs' and the pictures' (read-only: the tests,
  // the explorer, the lab and the drawing read them here).
  get state() {
    return this.run.state;
  }
  get step() {
    return this.run.step;
  }
  get losses() {
    return this.run.losses;
  }
  get snapshot() {
    return this.run.snapshot;
  }
  get config() {
    return this.run.config;
  }
  get params() {
    return this.run.params;
  }
  get stepsTotal() {
    return this.run.stepsTotal;
  }
  get stepsPerSecond() {
    return this.run.stepsPerSecond;
  }
  get timings() {
    return this.run.timings;
  }
  get worker() {
    return this.run.worker;
  }
  get heads() {
    return this.view.heads;
  }
  get evals() {
    return this.readout.evals;
  }
  get roleNames() {
    return this.readout.roleNames;
  }
  get roleSteps() {
    return this.readout.roleSteps;
  }
  get phaseStep() {
    return this.readout.phaseStep;
  }
  get ablated() {
    return this.readout.ablated;
  }
  get ablating() {
    return this.readout.ablating;
  }
  get lastAttention() {
    return this.pictures.lastAttention;
  }
  get drawing() {
    return this.pictures.drawing;
  }
  get knobInputs() {
    return this.knobs.inputs;
  }

  // What the run tells, in the panel's elements (the panel listens first).
  listen() {
    const R = this.run,
      V = this.view;
    const on = (type, fn) => R.addEventListener(type, (e) => fn(e.detail));
    on("run", () => this.clearRun());
    on("state", (d) => this.onState(d));
    on("step", (d) => this.onProgress(d));
    on("weights", (w) => this.newWeights(w));
    on("failed", (d) => {
      V.say({ message: d.line, status: "" });
      this.lock();
    });
  }

  read() {
    return this.view.read(this.locked());
  }
  locked() {
    return this.run.locked();
  }

  // The controls follow the run's state; the lab, and "Train both", too.
  lock() {
    const locked = this.locked();
    this.view.lock(this.state, locked, !!this.config);
    this.knobs.lock(locked);
    if (this.lab) {
      this.lab.lock();
    }
    this.onChange();
  }

  // The size in the inputs: checked, then the model built.
  sizeChanged() {
    const c = this.read(),
      V = this.view;
    const bad =
      checkSizes(c.h, c.dk, c.budget) ||
      (Number.isInteger(c.seed) && c.seed >= 0
        ? null
        : "seed must be a whole number from 0 to 999.");
    V.say({ message: bad || "" });
    if (bad) {
      V.say({ summary: "" });
      if (!this.locked() && this.state !== "failed") {
        V.say({ status: "" });
      }
      this.run.configure(null);
      this.lock();
      return;
    }
    // a link's steps
    const d = c.h * c.dk,
      steps = this.lab.stepsFor(c, MAN.train.steps_for[String(d)]);
    this.run.configure({ h: c.h, dk: c.dk, seed: c.seed, d_model: d, steps: steps });
    V.say({ summary: lines.summary(c.h, c.dk, paramCount(d), steps) });
    this.prepare();
  }

  // Build the model (the init graph) as soon as the size is valid and the
  // panel has been near the screen, so that Train starts at once.
  prepare() {
    const c = this.config;
    if (!c || this.locked() || !this.seen) {
      return;
    }
    const why = unavailable();
    if (why) {
      this.fail(why);
      return;
    }
    const key = [c.h, c.dk, c.seed, c.steps, this.knobs.key()].join("/");
    // the same model, built or being built (an input event that changed
    // nothing: "same budget" ticked again, a field retyped): not again, nor
    // its step-0 read-out, which would take the read-out worker's core
    // from the first steps of a run
    if (this.run.building(key)) {
      return;
    }
    this.run.build(key);
    this.view.say({ status: "Building the model (h = " + c.h + ", d_k = " + c.dk + ") …" });
    const args = {
      base: STATIC,
      manifest: MAN,
      h: c.h,
      d_k: c.dk,
      seed: c.seed,
      steps: c.steps,
      drawEvery: READ_EVERY,
      key: key,
      run: this.run.id,
      feeds: this.knobs.feeds(),
    };
    this.pictures
      .tokens()
      .then(() => this.run.setup(key, args))
      .catch((err) => {
        const why = "The page's engine did not start: " + (err.message || err) + "." + ADVICE;
        if (key === this.run.key) {
          this.fail(why);
        }
      });
  }

  // The panel is near the screen (or a page that shows no panel says so).
  shown() {
    this.seen = true;
    this.sizeChanged();
  }
  fail(why) {
    this.run.fail(why);
  }

  onState(d) {
    const V = this.view,
      s = d.state;
    if (s === "failed") {
      return;
    } // the "failed" event says why
    if (s === "ready") {
      V.say({ summary: lines.summary(d.h, d.d_k, d.params, d.steps), status: lines.ready });
    }
    if (s === "running") {
      V.say({ status: d.note ? "Already training." : "Training …" });
    }
    if (s === "paused") {
      V.say({ progress: "", status: lines.paused(d.step) });
    }
    if (s === "done" && !d.file) {
      const secs = (this.timings.done - this.timings.trainPressed) / 1000;
      V.say({
        progress: "",
        status: lines.done(d.step, secs, !!document.getElementById("mha-explorer")),
      });
      showPython(this, d.step);
    }
    if (s === "diverged") {
      if (!d.kept) {
        V.heads.hidden = true;
      }
      V.say({ progress: "", status: lines.stopped(d.step), message: lines.diverged(d) });
    }
    this.lock();
    if ((s === "paused" || s === "done") && !d.file) {
      this.onChange("yours");
    }
  }

  onProgress(msg) {
    this.view.say({ progress: lines.progress(msg) });
    chart(this);
    // the first loss, against ln V; "Yours" exists
    if (msg.first) {
      lossNote(this);
      this.onChange("yours");
    }
  }

  // A new copy of the weights from the worker: redraw, read it out.
  newWeights(w) {
    this.pictures.probe();
    // the ablated read-out follows the model
    if (this.switches.mask(w.h)) {
      this.readout.ablate();
    }
    this.readout.read(w);
  }

  start() {
    if (this.state === "running") {
      this.view.say({ status: "Already training (step " + this.step + ")." });
      return;
    }
    if (this.state === "ready" || this.state === "paused") {
      this.run.train();
    }
  }
  stop() {
    this.run.pause();
  }

  // A new run began (its "run" event): forget what the last one drew, its
  // read-outs, roles and lines.
  clearRun() {
    this.readout.clear();
    this.view.clearRun();
    chart(this);
    timeline(this);
  }

  // The model goes: the heads' switches and pictures with it (Reset, a file).
  discard() {
    this.run.end();
    this.switches.clear();
    this.view.say({ ablation: "" });
    this.pictures.clear(); // the next run makes its canvases anew
  }

  resetRun() {
    renewReader(); // a read-out worker that failed to load starts again
    this.discard();
    const at = this.run.reset();
    this.onChange("reset");
    this.view.say({ message: "" });
    this.lock();
    this.sizeChanged();
    const V = this.view,
      was = "Reset: the model at step " + at + " was discarded; ";
    if (at) {
      V.say({ status: was + V.status.textContent });
    }
  }

  // A model read from a file (trainer-lab-file.js): config, its step and
  // parameter count, its weights; shown as a finished run.
  openModel(config, step, params, weights) {
    this.discard();
    this.run.opened(config, step, params);
    return () => this.run.weights(weights); // after the lab has said what it opened
  }

  // The weights now (for the tests), what the worker loaded (for the
  // benchmark), and one read-out of the model now (the benchmark times it).
  weights() {
    return this.worker.weights();
  }
  resources() {
    return this.worker.resources();
  }
  readNow(opts) {
    return this.readout.now(opts);
  }

  // The explorer's view of this model (the same fields as a manifest entry).
  entry() {
    const c = this.config,
      last = this.evals[this.evals.length - 1];
    return {
      name: "yours",
      h: c.h,
      d_k: c.dk,
      d_model: c.d_model,
      params: this.params || 0,
      layers: this.knobs.layers(),
      trained: true,
      yours: true,
      steps: this.step,
      accuracy: last ? last.accuracy[0] : null,
      max_len: MAN.tiny_tokenizer.max_len,
    };
  }

  // The explorer runs this model on its own text through here (the latest
  // weights the worker sent).
  runText(text) {
    const snap = this.snapshot;
    if (snap) {
      return E.tinyText(snap.params, snap.h, text, { feeds: this.knobs.feeds() });
    }
    return E.tokenizeTiny(text).then((tok) => ({
      tokens: [],
      attn: [],
      kept: 0,
      total: tok.total,
      unk: 0,
    }));
  }
}
