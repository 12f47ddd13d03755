// The trainer's worker clients: the one place that knows the messages the
// page and its two workers exchange.
//
// Client, the training worker (train-worker.js), one per panel; what it
// says comes back as calls to the handlers the panel gave (on.ready,
// on.progress, on.state, on.error, on.crash).
//   page -> worker:  setup {base, manifest, h, d_k, seed, steps, drawEvery,
//                    key, run (the panel's run id), feeds (the knobs'
//                    inputs)} | train | pause |
//                    quiet {ms} (the reader is typing: no step starts for
//                    ms milliseconds) |
//                    weights | resources | steps {steps} (tests: a short
//                    run) | poison (tests: a non-finite weight)
//   worker -> page:  ready | progress | state | error {message, stage}
//                    | weights | resources (the last two answer a request);
//                    each names the run (its setup's run id) it is about
//
// Reader, the read-out worker (readout-worker.js), one for the page; each
// read is a promise.
//   page -> worker:  setup {base, manifest} | read {id, run, step, h,
//                    params, mask, feeds} | quiet {ms} (no graph starts for ms
//                    milliseconds; answered at once, not in turn)
//   worker -> page:  booted | read {id, run, step, ms, accuracy (3), stats
//                    (n_layers * h * 5), role, named (n_layers * h),
//                    circuits} | patch {id, run, corruption, n, h, ends,
//                    maps, fractions, ms, last} (one a graph, asked by
//                    patch {id, run, params, h, corruption, n}:
//                    readout-patch.js) |
//                    error {id, run, message, stage}; run:
//                    the read's, echoed (the panel keeps only its model's)

// A worker that does not start (its file missing, or refused) gives an
// error event with no message: say which file.
function crashWords(e, file) {
  return e && e.message
    ? e.message
    : "the worker " + file + " did not start (the file is missing or the browser refused it)";
}

// Input comes first: a keystroke in a trainer's sentence box asks every
// worker of the page (each panel's training worker and the read-out worker)
// to start no step or graph for QUIET_MS, so that the page's forward pass and
// drawing get a core (worker-common.js: quietFor; benchmarks/bench_reader.py
// measures the keystroke to the frame that shows it).
const QUIET_MS = 150;
const LIVE = new Set();
export function quietWorkers() {
  LIVE.forEach((w) => w.postMessage({ type: "quiet", ms: QUIET_MS }));
}

export class Client {
  constructor(url, on) {
    this.on = on;
    this.pending = {}; // type -> resolve, for the requests that get one answer
    this.worker = new Worker(url, { type: "module" });
    LIVE.add(this.worker);
    this.worker.onmessage = (e) => this.receive(e.data);
    this.worker.onerror = (e) => on.crash(crashWords(e, "train-worker.js"));
  }

  send(msg) {
    this.worker.postMessage(msg);
  }
  setup(args) {
    args.type = "setup";
    this.send(args);
  }
  train() {
    this.send({ type: "train" });
  }
  pause() {
    this.send({ type: "pause" });
  }
  steps(n) {
    this.send({ type: "steps", steps: n });
  }
  poison() {
    this.send({ type: "poison" });
  }
  terminate() {
    LIVE.delete(this.worker);
    this.worker.terminate();
    this.pending = {};
  }

  // A request with one answer: the promise resolves with it.
  ask(type) {
    return new Promise((resolve) => {
      this.pending[type] = resolve;
      this.send({ type: type });
    });
  }
  // The weights now (the tests compare them with the package's).
  weights() {
    return this.ask("weights");
  }
  // What the worker loaded (the benchmark counts the bytes).
  resources() {
    return this.ask("resources").then((msg) => msg.entries);
  }

  receive(msg) {
    const on = this.on;
    if (msg.type in this.pending) {
      const resolve = this.pending[msg.type];
      delete this.pending[msg.type];
      resolve(msg);
    } else if (msg.type === "ready") {
      on.ready(msg);
    } else if (msg.type === "progress") {
      on.progress(msg);
    } else if (msg.type === "state") {
      on.state(msg);
    } else if (msg.type === "error") {
      on.error(msg);
    }
  }
}

export class Reader {
  constructor(url, base, manifest) {
    this.pending = {};
    this.next = 1;
    this.failed = null; // a load failure: every later read fails with it, until a new Reader
    this.worker = new Worker(url, { type: "module" });
    LIVE.add(this.worker);
    this.worker.onmessage = (e) => this.receive(e.data);
    this.worker.onerror = (e) =>
      this.fail({ message: crashWords(e, "readout-worker.js"), stage: "load" });
    this.worker.postMessage({ type: "setup", base: base, manifest: manifest });
  }

  // Score the weights params ({data, dims} per manifest parameter) of a
  // model with h heads, at training step `step`; opts.mask (heads switched
  // off, a Float32Array), opts.feeds (the knobs' inputs), opts.run (the
  // panel's run id, echoed in the answer). Resolves with the
  // read-out; rejects with an Error whose .stage says where it failed.
  read(params, h, step, opts) {
    const id = this.next++;
    if (this.failed) {
      return Promise.reject(this.failed);
    }
    return new Promise((resolve, reject) => {
      this.pending[id] = { resolve: resolve, reject: reject };
      this.worker.postMessage({
        type: "read",
        id: id,
        run: opts && opts.run,
        step: step,
        h: h,
        params: params.map((p) => ({ data: p.data, dims: p.dims })),
        mask: opts && opts.mask,
        feeds: opts && opts.feeds,
      });
    });
  }

  // The Patch view's maps of the weights params (h heads) on the first n
  // pairs of a corruption (trainer-patch.js); resolves as read does, with
  // the last graph's answer (every map); part(answer) gets the ones before.
  patch(params, h, corruption, n, run, part) {
    const id = this.next++;
    if (this.failed) {
      return Promise.reject(this.failed);
    }
    return new Promise((resolve, reject) => {
      this.pending[id] = { resolve: resolve, reject: reject, part: part };
      this.worker.postMessage({
        type: "patch",
        id: id,
        run: run,
        h: h,
        corruption: corruption,
        n: n,
        params: params.map((p) => ({ data: p.data, dims: p.dims })),
      });
    });
  }

  fail(msg) {
    const err = new Error(msg.message);
    err.stage = msg.stage;
    if (msg.stage === "load") {
      this.failed = err;
      LIVE.delete(this.worker);
      this.worker.terminate();
    }
    const ids = msg.id != null && !this.failed ? [msg.id] : Object.keys(this.pending);
    ids.forEach((id) => {
      if (this.pending[id]) {
        this.pending[id].reject(err);
        delete this.pending[id];
      }
    });
  }

  receive(msg) {
    if (msg.type === "patch" && msg.last === false && this.pending[msg.id]) {
      if (this.pending[msg.id].part) {
        this.pending[msg.id].part(msg);
      } // the patching maps, ablation still running
    } else if ((msg.type === "read" || msg.type === "patch") && this.pending[msg.id]) {
      this.pending[msg.id].resolve(msg);
      delete this.pending[msg.id];
    } else if (msg.type === "error") {
      this.fail(msg);
    }
  }
}
