// The trainer's knobs and switches: the run's options (1 or 2 layers,
// warm-up on or off, an identical start) and the ablation (any heads of the
// model switched off). The options are inputs of the same exported graphs
// (layer_on, warmup, identical), the ablation the forward and evaluate
// graphs' head_mask: nothing here computes, it only says what to feed.
// trainer.js calls installKnobs(Panel, ctx) (ctx.MAN, ctx.el).
(function () {
  "use strict";
  var Parts = window.mhaTrainerParts = window.mhaTrainerParts || {};

  var MIDRUN = "The layers, the warm-up and the start apply when a run begins: this run goes on as it started. " +
    "Reset, then Train, to use them.";
  var ALL_OFF = "Every head is switched off: the model then reads no word but the current one, so there is no " +
    "attention to show and nothing to read out. Switch at least one head back on.";

  Parts.installKnobs = function (Panel, ctx) {
    var MAN = ctx.MAN, el = ctx.el;
    var N = MAN.train.n_layers;

    // The options' controls, for the panel's controls row.
    Panel.prototype.buildKnobs = function (tag) {
      var P = this;
      var layers = el("select", { id: tag + "-layers" });
      for (var n = N; n >= 1; n--) {
        var o = el("option", { value: String(n), text: n + (n === 1 ? " layer (the control)" : " layers") });
        layers.appendChild(o);
      }
      var warm = el("input", { type: "checkbox", id: tag + "-warmup" });
      warm.checked = true;
      var same = el("input", { type: "checkbox", id: tag + "-identical" });
      P.knobInputs = { layers: layers, warmup: warm, identical: same };
      P.knobs = P.knobValues();
      [layers, warm, same].forEach(function (input) {
        input.addEventListener("change", function () { P.knobChanged(input); });
      });
      var label = function (input, text, title) {
        return el("label", { for: input.id, title: title }, [text, " ", input]);
      };
      return el("div", { class: "mha-train-knobs" }, [
        label(layers, "layers", "One layer cannot form an induction head: it has no previous-token head below it."),
        label(warm, "warm-up", "The learning rate rises linearly over the first " + MAN.train.warmup + " steps (TinyConfig.warmup)."),
        label(same, "identical start", "Every head starts as a copy of head 0 (W_Q, W_K, W_V columns and W_O rows)."),
      ]);
    };

    Panel.prototype.knobValues = function () {
      var k = this.knobInputs;
      return { layers: Number(k.layers.value), warmup: k.warmup.checked, identical: k.identical.checked };
    };

    // What the worker feeds the graphs: layer_on (n_layers), warmup (steps).
    Panel.prototype.knobFeeds = function () {
      var k = this.knobs, on = [];
      for (var l = 0; l < N; l++) { on.push(l < k.layers ? 1 : 0); }
      return { layerOn: on, warmup: k.warmup ? MAN.train.warmup : 0, identical: k.identical };
    };

    // A knob changed: a new model (the next run) if none is training, else
    // one line, and the knob goes back to what this run uses.
    Panel.prototype.knobChanged = function (input) {
      var P = this;
      if (P.locked()) {
        var k = P.knobs;
        P.knobInputs.layers.value = String(k.layers);
        P.knobInputs.warmup.checked = k.warmup;
        P.knobInputs.identical.checked = k.identical;
        P.message.textContent = MIDRUN;
        return;
      }
      P.knobs = P.knobValues();
      P.sizeChanged();
    };

    // The inputs the worker's graphs take (its "ready" message): a knob the
    // build cannot feed is switched off and says why.
    Panel.prototype.knobsAvailable = function (takes) {
      var P = this, k = P.knobInputs, why = "This build's graphs have no such input: rebuild the site with `make book`.";
      var can = { layers: takes.layer_on, warmup: takes.warmup, identical: takes.identical };
      Object.keys(can).forEach(function (name) {
        k[name].dataset.unavailable = can[name] ? "" : "1";
        if (!can[name]) { k[name].title = why; }
      });
      P.lockKnobs();
    };

    Panel.prototype.lockKnobs = function () {
      var P = this, k = P.knobInputs;
      if (!k) { return; }
      Object.keys(k).forEach(function (name) { k[name].disabled = P.locked() || k[name].dataset.unavailable === "1"; });
    };

    // ------------------------------------------------------------ ablation
    // The switch under head i of layer l: ticked = on.
    Panel.prototype.headSwitch = function (l, i, h) {
      var P = this, k = l * h + i;
      var id = P.tag + "-use-" + k;
      var box = el("input", { type: "checkbox", id: id, class: "mha-train-use" });
      box.checked = !P.off[k];
      box.disabled = !P.canAblate;
      box.addEventListener("change", function () { P.off[k] = !box.checked; P.ablate(); });
      return el("span", { class: "mha-train-toggle", title: "Untick to switch this head off" },
        [box, el("label", { for: id, text: "on" })]);
    };

    // The heads switched off, as the graphs' head_mask (n_layers * h, 1
    // keep, 0 off), or null when every head is on.
    Panel.prototype.mask = function (h) {
      var P = this, any = false, m = new Float32Array(N * h).fill(1);
      Object.keys(P.off).forEach(function (k) { if (P.off[k] && Number(k) < N * h) { m[Number(k)] = 0; any = true; } });
      return any ? m : null;
    };

    Panel.prototype.allOff = function (h) {
      var m = this.mask(h);
      if (!m) { return false; }
      for (var l = 0; l < this.knobs.layers; l++) {
        for (var i = 0; i < h; i++) { if (m[l * h + i]) { return false; } }
      }
      return true;
    };

    Panel.prototype.ablationMessages = { allOff: ALL_OFF, midRun: MIDRUN };
  };
})();
