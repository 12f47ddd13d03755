// "Train it yourself": pick h and d_k, press Train, and watch a tiny model
// learn in this page: its loss, its held-out accuracy, every head's attention
// on a sentence, and the role the package's analysis gives each head.
//
// The training runs in a Web Worker (train-worker.js) with the graphs that
// mhacourse.web_train exports. The worker sends a copy of the weights every
// few steps; the pictures come from the package's forward graph on that copy,
// run here (mhaEngine.forwardWith), so a typed sentence is answered while the
// worker is busy with a step. This file draws and wires, nothing more.
// Every element <div class="mha-trainer" data-runs="2"> on a page becomes a
// trainer with that many runs side by side (same batches, same seed).
//
// window.mhaTrainer = { panels: [...] }  (the browser tests drive it)
(function () {
  "use strict";

  var script = document.currentScript;
  var STATIC = new URL("../", script.src).href; // .../_static/
  var WORKER = new URL("train-worker.js", script.src).href;
  var MAN = window.mhaExplorerManifest;
  var CMAP = window.mhaExplorerColormap;
  var E = window.mhaEngine;
  var api = window.mhaTrainer = { panels: [] };
  var PROBE = "the cat sat on the mat because the cat was tired";
  var ROLE_NAMES = { previous: "previous token", induction: "induction", duplicate: "duplicate token",
    self: "self", first: "first token", mixed: "mixed" };

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { e.textContent = attrs[k]; } else if (k === "class") { e.className = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
    });
    (children || []).forEach(function (c) { if (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); } });
    return e;
  }

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

  // The sizes the page trains; the same limits and words as
  // mhacourse.web_train.check_sizes.
  function checkSizes(h, dk, budget) {
    var L = MAN.train.limits;
    if (!Number.isInteger(h) || h < 1 || h > L.h_max) {
      return "h must be a whole number from 1 to " + L.h_max + " (time and memory: the page trains on one CPU thread).";
    }
    if (budget && MAN.train.budget % h !== 0) {
      return "h = " + h + " does not divide d_model = " + MAN.train.budget + ": pick a divisor (1, 2, 4, 8, 16), or untick \"same budget\".";
    }
    if (!Number.isInteger(dk) || dk < L.d_k_min || dk > L.d_k_max) {
      return "d_k must be a whole number from " + L.d_k_min + " to " + L.d_k_max + " (time: a step grows as d_model²).";
    }
    if (h * dk > L.d_model_max) {
      return "d_model = h × d_k = " + h + " × " + dk + " = " + h * dk + " is over " + L.d_model_max +
        " (time: a step grows as d_model²); make h or d_k smaller.";
    }
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
    var tag = "mha-train-" + (api.panels.length + 1);
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
    P.heads = el("div", { class: "mha-train-heads" });
    P.roles = el("p", { class: "mha-train-roles" });
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
        P.summary,
        el("div", { class: "mha-train-buttons" }, [P.train, P.pause, P.reset]),
        P.status, P.message, P.chart, P.accuracy]),
      el("div", { class: "mha-train-right" }, [
        el("label", { for: P.sentence.id, class: "mha-train-sentence-label" },
          ["The heads on a sentence (type your own)"]),
        P.sentence, P.sentenceNote, P.heads, P.roles]),
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
    if (!P.worker) {
      P.worker = new Worker(WORKER, { type: "module" });
      P.worker.onmessage = function (e) { P.receive(e.data); };
      P.worker.onerror = function (e) { P.fail("The training worker stopped: " + (e.message || "unknown error")); };
    }
    P.state = "loading";
    P.status.textContent = "Building the model (h = " + c.h + ", d_k = " + c.dk + ") …";
    P.lock();
    P.losses = []; P.evals = [];
    P.setupKey = [c.h, c.dk, c.seed].join("/");
    P.tokens().then(function (tok) {
      P.worker.postMessage({ type: "setup", base: STATIC, manifest: MAN, h: c.h, d_k: c.dk, seed: c.seed,
        steps: c.steps, evalEvery: 100, drawEvery: 20, key: P.setupKey });
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
      if (tok.kept === 0) { P.heads.hidden = true; P.sentenceNote.textContent = "Type a sentence: no words were found in the text."; return null; }
      return E.forwardWith(snap.params, snap.h, tok.ids).then(function (attn) {
        if (key !== P.setupKey || !P.snapshot) { return; } // reset or resized meanwhile
        P.drawHeads({ step: snap.step, h: snap.h, L: tok.ids.length, attn: attn });
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
  };

  Panel.prototype.start = function () {
    var P = this;
    if (P.state === "running") { P.status.textContent = "Already training (step " + P.step + ")."; return; }
    if (P.state !== "ready" && P.state !== "paused") { return; }
    P.timings.trainPressed = performance.now();
    P.worker.postMessage({ type: "train" });
  };

  Panel.prototype.stop = function () { if (this.worker && this.state === "running") { this.worker.postMessage({ type: "pause" }); } };

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
    P.heads.textContent = ""; P.roles.textContent = ""; P.accuracy.textContent = "";
    P.losses = []; P.drawChart();
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

  Panel.prototype.receive = function (msg) {
    var P = this;
    if (msg.type === "ready") {
      if (!P.config || msg.key !== P.setupKey) { return; } // an older size, since changed
      P.state = "ready"; P.step = 0; P.params = msg.params;
      P.summary.textContent = "d_model = " + msg.h + " × " + msg.d_k + " = " + msg.d_model + "; " +
        msg.params.toLocaleString("en-US") + " parameters; " + msg.steps + " steps of " + MAN.train.batch[0] + " sequences.";
      P.status.textContent = "Ready: press Train.";
      P.lock();
      P.newWeights(msg.weights);
    } else if (msg.type === "progress") {
      P.step = msg.step;
      Array.prototype.push.apply(P.losses, msg.losses);
      P.stepsPerSecond = msg.stepsPerSecond;
      P.status.textContent = "Training: step " + msg.step + " of " + msg.steps + ", loss " +
        msg.losses[msg.losses.length - 1].toFixed(3) + ", " + msg.stepsPerSecond.toFixed(1) + " steps/s.";
      P.drawChart();
      P.newWeights(msg.weights);
      if (P.losses.length === msg.losses.length) { explorerChanged(); } // the first steps: "Yours" exists
    } else if (msg.type === "eval") {
      P.evals.push(msg);
      P.showEval(msg);
    } else if (msg.type === "state") {
      P.state = msg.state;
      P.newWeights(msg.weights);
      if (msg.state === "running") { P.status.textContent = msg.note ? "Already training." : "Training …"; }
      if (msg.state === "paused" || msg.state === "done") { explorerChanged(); }
      if (msg.state === "paused") { P.status.textContent = "Paused at step " + msg.step + ": Resume goes on, Reset discards the model."; }
      if (msg.state === "done") {
        P.timings.done = performance.now();
        P.status.textContent = "Done: " + msg.step + " steps in " + ((P.timings.done - P.timings.trainPressed) / 1000).toFixed(1) +
          " s. Type a sentence in the box below to see the trained heads on it" +
          (window.mhaExplorer ? ", or pick \"Yours\" as the model in the explorer above" : "") +
          "; Reset to train another size.";
      }
      if (msg.state === "diverged") {
        P.message.textContent = "The loss diverged at step " + (msg.step + 1) + " (loss " + msg.loss + ", gradient norm " +
          msg.norm + "): training stopped, and the last finite model is shown. Reset, and try a smaller d_model or another seed.";
      }
      P.lock();
    } else if (msg.type === "resources") {
      if (P.onResources) { P.onResources(msg.entries); P.onResources = null; }
    } else if (msg.type === "weights") {
      if (P.onWeights) { P.onWeights(msg); P.onWeights = null; }
    } else if (msg.type === "error") {
      P.fail("Training stopped: " + msg.message);
    }
  };

  Panel.prototype.showEval = function (e) {
    var P = this, a = e.accuracy;
    if (a.some(function (x) { return !Number.isFinite(x); })) { return; }
    if (a[0] >= 0.9 && P.timings.ninety == null && P.timings.trainPressed != null) {
      P.timings.ninety = performance.now() - P.timings.trainPressed;
      P.timings.ninetyStep = e.step;
    }
    P.accuracy.textContent = "Held-out accuracy after " + e.step + " steps: " + (100 * a[0]).toFixed(1) +
      "% (previous word " + (100 * a[1]).toFixed(1) + "%, lookup " + (100 * a[2]).toFixed(1) + "%).";
    var names = MAN.train.statistics, parts = [];
    P.roleNames = [];
    for (var l = 0; l < e.layers; l++) {
      var row = [];
      for (var i = 0; i < e.h; i++) {
        var k = l * e.h + i, name = e.named[k] ? names[e.role[k]] : "mixed";
        row.push(name);
        parts.push("L" + (l + 1) + "H" + (i + 1) + " " + ROLE_NAMES[name]);
      }
      P.roleNames.push(row);
    }
    P.roles.textContent = "Roles (head_roles, held-out set): " + parts.join(", ") + ".";
    P.titleHeads();
  };

  Panel.prototype.drawChart = function () {
    var P = this, c = P.chart, g = c.getContext("2d"), W = c.width, H = c.height, pad = 30;
    g.clearRect(0, 0, W, H);
    g.fillStyle = getComputedStyle(c).color || "#222";
    g.font = "11px sans-serif";
    g.fillText("loss", 2, 12);
    var n = P.losses.length, steps = (P.config && P.config.steps) || 1;
    c.hidden = !n; // no empty axes before the first step
    if (!n) { c.setAttribute("aria-label", "Training loss: no steps yet"); return; }
    var top = Math.max.apply(null, P.losses.slice(0, Math.min(n, 50)).concat([1]));
    g.strokeStyle = "#888";
    g.beginPath(); g.moveTo(pad, 4); g.lineTo(pad, H - 16); g.lineTo(W - 4, H - 16); g.stroke();
    g.fillText(top.toFixed(1), 2, 24); g.fillText("0", 18, H - 16); g.fillText("step " + steps, W - 60, H - 3);
    g.strokeStyle = "#1f77b4"; g.lineWidth = 1.5;
    g.beginPath();
    for (var i = 0; i < n; i++) {
      var x = pad + (W - pad - 4) * (i + 1) / steps, y = (H - 16) - (H - 20) * Math.min(P.losses[i], top) / top;
      if (i === 0) { g.moveTo(x, y); } else { g.lineTo(x, y); }
    }
    g.stroke();
    c.setAttribute("aria-label", "Training loss over " + n + " steps: from " + P.losses[0].toFixed(2) +
      " to " + P.losses[n - 1].toFixed(2) + ".");
  };

  Panel.prototype.drawHeads = function (msg) {
    var P = this, L = msg.L, h = msg.h, cell = Math.max(5, Math.floor(96 / L));
    var finite = msg.attn.every(function (A) { return A.every(Number.isFinite); });
    if (!finite) { // never draw NaN: say so, and show no picture
      P.heads.hidden = true;
      P.sentenceNote.textContent = "The model's attention on this sentence is not a number at step " + msg.step +
        " (its weights diverged): nothing to draw.";
      return;
    }
    if (!P.grids || P.grids.h !== h || P.grids.L !== L) {
      P.heads.textContent = "";
      P.grids = { h: h, L: L, canvases: [], titles: [] };
      for (var l = 0; l < msg.attn.length; l++) {
        var row = el("div", { class: "mha-train-layer" }, [el("span", { class: "mha-train-layer-name", text: "Layer " + (l + 1) })]);
        for (var i = 0; i < h; i++) {
          var cv = el("canvas", { width: String(L * cell), height: String(L * cell), role: "img" });
          var title = el("span", { class: "mha-train-head-title" });
          row.appendChild(el("figure", { class: "mha-train-head" }, [cv, title]));
          P.grids.canvases.push(cv); P.grids.titles.push(title);
        }
        P.heads.appendChild(row);
      }
    }
    P.heads.hidden = false;
    for (var layer = 0; layer < msg.attn.length; layer++) {
      var A = msg.attn[layer];
      for (var head = 0; head < h; head++) {
        var canvas = P.grids.canvases[layer * h + head], g = canvas.getContext("2d");
        var img = g.createImageData(L * cell, L * cell);
        for (var q = 0; q < L; q++) {
          for (var k = 0; k < L; k++) {
            var w = A[head * L * L + q * L + k], rgb = CMAP[Math.max(0, Math.min(255, Math.round(255 * w)))];
            for (var dy = 0; dy < cell; dy++) {
              for (var dx = 0; dx < cell; dx++) {
                var o = 4 * ((q * cell + dy) * L * cell + k * cell + dx);
                img.data[o] = rgb[0]; img.data[o + 1] = rgb[1]; img.data[o + 2] = rgb[2]; img.data[o + 3] = 255;
              }
            }
          }
        }
        g.putImageData(img, 0, 0);
      }
    }
    P.lastAttention = msg;
    P.titleHeads();
  };

  Panel.prototype.titleHeads = function () {
    var P = this;
    if (!P.grids) { return; }
    var toks = (P.probeTokens || []).join(" ");
    P.grids.titles.forEach(function (t, k) {
      var l = Math.floor(k / P.grids.h), i = k % P.grids.h;
      var role = P.roleNames && P.roleNames[l] ? P.roleNames[l][i] : null;
      t.textContent = "L" + (l + 1) + "H" + (i + 1) + (role && role !== "mixed" ? " · " + ROLE_NAMES[role] : "");
      P.grids.canvases[k].setAttribute("aria-label", "Layer " + (l + 1) + ", head " + (i + 1) +
        (role ? ", role " + ROLE_NAMES[role] : "") + ": attention of each token of \"" + toks + "\" (rows) to the tokens before it (columns).");
    });
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

  // The weights now (for the tests).
  Panel.prototype.weights = function () {
    var P = this;
    return new Promise(function (resolve) { P.onWeights = resolve; P.worker.postMessage({ type: "weights" }); });
  };

  // What the worker loaded (for the benchmark).
  Panel.prototype.resources = function () {
    var P = this;
    return new Promise(function (resolve) { P.onResources = resolve; P.worker.postMessage({ type: "resources" }); });
  };

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

  function boot() {
    var roots = document.querySelectorAll(".mha-trainer");
    if (!MAN || !CMAP || !E) {
      roots.forEach(function (r) { r.textContent = "The trainer's data did not load; rebuild the site with `make book`."; });
      return;
    }
    roots.forEach(mount);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", boot); } else { boot(); }
})();
