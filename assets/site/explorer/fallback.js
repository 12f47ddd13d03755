// The static fallback, a classic script: a page opened from disk
// (file://) runs no module (browsers refuse them there), so the explorer
// and the trainers of page.js never start. This script, on such a page
// only, says why, and draws what needs no engine: the pictures the package
// computed when the site was built (precomputed.js), for each example
// sentence and layer of the default tiny model, and SmolLM2's example views.
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }
  var WHY =
    "this page was opened from disk (file://), where browsers refuse the page's modules, " +
    "WebAssembly and workers. Run `python -m http.server -d _build/html` and open it there.";
  var PRE = window.mhaExplorerPrecomputed,
    MAN = window.mhaExplorerManifest,
    CMAP = window.mhaExplorerColormap;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      e.setAttribute(k, attrs[k]);
    });
    if (text) {
      e.textContent = text;
    }
    return e;
  }

  // One head's (L, L) weights from the build's base64 uint16 (as explorer-state.js decodes them).
  function decode(b64) {
    var bin = atob(b64),
      n = bin.length / 2,
      out = new Float32Array(n);
    for (var i = 0; i < n; i++) {
      out[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535;
    }
    return out;
  }

  function explorer(root) {
    root.textContent = "";
    root.classList.add("mha-fallback");
    root.appendChild(
      el(
        "p",
        { class: "mha-status", role: "status" },
        "Live engine off: " +
          WHY +
          " Below: the example sentences' pictures, computed by the package when the site was " +
          "built.",
      ),
    );
    if (!PRE || !MAN || !CMAP) {
      root.appendChild(
        el(
          "p",
          {},
          "The precomputed pictures did not load either; rebuild the site with `make book`.",
        ),
      );
      return;
    }
    var model =
      MAN.tiny.find(function (m) {
        return m.trained && m.h === 4 && m.d_model === MAN.budget.d_model;
      }) ||
      MAN.tiny.find(function (m) {
        return m.trained;
      });
    var sentence = el("select", { id: "mha-fallback-sentence", "aria-label": "Example sentence" });
    PRE.sentences.forEach(function (s, i) {
      var o = el("option", { value: String(i) }, s);
      sentence.appendChild(o);
    });
    var layer = el("select", { id: "mha-fallback-layer", "aria-label": "Layer" });
    for (var l = 1; l <= model.layers; l++) {
      layer.appendChild(el("option", { value: String(l) }, "Layer " + l));
    }
    var header = el("p", { class: "mha-header" }),
      grid = el("div", { class: "mha-grid" });
    root.appendChild(el("div", { class: "mha-controls" }));
    root.lastChild.appendChild(sentence);
    root.lastChild.appendChild(layer);
    root.appendChild(header);
    root.appendChild(grid);
    function draw() {
      var view = PRE.tiny[model.name][sentence.value],
        L = view.tokens.length,
        ly = Number(layer.value);
      var data = decode(view.attn[ly - 1]);
      header.textContent =
        "Tiny model, trained: h = " +
        model.h +
        " heads × d_k = " +
        model.d_k +
        "; layer " +
        ly +
        " of " +
        model.layers +
        " (precomputed at build time). Rows are queries, columns keys.";
      grid.textContent = "";
      for (var h = 0; h < model.h; h++) {
        var c = el("canvas", {
          class: "mha-thumb",
          width: String(L),
          height: String(L),
          role: "img",
          "aria-label":
            "Head " +
            (h + 1) +
            ", layer " +
            ly +
            ': attention of each token of "' +
            view.tokens.join(" ") +
            '".',
        });
        c.style.width = "160px";
        c.style.height = "160px";
        c.style.imageRendering = "pixelated";
        var g = c.getContext("2d"),
          img = g.createImageData(L, L);
        for (var i = 0; i < L * L; i++) {
          var rgb = CMAP[Math.max(0, Math.min(255, Math.round(255 * data[h * L * L + i])))];
          img.data[4 * i] = rgb[0];
          img.data[4 * i + 1] = rgb[1];
          img.data[4 * i + 2] = rgb[2];
          img.data[4 * i + 3] = 255;
        }
        g.putImageData(img, 0, 0);
        var fig = el("figure", { class: "mha-thumb-fig" });
        fig.appendChild(el("span", { class: "mha-thumb-title" }, "Head " + (h + 1)));
        fig.appendChild(c);
        grid.appendChild(fig);
      }
    }
    sentence.addEventListener("change", draw);
    layer.addEventListener("change", draw);
    draw();
  }

  function trainer(root) {
    root.textContent = "";
    root.classList.add("mha-fallback");
    var box = el("div", { class: "mha-train-panel" });
    box.appendChild(
      el(
        "p",
        { class: "mha-train-message", role: "alert" },
        "Training runs only when the site is served over http(s): " + WHY,
      ),
    );
    root.appendChild(box);
  }

  // SmolLM2's view (#mha-smollm2): its example sentences, precomputed (uint8 weights).
  function smollm2(root) {
    var SM = window.mhaSmolLM2;
    root.textContent = "";
    root.classList.add("mha-smol-fallback");
    root.appendChild(
      el(
        "p",
        { class: "mha-smol-status", role: "status" },
        "Live SmolLM2 off: " +
          WHY +
          " Below: its example sentences, computed by the package when the site was built.",
      ),
    );
    if (!SM || !CMAP) {
      root.appendChild(
        el(
          "p",
          {},
          "The precomputed SmolLM2 views did not load either; rebuild the site with `make book`.",
        ),
      );
      return;
    }
    var M = SM.manifest,
      pick = el("select", { id: "mha-smol-fallback-view", "aria-label": "Example" });
    SM.views.forEach(function (v, i) {
      pick.appendChild(
        el("option", { value: String(i) }, v.sentence + (v.repeat ? " (repeated)" : "")),
      );
    });
    var layer = el("select", { id: "mha-smol-fallback-layer", "aria-label": "Layer" });
    for (var l = 1; l <= M.layers; l++) {
      layer.appendChild(el("option", { value: String(l) }, "Layer " + l));
    }
    layer.value = String(M.show_layer);
    var header = el("p", { class: "mha-smol-header" }),
      grid = el("div", { class: "mha-smol-grid" });
    root.appendChild(el("div", { class: "mha-smol-controls" }));
    root.lastChild.appendChild(pick);
    root.lastChild.appendChild(layer);
    root.appendChild(header);
    root.appendChild(grid);
    function draw() {
      var v = SM.views[pick.value],
        L = v.tokens.length,
        ly = Number(layer.value),
        bin = atob(v.attn[ly - 1]);
      var loss =
        v.loss.reduce(function (a, b) {
          return a + b;
        }, 0) / v.loss.length;
      header.textContent =
        "SmolLM2-135M, layer " +
        ly +
        " (precomputed at build time); mean next-token loss " +
        loss.toFixed(2) +
        " nats.";
      grid.textContent = "";
      for (var h = 0; h < M.h; h++) {
        var c = el("canvas", {
          class: "mha-smol-thumb",
          width: String(L),
          height: String(L),
          role: "img",
          "aria-label": "Layer " + ly + ", head " + (h + 1) + ".",
        });
        c.style.width = "160px";
        c.style.height = "160px";
        c.style.imageRendering = "pixelated";
        var g = c.getContext("2d"),
          img = g.createImageData(L, L);
        for (var i = 0; i < L * L; i++) {
          var rgb = CMAP[bin.charCodeAt(h * L * L + i)];
          img.data[4 * i] = rgb[0];
          img.data[4 * i + 1] = rgb[1];
          img.data[4 * i + 2] = rgb[2];
          img.data[4 * i + 3] = 255;
        }
        g.putImageData(img, 0, 0);
        var fig = el("figure", { class: "mha-smol-thumb-fig" });
        fig.appendChild(el("span", { class: "mha-smol-thumb-title" }, "Head " + (h + 1)));
        fig.appendChild(c);
        grid.appendChild(fig);
      }
    }
    pick.addEventListener("change", draw);
    layer.addEventListener("change", draw);
    draw();
  }

  function boot() {
    var root = document.getElementById("mha-explorer");
    if (root) {
      explorer(root);
    }
    var smol = document.getElementById("mha-smollm2");
    if (smol) {
      smollm2(smol);
    }
    document.querySelectorAll(".mha-trainer").forEach(trainer);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", boot);
  } else {
    boot();
  }
})();
