// "Train it yourself": pick h and d_k, press Train, and watch a tiny model
// learn in this page: its loss, its held-out accuracy, every head's
// attention on a sentence, and the role the package's analysis gives each
// head. Every element <div class="mha-trainer" data-runs="2"> on a page
// becomes a trainer with that many runs side by side (same batches, same
// seed); mountTrainers does it (page.js calls it).
//
// A Panel is one class; its parts are modules it composes: the worker's
// client (trainer-client.js: training runs in a Web Worker with the graphs
// mhacourse.web_train exports), the knobs and switches (trainer-knobs.js),
// the read-outs (trainer-readout.js), the elements (trainer-view.js) and
// the drawing (trainer-charts.js, trainer-heads.js, trainer-text.js). The
// worker sends a copy of the weights every READ_EVERY steps; the pictures
// come from the package's forward graph on that copy (engine.forwardWith),
// so a typed sentence is answered while the worker is busy with a step.
import { MAN, STATIC } from "./data.js";
import { el } from "./dom.js";
import { engine as E } from "./engine.js";
import { Client, quietWorkers } from "./trainer-client.js";
import { chart } from "./trainer-charts.js";
import { heads } from "./trainer-heads.js";
import { Knobs, Switches } from "./trainer-knobs.js";
import { Readouts, baselines, renewReader, PHASE_MARGIN } from "./trainer-readout.js";
import { lossNote, timeline, showPython } from "./trainer-text.js";
import { buildView } from "./trainer-view.js";
import { Lifecycle, unavailable } from "./trainer-run.js";
import { Lab } from "./trainer-lab.js";
import { PatchView } from "./trainer-patch.js";

const WORKER = new URL("train-worker.js", import.meta.url).href;
const READ_EVERY = 20; // steps between two copies of the weights (pictures and read-outs)
let made = 0; // panels made on this page: each gets its own id prefix
let runs = 0; // models made on this page: each its own run id (clearRun)

export class Panel extends Lifecycle {
  constructor(root, index, defaults, who, onChange) {
    super();
    this.index = index;
    this.tag = "mha-train-" + (++made);
    this.state = "idle"; // idle | loading | ready | running | paused | done | diverged | failed
    this.losses = [];
    this.timings = { created: performance.now() };
    this.base = baselines(); // what the curves are read against
    this.vocab = MAN.train.vocab_size;
    this.readEvery = READ_EVERY;
    this.onChange = onChange || (() => {});
    this.canAblate = true; // the graphs take head_mask (the schema says so)
    this.knobs = new Knobs(this.tag, who, () => this.sizeChanged());
    this.knobs.onMidRun = (line) => { this.message.textContent = line; };
    this.switches = new Switches(this.tag, who, () => this.readout.ablate());
    this.readout = new Readouts(this);
    const box = buildView(this, defaults, who, who ? who.replace(/: $/, "") : "");
    root.appendChild(box);
    this.lab = new Lab(this, box); this.patch = new PatchView(this, box); // trainer-lab.js, trainer-patch.js
    // The worker (onnxruntime's WebAssembly, the graphs, the data: about
    // 17 MB and a second or two of a core) starts when the panel comes near
    // the screen, not with the page: the explorer above stays quick.
    this.seen = typeof IntersectionObserver !== "function";
    if (!this.seen) {
      const watch = new IntersectionObserver((entries) => {
        if (!entries.some((e) => e.isIntersecting)) { return; }
        watch.disconnect();
        this.seen = true;
        this.prepare();
      }, { rootMargin: "200px" });
      watch.observe(box);
    }
    this.inputs.forEach((i) => i.addEventListener("input", () => this.sizeChanged()));
    this.budget.addEventListener("change", () => this.sizeChanged());
    this.train.addEventListener("click", () => this.start());
    this.pause.addEventListener("click", () => this.stop());
    this.reset.addEventListener("click", () => this.resetRun());
    let typing = null;
    this.sentence.addEventListener("input", () => {
      clearTimeout(typing);
      this.timings.keystroke = performance.now();
      quietWorkers(); // input first: the workers start nothing for a moment
      typing = setTimeout(() => this.probe(), 0);
    });
    this.sizeChanged();
  }

  // What the read-outs hold (the tests and the drawing read them here).
  get evals() { return this.readout.evals; }
  get roleNames() { return this.readout.roleNames; }
  get roleSteps() { return this.readout.roleSteps; }
  get phaseStep() { return this.readout.phaseStep; }
  get ablated() { return this.readout.ablated; }
  get ablating() { return this.readout.ablating; }
  get knobInputs() { return this.knobs.inputs; }

  read() {
    const h = Number(this.hIn.value), b = this.budget.checked;
    if (b && h > 0 && MAN.train.budget % h === 0) { this.dkIn.value = String(MAN.train.budget / h); }
    this.dkIn.disabled = b || this.locked();
    return { h: h, dk: Number(this.dkIn.value), seed: Number(this.seedIn.value), budget: b };
  }

  locked() { return ["running", "paused", "done", "diverged"].includes(this.state); }

