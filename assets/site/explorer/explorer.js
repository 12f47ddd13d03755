// The attention explorer of the static site: controls, heatmaps, keyboard.
//
// First paint: the example sentences' views that the package computed at
// build time (precomputed.js). Then the live engine (engine.js) starts, and
// every change recomputes the course's own exported model in the browser.
// If the engine cannot start, one line says why and the examples still work.
(function () {
  "use strict";

  var root = document.getElementById("mha-explorer");
  if (!root) { return; }
  var PRE = window.mhaExplorerPrecomputed;
  var MAN = window.mhaExplorerManifest;
  var CMAP = window.mhaExplorerColormap; // 256 x [r, g, b], viridis
  var E = window.mhaEngine;
  if (!PRE || !MAN || !CMAP || !E) {
    root.textContent = "The explorer's data did not load; rebuild the site with `make book`.";
    return;
  }
  var EXAMPLES = PRE.sentences;
  var api = window.mhaExplorer = { timings: [], state: null, engine: "loading" };

  // ------------------------------------------------------------ state
  var S = api.state = {
    source: "trained", mode: "budget", h: 4, dk: 16, layer: 2,
    text: EXAMPLES[0], off: {}, head: 0, cursor: { q: 0, k: 0 },
  };
  var view = null; // what is drawn now
  var minilmState = "absent";

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { e.textContent = attrs[k]; } else if (k === "class") { e.className = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
    });
    (children || []).forEach(function (c) { if (c) { e.appendChild(c); } });
    return e;
  }

  function tinyCell() {
    if (S.mode === "budget") { return { h: S.h, dk: MAN.budget.d_model / S.h }; }
    return { h: S.h, dk: S.dk };
  }
  // A model trained in this page ("Train it yourself", trainer.js), shown as
  // one more source: the newest run that has taken at least one step.
  function yours() {
    var trainer = window.mhaTrainer;
    var ps = trainer ? trainer.panels.filter(function (p) { return p.step > 0 && p.worker; }) : [];
    return ps.length ? ps[ps.length - 1] : null;
  }
  function tinyEntry() {
    if (S.source === "yours") { var y = yours(); return y ? y.entry() : null; }
    var c = tinyCell(), trained = S.source === "trained";
    return MAN.tiny.find(function (m) { return m.h === c.h && m.d_k === c.dk && m.trained === trained; });
  }
  function nLayers() {
    if (S.source === "minilm") { return MAN.minilm.layers; }
    var e = tinyEntry();
    return e ? e.layers : 2;
  }

  // ------------------------------------------------------------ controls
  var radios = {};
  function radioGroup(key, legend, options, onChange) {
    var fs = el("fieldset", { class: "mha-radios", id: "mha-" + key });
    fs.appendChild(el("legend", { text: legend }));
    var box = el("div", { class: "mha-options" });
    fs.appendChild(box);
    radios[key] = { box: box, fs: fs, onChange: onChange };
    setOptions(key, options);
    return fs;
  }
  function setOptions(key, options) {
    var r = radios[key];
    r.box.textContent = "";
    options.forEach(function (o) {
      var id = "mha-" + key + "-" + String(o.value).replace(/\W/g, "");
      var input = el("input", { type: "radio", name: "mha-" + key, id: id, value: String(o.value) });
      input.checked = !!o.checked;
      input.addEventListener("change", function () { if (input.checked) { r.onChange(o.value); } });
      r.box.appendChild(el("span", { class: "mha-option" }, [input, el("label", { for: id, text: o.label })]));
    });
  }

  var text = el("textarea", { id: "mha-text", rows: "1", spellcheck: "false",
    "aria-describedby": "mha-message" });
  text.value = S.text;
  var exampleList = el("div", { class: "mha-example-list" });
  var examples = el("div", { class: "mha-examples" }, [el("span", { text: "Examples" }), exampleList]);
  EXAMPLES.forEach(function (s, i) {
    var short = s.split(" ").slice(0, 3).join(" ") + "…";
    var b = el("button", { type: "button", class: "mha-example", text: short,
      "aria-label": "Example " + (i + 1) + ": " + s, title: s });
    b.addEventListener("click", function () { text.value = s; S.text = s; update("example"); });
    exampleList.appendChild(b);
  });

  var sourceGroup = radioGroup("source", "Model", [
    { value: "trained", label: "Tiny, trained", checked: true },
    { value: "untrained", label: "Tiny, untrained" },
    { value: "minilm", label: "MiniLM (real)" },
    { value: "yours", label: "Yours (trained in this page)" },
  ], function (v) { S.source = v; S.off = {}; S.layer = Math.min(S.layer, nLayers()); syncControls(); update("source"); });

  var modeGroup = radioGroup("mode", "h and d_k", [
    { value: "budget", label: "Same budget: d_model = " + MAN.budget.d_model, checked: true },
    { value: "wide", label: "Wider heads: d_k grows" },
  ], function (v) {
    S.mode = v;
    if (v === "wide" && MAN.wide.h.indexOf(S.h) < 0) { S.h = MAN.wide.h[MAN.wide.h.length - 1]; }
    syncControls(); update("mode");
  });
  var hGroup = radioGroup("h", "Heads h", [], function (v) { S.h = v; S.head = 0; syncControls(); update("h"); });
  var dkGroup = radioGroup("dk", "Head width d_k", [], function (v) { S.dk = v; syncControls(); update("dk"); });
  var layerGroup = radioGroup("layer", "Layer", [], function (v) { S.layer = v; update("layer"); });

  var loadButton = el("button", { type: "button", class: "mha-load",
    text: "Load MiniLM to type your own sentences (" + (MAN.minilm.bytes / 1e6).toFixed(1) + " MB download)" });
  loadButton.addEventListener("click", loadMiniLM);
  var resetButton = el("button", { type: "button", class: "mha-reset", text: "Switch every head back on" });
  resetButton.addEventListener("click", function () { S.off = {}; update("reset"); });

  var status = el("p", { class: "mha-status", id: "mha-status", role: "status" });
  var message = el("p", { class: "mha-message", id: "mha-message", role: "alert" });
  var header = el("p", { class: "mha-header" });
  var notes = el("p", { class: "mha-notes" });
  var strip = el("div", { class: "mha-strip", role: "img" });
  var legend = buildLegend();
  var grid = el("div", { class: "mha-grid" });
  var readout = el("p", { class: "mha-readout", "aria-live": "polite" });
  var detailTitle = el("p", { class: "mha-detail-title" });
  var detail = el("canvas", { class: "mha-detail", tabindex: "0" });
  var textAlt = el("details", { class: "mha-text-alt" });
  var pictures = el("div", { class: "mha-pictures" },
    [header, notes, strip, legend, grid, readout, detailTitle, detail, textAlt]);

  root.textContent = "";
  root.appendChild(el("div", { class: "mha-controls" }, [
    el("label", { for: "mha-text", class: "mha-text-label", text: "Sentence" }),
    text, examples, sourceGroup, modeGroup, hGroup, dkGroup, layerGroup,
    el("div", { class: "mha-buttons" }, [loadButton, resetButton]),
  ]));
  root.appendChild(status);
  root.appendChild(message);
  root.appendChild(pictures);

  // Typing: the tiny models run in a few milliseconds, so every keystroke
  // recomputes (coalesced to one update per animation frame); MiniLM is
  // debounced, recomputing 150 ms after the last keystroke.
  var typing = null, frame = null;
  text.addEventListener("input", function () {
    var t0 = performance.now();
    clearTimeout(typing);
    if (frame) { cancelAnimationFrame(frame); }
    var go = function () { frame = null; S.text = text.value; update("text", t0); };
    if (S.source === "minilm" && minilmState === "ready") { typing = setTimeout(go, 150); } else { frame = requestAnimationFrame(go); }
  });

  function syncControls() {
    var minilm = S.source === "minilm", own = S.source === "yours";
    var yoursOption = document.getElementById("mha-source-yours");
    if (yoursOption) { yoursOption.parentNode.hidden = !yours() && !own; }
    modeGroup.hidden = minilm || own;
    hGroup.hidden = minilm || own;
    dkGroup.hidden = minilm || own || S.mode === "budget";
    loadButton.hidden = !minilm || minilmState === "ready";
    resetButton.hidden = !minilm || minilmState !== "ready";
    if (!minilm) {
      var hs = S.mode === "budget" ? MAN.budget.h : MAN.wide.h;
      setOptions("h", hs.map(function (h) {
        var lab = S.mode === "budget" ? h + " (d_k " + MAN.budget.d_model / h + ")" : String(h);
        return { value: h, label: lab, checked: h === S.h };
      }));
      setOptions("dk", MAN.wide.d_k.map(function (d) { return { value: d, label: String(d), checked: d === S.dk }; }));
    }
    var n = nLayers();
    S.layer = Math.min(Math.max(S.layer, 1), n);
    var ls = [];
    for (var l = 1; l <= n; l++) { ls.push({ value: l, label: String(l), checked: l === S.layer }); }
    setOptions("layer", ls);
  }

  // ------------------------------------------------------------ data
  function decode(b64, h, L) {
    var bin = atob(b64), n = bin.length / 2, out = new Float32Array(n);
    for (var i = 0; i < n; i++) { out[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535; }
    if (n !== h * L * L) { throw new Error("precomputed view has the wrong size"); }
    return out;
  }
  api.precomputed = function (name, i) { // (for the tests) every layer of one view
    var v = name === "minilm" ? PRE.minilm[i] : PRE.tiny[name][i];
    var h = name === "minilm" ? MAN.minilm.h : MAN.tiny.find(function (m) { return m.name === name; }).h;
    var L = v.tokens.length;
    return { tokens: v.tokens, attn: v.attn.map(function (a) { return Array.from(decode(a, h, L)); }) };
  };

  function exampleIndex(t) { return EXAMPLES.indexOf(t.trim()); }

  async function compute() {
    var t = S.text, live, e, ex = exampleIndex(t);
    if (!t.trim()) { throw new Notice("Type a sentence: the text is empty (or only spaces)."); }
    if (S.source === "yours") {
      var y = yours();
      if (!y) { throw new Notice("No model has been trained in this page yet: press Train under \"Train it yourself\" below."); }
      live = await y.runText(t);
      if (live.kept === 0) { throw new Notice("Type a sentence: no words were found in the text."); }
      return tinyView(y.entry(), live.tokens, live.attn[S.layer - 1], live, true);
    }
    if (S.source !== "minilm") {
      e = tinyEntry();
      if (api.engine === "ready") {
        live = await E.tiny(e.name, t);
        if (live.kept === 0) { throw new Notice("Type a sentence: no words were found in the text."); }
        if (live.unk === live.kept) {
          throw new Notice("None of these words is in the tiny models' vocabulary (" + live.kept +
            " tokens, all [UNK]); try an example sentence, or MiniLM, which reads any text.");
        }
        return tinyView(e, live.tokens, live.attn[S.layer - 1], live, true);
      }
      if (ex >= 0) {
        var p = PRE.tiny[e.name][ex];
        return tinyView(e, p.tokens, decode(p.attn[S.layer - 1], e.h, p.tokens.length), null, false);
      }
      throw new Notice(api.engine === "failed" ? "Without the live engine only the example sentences can be shown: pick one of them."
        : "The live engine is still loading; your sentence will be drawn in a moment.");
    }
    var m = MAN.minilm;
    if (minilmState === "ready") {
      var mask = headMask();
      live = await runMiniLM(t, mask);
      if (live.kept <= 2) { throw new Notice("The text gives no tokens besides [CLS] and [SEP]: type at least one word."); }
      var base = null;
      if (mask.some(function (x) { return x === 0; })) { base = await runMiniLM(t, null); }
      return minilmView(live.tokens, live.attn[S.layer - 1], live, base, true);
    }
    if (ex >= 0) {
      var q = PRE.minilm[ex];
      return minilmView(q.tokens, decode(q.attn[S.layer - 1], m.h, q.tokens.length), null, null, false);
    }
    throw new Notice(minilmState === "loading" ? "MiniLM is loading; your sentence will be drawn when it is ready."
      : "These are the examples' precomputed pictures. To run MiniLM on your own sentence, load it (button above).");
  }

  function Notice(msg) { this.message = msg; }

  // The last few MiniLM runs, so that changing the layer only redraws.
  var minilmRuns = [];
  function runMiniLM(t, mask) {
    var key = t + "\u0000" + (mask ? Array.from(mask).join("") : "all");
    var hit = minilmRuns.find(function (r) { return r.key === key; });
    if (hit) { return hit.result; }
    var result = E.minilm(t, mask);
    minilmRuns.unshift({ key: key, result: result });
    minilmRuns.length = Math.min(minilmRuns.length, 4);
    result.catch(function () { minilmRuns = minilmRuns.filter(function (r) { return r.key !== key; }); });
    return result;
  }

  function headMask() {
    var m = MAN.minilm, mask = new Float32Array(m.layers * m.h).fill(1);
    Object.keys(S.off).forEach(function (k) { if (S.off[k]) { mask[Number(k)] = 0; } });
    return mask;
  }

  function tinyView(e, tokens, data, live, isLive) {
    var ns = [];
    if (live && live.total > live.kept) { ns.push("The tiny models read at most " + e.max_len + " tokens: kept the first " + live.kept + " of " + live.total + "."); }
    if (live && live.unk) { ns.push(live.unk + " of " + live.kept + " tokens are not in the tiny models' word list and are shown as [UNK]."); }
    var acc = e.accuracy == null ? "" : "; held-out accuracy " + (100 * e.accuracy).toFixed(1) + "%";
    return { tokens: tokens, data: data, h: e.h, L: tokens.length, live: isLive,
      header: (e.yours ? "Your model, trained in this page for " + e.steps + " steps" : "Tiny model, " + (e.trained ? "trained" : "untrained")) + ": h = " + e.h + " heads × d_k = " + e.d_k +
        " = d_model " + e.d_model + "; " + e.params.toLocaleString("en-US") + " parameters" + acc +
        "; layer " + S.layer + " of " + e.layers + ".",
      notes: ns, dModel: e.d_model, dk: e.d_k, titles: headTitles(e.h) };
  }

  function minilmView(tokens, data, live, base, isLive) {
    var m = MAN.minilm, ns = [];
    if (live && live.total > live.kept) { ns.push("MiniLM reads at most " + m.max_len + " tokens: kept the first " + (live.kept - 1) + " and [SEP], " + live.kept + " of " + live.total + "."); }
    var offList = Object.keys(S.off).filter(function (k) { return S.off[k]; }).map(function (k) {
      return "L" + (Math.floor(k / m.h) + 1) + " H" + (k % m.h + 1); });
    var v = { tokens: tokens, data: data, h: m.h, L: tokens.length, live: isLive,
      header: "MiniLM (all-MiniLM-L6-v2, trained): layer " + S.layer + " of " + m.layers + ", h = " + m.h +
        " heads of d_k = " + m.d_k + " (d_model " + m.d_model + "); " + tokens.length + " tokens.",
      notes: ns, titles: headTitles(m.h), minilm: true, delta: null };
    if (base) {
      var a = live.embedding, b = base.embedding, dot = 0;
      for (var i = 0; i < a.length; i++) { dot += a[i] * b[i]; } // both have unit norm
      var bl = base.attn[S.layer - 1], delta = [], LL = v.L * v.L;
      for (var hh = 0; hh < m.h; hh++) {
        var mx = 0;
        for (var j = 0; j < LL; j++) { mx = Math.max(mx, Math.abs(data[hh * LL + j] - bl[hh * LL + j])); }
        delta.push(mx);
      }
      v.delta = delta;
      ns.push("Switched off: " + offList.join(", ") + ". Cosine between the sentence embedding and the one with every head on: " + dot.toFixed(4) + ".");
    }
    return v;
  }

  function headTitles(h) { var t = []; for (var i = 0; i < h; i++) { t.push("Head " + (i + 1)); } return t; }

  // ------------------------------------------------------------ update
  var seq = 0;
  function update(reason, t0) {
    var my = ++seq, start = t0 || performance.now();
    var entry = S.source === "yours" ? tinyEntry() : null;
    S.head = Math.min(S.head, (S.source === "minilm" ? MAN.minilm.h : entry ? entry.h : tinyCell().h) - 1);
    compute().then(function (v) {
      if (my !== seq) { return; }
      view = v;
      message.textContent = "";
      pictures.hidden = false;
      draw();
      requestAnimationFrame(function () {
        api.timings.push({ reason: reason, ms: performance.now() - start, live: v.live, source: S.source });
      });
    }).catch(function (err) {
      if (my !== seq) { return; }
      view = null;
      pictures.hidden = true; // never leave stale pictures on screen
      message.textContent = err instanceof Notice ? err.message : "Could not compute this view: " + (err && err.message ? err.message : err);
      api.timings.push({ reason: reason, ms: performance.now() - start, error: message.textContent });
    });
  }
  api.update = update;
  api.syncControls = syncControls; // the trainer calls it when a model exists

  // ------------------------------------------------------------ drawing
  function rgb(w) { var c = CMAP[Math.max(0, Math.min(255, Math.round(w * 255)))]; return c; }

  function baseImage(data, off, L) {
    var c = document.createElement("canvas");
    c.width = L; c.height = L;
    var ctx = c.getContext("2d"), img = ctx.createImageData(L, L);
    for (var i = 0; i < L * L; i++) {
      var col = rgb(data[off + i]);
      img.data[4 * i] = col[0]; img.data[4 * i + 1] = col[1]; img.data[4 * i + 2] = col[2]; img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return c;
  }

  function textColor() { return getComputedStyle(root).color; }

  function paint(canvas, img, L, size, margin, labels, cursor) {
    var dpr = window.devicePixelRatio || 1, w = margin.left + size, hgt = margin.top + size;
    canvas.style.width = w + "px"; canvas.style.height = hgt + "px";
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(hgt * dpr);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = size < L; // enlarge crisply, shrink smoothly
    ctx.drawImage(img, margin.left, margin.top, size, size);
    var cell = size / L;
    if (labels) {
      ctx.fillStyle = textColor();
      ctx.font = Math.min(13, Math.max(10, cell * 0.8)) + "px sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      view.tokens.forEach(function (t, i) { ctx.fillText(clip(t), margin.left - 4, margin.top + (i + 0.5) * cell); });
      ctx.save();
      ctx.textAlign = "left";
      view.tokens.forEach(function (t, i) {
        ctx.save();
        ctx.translate(margin.left + (i + 0.5) * cell, margin.top - 4);
        ctx.rotate(-Math.PI / 3);
        ctx.fillText(clip(t), 0, 0);
        ctx.restore();
      });
      ctx.restore();
    }
    if (cursor) {
      ctx.strokeStyle = "#ff2d95"; ctx.lineWidth = 2;
      ctx.strokeRect(margin.left + cursor.k * cell + 1, margin.top + cursor.q * cell + 1, Math.max(cell - 2, 2), Math.max(cell - 2, 2));
    }
  }
  function clip(t) { return t.length > 12 ? t.slice(0, 11) + "…" : t; }

  var thumbs = [];
  function draw() {
    var v = view, L = v.L, LL = L * L;
    header.textContent = v.header + (v.live ? "" : " (precomputed at build time)");
    notes.textContent = v.notes.join(" ");
    notes.hidden = !v.notes.length;
    drawStrip(v);
    var width = Math.max(280, pictures.clientWidth || root.clientWidth || 700);
    var cols = v.h <= 4 ? v.h : v.h <= 8 ? 4 : v.h <= 12 ? 6 : 8;
    var size = Math.min(v.h <= 2 ? 260 : 200, Math.floor((width - (cols - 1) * 12) / cols) - 2);
    grid.textContent = "";
    grid.style.gridTemplateColumns = "repeat(" + cols + ", " + size + "px)";
    thumbs = [];
    for (var i = 0; i < v.h; i++) {
      var img = baseImage(v.data, i * LL, L);
      var c = el("canvas", { class: "mha-thumb", tabindex: "0", role: "img",
        "aria-label": v.titles[i] + ": " + topSummary(i, 6) + ". Arrow keys move between cells; Enter shows this head large." });
      var title = el("span", { class: "mha-thumb-title" });
      if (v.minilm && minilmState === "ready") { title.appendChild(headToggle(i)); } else { title.appendChild(document.createTextNode(v.titles[i])); }
      if (v.delta) {
        title.appendChild(el("span", { class: "mha-delta", text: " Δ" + v.delta[i].toFixed(2),
          title: "largest change of a weight in this head after switching heads off" }));
      }
      var fig = el("figure", { class: "mha-thumb-fig" + (i === S.head ? " mha-selected" : "") }, [title, c]);
      grid.appendChild(fig);
      thumbs.push({ canvas: c, img: img, size: size });
      paint(c, img, L, size, { left: 0, top: 0 }, false, null);
      wire(c, i, size, { left: 0, top: 0 }, false);
    }
    drawDetail();
    drawTextAlt();
  }

  function drawDetail() {
    var v = view, L = v.L, i = S.head;
    var width = Math.max(280, pictures.clientWidth || 700);
    var labels = L <= 48;
    var margin = labels ? { left: 96, top: 84 } : { left: 0, top: 0 };
    var size = Math.min(Math.max(L * 10, 240), width - margin.left - 8, 560);
    detailTitle.textContent = v.titles[i] + ", larger: rows are queries (the token that attends), columns are keys; each row sums to 1." +
      (labels ? "" : " Hover or use the arrow keys to read the tokens.");
    detail.setAttribute("aria-label", v.titles[i] + " enlarged. Arrow keys move between cells.");
    var img = baseImage(v.data, i * L * L, L);
    detail._img = img; detail._size = size; detail._margin = margin; detail._labels = labels;
    paint(detail, img, L, size, margin, labels, document.activeElement === detail ? S.cursor : null);
    wire(detail, i, size, margin, true);
  }

  function headToggle(i) {
    var m = MAN.minilm, k = (S.layer - 1) * m.h + i;
    var id = "mha-use-" + k;
    var box = el("input", { type: "checkbox", id: id });
    box.checked = !S.off[k];
    box.addEventListener("change", function () { S.off[k] = !box.checked; update("ablate"); });
    return el("span", { class: "mha-toggle", title: "Untick to switch this head off" },
      [box, el("label", { for: id, text: "Head " + (i + 1) })]);
  }

  function weightAt(i, q, k) { var L = view.L; return view.data[i * L * L + q * L + k]; }

  function say(i, q, k) {
    var t = view.tokens;
    readout.textContent = view.titles[i] + ": query “" + t[q] + "” (" + (q + 1) + ") → key “" + t[k] + "” (" + (k + 1) + "): weight " + weightAt(i, q, k).toFixed(3);
  }

  function wire(canvas, i, size, margin, isDetail) {
    canvas.onmousemove = function (ev) {
      var r = canvas.getBoundingClientRect(), L = view.L;
      var k = Math.floor((ev.clientX - r.left - margin.left) / (size / L));
      var q = Math.floor((ev.clientY - r.top - margin.top) / (size / L));
      if (q < 0 || k < 0 || q >= L || k >= L) { return; }
      S.cursor = { q: q, k: k };
      say(i, q, k);
    };
    canvas.onclick = function () { if (!isDetail) { S.head = i; draw(); } };
    canvas.onfocus = function () { redrawCursor(canvas, i, isDetail); say(i, S.cursor.q, S.cursor.k); };
    canvas.onblur = function () { redrawCursor(canvas, i, isDetail, true); };
    canvas.onkeydown = function (ev) {
      var L = view.L, c = S.cursor, moved = true;
      if (ev.key === "ArrowUp") { c.q = Math.max(0, c.q - 1); } else if (ev.key === "ArrowDown") { c.q = Math.min(L - 1, c.q + 1); } else if (ev.key === "ArrowLeft") { c.k = Math.max(0, c.k - 1); } else if (ev.key === "ArrowRight") { c.k = Math.min(L - 1, c.k + 1); } else if ((ev.key === "Enter" || ev.key === " ") && !isDetail) {
        S.head = i; draw(); detail.focus(); ev.preventDefault(); return;
      } else { moved = false; }
      if (moved) { ev.preventDefault(); redrawCursor(canvas, i, isDetail); say(i, c.q, c.k); }
    };
  }

  function redrawCursor(canvas, i, isDetail, clear) {
    var L = view.L, cur = clear ? null : S.cursor;
    S.cursor.q = Math.min(S.cursor.q, L - 1); S.cursor.k = Math.min(S.cursor.k, L - 1);
    if (isDetail) { paint(detail, detail._img, L, detail._size, detail._margin, detail._labels, cur); } else { paint(canvas, thumbs[i].img, L, thumbs[i].size, { left: 0, top: 0 }, false, cur); }
  }

  function topSummary(i, max) {
    var v = view, L = v.L, parts = [];
    for (var q = 0; q < Math.min(L, max); q++) {
      var best = 0;
      for (var k = 1; k < L; k++) { if (weightAt(i, q, k) > weightAt(i, q, best)) { best = k; } }
      parts.push(v.tokens[q] + " → " + v.tokens[best] + " " + weightAt(i, q, best).toFixed(2));
    }
    return parts.join(", ") + (L > max ? ", …" : "");
  }

  function drawTextAlt() {
    var v = view;
    textAlt.textContent = "";
    textAlt.appendChild(el("summary", { text: "Text: each query's most-attended key, for every head" }));
    var list = el("ul");
    for (var i = 0; i < v.h; i++) { list.appendChild(el("li", { text: v.titles[i] + ": " + topSummary(i, 40) })); }
    textAlt.appendChild(list);
  }

  function drawStrip(v) {
    strip.textContent = "";
    if (v.minilm) { strip.hidden = true; return; }
    strip.hidden = false;
    var maxD = 256, full = Math.max(200, Math.min(640, (pictures.clientWidth || 640) - 10));
    var bar = el("div", { class: "mha-strip-bar" });
    bar.style.width = Math.round(full * v.dModel / maxD) + "px";
    for (var i = 0; i < v.h; i++) {
      var b = el("span", { class: "mha-block mha-block-" + (i % 2), text: v.dk * full / maxD >= 22 ? String(v.dk) : "" });
      b.style.flex = "1 1 0";
      bar.appendChild(b);
    }
    strip.setAttribute("aria-label", "The projected vector X W_Q, d_model = " + v.dModel + " wide, cut into " + v.h + " blocks of d_k = " + v.dk + ".");
    strip.appendChild(bar);
    strip.appendChild(el("span", { class: "mha-strip-caption",
      text: "X·W_Q (d_model = " + v.dModel + ") cut into h = " + v.h + " blocks of d_k = " + v.dk +
        ": block i is head i's query. Each head still reads all " + v.dModel + " input dimensions." }));
  }

  function buildLegend() {
    var c = el("canvas", { class: "mha-legend-bar", width: "256", height: "12", "aria-hidden": "true" });
    var ctx = c.getContext("2d");
    for (var i = 0; i < 256; i++) { var col = CMAP[i]; ctx.fillStyle = "rgb(" + col.join(",") + ")"; ctx.fillRect(i, 0, 1, 12); }
    return el("div", { class: "mha-legend", role: "img", "aria-label": "Colour scale: dark purple is weight 0, yellow is weight 1." }, [
      el("span", { text: "weight 0" }), c, el("span", { text: "1" })]);
  }

  // ------------------------------------------------------------ engine
  function setStatus(t) { status.textContent = t; }

  function loadMiniLM() {
    minilmState = "loading";
    loadButton.disabled = true;
    update("minilm-loading");
    E.loadMiniLM(function (got, total) {
      loadButton.textContent = "Loading MiniLM… " + Math.round(100 * got / total) + "%";
    }).then(function () {
      minilmState = "ready";
      api.minilm = "ready";
      setStatus("MiniLM is loaded: type any text (up to " + MAN.minilm.max_len + " tokens), pick a layer, and switch heads off to see what changes.");
      syncControls(); update("minilm-ready");
    }).catch(function (err) {
      minilmState = "failed";
      api.minilm = "failed";
      loadButton.disabled = false;
      loadButton.textContent = "Load MiniLM again";
      setStatus("MiniLM could not load: " + (err && err.message ? err.message : err) + ".");
      update("minilm-failed");
    });
  }

  syncControls();
  update("first-paint");
  setStatus("Live engine: loading… (the pictures below were computed when the site was built)");
  E.start().then(function () {
    api.engine = "ready";
    setStatus("Live engine ready: every change recomputes the course's own model in your browser (onnxruntime-web, WebAssembly).");
    update("engine-ready");
  }).catch(function (err) {
    api.engine = "failed";
    setStatus("Live engine unavailable: " + (err && err.message ? err.message : err) + ". The example sentences' precomputed pictures still work.");
    update("engine-failed");
  });

  new MutationObserver(function () { if (view) { draw(); } }).observe(document.documentElement,
    { attributes: true, attributeFilter: ["data-theme", "data-mode"] });
  var lastWidth = 0;
  window.addEventListener("resize", function () {
    var w = pictures.clientWidth;
    if (view && Math.abs(w - lastWidth) > 40) { lastWidth = w; draw(); }
  });
})();
