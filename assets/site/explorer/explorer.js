// The attention explorer of the static site: the controls and the wiring
// (events -> update -> draw), and the boot.
//
// First paint: the example sentences' views that the package computed at
// build time (precomputed.js). Then the live engine (engine.js) starts, and
// every change recomputes the course's own exported model in the browser.
// If the engine cannot start, one line says why and the examples still work.
//
// The other parts are modules it imports: explorer-state.js (the state S
// and compute()), explorer-draw.js (colours, heatmaps, legend, strip) and
// explorer-a11y.js (keyboard, readout, text alternative). They share one
// object, X, built here; mountExplorer returns the explorer's public face
// (page.js offers it to the browser tests).
import { MAN, PRE, CMAP } from "./data.js";
import { el } from "./dom.js";
import { engine as E } from "./engine.js";
import { installA11y } from "./explorer-a11y.js";
import { buildLegend, installDraw } from "./explorer-draw.js";
import { installState } from "./explorer-state.js";

// root: the page's #mha-explorer; trainers(): the page's trainer panels
// (the source "Yours"). Returns the api, or null when the data is missing.
export function mountExplorer(root, trainers) {
  if (!PRE || !MAN || !CMAP) {
    root.textContent = "The explorer's data did not load; rebuild the site with `make book`.";
    return null;
  }
  var EXAMPLES = PRE.sentences;
  var api = { timings: [], state: null, engine: "loading" };

  // ------------------------------------------------------------ state
  // X: what the parts share. view is what is drawn now; thumbs, the grid's
  // heatmaps (explorer-draw.js fills it, explorer-a11y.js reads it).
  var X = { root: root, PRE: PRE, MAN: MAN, CMAP: CMAP, E: E, EXAMPLES: EXAMPLES, api: api,
    view: null, minilmState: "absent", thumbs: [], trainers: trainers };
  installState(X);
  var S = X.S;
  var tinyCell = X.tinyCell, tinyEntry = X.tinyEntry, yours = X.yours, nLayers = X.nLayers;

  // ------------------------------------------------------------ controls
  var radios = {};
  function radioGroup(key, legend, options, onChange) {
    var fs = el("fieldset", { class: "mha-radios", id: "mha-" + key });
    fs.appendChild(el("legend", { text: legend }));
    var box = el("div", { class: "mha-options" });
    fs.appendChild(box);
    radios[key] = { box: box, fs: fs, onChange: onChange, legend: legend };
    setOptions(key, options);
    return fs;
  }
  function setOptions(key, options) {
    var r = radios[key];
    r.box.textContent = "";
    options.forEach(function (o) {
      var id = "mha-" + key + "-" + String(o.value).replace(/\W/g, "");
      var input = el("input", { type: "radio", name: "mha-" + key, id: id, value: String(o.value),
        "aria-label": r.legend + ": " + o.label });
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
  var legend = buildLegend(CMAP);
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
    if (S.source === "minilm" && X.minilmState === "ready") { typing = setTimeout(go, 150); } else { frame = requestAnimationFrame(go); }
  });

  function syncControls() {
    var minilm = S.source === "minilm", own = S.source === "yours";
    var yoursOption = document.getElementById("mha-source-yours");
    if (yoursOption) { yoursOption.parentNode.hidden = !yours() && !own; }
    modeGroup.hidden = minilm || own;
    hGroup.hidden = minilm || own;
    dkGroup.hidden = minilm || own || S.mode === "budget";
    loadButton.hidden = !minilm || X.minilmState === "ready";
    resetButton.hidden = !minilm || X.minilmState !== "ready";
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

  // ------------------------------------------------------------ update
  var seq = 0;
  function update(reason, t0) {
    var my = ++seq, start = t0 || performance.now();
    var entry = S.source === "yours" ? tinyEntry() : null;
    S.head = Math.min(S.head, (S.source === "minilm" ? MAN.minilm.h : entry ? entry.h : tinyCell().h) - 1);
    var view = X.compute(); // with the engine as it is now
    if (api.engine === "failed") { startEngine(); } // a file back in place: try again
    view.then(function (v) {
      if (my !== seq) { return; }
      X.view = v;
      message.textContent = "";
      pictures.hidden = false;
      X.draw();
      requestAnimationFrame(function () {
        api.timings.push({ reason: reason, ms: performance.now() - start, live: v.live, source: S.source });
      });
    }).catch(function (err) {
      if (my !== seq) { return; }
      X.view = null;
      pictures.hidden = true; // never leave stale pictures on screen
      message.textContent = err instanceof X.Notice ? err.message : "Could not compute this view: " + (err && err.message ? err.message : err);
      api.timings.push({ reason: reason, ms: performance.now() - start, error: message.textContent });
    });
  }
  api.update = update;
  api.syncControls = syncControls; // the trainer calls it when a model exists

  // ------------------------------------------------------------ parts
  X.pictures = pictures; X.header = header; X.notes = notes; X.strip = strip; X.grid = grid;
  X.readout = readout; X.detailTitle = detailTitle; X.detail = detail; X.textAlt = textAlt;
  X.update = update;
  X.headToggle = headToggle;
  installDraw(X);
  installA11y(X);

  function headToggle(i) {
    var m = MAN.minilm, k = (S.layer - 1) * m.h + i;
    var id = "mha-use-" + k;
    var box = el("input", { type: "checkbox", id: id });
    box.checked = !S.off[k];
    box.addEventListener("change", function () { S.off[k] = !box.checked; update("ablate"); });
    return el("span", { class: "mha-toggle", title: "Untick to switch this head off" },
      [box, el("label", { for: id, text: "Head " + (i + 1) })]);
  }

  // ------------------------------------------------------------ engine
  function setStatus(t) { status.textContent = t; }

  function loadMiniLM() {
    X.minilmState = "loading";
    loadButton.disabled = true;
    update("minilm-loading");
    E.loadMiniLM(function (got, total) {
      loadButton.textContent = "Loading MiniLM… " + Math.round(100 * got / total) + "%";
    }).then(function () {
      X.minilmState = "ready";
      api.minilm = "ready";
      setStatus("MiniLM is loaded: type any text (up to " + MAN.minilm.max_len + " tokens), pick a layer, and switch heads off to see what changes.");
      syncControls(); update("minilm-ready");
    }).catch(function (err) {
      X.minilmState = "failed";
      api.minilm = "failed";
      loadButton.disabled = false;
      loadButton.textContent = "Load MiniLM again";
      setStatus("MiniLM could not load: " + (err && err.message ? err.message : err) + ".");
      update("minilm-failed");
    });
  }

  syncControls();
  update("first-paint");
  // The live engine; after a failure, the next change tries again (engine.js
  // keeps no failed start), so a graph back in place needs no reload, and
  // the "unavailable" line goes as soon as it works.
  var lastTry = 0;
  function startEngine(first) {
    if (!first && (api.engine !== "failed" || performance.now() - lastTry < 1000)) { return; }
    lastTry = performance.now();
    api.engine = "loading";
    setStatus(first ? "Live engine: loading… (the pictures below were computed when the site was built)"
      : "Live engine: trying again…");
    E.start().then(function () {
      api.engine = "ready";
      setStatus("Live engine ready: every change recomputes the course's own model in your browser (onnxruntime-web, WebAssembly).");
      update("engine-ready");
    }).catch(function (err) {
      api.engine = "failed";
      setStatus("Live engine unavailable: " + (err && err.message ? err.message : err) + ". The example sentences' precomputed pictures still work.");
      if (first) { update("engine-failed"); }
    });
  }
  startEngine(true);

  new MutationObserver(function () { if (X.view) { X.draw(); } }).observe(document.documentElement,
    { attributes: true, attributeFilter: ["data-theme", "data-mode"] });
  var lastWidth = 0;
  addEventListener("resize", function () {
    var w = pictures.clientWidth;
    if (X.view && Math.abs(w - lastWidth) > 40) { lastWidth = w; X.draw(); }
  });
  return api;
}