  lock() {
    const locked = this.locked(), s = this.state;
    this.inputs.forEach((i) => { i.disabled = locked; });
    if (!locked) { this.read(); }
    // after Train is pressed it keeps the focus: aria-disabled, not disabled
    this.train.disabled = !this.config || s === "loading" || s === "idle" || s === "failed";
    this.train.setAttribute("aria-disabled", String(s === "running" || s === "done" || s === "diverged"));
    this.train.textContent = s === "paused" ? "Resume" : "Train";
    this.train.setAttribute("aria-label", this.train.getAttribute("aria-label").replace(/(Train|Resume)$/, this.train.textContent));
    this.pause.disabled = s !== "running";
    this.reset.disabled = !(locked || s === "failed");
    this.knobs.lock(locked);
    if (this.lab) { this.lab.lock(); }
    this.onChange();
  }

  // Draw the heads on the sentence in the box, with the latest weights the
  // worker sent. One run at a time: a keystroke or a new copy of the weights
  // that arrives meanwhile asks for one more run, with what is newest then.
  probe() {
    if (!this.snapshot || ["loading", "failed", "idle"].includes(this.state)) { return; }
    if (this.drawing) { this.again = true; return; }
    if (!this.sentence.value.trim()) {
      this.heads.hidden = true; // never leave a stale picture on screen
      this.sentenceNote.textContent = "Type a sentence: the text is empty.";
      return;
    }
    const snap = this.snapshot, key = this.setupKey, run = this.runId, typed = this.timings.keystroke;
    this.drawing = true;
    this.again = false;
    this.tokens().then((tok) => {
      const refused = E.tinyRefusal(tok); // the explorer's rule and words
      if (refused) { this.heads.hidden = true; this.sentenceNote.textContent = refused; return null; }
      const off = this.switches.allOff(snap.h, this.knobs.layers());
      this.heads.classList.toggle("mha-train-all-off", off); // no pictures, the switches stay
      if (off) { return null; } // the ablation line says why
      const opts = { mask: this.switches.mask(snap.h), feeds: this.knobs.feeds() };
      return E.forwardWith(snap.params, snap.h, tok.ids, opts).then((attn) => {
        if (key !== this.setupKey || run !== this.runId || !this.snapshot) { return; } // reset or resized meanwhile
        heads(this, { step: snap.step, h: snap.h, L: tok.ids.length, attn: attn });
        // the benchmark's "keystroke to repaint": only a run that started
        // after the last keystroke drew what was typed
        if (typed != null && this.timings.keystroke === typed) {
          this.timings.keystroke = null;
          requestAnimationFrame(() => (this.timings.repaints = this.timings.repaints || []).push(performance.now() - typed));
        }
      });
    }).catch((err) => {
      this.heads.hidden = true;
      this.sentenceNote.textContent = "Could not run the model on this sentence: " + (err.message || err) +
        ". Reset, then Train, to try again once the file is back; if this comes back, rebuild the site with `make book`.";
    }).then(() => {
      this.drawing = false;
      if (this.again) { this.probe(); }
    });
  }

  tokens() {
    return E.tokenizeTiny(this.sentence.value).then((tok) => {
      this.probeTokens = tok.tokens;
      const notes = [];
      if (tok.total > tok.kept) { notes.push("The model reads at most " + MAN.tiny_tokenizer.max_len + " tokens: kept the first " + tok.kept + " of " + tok.total + "."); }
      if (tok.unk) { notes.push(tok.unk + " of " + tok.kept + " tokens are not in the task's word list and are shown as [UNK]."); }
      this.sentenceNote.textContent = notes.join(" ");
      return tok;
    });
  }

  // A new copy of the weights from the worker: keep it, redraw, read it out.
  newWeights(w) {
    if (!w) { return; }
    this.snapshot = w;
    this.probe();
    if (this.switches.mask(w.h)) { this.readout.ablate(); } // the ablated read-out follows the model
    this.readout.read(w);
  }

  start() {
    if (this.state === "running") { this.status.textContent = "Already training (step " + this.step + ")."; return; }
    if (this.state !== "ready" && this.state !== "paused") { return; }
    this.timings.trainPressed = performance.now();
    this.worker.train();
  }

  stop() { if (this.worker && this.state === "running") { this.worker.pause(); } }

  // Forget what the last run drew: its losses, read-outs, roles and line.
  // The next model is a new run: a reply of the workers about an earlier
  // one (its run id) is never kept.
  clearRun() {
    this.losses = []; this.runId = ++runs;
    this.readout.clear();
    ["ninety", "ninetyStep", "trainPressed"].forEach((k) => { this.timings[k] = null; });
    [this.roles, this.accuracy, this.lossNote, this.phase, this.python, this.circuits, this.progress].forEach((e) => { e.textContent = ""; });
    chart(this); timeline(this);
    this.curves.hidden = true; this.curveKey.hidden = true; this.curveKey.textContent = "";
  }

