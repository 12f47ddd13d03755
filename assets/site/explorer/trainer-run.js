// A trainer panel's run, from a size to a trained model: the size checks,
// building the model in the worker, and what the worker says (ready,
// state, error), in words. trainer.js's Panel extends it.
import { MAN } from "./data.js";
import { engine as E } from "./engine.js";
import { checkSizes, paramCount } from "./sizes.js";

const ADVICE = " Reset, then Train, to try again once the file is back; if this comes back, rebuild the site with `make book`.";

// Why training cannot run here, or null. The explorer's precomputed
// pictures work either way.
export function unavailable() {
  if (location.protocol === "file:") {
    return "Training runs only when the site is served over http(s): browsers refuse WebAssembly " +
      "modules and workers on file:// pages. Run `python -m http.server -d _build/html` and open it there.";
  }
  if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
    return "This browser has no WebAssembly or Web Workers, which training needs.";
  }
  return null;
}

function finite(weights) { return !!weights && weights.params.every((p) => p.data.every(Number.isFinite)); }

export class Lifecycle {
  sizeChanged() {
    const c = this.read();
    const bad = checkSizes(c.h, c.dk, c.budget) || (Number.isInteger(c.seed) && c.seed >= 0 ? null
      : "seed must be a whole number from 0 to 999.");
    this.message.textContent = bad || "";
    if (bad) {
      this.summary.textContent = ""; this.config = null; this.setupKey = null;
      if (!this.locked() && this.state !== "failed") { this.state = "idle"; this.status.textContent = ""; }
      this.lock();
      return;
    }
    const d = c.h * c.dk;
    this.config = { h: c.h, dk: c.dk, seed: c.seed, d_model: d, steps: MAN.train.steps_for[String(d)] };
    if (this.lab) { this.lab.configure(this.config); } // a link's steps
    this.summary.textContent = "d_model = " + c.h + " × " + c.dk + " = " + d + "; " +
      paramCount(d).toLocaleString("en-US") + " parameters; " + this.config.steps +
      " steps of " + MAN.train.batch[0] + " sequences.";
    this.prepare();
  }

  // Build the model (the init graph) as soon as the size is valid and the
  // panel has been near the screen, so that Train starts at once.
  prepare() {
    const c = this.config;
    if (!c || this.locked() || !this.seen) { return; }
    const why = unavailable();
    if (why) { this.fail(why); return; }
    const key = [c.h, c.dk, c.seed, c.steps, this.knobs.key()].join("/");
    // the same model, built or being built (an input event that changed
    // nothing: "same budget" ticked again, a field retyped): not again, nor
    // its step-0 read-out, which would take the read-out worker's core
    // from the first steps of a run
    if (this.worker && key === this.setupKey && (this.state === "loading" || this.state === "ready")) { return; }
    if (!this.worker) { this.worker = this.newClient(); }
    this.state = "loading";
    this.status.textContent = "Building the model (h = " + c.h + ", d_k = " + c.dk + ") …";
    this.lock();
    this.clearRun();
    this.setupKey = key;
    this.tokens().then(() => {
      if (this.worker && key === this.setupKey) { this.worker.setup(this.setupArgs(c)); }
    }).catch((err) => {
      if (key === this.setupKey) { this.fail("The page's engine did not start: " + (err.message || err) + "." + ADVICE); }
    });
  }

  fail(why) {
    if (this.worker) { this.worker.terminate(); this.worker = null; }
    this.snapshot = null;
    this.state = "failed";
    this.message.textContent = why;
    this.status.textContent = "";
    this.lock();
  }

  // The one line for an error the worker reports: a file that did not load
  // (before any step), or a step that failed (a run that had started).
  failure(msg) {
    if (msg.stage === "load") {
      return "Training cannot start: " + msg.message + ". Reload the page, or Reset once the file is back; if this comes back, " +
        "the site is incomplete: rebuild it with `make book`.";
    }
    if (msg.stage === "setup") { return "The model could not be built: " + msg.message + ". Reset, or reload the page."; }
    return "Training stopped at step " + (this.step || 0) + ": " + msg.message + ". Reset to start again.";
  }

  onReady(msg) {
    if (!this.config || msg.key !== this.setupKey) { return; } // an older size, since changed
    this.state = "ready"; this.step = 0; this.params = msg.params;
    this.summary.textContent = "d_model = " + msg.h + " × " + msg.d_k + " = " + msg.d_model + "; " +
      msg.params.toLocaleString("en-US") + " parameters; " + msg.steps + " steps of " + MAN.train.batch[0] + " sequences.";
    this.status.textContent = "Ready: press Train.";
    this.stepsTotal = msg.steps;
    this.lock();
    this.newWeights(msg.weights);
  }

  onState(msg) {
    this.state = msg.state;
    if (msg.step != null) { this.step = msg.step; } // the counter, "Yours" and this line agree
    if (msg.state === "diverged") { this.diverged(msg); this.lock(); return; }
    this.newWeights(msg.weights);
    if (msg.state === "running") { this.status.textContent = msg.note ? "Already training." : "Training …"; }
    if (msg.state === "paused") {
      this.progress.textContent = "";
      this.status.textContent = "Paused at step " + msg.step + ": Resume goes on, Reset discards the model.";
    }
    if (msg.state === "done") {
      this.timings.done = performance.now();
      this.progress.textContent = "";
      this.status.textContent = "Done: " + msg.step + " steps in " + ((this.timings.done - this.timings.trainPressed) / 1000).toFixed(1) +
        " s. Type a sentence in the box below to see the trained heads on it" +
        (document.getElementById("mha-explorer") ? ", or pick \"Yours\" as the model in the explorer above" : "") +
        "; Reset to train another size.";
      this.showPython(msg.step);
    }
    this.lock();
    if (msg.state === "paused" || msg.state === "done") { this.onChange("yours"); }
  }

  // The loss or the gradient norm is not a number: training stops; the
  // model shown is the one before that step, if it is finite.
  diverged(msg) {
    const kept = finite(msg.weights);
    if (kept) { this.newWeights(msg.weights); } else { this.snapshot = null; this.heads.hidden = true; }
    this.progress.textContent = "";
    this.status.textContent = "Stopped at step " + msg.step + ": the loss diverged.";
    this.message.textContent = "The loss diverged at step " + (msg.step + 1) + " (loss " + msg.loss + ", gradient norm " +
      msg.norm + "): training stopped" + (kept ? msg.step ? "; the model after step " + msg.step + ", the last finite one, is shown"
        : "; the initial model is shown" : "; no model is shown, as its weights are not finite numbers either (a damaged data file?)") +
      ". Reset, and try a smaller d_model or another seed.";
  }

  // The explorer's view of this model (the same fields as a manifest entry).
  entry() {
    const c = this.config, last = this.evals[this.evals.length - 1];
    return { name: "yours", h: c.h, d_k: c.dk, d_model: c.d_model, params: this.params || 0,
      layers: this.knobs.layers(), trained: true, yours: true, steps: this.step,
      accuracy: last ? last.accuracy[0] : null, max_len: MAN.tiny_tokenizer.max_len };
  }

  // The explorer runs this model on its own text through here (the latest
  // weights the worker sent).
  runText(text) {
    const snap = this.snapshot;
    if (snap) { return E.tinyText(snap.params, snap.h, text, { feeds: this.knobs.feeds() }); }
    return E.tokenizeTiny(text).then((tok) => ({ tokens: [], attn: [], kept: 0, total: tok.total, unk: 0 }));
  }
}
