// The trainer's worker clients: the one place that knows the messages the
// page and its two workers exchange. The panel (trainer.js) calls the
// methods.
//
// Client, the training worker (train-worker.js), one per panel; what it
// says comes back as calls to the handlers the panel gave (on.ready,
// on.progress, on.state, on.error, on.crash).
//   page -> worker:  setup {base, manifest, h, d_k, seed, steps, drawEvery,
//                    key} | train | pause | weights | resources |
//                    steps {steps} (tests: a short run) | poison (tests: a
//                    non-finite weight)
//   worker -> page:  ready | progress | state | error {message, stage}
//                    | weights | resources (the last two answer a request)
//
// Reader, the read-out worker (readout-worker.js), one for the page; each
// read is a promise.
//   page -> worker:  setup {base, manifest} | read {id, step, h, params,
//                    mask, layerOn}
//   worker -> page:  booted {inputs, circuits} | read {id, step, ms, accuracy (3), stats
//                    (n_layers * h * 5), role, named (n_layers * h)}
//                    | error {id, message, stage}
(function () {
  "use strict";
  var P = window.mhaTrainerParts = window.mhaTrainerParts || {};

  function Client(url, on) {
    var C = this;
    C.on = on;
    C.pending = {}; // type -> resolve, for the requests that get one answer
    C.worker = new Worker(url, { type: "module" });
    C.worker.onmessage = function (e) { C.receive(e.data); };
    C.worker.onerror = function (e) { on.crash(e.message || "unknown error"); };
  }

  Client.prototype.send = function (msg) { this.worker.postMessage(msg); };
  Client.prototype.setup = function (args) { args.type = "setup"; this.send(args); };
  Client.prototype.train = function () { this.send({ type: "train" }); };
  Client.prototype.pause = function () { this.send({ type: "pause" }); };
  Client.prototype.steps = function (n) { this.send({ type: "steps", steps: n }); };
  Client.prototype.poison = function () { this.send({ type: "poison" }); };
  Client.prototype.terminate = function () {
    this.worker.terminate();
    this.pending = {};
  };

  // A request with one answer: the promise resolves with it.
  Client.prototype.ask = function (type) {
    var C = this;
    return new Promise(function (resolve) { C.pending[type] = resolve; C.send({ type: type }); });
  };
  // The weights now (the tests compare them with the package's).
  Client.prototype.weights = function () { return this.ask("weights"); };
  // What the worker loaded (the benchmark counts the bytes).
  Client.prototype.resources = function () {
    return this.ask("resources").then(function (msg) { return msg.entries; });
  };

  Client.prototype.receive = function (msg) {
    var on = this.on;
    if (msg.type in this.pending) {
      var resolve = this.pending[msg.type];
      delete this.pending[msg.type];
      resolve(msg);
    } else if (msg.type === "ready") { on.ready(msg); }
    else if (msg.type === "progress") { on.progress(msg); }
    else if (msg.type === "state") { on.state(msg); }
    else if (msg.type === "error") { on.error(msg); }
  };

  P.Client = Client;

  function Reader(url, base, manifest) {
    var R = this;
    R.pending = {};
    R.next = 1;
    R.failed = null;
    R.worker = new Worker(url, { type: "module" });
    R.worker.onmessage = function (e) { R.receive(e.data); };
    R.worker.onerror = function (e) { R.fail({ message: e.message || "unknown error", stage: "crash" }); };
    R.booted = new Promise(function (resolve) { R.onBooted = resolve; });
    R.worker.postMessage({ type: "setup", base: base, manifest: manifest });
  }

  // What the read-out worker can do: {inputs: the evaluate graph's input
  // names, circuits: whether the build has the circuits graph}.
  Reader.prototype.can = function () { return this.booted; };

  // Score the weights params ({data, dims} per manifest parameter) of a
  // model with h heads, at training step `step`; opts.mask, opts.layerOn:
  // Float32Arrays (heads switched off, layers on). Resolves with the
  // read-out; rejects with an Error whose .stage says where it failed.
  Reader.prototype.read = function (params, h, step, opts) {
    var R = this, id = R.next++;
    if (R.failed) { return Promise.reject(R.failed); }
    return new Promise(function (resolve, reject) {
      R.pending[id] = { resolve: resolve, reject: reject };
      R.worker.postMessage({ type: "read", id: id, step: step, h: h,
        params: params.map(function (p) { return { data: p.data, dims: p.dims }; }),
        mask: opts && opts.mask, layerOn: opts && opts.layerOn });
    });
  };

  Reader.prototype.fail = function (msg) {
    var R = this, err = new Error(msg.message);
    err.stage = msg.stage;
    if (msg.stage === "load" || msg.stage === "crash") { R.failed = err; } // every later read fails too
    var ids = msg.id != null ? [msg.id] : Object.keys(R.pending);
    ids.forEach(function (id) { if (R.pending[id]) { R.pending[id].reject(err); delete R.pending[id]; } });
  };

  Reader.prototype.receive = function (msg) {
    if (msg.type === "booted") { this.onBooted(msg); }
    else if (msg.type === "read" && this.pending[msg.id]) {
      this.pending[msg.id].resolve(msg);
      delete this.pending[msg.id];
    } else if (msg.type === "error") { this.fail(msg); }
  };

  P.Reader = Reader;
})();
