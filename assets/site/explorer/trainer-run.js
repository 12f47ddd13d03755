// A trainer panel's run (Run): its life (idle | loading | ready | running |
// paused | done | diverged | failed), its step, losses and copy of the
// weights, its identity (a run id, and the key of the model it builds),
// its training worker and the timings the benchmarks read. Run is the one
// owner of these: the panel and its parts read them here and change them
// through Run's methods. What happens is told as events (Run is an
// EventTarget; the panel listens first, then anyone else, such as the
// class page's re-run, class/rerun.js):
//   "run"     a new run begins (a new id): what the last one drew goes
//   "state"   the state changed; detail: the worker's message, or {state}
//   "step"    training went on; detail: the worker's progress message
//   "weights" a new copy of the weights; detail: {params, h, step}
//   "failed"  the run cannot go on; detail: {line}, the one line that says why
import { Client } from "./trainer-client.js";
import { crashLine, failureLine } from "./trainer-text.js";

const WORKER = new URL("train-worker.js", import.meta.url).href;
const LOCKED = ["running", "paused", "done", "diverged"]; // a model exists: the size stays
let runs = 0; // runs made on this page: each its own id
let files = 0; // model files opened on this page: each its own key

// Why training cannot run here, or null. The explorer's precomputed
// pictures work either way.
export function unavailable() {
  if (location.protocol === "file:") {
    return (
      "Training runs only when the site is served over http(s): browsers refuse WebAssembly " +
      "modules and workers on file:// pages. Run `python -m http.server -d _build/html` and open " +
      "it there."
    );
  }
  if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
    return "This browser has no WebAssembly or Web Workers, which training needs.";
  }
  return null;
}

function finite(weights) {
  return !!weights && weights.params.every((p) => p.data.every(Number.isFinite));
}

export class Run extends EventTarget {
  constructor() {
    super();
    this.state = "idle";
    this.step = 0;
    this.losses = [];
    this.stepsTotal = null; // the run's length, as the worker or the file says
    this.stepsPerSecond = null;
    this.params = null; // the model's parameter count
    this.snapshot = null; // the latest copy of the weights: {params, h, step}
    this.config = null; // {h, dk, seed, d_model, steps}, or null for a size refused
    this.key = null; // the model being built or trained (its size, seed, knobs)
    this.id = 0;
    this.worker = null;
    this.timings = { created: performance.now() };
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail: detail }));
  }
  to(state, detail) {
    this.state = state;
    this.emit("state", Object.assign({ state: state }, detail));
  }

  locked() {
    return LOCKED.includes(this.state);
  }
  mark(name, value) {
    this.timings[name] = value;
  }
  repainted(ms) {
    (this.timings.repaints = this.timings.repaints || []).push(ms);
  }
  weights(w) {
    this.snapshot = w;
    if (w) {
      this.emit("weights", w);
    }
  }

  // The size chosen (null: refused; the model, if any, is forgotten).
  configure(config) {
    this.config = config;
    if (!config) {
      this.key = null;
      if (!this.locked() && this.state !== "failed") {
        this.state = "idle";
      }
    }
  }

  // A new run: a new id (a reply of the workers about an earlier one is
  // never kept), no losses, no timings of the last.
  fresh() {
    this.id = ++runs;
    this.losses = [];
    ["ninety", "ninetyStep", "trainPressed"].forEach((k) => {
      this.timings[k] = null;
    });
    this.emit("run", { id: this.id });
  }

  // Build the model `key` (the worker starts now if it has not); setup(key,
  // args) sends the worker its setup once the page has what it needs.
  build(key) {
    if (!this.worker) {
      this.worker = new Client(WORKER, this.handlers());
    }
    this.to("loading");
    this.fresh();
    this.key = key;
  }
  setup(key, args) {
    if (this.worker && key === this.key) {
      this.worker.setup(args);
    }
  }
  building(key) {
    const made = this.state === "loading" || this.state === "ready";
    return !!this.worker && key === this.key && made;
  }

  train() {
    this.timings.trainPressed = performance.now();
    this.worker.train();
  }
  pause() {
    if (this.worker && this.state === "running") {
      this.worker.pause();
    }
  }
  end() {
    if (this.worker) {
      this.worker.terminate();
      this.worker = null;
    }
  }

  fail(line) {
    this.end();
    this.snapshot = null;
    this.to("failed");
    this.emit("failed", { line: line });
  }

  // Reset: the model goes (its worker too); returns the step it had.
  reset() {
    const at = this.step || 0;
    this.end();
    this.step = 0;
    this.snapshot = null;
    this.to("idle");
    this.fresh();
    return at;
  }

  // A model read from a file (config, its step and parameter count): a
  // finished run, with no worker.
  opened(config, step, params) {
    this.end();
    this.fresh();
    this.config = config;
    this.key = "file/" + ++files;
    this.stepsTotal = config.steps;
    this.step = step;
    this.params = params;
    this.to("done", { file: true });
  }

  // What the worker says about this run's model (its run id).
  handlers() {
    const mine = (fn) => (msg) => {
      if (msg.run === this.id) {
        fn(msg);
      }
    };
    return {
      ready: mine((msg) => this.ready(msg)),
      progress: mine((msg) => this.progress(msg)),
      state: mine((msg) => this.changed(msg)),
      error: mine((msg) => this.fail(failureLine(msg, this.step))),
      crash: (why) => this.fail(crashLine(why)),
    };
  }

  ready(msg) {
    if (!this.config || msg.key !== this.key) {
      return;
    } // an older size, since changed
    this.step = 0;
    this.params = msg.params;
    this.stepsTotal = msg.steps;
    this.snapshot = msg.weights;
    this.to("ready", msg);
    this.weights(msg.weights);
  }

  progress(msg) {
    this.step = msg.step;
    Array.prototype.push.apply(this.losses, msg.losses);
    this.stepsPerSecond = msg.stepsPerSecond;
    this.stepsTotal = msg.steps;
    if (msg.weights) {
      this.snapshot = msg.weights;
    } // before "step": "Yours" reads it
    this.emit("step", Object.assign({ first: this.losses.length === msg.losses.length }, msg));
    this.weights(msg.weights);
  }

  // The worker's state: running, paused, done, or diverged (the loss or
  // the gradient norm is not a number: the model kept is the one before
  // that step, if it is finite).
  changed(msg) {
    if (msg.step != null) {
      this.step = msg.step;
    } // the counter, "Yours" and the line agree
    if (msg.state === "done") {
      this.timings.done = performance.now();
    }
    if (msg.state === "diverged") {
      const kept = finite(msg.weights);
      this.snapshot = kept ? msg.weights : null;
      this.to("diverged", Object.assign({ kept: kept }, msg));
      if (kept) {
        this.weights(msg.weights);
      }
      return;
    }
    if (msg.weights) {
      this.snapshot = msg.weights;
    }
    this.to(msg.state, msg);
    if (msg.weights) {
      this.weights(msg.weights);
    }
  }
}