  resetRun() {
    const at = this.step || 0;
    if (this.worker) { this.worker.terminate(); this.worker = null; }
    renewReader(); // a read-out worker that failed to load starts again
    this.step = 0;
    this.snapshot = null;
    this.state = "idle";
    this.onChange("reset");
    this.heads.textContent = ""; this.grids = null; // the next run makes its canvases anew
    this.clearRun();
    this.switches.clear(); this.ablation.textContent = "";
    this.message.textContent = "";
    this.lock();
    this.sizeChanged();
    if (at) { this.status.textContent = "Reset: the model at step " + at + " was discarded; " + this.status.textContent; }
  }

  // What the worker says about this panel's model now (its run id).
  handlers() {
    const mine = (fn) => (msg) => { if (msg.run === this.runId) { fn(msg); } };
    return {
      ready: mine((msg) => this.onReady(msg)),
      progress: mine((msg) => this.onProgress(msg)),
      state: mine((msg) => this.onState(msg)),
      error: mine((msg) => this.fail(this.failure(msg))),
      crash: (why) => this.fail("The training worker stopped: " + why + ". Reset to start again; if this comes back, " +
        "reload the page, or rebuild the site with `make book`."),
    };
  }

  onProgress(msg) {
    this.step = msg.step;
    Array.prototype.push.apply(this.losses, msg.losses);
    this.stepsPerSecond = msg.stepsPerSecond;
    this.progress.textContent = "Training: step " + msg.step + " of " + msg.steps + ", loss " +
      msg.losses[msg.losses.length - 1].toFixed(3) + ", " + msg.stepsPerSecond.toFixed(1) + " steps/s.";
    this.stepsTotal = msg.steps;
    chart(this);
    const first = this.losses.length === msg.losses.length;
    if (first) { lossNote(this); } // the first loss, against ln V
    this.newWeights(msg.weights);
    if (first) { this.onChange("yours"); } // the first steps: "Yours" exists
  }

  showPython(steps) { showPython(this, steps); }

  // The weights now (for the tests), what the worker loaded (for the
  // benchmark), and one read-out of the model now (the benchmark times it).
  weights() { return this.worker.weights(); }
  resources() { return this.worker.resources(); }
  readNow(opts) { return this.readout.now(opts); }
  newClient() { return new Client(WORKER, this.handlers()); }
  setupArgs(c) {
    return { base: STATIC, manifest: MAN, h: c.h, d_k: c.dk, seed: c.seed, steps: c.steps,
      drawEvery: READ_EVERY, key: this.setupKey, run: this.runId, feeds: this.knobs.feeds() };
  }
}

// Every .mha-trainer on the page; onChange(reason) is told when a panel's
// state changes (the explorer shows "Yours"). Returns {panels, phaseMargin}.
export function mountTrainers(onChange) {
  const api = { panels: [], phaseMargin: PHASE_MARGIN };
  document.querySelectorAll(".mha-trainer").forEach((root) => {
    if (!MAN || !MAN.train) { root.textContent = "The trainer's data did not load; rebuild the site with `make book`."; return; }
    const n = Math.max(1, Math.min(2, Number(root.getAttribute("data-runs") || "1")));
    root.textContent = "";
    const both = el("button", { type: "button", class: "mha-train-both", text: "Train both", disabled: "" });
    const bothNote = el("span", { class: "mha-train-both-note", id: "mha-train-both-note-" + (made + 1) });
    both.setAttribute("aria-describedby", bothNote.id);
    if (n > 1) {
      root.appendChild(el("p", { class: "mha-train-intro" }, [
        "Each run trains a fresh model (two layers unless you pick one) on the course's lookup task, in this page, with the " +
        "package's own training step (mhacourse.web_train). Both runs read the same batches in the same order."]));
      root.appendChild(el("div", { class: "mha-train-both-row" }, [both, bothNote]));
    }
    const row = el("div", { class: "mha-train-runs" });
    root.appendChild(row);
    const defaults = [{ h: 1, dk: 64 }, { h: 16, dk: 4 }], panels = [];
    const changed = (why) => {
      const waiting = panels.filter((p) => p.state !== "ready" && p.state !== "paused");
      both.disabled = panels.length < n || waiting.length > 0;
      bothNote.textContent = panels.length < n ? "" : waiting.some((p) => p.state === "loading") ? "Waiting for the models to be built (a few seconds)."
        : waiting.length ? "Both runs must be ready (or paused) to start together." : "";
      if (why) { onChange(why); }
    };
    for (let i = 0; i < n; i++) {
      panels.push(new Panel(row, i, defaults[i], n > 1 ? "Run " + String.fromCharCode(65 + i) + ": " : "", changed));
    }
    changed();
    both.addEventListener("click", () => panels.forEach((p) => p.start()));
    Array.prototype.push.apply(api.panels, panels);
    const why = unavailable();
    if (why) { panels.forEach((p) => p.fail(why)); }
  });
  addEventListener("beforeunload", (e) => {
    if (api.panels.some((p) => p.state === "running" || p.state === "paused")) {
      e.preventDefault(); e.returnValue = "A model is training in this page; leaving discards it.";
    }
  });
  return api;
}
