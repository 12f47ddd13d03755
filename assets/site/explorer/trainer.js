// "Train it yourself": pick h and d_k, press Train, and watch a tiny model
// learn in this page: its loss, its held-out accuracy, every head's attention
// on a sentence, and the role the package's analysis gives each head.
//
// The training runs in a Web Worker (train-worker.js) with the graphs that
// mhacourse.web_train exports. The worker sends a copy of the weights every
// few steps; the pictures come from the package's forward graph on that copy,
// run here (mhaEngine.forwardWith), so a typed sentence is answered while the
// worker is busy with a step. The trainer is split by role, as the explorer
// is: trainer-client.js (the messages to and from the worker, one place),
// trainer-draw.js (the curves, the heads, the read-outs) and this file (the
// panel's state and controls, and the boot). A page loads trainer.js alone;
// it loads the other two, unless the page has loaded them already.
// Every element <div class="mha-trainer" data-runs="2"> on a page becomes a
// trainer with that many runs side by side (same batches, same seed).
//
// window.mhaTrainer = { panels: [...] }  (the browser tests drive it)
(function () {
  "use strict";

  var script = document.currentScript;
  var STATIC = new URL("../", script.src).href; // .../_static/
  var WORKER = new URL("train-worker.js", script.src).href;
  var READER = new URL("readout-worker.js", script.src).href;
  var PARTS = ["trainer-client.js", "trainer-draw.js", "trainer-readout.js", "trainer-knobs.js"];
  var MAN = window.mhaExplorerManifest;
  var CMAP = window.mhaExplorerColormap;
  var E = window.mhaEngine;
  var api = window.mhaTrainer = { panels: [] };
  var PROBE = "the cat sat on the mat because the cat was tired";
  var READ_EVERY = 20; // steps between two copies of the weights (pictures and read-outs)
  var Parts = null, el = null, D = null; // the parts, once loaded (boot)

  // Why training cannot run here, or null. The explorer's precomputed
  // pictures work either way.
  function unavailable() {
    if (!MAN || !MAN.train) { return "The training graphs did not load; rebuild the site with `make book`."; }
    if (location.protocol === "file:") {
      return "Training runs only when the site is served over http(s): browsers refuse WebAssembly " +
        "modules and workers on file:// pages. Run `python -m http.server -d _build/html` and open it there.";
    }
    if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
      return "This browser has no WebAssembly or Web Workers, which training needs.";
    }
    return null;
  }


  // The line for the size rule `key`: the manifest's template (limits.messages,
  // str.format-style, written once by mhacourse.web_train beside
  // check_sizes) filled with these sizes and the manifest's limits.
  function sizeMessage(key, h, dk) {
    var L = MAN.train.limits, given = MAN.train.limits.messages; // web_train.SIZE_MESSAGES
    var fields = { h: h, d_k: dk, d_model: h * dk, h_max: L.h_max, d_k_min: L.d_k_min, d_k_max: L.d_k_max,
      d_model_max: L.d_model_max, budget: MAN.train.budget };
    return given[key].replace(/\{(\w+)\}/g, function (all, name) {
      return name in fields ? String(fields[name]) : all;
    });
  }

  // The sizes the page trains: the manifest's limits, the rules of
  // mhacourse.web_train.check_sizes. null, or the line that says why not.
  function checkSizes(h, dk, budget) {
    var L = MAN.train.limits;
    if (!Number.isInteger(h) || h < 1 || h > L.h_max) { return sizeMessage("h", h, dk); }
    if (budget && MAN.train.budget % h !== 0) { return sizeMessage("budget", h, dk); }
    if (!Number.isInteger(dk) || dk < L.d_k_min || dk > L.d_k_max) { return sizeMessage("d_k", h, dk); }
    if (h * dk > L.d_model_max) { return sizeMessage("d_model", h, dk); }
    return null;
  }

  // Parameters of a model of width d: the sizes of the manifest's shapes
  // (each dimension a * d_model + b), the tensors the init graph makes.
  function paramCount(d) {
    return MAN.train.params.reduce(function (n, p) {
      return n + p.dims.reduce(function (m, ab) { return m * (ab[0] * d + ab[1]); }, 1);
    }, 0);
  }

  function Panel(root, index, defaults, single) {
    var P = this;
    P.index = index;
    P.state = "idle"; // idle | loading | ready | running | paused | done | diverged | failed
    P.losses = [];
    P.evals = [];
    P.timings = { created: performance.now() };
    P.base = P.baselines(); // what the curves are read against
    P.vocab = MAN.train.vocab_size;
    var tag = P.tag = "mha-train-" + (api.panels.length + 1);
    P.off = {}; // heads switched off (the ablation), by layer * h + head
    P.canAblate = false; // until the graphs say they take head_mask
    var hIn = el("input", { type: "number", min: "1", max: "16", step: "1", value: String(defaults.h), id: tag + "-h" });
    var dkIn = el("input", { type: "number", min: "2", max: "64", step: "1", value: String(defaults.dk), id: tag + "-dk" });
    var budget = el("input", { type: "checkbox", id: tag + "-budget" });
    var seedIn = el("input", { type: "number", min: "0", max: "999", step: "1", value: "0", id: tag + "-seed" });
    P.train = el("button", { type: "button", class: "mha-train-go", text: "Train" });
    P.pause = el("button", { type: "button", class: "mha-train-pause", text: "Pause", disabled: "" });
    P.reset = el("button", { type: "button", class: "mha-train-reset", text: "Reset", disabled: "" });
    P.summary = el("p", { class: "mha-train-summary" });
    P.status = el("p", { class: "mha-train-status", role: "status" });
    P.message = el("p", { class: "mha-train-message", role: "alert" });
    P.chart = el("canvas", { class: "mha-train-chart", width: "360", height: "150", role: "img",
      "aria-label": "Training loss: no steps yet", hidden: "" });
    P.accuracy = el("p", { class: "mha-train-accuracy", "aria-live": "polite" });
    P.lossNote = el("p", { class: "mha-train-loss-note" });
    P.curves = el("canvas", { class: "mha-train-curves", width: "360", height: "170", role: "img",
      "aria-label": "Held-out accuracy: no read-out yet", hidden: "" });
    P.curveKey = el("p", { class: "mha-train-key", hidden: "" });
    P.phase = el("p", { class: "mha-train-phase", "aria-live": "polite" });
    P.timeline = el("div", { class: "mha-train-timeline" });
    P.python = el("p", { class: "mha-train-python" });
    P.circuits = el("div", { class: "mha-train-circuits", "aria-live": "off" });
    P.heads = el("div", { class: "mha-train-heads" });
    P.roles = el("p", { class: "mha-train-roles" });
    P.ablation = el("p", { class: "mha-train-ablation", "aria-live": "polite" });
    P.sentence = el("input", { type: "text", class: "mha-train-sentence", value: PROBE, id: tag + "-text",
      spellcheck: "false" });
    P.sentenceNote = el("p", { class: "mha-train-note" });
    P.inputs = [hIn, dkIn, budget, seedIn];
    var label = function (input, text) { return el("label", { for: input.id }, [text, " ", input]); };
    // two columns (the model and its training | the heads on a sentence);
    // side by side when the panel is wide (one run), stacked when narrow
    var box = el("div", { class: "mha-train-panel", "data-run": String(index + 1) }, [
      el("div", { class: "mha-train-left" }, [
        single ? null : el("h4", { text: "Run " + String.fromCharCode(65 + index) }),
        el("div", { class: "mha-train-controls" }, [label(hIn, "h"), label(dkIn, "d_k"),
          label(budget, "same budget: d_model = " + MAN.train.budget), label(seedIn, "seed")]),
        P.buildKnobs(tag),
        P.summary,
        el("div", { class: "mha-train-buttons" }, [P.train, P.pause, P.reset]),
        P.status, P.message, P.chart, P.lossNote, P.curves, P.curveKey, P.accuracy, P.phase,
        P.timeline, P.circuits, P.python]),
      el("div", { class: "mha-train-right" }, [
        el("label", { for: P.sentence.id, class: "mha-train-sentence-label" },
          ["The heads on a sentence (type your own)"]),
        P.sentence, P.sentenceNote, P.ablation, P.heads, P.roles]),
    ]);
    root.appendChild(box);
    // The worker (onnxruntime's WebAssembly, the graphs, the data: about
    // 17 MB and a second or two of a core) starts when the panel comes near
    // the screen, not with the page: the explorer above stays quick.
    P.seen = typeof IntersectionObserver !== "function";
    if (!P.seen) {
      var watch = new IntersectionObserver(function (entries) {
        if (!entries.some(function (e) { return e.isIntersecting; })) { return; }
        watch.disconnect();
        P.seen = true;
        P.prepare();
      }, { rootMargin: "200px" });
      watch.observe(box);
    }
    P.read = function () {
      var h = Number(hIn.value), b = budget.checked;
      if (b && h > 0 && MAN.train.budget % h === 0) { dkIn.value = String(MAN.train.budget / h); }
      dkIn.disabled = b || P.locked();
      return { h: h, dk: Number(dkIn.value), seed: Number(seedIn.value), budget: b };
    };
    P.locked = function () { return P.state === "running" || P.state === "paused" || P.state === "done" || P.state === "diverged"; };
    P.lock = function () {
      var locked = P.locked();
      P.inputs.forEach(function (i) { i.disabled = locked; });
      if (!locked) { P.read(); }
      P.train.disabled = !P.config || P.state === "running" || P.state === "done" ||
        P.state === "diverged" || P.state === "loading";
      P.train.textContent = P.state === "paused" ? "Resume" : "Train";
      P.pause.disabled = P.state !== "running";
      P.reset.disabled = !(P.locked() || P.state === "failed");
      P.lockKnobs();
    };
    P.inputs.forEach(function (i) { i.addEventListener("input", function () { P.sizeChanged(); }); });
    budget.addEventListener("change", function () { P.sizeChanged(); });
    P.train.addEventListener("click", function () { P.start(); });
    P.pause.addEventListener("click", function () { P.stop(); });
    P.reset.addEventListener("click", function () { P.resetRun(); });
    var typing = null;
    P.sentence.addEventListener("input", function () {
      clearTimeout(typing);
      P.timings.keystroke = performance.now();
      typing = setTimeout(function () { P.probe(); }, 0);
    });
    P.sizeChanged();
  }

  Panel.prototype.sizeChanged = function () {
    var P = this, c = P.read();
    var bad = checkSizes(c.h, c.dk, c.budget) || (Number.isInteger(c.seed) && c.seed >= 0 ? null
      : "seed must be a whole number from 0 to 999.");
    P.message.textContent = bad || "";
    P.train.disabled = !!bad;
    if (bad) {
      P.summary.textContent = ""; P.config = null; P.setupKey = null;
      if (!P.locked() && P.state !== "failed") { P.state = "idle"; P.status.textContent = ""; }
      P.lock();
      return;
    }
    var d = c.h * c.dk;
    P.config = { h: c.h, dk: c.dk, seed: c.seed, d_model: d, steps: MAN.train.steps_for[String(d)] };
    P.summary.textContent = "d_model = " + c.h + " × " + c.dk + " = " + d + "; " +
      paramCount(d).toLocaleString("en-US") + " parameters; " + P.config.steps +
      " steps of " + MAN.train.batch[0] + " sequences.";
    P.prepare();
  };

  // Build the model (the init graph) as soon as the size is valid and the
  // panel has been near the screen, so that Train starts at once.
  Panel.prototype.prepare = function () {
    var P = this, c = P.config;
    if (!c || P.locked() || !P.seen) { return; }
    var why = unavailable();
    if (why) { P.fail(why); return; }
    if (!P.worker) { P.worker = new Parts.Client(WORKER, P.handlers()); }
    if (!P.asked) { P.asked = true; P.whatGraphsTake(); }
    P.state = "loading";
    P.status.textContent = "Building the model (h = " + c.h + ", d_k = " + c.dk + ") …";
    P.lock();
    P.clearRun();
    P.setupKey = [c.h, c.dk, c.seed, JSON.stringify(P.knobs)].join("/");
    P.tokens().then(function (tok) {
      P.worker.setup({ base: STATIC, manifest: MAN, h: c.h, d_k: c.dk, seed: c.seed,
        steps: c.steps, drawEvery: READ_EVERY, key: P.setupKey, knobs: P.knobFeeds() });
    }).catch(function (err) { P.fail(err.message || String(err)); });
  };

  Panel.prototype.tokens = function () {
    var P = this;
    return E.tokenizeTiny(P.sentence.value).then(function (tok) {
      P.probeTokens = tok.tokens;
      var notes = [];
      if (tok.total > tok.kept) { notes.push("The model reads at most " + MAN.tiny_tokenizer.max_len + " tokens: kept the first " + tok.kept + " of " + tok.total + "."); }
      if (tok.unk) { notes.push(tok.unk + " of " + tok.kept + " tokens are not in the task's word list and are shown as [UNK]."); }
      P.sentenceNote.textContent = notes.join(" ");
      return tok;
    });
  };

  // Draw the heads on the sentence in the box, with the latest weights the
  // worker sent. One run at a time: a keystroke or a new copy of the weights
  // that arrives meanwhile asks for one more run, with what is newest then.
  Panel.prototype.probe = function () {
    var P = this;
    if (!P.snapshot || P.state === "loading" || P.state === "failed" || P.state === "idle") { return; }
    if (P.drawing) { P.again = true; return; }
    if (!P.sentence.value.trim()) {
      P.heads.hidden = true; // never leave a stale picture on screen
      P.sentenceNote.textContent = "Type a sentence: the text is empty.";
      return;
    }
    var snap = P.snapshot, key = P.setupKey, typed = P.timings.keystroke;
    P.drawing = true;
    P.again = false;
    P.tokens().then(function (tok) {
      var refused = E.tinyRefusal(tok); // the explorer's rule and words
      if (refused) { P.heads.hidden = true; P.sentenceNote.textContent = refused; return null; }
      P.heads.classList.toggle("mha-train-all-off", P.allOff(snap.h)); // no pictures, the switches stay
      if (P.allOff(snap.h)) { return null; } // P.ablation says why
      var opts = { mask: P.mask(snap.h), layerOn: Float32Array.from(P.knobFeeds().layerOn) };
      return E.forwardWith(snap.params, snap.h, tok.ids, opts).then(function (attn) {
        if (key !== P.setupKey || !P.snapshot) { return; } // reset or resized meanwhile
        D.heads(P, { step: snap.step, h: snap.h, L: tok.ids.length, attn: attn });
        // the benchmark's "keystroke to repaint": only a run that started
        // after the last keystroke drew what was typed
        if (typed != null && P.timings.keystroke === typed) {
          P.timings.keystroke = null;
          requestAnimationFrame(function () { (P.timings.repaints = P.timings.repaints || []).push(performance.now() - typed); });
        }
      });
    }).catch(function (err) {
      P.heads.hidden = true;
      P.sentenceNote.textContent = "Could not run the model on this sentence: " + (err.message || err);
    }).then(function () {
      P.drawing = false;
      if (P.again) { P.probe(); }
    });
  };

  // A new copy of the weights from the worker: keep it, and redraw.
  Panel.prototype.newWeights = function (w) {
    if (!w) { return; }
    this.snapshot = w;
    this.probe();
    if (this.mask(w.h)) { this.ablate(); } // the ablated read-out follows the model
  };

  Panel.prototype.start = function () {
    var P = this;
    if (P.state === "running") { P.status.textContent = "Already training (step " + P.step + ")."; return; }
    if (P.state !== "ready" && P.state !== "paused") { return; }
    P.timings.trainPressed = performance.now();
    P.worker.train();
  };

  Panel.prototype.stop = function () { if (this.worker && this.state === "running") { this.worker.pause(); } };

  // Whether this build's graphs take head_mask (forward and evaluate: the
  // ablation) and have circuits: the switches under the heads wait for it.
  Panel.prototype.whatGraphsTake = function () {
    var P = this;
    Promise.all([E.forwardInputs(), reader().can()]).then(function (r) {
      P.canAblate = r[0].indexOf("head_mask") >= 0 && r[1].inputs.indexOf("head_mask") >= 0;
      P.hasCircuits = r[1].circuits;
      if (P.grids) { P.grids.canvases.forEach(function (c, k) { var b = P.grids.switches[k]; if (b) { b.disabled = !P.canAblate; } }); }
    }).catch(function () { P.canAblate = false; }); // the engine's own line says what failed
  };

  // The read-out worker, one for the page, started with the first read.
  var readerWorker = null;
  function reader() {
    if (!readerWorker) { readerWorker = new Parts.Reader(READER, STATIC, MAN); }
    return readerWorker;
  }

  // The explorer above shows "Yours": redraw it when this model changes.
  function explorerChanged() {
    var X = window.mhaExplorer;
    if (!X || !X.syncControls) { return; }
    X.syncControls();
    if (X.state.source === "yours") { X.update("trainer"); }
  }

  Panel.prototype.resetRun = function () {
    var P = this, at = P.step || 0;
    if (P.worker) { P.worker.terminate(); P.worker = null; }
    P.step = 0;
    P.snapshot = null;
    explorerChanged();
    P.state = "idle";
    P.heads.textContent = ""; P.grids = null; // the next run makes its canvases anew
    P.clearRun();
    P.off = {}; P.ablation.textContent = "";
    P.lock();
    P.sizeChanged();
    if (at) { P.status.textContent = "Reset: the model at step " + at + " was discarded; " + P.status.textContent; }
  };

  Panel.prototype.fail = function (why) {
    var P = this;
    if (P.worker) { P.worker.terminate(); P.worker = null; }
    P.snapshot = null;
    P.state = "failed";
    P.message.textContent = why;
    P.status.textContent = "";
    P.lock();
    P.train.disabled = true;
  };

  // What the worker says (trainer-client.js calls these).
  Panel.prototype.handlers = function () {
    var P = this;
    return {
      ready: function (msg) { P.onReady(msg); },
      progress: function (msg) { P.onProgress(msg); },
      state: function (msg) { P.onState(msg); },
      error: function (msg) { P.fail(P.failure(msg)); },
      crash: function (why) { P.fail("The training worker stopped: " + why); },
    };
  };

  // The one line for an error the worker reports: a file that did not load
  // (before any step), or a step that failed (a run that had started).
  Panel.prototype.failure = function (msg) {
    if (msg.stage === "load") {
      return "Training cannot start: " + msg.message + ". Reload the page; if this comes back, the site is " +
        "incomplete: rebuild it with `make book`.";
    }
    if (msg.stage === "setup") {
      return "The model could not be built: " + msg.message + ". Reset, or reload the page.";
    }
    return "Training stopped at step " + (this.step || 0) + ": " + msg.message + ". Reset to start again.";
  };

  Panel.prototype.onReady = function (msg) {
    var P = this;
    if (!P.config || msg.key !== P.setupKey) { return; } // an older size, since changed
    P.state = "ready"; P.step = 0; P.params = msg.params;
    P.summary.textContent = "d_model = " + msg.h + " × " + msg.d_k + " = " + msg.d_model + "; " +
      msg.params.toLocaleString("en-US") + " parameters; " + msg.steps + " steps of " + MAN.train.batch[0] + " sequences.";
    P.status.textContent = "Ready: press Train.";
    P.stepsTotal = msg.steps;
    P.knobsAvailable(msg.takes || {});
    P.lock();
    P.newWeights(msg.weights);
    P.readOut(msg.weights);
  };

  Panel.prototype.onProgress = function (msg) {
    var P = this;
    P.step = msg.step;
    Array.prototype.push.apply(P.losses, msg.losses);
    P.stepsPerSecond = msg.stepsPerSecond;
    P.status.textContent = "Training: step " + msg.step + " of " + msg.steps + ", loss " +
      msg.losses[msg.losses.length - 1].toFixed(3) + ", " + msg.stepsPerSecond.toFixed(1) + " steps/s.";
    P.stepsTotal = msg.steps;
    D.chart(P);
    if (P.losses.length === msg.losses.length) { D.lossNote(P); } // the first loss, against ln V
    P.newWeights(msg.weights);
    P.readOut(msg.weights);
    if (P.losses.length === msg.losses.length) { explorerChanged(); } // the first steps: "Yours" exists
  };

  Panel.prototype.onState = function (msg) {
    var P = this;
    P.state = msg.state;
    if (msg.step != null) { P.step = msg.step; } // the counter, "Yours" and this line agree
    P.newWeights(msg.weights);
    P.readOut(msg.weights);
    if (msg.state === "running") { P.status.textContent = msg.note ? "Already training." : "Training …"; }
    if (msg.state === "paused" || msg.state === "done") { explorerChanged(); }
    if (msg.state === "paused") { P.status.textContent = "Paused at step " + msg.step + ": Resume goes on, Reset discards the model."; }
    if (msg.state === "done") {
      P.timings.done = performance.now();
      P.status.textContent = "Done: " + msg.step + " steps in " + ((P.timings.done - P.timings.trainPressed) / 1000).toFixed(1) +
        " s. Type a sentence in the box below to see the trained heads on it" +
        (window.mhaExplorer ? ", or pick \"Yours\" as the model in the explorer above" : "") +
        "; Reset to train another size.";
      P.python.textContent = "";
      P.python.appendChild(document.createTextNode("The same run in Python (with from mhacourse import tiny_model as tm): "));
      P.python.appendChild(el("code", { text: P.pythonLine(msg.step) }));
    }
    if (msg.state === "diverged") {
      P.message.textContent = "The loss diverged at step " + (msg.step + 1) + " (loss " + msg.loss + ", gradient norm " +
        msg.norm + "): training stopped, and the last finite model is shown. Reset, and try a smaller d_model or another seed.";
    }
    P.lock();
  };

  // The explorer's view of this model (the same fields as a manifest entry).
  Panel.prototype.entry = function () {
    var P = this, c = P.config, last = P.evals[P.evals.length - 1];
    return { name: "yours", h: c.h, d_k: c.dk, d_model: c.d_model, params: P.params || 0,
      layers: MAN.train.n_layers, trained: true, yours: true, steps: P.step,
      accuracy: last ? last.accuracy[0] : null, max_len: MAN.tiny_tokenizer.max_len };
  };

  // The explorer runs this model on its own text through here (the latest
  // weights the worker sent).
  Panel.prototype.runText = function (text) {
    var snap = this.snapshot;
    if (snap) { return E.tinyText(snap.params, snap.h, text); }
    return E.tokenizeTiny(text).then(function (tok) { // no model yet: nothing to draw
      return { tokens: [], attn: [], kept: 0, total: tok.total, unk: 0 };
    });
  };

  // The weights now (for the tests), and what the worker loaded (for the
  // benchmark).
  Panel.prototype.weights = function () { return this.worker.weights(); };
  Panel.prototype.resources = function () { return this.worker.resources(); };

  function mount(root) {
    var n = Math.max(1, Math.min(2, Number(root.getAttribute("data-runs") || "1")));
    root.textContent = "";
    var why = unavailable();
    var intro = el("p", { class: "mha-train-intro" }, [
      "Each run trains a fresh two-layer model on the course's lookup task, in this page, with the package's own " +
      "training step (mhacourse.web_train). Both runs read the same batches in the same order."]);
    if (n > 1) { root.appendChild(intro); }
    var both = el("button", { type: "button", class: "mha-train-both", text: "Train both" });
    if (n > 1) { root.appendChild(both); }
    var row = el("div", { class: "mha-train-runs" });
    root.appendChild(row);
    var defaults = [{ h: 1, dk: 64 }, { h: 16, dk: 4 }];
    var panels = [];
    for (var i = 0; i < n; i++) { panels.push(new Panel(row, i, defaults[i], n === 1)); }
    Array.prototype.push.apply(api.panels, panels);
    both.addEventListener("click", function () { panels.forEach(function (p) { p.start(); }); });
    if (why) { panels.forEach(function (p) { p.fail(why); }); both.disabled = true; }
  }

  window.addEventListener("beforeunload", function (e) {
    var busy = api.panels.some(function (p) { return p.state === "running" || p.state === "paused"; });
    if (busy) { e.preventDefault(); e.returnValue = "A model is training in this page; leaving discards it."; }
  });

  // The trainer's other parts (PARTS), beside this file: loaded in order,
  // unless the page has loaded them already.
  function loadParts() {
    var have = window.mhaTrainerParts || {};
    if (have.Client && have.draw && have.installReadout && have.installKnobs) { return Promise.resolve(have); }
    return PARTS.reduce(function (chain, file) {
      return chain.then(function () {
        return new Promise(function (resolve, reject) {
          var s = document.createElement("script");
          s.src = new URL(file, script.src).href;
          s.onload = resolve;
          s.onerror = function () { reject(new Error("could not load " + file)); };
          document.head.appendChild(s);
        });
      });
    }, Promise.resolve()).then(function () { return window.mhaTrainerParts; });
  }

  function boot() {
    var roots = document.querySelectorAll(".mha-trainer");
    if (!MAN || !CMAP || !E) {
      roots.forEach(function (r) { r.textContent = "The trainer's data did not load; rebuild the site with `make book`."; });
      return;
    }
    loadParts().then(function (parts) {
      Parts = parts; el = parts.el; D = parts.draw;
      parts.installReadout(Panel, { MAN: MAN, reader: reader, el: el, api: api });
      parts.installKnobs(Panel, { MAN: MAN, el: el, api: api });
      roots.forEach(mount);
    }).catch(function (err) {
      roots.forEach(function (r) { r.textContent = "The trainer's scripts did not load (" + err.message + "); reload the page, or rebuild the site with `make book`."; });
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", boot); } else { boot(); }
})();
