// The attention explorer of the static site: the controls and the wiring
// (events -> update -> draw), and the boot.
//
// First paint: the example sentences' views that the package computed at
// build time (precomputed.js). Then the live engine (engine.js) starts, and
// every change recomputes the course's own exported model in the browser.
// If the engine cannot start, one line says why and the examples still work.
//
// The other parts are modules it imports, each the owner of its own
// fields: explorer-state.js (ExplorerState: the reader's choices, the view,
// the engine's status, and compute()), explorer-draw.js (Heatmaps: colours,
// heatmaps, legend, strip) and explorer-a11y.js (A11y: keyboard, readout,
// text alternative). The controls here change the state only through its
// methods; mountExplorer returns the explorer's public face (page.js offers
// it to the browser tests).
import { MAN, PRE, CMAP } from "./data.js";
import { el } from "./dom.js";
import { engine as E } from "./engine.js";
import { A11y } from "./explorer-a11y.js";
import { Heatmaps, buildLegend } from "./explorer-draw.js";
import { ExplorerState, Notice } from "./explorer-state.js";

// root: the page's #mha-explorer; trainers(): the page's trainer panels
// (the source "Yours"). Returns the api, or null when the data is missing.
export function mountExplorer(root, trainers) {
  if (!PRE || !MAN || !CMAP) {
    root.textContent = "The explorer's data did not load; rebuild the site with `make book`.";
    return null;
  }
  var EXAMPLES = PRE.sentences;
  var S = new ExplorerState(E, trainers);
  // the public face: the timings of every update, the state's statuses and
  // a copy of its choices, and what the trainer and the tests call
  var api = {
    timings: [],
    get state() {
      return S.settings;
    },
    get engine() {
      return S.engine;
    },
    get minilm() {
      return S.minilm;
    },
    precomputed: function (name, i) {
      return S.precomputed(name, i);
    },
  };

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
      var input = el("input", {
        type: "radio",
        name: "mha-" + key,
        id: id,
        value: String(o.value),
        "aria-label": r.legend + ": " + o.label,
      });
      input.checked = !!o.checked;
      input.addEventListener("change", function () {
        if (input.checked) {
          r.onChange(o.value);
        }
      });
      var label = el("label", { for: id, text: o.label });
      r.box.appendChild(el("span", { class: "mha-option" }, [input, label]));
    });
  }

  var text = el("textarea", {
    id: "mha-text",
    rows: "1",
    spellcheck: "false",
    "aria-describedby": "mha-message",
  });
  text.value = S.text;
  var exampleList = el("div", { class: "mha-example-list" });
  var examples = el("div", { class: "mha-examples" }, [
    el("span", { text: "Examples" }),
    exampleList,
  ]);
  EXAMPLES.forEach(function (s, i) {
    var short = s.split(" ").slice(0, 3).join(" ") + "…";
    var b = el("button", {
      type: "button",
      class: "mha-example",
      text: short,
      "aria-label": "Example " + (i + 1) + ": " + s,
      title: s,
    });
    b.addEventListener("click", function () {
      text.value = s;
      S.setText(s);
      update("example");
    });
    exampleList.appendChild(b);
  });

  var sourceGroup = radioGroup(
    "source",
    "Model",
    [
      { value: "trained", label: "Tiny, trained", checked: true },
      { value: "untrained", label: "Tiny, untrained" },
      { value: "minilm", label: "MiniLM (real)" },
      { value: "yours", label: "Yours (trained in this page)" },
    ],
    function (v) {
      S.chooseSource(v);
      syncControls();
      update("source");
    },
  );

  var modeGroup = radioGroup(
    "mode",
    "h and d_k",
    [
      { value: "budget", label: "Same budget: d_model = " + MAN.budget.d_model, checked: true },
      { value: "wide", label: "Wider heads: d_k grows" },
    ],
    function (v) {
      S.chooseMode(v);
      syncControls();
      update("mode");
    },
  );
  var hGroup = radioGroup("h", "Heads h", [], function (v) {
    S.chooseH(v);
    syncControls();
    update("h");
  });
  var dkGroup = radioGroup("dk", "Head width d_k", [], function (v) {
    S.chooseDk(v);
    syncControls();
    update("dk");
  });
  var layerGroup = radioGroup("layer", "Layer", [], function (v) {
    S.chooseLayer(v);
    update("layer");
  });

  var loadButton = el("button", {
    type: "button",
    class: "mha-load",
    text:
      "Load MiniLM to type your own sentences (" +
      (MAN.minilm.bytes / 1e6).toFixed(1) +
      " MB download)",
  });
  loadButton.addEventListener("click", loadMiniLM);
  var resetButton = el("button", {
    type: "button",
    class: "mha-reset",
    text: "Switch every head back on",
  });
  resetButton.addEventListener("click", function () {
    S.allHeadsOn();
    update("reset");
  });

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
  var pictures = el("div", { class: "mha-pictures" }, [
    header,
    notes,
    strip,
    legend,
    grid,
    readout,
    detailTitle,
    detail,
    textAlt,
  ]);

  root.textContent = "";
  root.appendChild(
    el("div", { class: "mha-controls" }, [
      el("label", { for: "mha-text", class: "mha-text-label", text: "Sentence" }),
      text,
      examples,
      sourceGroup,
      modeGroup,
      hGroup,
      dkGroup,
      layerGroup,
      el("div", { class: "mha-buttons" }, [loadButton, resetButton]),
    ]),
  );
  root.appendChild(status);
  root.appendChild(message);
  root.appendChild(pictures);

  // Typing: the tiny models run in a few milliseconds, so every keystroke
  // recomputes (coalesced to one update per animation frame); MiniLM is
  // debounced, recomputing 150 ms after the last keystroke.
  var typing = null,
    frame = null;
  text.addEventListener("input", function () {
    var t0 = performance.now();
    clearTimeout(typing);
    if (frame) {
      cancelAnimationFrame(frame);
    }
    var go = function () {
      frame = null;
      S.setText(text.value);
      update("text", t0);
    };
    if (S.source === "minilm" && S.minilm === "ready") {
      typing = setTimeout(go, 150);
    } else {
      frame = requestAnimationFrame(go);
    }
  });

  function syncControls() {
    var minilm = S.source === "minilm",
      own = S.source === "yours";
    var yoursOption = document.getElementById("mha-source-yours");
    if (yoursOption) {
      yoursOption.parentNode.hidden = !S.yours() && !own;
    }
    modeGroup.hidden = minilm || own;
    hGroup.hidden = minilm || own;
    dkGroup.hidden = minilm || own || S.mode === "budget";
    loadButton.hidden = !minilm || S.minilm === "ready";
    resetButton.hidden = !minilm || S.minilm !== "ready";
    if (!minilm) {
      var hs = S.mode === "budget" ? MAN.budget.h : MAN.wide.h;
      setOptions(
        "h",
        hs.map(function (h) {
          var lab = S.mode === "budget" ? h + " (d_k " + MAN.budget.d_model / h + ")" : String(h);
          return { value: h, label: lab, checked: h === S.h };
        }),
      );
      setOptions(
        "dk",
        MAN.wide.d_k.map(function (d) {
          return { value: d, label: String(d), checked: d === S.dk };
        }),
      );
    }
    S.fitLayer();
    var n = S.nLayers(),
      ls = [];
    for (var l = 1; l <= n; l++) {
      ls.push({ value: l, label: String(l), checked: l === S.layer });
    }
    setOptions("layer", ls);
  }

  // ------------------------------------------------------------ update
  var seq = 0;
  function update(reason, t0) {
    var my = ++seq,
      start = t0 || performance.now();
    S.fitHead();
    var view = S.compute(); // with the engine as it is now
    if (S.engine === "failed") {
      startEngine();
    } // a file back in place: try again
    view
      .then(function (v) {
        if (my !== seq) {
          return;
        }
        S.setView(v);
        message.textContent = "";
        pictures.hidden = false;
        heatmaps.draw();
        requestAnimationFrame(function () {
          api.timings.push({
            reason: reason,
            ms: performance.now() - start,
            live: v.live,
            source: S.source,
          });
        });
      })
      .catch(function (err) {
        if (my !== seq) {
          return;
        }
        S.setView(null);
        pictures.hidden = true; // never leave stale pictures on screen
        message.textContent =
          err instanceof Notice
            ? err.message
            : "Could not compute this view: " + (err && err.message ? err.message : err);
        api.timings.push({
          reason: reason,
          ms: performance.now() - start,
          error: message.textContent,
        });
      });
  }
  api.update = update;
  api.syncControls = syncControls; // the trainer calls it when a model exists
  // a sentence typed in (the benchmark's): the box and the state
  api.setText = function (t) {
    text.value = t;
    S.setText(t);
  };

  // ------------------------------------------------------------ parts
  var heatmaps = null;
  var a11y = new A11y({ readout: readout, detail: detail, textAlt: textAlt }, S, {
    select: function (i) {
      S.selectHead(i);
      heatmaps.draw();
    },
    repaint: function (i, isDetail, cursor) {
      heatmaps.repaint(i, isDetail, cursor);
    },
  });
  var shown = {
    root: root,
    pictures: pictures,
    header: header,
    notes: notes,
    strip: strip,
    grid: grid,
    detailTitle: detailTitle,
    detail: detail,
  };
  heatmaps = new Heatmaps(shown, CMAP, S, { a11y: a11y, headToggle: headToggle });

  function headToggle(i) {
    var m = MAN.minilm,
      k = (S.layer - 1) * m.h + i;
    var id = "mha-use-" + k;
    var box = el("input", { type: "checkbox", id: id });
    box.checked = !S.isOff(k);
    box.addEventListener("change", function () {
      S.setHead(k, box.checked);
      update("ablate");
    });
    return el("span", { class: "mha-toggle", title: "Untick to switch this head off" }, [
      box,
      el("label", { for: id, text: "Head " + (i + 1) }),
    ]);
  }

  // ------------------------------------------------------------ engine
  function setStatus(t) {
    status.textContent = t;
  }

  function loadMiniLM() {
    S.setMiniLM("loading");
    loadButton.disabled = true;
    update("minilm-loading");
    E.loadMiniLM(function (got, total) {
      loadButton.textContent = "Loading MiniLM… " + Math.round((100 * got) / total) + "%";
    })
      .then(function () {
        S.setMiniLM("ready");
        setStatus(
          "MiniLM is loaded: type any text (up to " +
            MAN.minilm.max_len +
            " tokens), pick a layer, and switch heads off to see what changes.",
        );
        syncControls();
        update("minilm-ready");
      })
      .catch(function (err) {
        S.setMiniLM("failed");
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
    if (!first && (S.engine !== "failed" || performance.now() - lastTry < 1000)) {
      return;
    }
    lastTry = performance.now();
    S.setEngine("loading");
    setStatus(
      first
        ? "Live engine: loading… (the pictures below were computed when the site was built)"
        : "Live engine: trying again…",
    );
    E.start()
      .then(function () {
        S.setEngine("ready");
        setStatus(
          "Live engine ready: every change recomputes the course's own model in your " +
            "browser (onnxruntime-web, WebAssembly).",
        );
        update("engine-ready");
      })
      .catch(function (err) {
        S.setEngine("failed");
        setStatus(
          "Live engine unavailable: " +
            (err && err.message ? err.message : err) +
            ". The example sentences' precomputed pictures still work.",
        );
        if (first) {
          update("engine-failed");
        }
      });
  }
  startEngine(true);

  var redraw = function () {
    if (S.view) {
      heatmaps.draw();
    }
  };
  new MutationObserver(redraw).observe(document.documentElement, {
    attributes: true,
    attributeFilter: ["data-theme", "data-mode"],
  });
  var lastWidth = 0;
  addEventListener("resize", function () {
    var w = pictures.clientWidth;
    if (S.view && Math.abs(w - lastWidth) > 40) {
      lastWidth = w;
      heatmaps.draw();
    }
  });
  return api;
}
