// The trainer's drawing: the loss curve, every head's attention on the
// sentence, and the read-outs (held-out accuracy, each head's role). It
// reads a panel (trainer.js) and draws into its elements; it sends nothing
// to the worker and keeps no state of its own beyond the head canvases.
// Every function takes Q, the panel it draws into.
(function () {
  "use strict";
  var P = window.mhaTrainerParts = window.mhaTrainerParts || {};
  var ROLE_NAMES = { previous: "previous token", induction: "induction", duplicate: "duplicate token",
    self: "self", first: "first token", mixed: "mixed" };
  P.ROLE_NAMES = ROLE_NAMES;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { e.textContent = attrs[k]; } else if (k === "class") { e.className = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
    });
    (children || []).forEach(function (c) { if (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); } });
    return e;
  }
  P.el = el;

  // The loss over the steps so far (x: steps of the whole run).
  function chart(Q) {
    var c = Q.chart, g = c.getContext("2d"), W = c.width, H = c.height, pad = 30;
    g.clearRect(0, 0, W, H);
    g.fillStyle = getComputedStyle(c).color || "#222";
    g.font = "11px sans-serif";
    g.fillText("loss", 2, 12);
    var n = Q.losses.length, steps = (Q.config && Q.config.steps) || 1;
    c.hidden = !n; // no empty axes before the first step
    if (!n) { c.setAttribute("aria-label", "Training loss: no steps yet"); return; }
    var top = Math.max.apply(null, Q.losses.slice(0, Math.min(n, 50)).concat([1]));
    g.strokeStyle = "#888";
    g.beginPath(); g.moveTo(pad, 4); g.lineTo(pad, H - 16); g.lineTo(W - 4, H - 16); g.stroke();
    g.fillText(top.toFixed(1), 2, 24); g.fillText("0", 18, H - 16); g.fillText("step " + steps, W - 60, H - 3);
    g.strokeStyle = "#1f77b4"; g.lineWidth = 1.5;
    g.beginPath();
    for (var i = 0; i < n; i++) {
      var x = pad + (W - pad - 4) * (i + 1) / steps, y = (H - 16) - (H - 20) * Math.min(Q.losses[i], top) / top;
      if (i === 0) { g.moveTo(x, y); } else { g.lineTo(x, y); }
    }
    g.stroke();
    var lnV = Math.log(Q.vocab); // the loss of a uniform guess over the V words
    if (lnV <= top) {
      var yV = (H - 16) - (H - 20) * lnV / top;
      g.save(); g.setLineDash([4, 3]); g.strokeStyle = "#888"; g.lineWidth = 1;
      g.beginPath(); g.moveTo(pad, yV); g.lineTo(W - 4, yV); g.stroke(); g.restore();
      g.fillText("ln " + Q.vocab + " = " + lnV.toFixed(2), W - 100, yV - 3);
    }
    c.setAttribute("aria-label", "Training loss over " + n + " steps: from " + Q.losses[0].toFixed(2) +
      " to " + Q.losses[n - 1].toFixed(2) + "; dashed: ln " + Q.vocab + ", the loss of a uniform guess.");
  }

  // The first loss, read against ln V.
  function lossNote(Q) {
    var first = Q.losses[0], lnV = Math.log(Q.vocab);
    Q.lossNote.textContent = "First loss " + first.toFixed(2) + "; ln " + Q.vocab + " = " + lnV.toFixed(2) +
      " is the loss of a uniform guess over the " + Q.vocab + " words (probability 1/" + Q.vocab +
      " on every answer). An untrained model guesses almost uniformly, so it starts near ln " + Q.vocab +
      (first > lnV ? "; a little above, because its random logits are not quite flat, and a confident wrong guess costs more than a uniform one."
        : "; a little below, because its random logits happen to favour some right answers.");
  }

  // Okabe-Ito colours, read by colour-blind readers; each curve also has a
  // dash pattern of its own for the baseline, and a word in the key.
  var PARTS = [{ name: "overall", colour: "#0072b2" }, { name: "previous word", colour: "#e69f00" },
    { name: "lookup", colour: "#009e73" }];
  var PHASE_COLOUR = "#cc79a7";

  // Held-out accuracy per part over the steps (one point a read-out), with
  // the previous-word rule (dashed, same colour) and chance (dotted), and
  // the phase change marked.
  function curves(Q) {
    var c = Q.curves, g = c.getContext("2d"), W = c.width, H = c.height, left = 30, bottom = H - 16, top = 6;
    var E = Q.evals || [], steps = Q.stepsTotal || (Q.config && Q.config.steps) || 1;
    c.hidden = !E.length;
    Q.curveKey.hidden = !E.length;
    g.clearRect(0, 0, W, H);
    if (!E.length) { c.setAttribute("aria-label", "Held-out accuracy: no read-out yet"); return; }
    var ink = getComputedStyle(c).color || "#222";
    var xOf = function (s) { return left + (W - left - 6) * s / steps; };
    var yOf = function (a) { return bottom - (bottom - top) * a; };
    g.font = "11px sans-serif"; g.fillStyle = ink; g.strokeStyle = "#888"; g.lineWidth = 1;
    g.beginPath(); g.moveTo(left, top); g.lineTo(left, bottom); g.lineTo(W - 4, bottom); g.stroke();
    [0, 0.5, 1].forEach(function (a) { g.fillText(String(100 * a) + "%", 0, yOf(a) + 4); });
    g.fillText("step " + steps, W - 60, H - 3);
    g.save(); g.setLineDash([1, 3]); g.strokeStyle = ink; // chance
    g.beginPath(); g.moveTo(left, yOf(Q.base.chance)); g.lineTo(W - 4, yOf(Q.base.chance)); g.stroke(); g.restore();
    PARTS.forEach(function (part, k) { // the previous-word rule
      g.save(); g.setLineDash([6, 4]); g.strokeStyle = part.colour; g.globalAlpha = 0.8;
      var y = yOf(Q.base.previousWord[k]) + (k === 1 ? 1 : 0);
      g.beginPath(); g.moveTo(left, y); g.lineTo(W - 4, y); g.stroke(); g.restore();
    });
    if (Q.phaseStep != null) {
      var xp = xOf(Q.phaseStep);
      g.save(); g.strokeStyle = PHASE_COLOUR; g.lineWidth = 2;
      g.beginPath(); g.moveTo(xp, top); g.lineTo(xp, bottom); g.stroke(); g.restore();
      g.fillStyle = ink;
      var label = "phase change, step " + Q.phaseStep;
      g.fillText(label, Math.min(xp + 3, W - 6 - g.measureText(label).width), top + 10);
    }
    PARTS.forEach(function (part, k) {
      g.strokeStyle = part.colour; g.lineWidth = 2;
      g.beginPath();
      E.forEach(function (r, i) {
        var x = xOf(r.step), y = yOf(r.accuracy[k]);
        if (i === 0) { g.moveTo(x, y); } else { g.lineTo(x, y); }
      });
      g.stroke();
    });
    var last = E[E.length - 1];
    c.setAttribute("aria-label", "Held-out accuracy over " + E.length + " read-outs to step " + last.step +
      ": overall " + pct(last.accuracy[0]) + ", previous word " + pct(last.accuracy[1]) + ", lookup " + pct(last.accuracy[2]) +
      "; dashed lines: the previous-word rule (" + Q.base.previousWord.map(pct).join(", ") + "); dotted: chance (" +
      pct(Q.base.chance) + ")" + (Q.phaseStep != null ? "; phase change at step " + Q.phaseStep : "") + ".");
    if (!Q.curveKey.childNodes.length) { key(Q); }
  }

  function pct(a) { return (100 * a).toFixed(1) + "%"; }

  // The key under the curves: each colour's part, and the two baselines.
  function key(Q) {
    var b = Q.base.previousWord;
    PARTS.forEach(function (part, k) {
      Q.curveKey.appendChild(el("span", { class: "mha-train-swatch", style: "background:" + part.colour, "aria-hidden": "true" }));
      Q.curveKey.appendChild(document.createTextNode(part.name + " (rule " + pct(b[k]) + ") "));
    });
    Q.curveKey.appendChild(document.createTextNode("— solid: your model; dashed: the rule \"always answer the previous word\"; dotted: chance, 1/" +
      Q.vocab + " = " + pct(Q.base.chance) + ". Scored every 20 steps on the held-out set."));
  }

  // The phase change: the rule, and the step it was met at.
  function phase(Q, margin) {
    var rule = Q.base.previousWord[2];
    var words = "Phase change: the first read-out where lookup accuracy is more than " + (100 * margin).toFixed(0) +
      " points above the previous-word rule's " + pct(rule) + " (the lookup plateau)";
    if (Q.phaseStep != null) {
      var r = Q.evals.find(function (e) { return e.step === Q.phaseStep; });
      Q.phase.textContent = words + ": step " + Q.phaseStep + ", lookup " + pct(r.accuracy[2]) +
        ". The induction heads have formed; lookup now climbs fast, and the previous-word part may dip meanwhile.";
    } else {
      Q.phase.textContent = Q.evals.length ? words + ": not yet." : "";
    }
  }

  // When each head first took its role: previous-token, induction.
  function timeline(Q) {
    var box = Q.timeline;
    box.textContent = "";
    if (!Q.roleSteps || !Q.roleSteps.length) { return; }
    var table = el("table", { class: "mha-train-roletable" }, [
      el("caption", { text: "Roles over the run (head_roles on the held-out set, every 20 steps)" }),
      el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "Head" }), el("th", { scope: "col", text: "Role now" }),
        el("th", { scope: "col", text: "Previous token from step" }), el("th", { scope: "col", text: "Induction from step" })])])]);
    var body = el("tbody");
    Q.roleSteps.forEach(function (row, l) {
      row.forEach(function (r, i) {
        var now = Q.roleNames && Q.roleNames[l] ? ROLE_NAMES[Q.roleNames[l][i]] : "";
        body.appendChild(el("tr", {}, [el("th", { scope: "row", text: "L" + (l + 1) + "H" + (i + 1) }),
          el("td", { text: now }), el("td", { text: r.previous == null ? "—" : String(r.previous) }),
          el("td", { text: r.induction == null ? "—" : String(r.induction) })]));
      });
    });
    table.appendChild(body);
    box.appendChild(table);
  }

  // The held-out accuracy and each head's role, from one evaluation.
  function readouts(Q, e) {
    var a = e.accuracy;
    Q.accuracy.textContent = "Held-out accuracy after " + e.step + " steps: " + (100 * a[0]).toFixed(1) +
      "% (previous word " + (100 * a[1]).toFixed(1) + "%, lookup " + (100 * a[2]).toFixed(1) + "%).";
    var parts = [];
    Q.roleNames.forEach(function (row, l) {
      row.forEach(function (name, i) { parts.push("L" + (l + 1) + "H" + (i + 1) + " " + ROLE_NAMES[name]); });
    });
    Q.roles.textContent = "Roles (head_roles, held-out set): " + parts.join(", ") + ".";
    titles(Q);
  }

  // The canvases of the heads' pictures: made when the number of heads or
  // tokens changes, or when they are no longer in the box (Reset empties it).
  function grids(Q, h, L, layers, cell) {
    var G = Q.grids;
    if (G && G.h === h && G.L === L && G.canvases.every(function (c) { return Q.heads.contains(c); })) {
      return G;
    }
    Q.heads.textContent = "";
    G = Q.grids = { h: h, L: L, canvases: [], titles: [], switches: [] };
    for (var l = 0; l < layers; l++) {
      var row = el("div", { class: "mha-train-layer" }, [el("span", { class: "mha-train-layer-name", text: "Layer " + (l + 1) })]);
      for (var i = 0; i < h; i++) {
        var cv = el("canvas", { width: String(L * cell), height: String(L * cell), role: "img" });
        var title = el("span", { class: "mha-train-head-title" });
        var use = Q.headSwitch ? Q.headSwitch(l, i, h) : null; // the ablation's switch
        row.appendChild(el("figure", { class: "mha-train-head" }, [cv, title, use]));
        G.canvases.push(cv); G.titles.push(title); G.switches.push(use ? use.querySelector("input") : null);
      }
      Q.heads.appendChild(row);
    }
    return G;
  }

  // Every head's attention, (h, L, L) row-major per layer, as a heatmap.
  function heads(Q, msg) {
    var CMAP = window.mhaExplorerColormap;
    var L = msg.L, h = msg.h, cell = Math.max(5, Math.floor(96 / L));
    var finite = msg.attn.every(function (A) { return A.every(Number.isFinite); });
    if (!finite) { // never draw NaN: say so, and show no picture
      Q.heads.hidden = true;
      Q.sentenceNote.textContent = "The model's attention on this sentence is not a number at step " + msg.step +
        " (its weights diverged): nothing to draw.";
      return;
    }
    var G = grids(Q, h, L, msg.attn.length, cell);
    Q.heads.hidden = false;
    for (var layer = 0; layer < msg.attn.length; layer++) {
      var A = msg.attn[layer];
      for (var head = 0; head < h; head++) {
        var canvas = G.canvases[layer * h + head], g = canvas.getContext("2d");
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
    Q.lastAttention = msg;
    titles(Q);
  }

  // Each head's title and text alternative: its place and its role.
  function titles(Q) {
    var G = Q.grids;
    if (!G) { return; }
    var toks = (Q.probeTokens || []).join(" ");
    G.titles.forEach(function (t, k) {
      var l = Math.floor(k / G.h), i = k % G.h;
      var names = Q.ablated ? Q.ablated.roleNames : Q.roleNames; // with the heads off, their roles
      var role = names && names[l] ? names[l][i] : null;
      t.textContent = "L" + (l + 1) + "H" + (i + 1) + (role && role !== "mixed" ? " · " + ROLE_NAMES[role] : "");
      G.canvases[k].setAttribute("aria-label", "Layer " + (l + 1) + ", head " + (i + 1) +
        (role ? ", role " + ROLE_NAMES[role] : "") + ": attention of each token of \"" + toks + "\" (rows) to the tokens before it (columns).");
    });
  }

  // The ablated model's read-out, against the model with every head on.
  function ablation(Q, off) {
    var r = Q.ablated, a = r.accuracy, full = Q.evals.find(function (e) { return e.step === r.step; });
    var parts = [];
    r.roleNames.forEach(function (row, l) {
      row.forEach(function (name, i) { if (name !== "mixed") { parts.push("L" + (l + 1) + "H" + (i + 1) + " " + ROLE_NAMES[name]); } });
    });
    Q.ablation.textContent = "Switched off: " + off.join(", ") + ". At step " + r.step + ", held-out accuracy " + pct(a[0]) +
      " (previous word " + pct(a[1]) + ", lookup " + pct(a[2]) + ")" +
      (full ? ", against " + pct(full.accuracy[0]) + " (" + pct(full.accuracy[1]) + ", " + pct(full.accuracy[2]) + ") with every head on" : "") +
      ". Roles with them off: " + (parts.length ? parts.join(", ") : "none named") + ". The pictures below are the ablated model's.";
  }

  // The circuits of the model now (read-out r.circuits): the Q-, K- and
  // V-composition of every layer-1 head with every layer-2 head as heatmaps
  // (rows: layer-1 head i, columns: layer-2 head j; colour from 0 to the
  // largest score or twice the random baseline, whichever is larger), the
  // random baseline of each, and per head the previous-token band (layer
  // 1), prefix matching and copying (layer 2). A table says the same.
  function circuits(Q, r) {
    var box = Q.circuits, c = r.circuits, h = r.h, CMAP = window.mhaExplorerColormap;
    box.textContent = "";
    if (!c) { return; }
    var finite = ["comp_q", "comp_k", "comp_v", "comp_baseline", "prev_band", "copying", "prefix"].every(function (k) {
      return c[k].every(Number.isFinite);
    });
    if (!finite) {
      box.appendChild(el("p", { text: "The circuits at step " + r.step + " are not numbers (the weights diverged): nothing to draw." }));
      return;
    }
    box.appendChild(el("p", { class: "mha-train-circuits-title",
      text: "Circuits at step " + r.step + ": how the layer-2 heads read what the layer-1 heads write" }));
    var maps = el("div", { class: "mha-train-comps" });
    [["comp_k", "K-composition", 1], ["comp_q", "Q-composition", 0], ["comp_v", "V-composition", 2]].forEach(function (m) {
      var M = c[m[0]], base = c.comp_baseline[m[2]], top = Math.max(2 * base, Math.max.apply(null, M)) || 1;
      var cell = Math.max(6, Math.floor(96 / h)), cv = el("canvas", { width: String(h * cell), height: String(h * cell), role: "img" });
      var g = cv.getContext("2d"), best = 0;
      for (var i = 0; i < h; i++) {
        for (var j = 0; j < h; j++) {
          var v = M[i * h + j], col = CMAP[Math.max(0, Math.min(255, Math.round(255 * v / top)))];
          g.fillStyle = "rgb(" + col.join(",") + ")";
          g.fillRect(j * cell, i * cell, cell, cell);
          if (v > M[best]) { best = i * h + j; }
        }
      }
      var ratio = M[best] / base;
      cv.setAttribute("aria-label", m[1] + " of layer-1 head i (rows) into layer-2 head j (columns), " + h + " × " + h +
        ": largest L1H" + (Math.floor(best / h) + 1) + " → L2H" + (best % h + 1) + " = " + M[best].toFixed(3) +
        ", " + ratio.toFixed(1) + " × the random baseline " + base.toFixed(3) + ".");
      var axes = el("div", { class: "mha-train-comp-axes" }, [
        el("span", { class: "mha-train-comp-y", text: "rows: L1 heads" }), cv]);
      maps.appendChild(el("figure", { class: "mha-train-comp" }, [
        el("span", { class: "mha-train-comp-x", text: "cols: L2 heads" }), axes, el("figcaption", {
        text: m[1] + " (baseline " + base.toFixed(3) + "; top L1H" + (Math.floor(best / h) + 1) + "→L2H" + (best % h + 1) +
          " " + M[best].toFixed(2) + ")" })]));
    });
    box.appendChild(maps);
    var table = el("table", { class: "mha-train-roletable" }, [
      el("caption", { text: "Per head: previous-token band (positional QK at offset −1), prefix matching, copying, " +
        "and the role on the first " + r.probeN + " held-out sequences (the quick read-out; " +
        "the timeline's roles use all of them)" }),
      el("thead", {}, [el("tr", {}, ["Head", "prev band", "prefix", "copying", "role"].map(function (t) {
        return el("th", { scope: "col", text: t }); }))])]);
    var body = el("tbody");
    for (var l = 0; l < r.layers; l++) {
      for (var i = 0; i < h; i++) {
        var k = l * h + i;
        body.appendChild(el("tr", {}, [el("th", { scope: "row", text: "L" + (l + 1) + "H" + (i + 1) }),
          el("td", { text: c.prev_band[k].toFixed(2) }), el("td", { text: c.prefix[k].toFixed(2) }),
          el("td", { text: c.copying[k].toFixed(2) }),
          el("td", { text: ROLE_NAMES[r.quickRoles[l][i]] })]));
      }
    }
    table.appendChild(body);
    box.appendChild(el("details", {}, [el("summary", { text: "Per-head scores" }), table]));
  }

  P.draw = { chart: chart, ablation: ablation, circuits: circuits, lossNote: lossNote, curves: curves, phase: phase, timeline: timeline,
    readouts: readouts, heads: heads, titles: titles };
})();
