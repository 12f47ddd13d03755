// The trainer's read-outs: what the page reads from the model it trains,
// and how it is read. The baselines the curves are read against, the phase
// change's rule, each head's roles over the run, the ablation (some heads
// switched off: every head's pattern, role and per-part accuracy again)
// and the circuits (composition between the layers, previous-token band,
// prefix matching, copying). The numbers come from the exported graphs, run
// by the read-out worker (trainer-client.js: Reader); this file keeps them
// in order and asks trainer-draw.js to draw them. trainer.js calls
// installReadout(Panel, ctx) with what it shares: ctx.MAN, ctx.reader()
// (the page's Reader), ctx.el.
(function () {
  "use strict";
  var Parts = window.mhaTrainerParts = window.mhaTrainerParts || {};

  Parts.installReadout = function (Panel, ctx) {
    var MAN = ctx.MAN, reader = ctx.reader, D = Parts.draw;

    // The rules the curves are read against, on the held-out set: a uniform
    // guess (chance, 1 / V) and "always answer the previous word", per part
    // (overall, previous, lookup): mhacourse.tasks.baselines(*heldout()).
    // The manifest's train.baselines (mhacourse.web_train.heldout_baselines).
    function baselines() {
      var b = MAN.train.baselines, p = b["previous word"];
      return { chance: b.uniform.all, previousWord: [p.all, p.previous, p.lookup] };
    }
    // The phase change: the first read-out at which lookup accuracy is more
    // than PHASE_MARGIN above the previous-word rule's (which answers a lookup
    // right only when the answer happens to be the previous word). Runs that
    // have not formed induction heads stay within a few points of it (a
    // one-layer model reaches 0.33 after 1,600 steps); the jump goes far past.
    var PHASE_MARGIN = 0.10;

    // The Python line that reproduces a page run (tm.train's signature).
    // With the run's options (knobs: layers, warmup, identical) as
    // TinyConfig(n_layers=, warmup=) and train(identical_heads=).
    function pythonLine(c, steps, knobs) {
      var k = knobs || {}, cfg = "h=" + c.h + ", d_k=" + c.dk;
      if (k.layers && k.layers !== MAN.train.n_layers) { cfg += ", n_layers=" + k.layers; }
      if (k.warmup === false) { cfg += ", warmup=0"; }
      return "model, metrics = tm.train(tm.TinyConfig(" + cfg + "), steps=" + steps + ", seed=" + c.seed +
        (k.identical ? ", identical_heads=True" : "") + ")";
    }

    // Forget what the last run drew: its losses, read-outs, roles and line.
    Panel.prototype.clearRun = function () {
      var P = this;
      P.losses = []; P.evals = []; P.phaseStep = null; P.roleSteps = null; P.roleNames = null;
      P.timings.ninety = null; P.timings.ninetyStep = null; P.timings.trainPressed = null; // this run's
      P.readSteps = {};
      P.roles.textContent = ""; P.accuracy.textContent = ""; P.lossNote.textContent = "";
      P.phase.textContent = ""; P.python.textContent = ""; P.circuits.textContent = "";
      D.chart(P); D.curves(P); D.timeline(P);
    };

    // Score a copy of the weights on the held-out set (the read-out worker,
    // beside training): accuracy per part, each head's statistics and role.
    // Every copy the worker sends (every READ_EVERY steps, and where it
    // pauses or ends) is read once.
    Panel.prototype.readOut = function (snap) {
      var P = this, key = P.setupKey;
      if (!snap || P.readSteps[snap.step]) { return; }
      P.readSteps[snap.step] = true;
      var layerOn = Float32Array.from(P.knobFeeds().layerOn); // a one-layer run is read as one
      reader().read(snap.params, snap.h, snap.step, { layerOn: layerOn }).then(function (r) {
        if (key !== P.setupKey) { return; } // reset or resized meanwhile
        P.showEval(r);
      }).catch(function (err) {
        if (key !== P.setupKey) { return; }
        P.accuracy.textContent = "The held-out read-out failed: " + err.message +
          (err.stage === "load" ? ". Reload the page; if this comes back, rebuild the site with `make book`." : ".");
      });
    };

    // One read-out: kept in step order, drawn as curves; the heads' roles,
    // the step each first became previous-token or induction, and the phase
    // change once lookup leaves the plateau.
    Panel.prototype.showEval = function (e) {
      var P = this, a = e.accuracy;
      if (a.some(function (x) { return !Number.isFinite(x); })) { return; } // never drawn: not a number
      if (a[0] >= 0.9 && P.timings.ninety == null && P.timings.trainPressed != null) {
        P.timings.ninety = performance.now() - P.timings.trainPressed;
        P.timings.ninetyStep = e.step;
      }
      var at = 0;
      while (at < P.evals.length && P.evals[at].step < e.step) { at++; }
      P.evals.splice(at, 0, e);
      e.roleNames = rolesOf(e);
      var last = P.evals[P.evals.length - 1];
      P.roleNames = last.roleNames;
      P.roleSteps = roleSteps(P.evals);
      var base = P.base.previousWord[2], jump = null;
      P.evals.some(function (r) { if (r.accuracy[2] > base + PHASE_MARGIN) { jump = r.step; return true; } return false; });
      P.phaseStep = jump;
      D.readouts(P, last);
      D.curves(P);
      D.phase(P, PHASE_MARGIN);
      D.timeline(P);
      if (last.circuits) { // the quick read-out's roles, on the first probe_n held-out sequences
        var c = last.circuits;
        last.quickRoles = rolesOf({ role: c.probe_role, named: c.probe_named, layers: last.layers, h: last.h });
        last.probeN = MAN.train.probe_n;
        D.circuits(P, last);
      }
    };

    // Each head's role in a read-out: the name of its largest statistic if
    // the graph named it (head_roles), else "mixed". [layer][head].
    function rolesOf(e) {
      var names = MAN.train.statistics, roles = [];
      for (var l = 0; l < e.layers; l++) {
        var row = [];
        for (var i = 0; i < e.h; i++) { var k = l * e.h + i; row.push(e.named[k] ? names[e.role[k]] : "mixed"); }
        roles.push(row);
      }
      return roles;
    }

    // For each head (layer l, head i): the first read-out step at which it was
    // named previous-token, and induction ({previous: step|null, induction:
    // step|null}), from the read-outs in step order.
    function roleSteps(evals) {
      var out = [];
      evals.forEach(function (r) {
        r.roleNames.forEach(function (row, l) {
          out[l] = out[l] || [];
          row.forEach(function (name, i) {
            var h = out[l][i] = out[l][i] || { previous: null, induction: null };
            if (name in h && h[name] == null) { h[name] = r.step; }
          });
        });
      });
      return out;
    }

    // The ablation: the heads the reader switched off (P.off) on the model
    // now; its pictures (probe) and its read-out (accuracy, roles), again.
    Panel.prototype.ablate = function () {
      var P = this, snap = P.snapshot, key = P.setupKey;
      if (!snap) { return; }
      var mask = P.mask(snap.h);
      if (!mask) { P.ablated = null; P.ablation.textContent = ""; P.probe(); D.titles(P); return; }
      if (P.allOff(snap.h)) {
        P.ablated = null;
        P.heads.classList.add("mha-train-all-off"); // no pictures; the switches stay, to switch back on
        P.ablation.textContent = P.ablationMessages.allOff;
        return;
      }
      P.probe();
      if (P.ablating) { P.ablateAgain = true; return; } // one at a time; the newest next
      P.ablating = true;
      P.ablateAgain = false;
      var layerOn = Float32Array.from(P.knobFeeds().layerOn);
      reader().read(snap.params, snap.h, snap.step, { mask: mask, layerOn: layerOn }).then(function (r) {
        if (key !== P.setupKey || !P.mask(snap.h)) { return; }
        r.roleNames = rolesOf(r);
        P.ablated = r;
        D.ablation(P, offNames(P, snap.h));
        D.titles(P);
      }).catch(function (err) {
        P.ablation.textContent = "The ablated read-out failed: " + err.message + ".";
      }).then(function () {
        P.ablating = false;
        if (P.ablateAgain) { P.ablate(); }
      });
    };

    function offNames(P, h) {
      return Object.keys(P.off).filter(function (k) { return P.off[k]; }).map(function (k) {
        return "L" + (Math.floor(k / h) + 1) + "H" + (k % h + 1);
      });
    }

    // One read-out of the model now, with whatever the build reads (the
    // benchmark times it): {ms in the worker, accuracy, roles, circuits}.
    Panel.prototype.readNow = function (opts) {
      var snap = this.snapshot;
      opts = opts || {};
      opts.layerOn = opts.layerOn || Float32Array.from(this.knobFeeds().layerOn);
      return reader().read(snap.params, snap.h, snap.step, opts);
    };

    Panel.prototype.baselines = baselines;
    Panel.prototype.pythonLine = function (steps) { return pythonLine(this.config, steps, this.knobs); };
    ctx.api.phaseMargin = PHASE_MARGIN;
  };
})();
