// The trainer's worker client: the one place that knows the messages the
// page and the training worker (train-worker.js) exchange. The panel
// (trainer.js) calls the methods; what the worker answers comes back as
// calls to the handlers it gave (on.ready, on.progress, on.eval, on.state,
// on.error, on.crash).
//
// Page -> worker:  setup {base, manifest, h, d_k, seed, steps, evalEvery,
//                  drawEvery, key} | train | pause | weights | resources |
//                  steps {steps} (tests: a short run) | poison (tests: a
//                  non-finite weight)
// Worker -> page:  ready | progress | eval | state | error {message, stage}
//                  | weights | resources (the last two answer a request)
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
    else if (msg.type === "eval") { on.eval(msg); }
    else if (msg.type === "state") { on.state(msg); }
    else if (msg.type === "error") { on.error(msg); }
  };

  P.Client = Client;
})();
