// The explorer's real causal language model, SmolLM2-135M (#mha-smollm2):
// a sentence (or its tokens repeated), all 270 heads at once and one
// layer's nine large, heads switched off, and the next-token loss at every position.
//
// First paint: the example sentences, computed by the package at build
// time (SMOL.views). Nothing is downloaded until the reader presses "Load";
// then the package's exported model runs in the page (smollm2-engine.js)
// and every change recomputes. Each bad input gets one line, and the
// pictures are hidden while it shows (never stale ones).
import { CMAP, SMOL } from "./data.js";
import { el } from "./dom.js";
import { drawAll, drawHeads, drawLoss } from "./smollm2-draw.js";
import { smol as E } from "./smollm2-engine.js";

function decode(b64, n) {
  // the build's uint8 weights (round(255 w)), as weights
  var bin = atob(b64),
    out = new Float32Array(bin.length);
  for (var i = 0; i < bin.length; i++) {
    out[i] = bin.charCodeAt(i) / 255;
  }
  if (out.length !== n) {
    throw new Error("a precomputed view has the wrong size");
  }
  return out;
}

function mean(a, from, to) {
  var s = 0;
  for (var i = from; i < to; i++) {
    s += a[i];
  }
  return to > from ? s / (to - from) : NaN;
}

export function mountSmolLM2(root) {
  if (!SMOL || !CMAP) {
    root.textContent = "The SmolLM2 view's data did not load; rebuild the site with `make book`.";
    return null;
  }
  var M = SMOL.manifest;
  var api = { state: "precomputed", view: null, timings: [], lines: [] };
  var S = {
    text: SMOL.views[0].sentence,
    repeat: SMOL.views[0].repeat,
    layer: M.show_layer,
    off: {},
  };

  var status = el("p", { class: "mha-smol-status", role: "status" });
  var message = el("p", { class: "mha-smol-message", role: "alert" });
  var load = el("button", {
    type: "button",
    class: "mha-smol-load",
    text: "Load SmolLM2-135M (" + (M.bytes / 1e6).toFixed(1) + " MB download, once)",
  });
  var bar = el("progress", { max: "1", value: "0", hidden: "", "aria-label": "SmolLM2 download" });
  var text = el("textarea", { id: "mha-smol-text", rows: "1", spellcheck: "false" });
  text.value = S.text;
  var repeat = el("input", { type: "checkbox", id: "mha-smol-repeat" });
  repeat.checked = S.repeat;
  var offText = el("input", {
    type: "text",
    id: "mha-smol-off",
    placeholder: "e.g. 4.8, 5.7",
    "aria-label": "Heads switched off, as layer.head, separated by commas",
  });
  var topOff = el("button", {
    type: "button",
    text: "Switch off the " + M.induction_heads.length + " strongest induction heads",
  });
  var reset = el("button", { type: "button", text: "Every head on" });
  var layer = el("select", { id: "mha-smol-layer", "aria-label": "Layer" });
  for (var l = 1; l <= M.layers; l++) {
    layer.appendChild(el("option", { value: String(l), text: "Layer " + l }));
  }
  layer.value = String(S.layer);
  var examples = el("div", { class: "mha-smol-example-list" });
  SMOL.views.forEach(function (v) {
    var b = el("button", {
      type: "button",
      class: "mha-smol-example",
      text: v.sentence.split(" ").slice(0, 3).join(" ") + "…" + (v.repeat ? " ×2" : ""),
      title: v.sentence,
    });
    b.addEventListener("click", function () {
      text.value = v.sentence;
      repeat.checked = v.repeat;
      S.off = {};
      update("example");
    });
    examples.appendChild(b);
  });
  var lossLine = el("p", { class: "mha-smol-readout", "aria-live": "polite" });
  var chart = el("canvas", { class: "mha-smol-loss", role: "img" });
  var header = el("p", { class: "mha-smol-header" });
  var grid = el("div", { class: "mha-smol-grid" });
  var allTitle = el("p", { class: "mha-smol-header" });
  var all = el("canvas", { class: "mha-smol-all", role: "img" });
  var cell = 0;
  all.addEventListener("click", function (e) {
    // a column: show its layer
    var l = Math.floor((e.clientX - all.getBoundingClientRect().left) / cell) + 1;
    if (cell && l >= 1 && l <= M.layers && String(l) !== layer.value) {
      layer.value = String(l);
      update("layer");
    }
  });
  var pictures = el("div", { class: "mha-smol-pictures" }, [
    lossLine,
    chart,
    allTitle,
    el("div", { class: "mha-smol-all-box" }, [all]),
    header,
    grid,
  ]);
  root.textContent = "";
  root.appendChild(
    el("div", { class: "mha-smol-controls" }, [
      el("div", { class: "mha-smol-buttons" }, [load, bar]),
      el("label", { for: "mha-smol-text", class: "mha-smol-text-label", text: "Sentence" }),
      text,
      el("div", { class: "mha-smol-examples" }, [el("span", { text: "Examples" }), examples]),
      el("span", { class: "mha-smol-option" }, [
        repeat,
        el("label", { for: "mha-smol-repeat", text: "Repeat it (the sentence's tokens twice)" }),
      ]),
      el("label", { for: "mha-smol-layer", text: "Layer" }),
      layer,
      el("label", { for: "mha-smol-off", text: "Heads off (layer.head)" }),
      offText,
      el("div", { class: "mha-smol-buttons" }, [topOff, reset]),
    ]),
  );
  [status, message, pictures].forEach(function (e) {
    root.appendChild(e);
  });

  function say(line) {
    // one line; the pictures go (nothing stale stays)
    message.textContent = line;
    pictures.hidden = !!line;
    if (line) {
      api.lines.push(line);
      api.view = null;
    }
  }
  function mask() {
    var m = new Float32Array(M.layers * M.h).fill(1);
    Object.keys(S.off).forEach(function (k) {
      if (S.off[k]) {
        m[Number(k)] = 0;
      }
    });
    return m;
  }
  function offList() {
    return Object.keys(S.off)
      .filter(function (k) {
        return S.off[k];
      })
      .map(function (k) {
        return Math.floor(k / M.h) + 1 + "." + ((k % M.h) + 1);
      });
  }
  // "4.8, 5.7" -> S.off; a head out of range gets one line and changes nothing
  function parseOff(t) {
    var off = {},
      bad = null;
    t.split(/[,;\s]+/)
      .filter(Boolean)
      .forEach(function (p) {
        var m = /^(\d+)\.(\d+)$/.exec(p);
        var lay = m ? Number(m[1]) : NaN,
          hd = m ? Number(m[2]) : NaN;
        if (!(lay >= 1 && lay <= M.layers && hd >= 1 && hd <= M.h)) {
          bad = bad || p;
          return;
        }
        off[(lay - 1) * M.h + hd - 1] = true;
      });
    if (bad) {
      throw new Error(
        'There is no head "' +
          bad +
          '": SmolLM2 has layers 1 to ' +
          M.layers +
          " of heads 1 to " +
          M.h +
          "; write them as layer.head, e.g. 4.8.",
      );
    }
    return off;
  }
  function toggle(i) {
    var k = (S.layer - 1) * M.h + i,
      id = "mha-smol-use-" + k;
    var box = el("input", { type: "checkbox", id: id });
    box.checked = !S.off[k];
    box.addEventListener("change", function () {
      S.off[k] = !box.checked;
      offText.value = offList().join(", ");
      update("ablate");
    });
    return el("span", { class: "mha-smol-toggle" }, [
      box,
      el("label", { for: id, text: "Head " + (i + 1) }),
    ]);
  }

  function precomputed() {
    var v = SMOL.views.find(function (x) {
      return x.sentence === text.value.trim() && x.repeat === repeat.checked;
    });
    if (!v) {
      return null;
    }
    var L = v.tokens.length;
    return {
      tokens: v.tokens,
      ids: v.ids,
      h: M.h,
      loss: Float32Array.from(v.loss),
      base: null,
      live: false,
      attn: v.attn.map(function (a) {
        return decode(a, M.h * L * L);
      }),
    };
  }
  var bases = {};
  async function live() {
    if (!text.value.trim()) {
      throw new Error(E.refusal(0));
    }
    var tok = await E.tokenize(text.value);
    var ids = repeat.checked ? tok.ids.concat(tok.ids) : tok.ids;
    var tokens = repeat.checked ? tok.tokens.concat(tok.tokens) : tok.tokens;
    var why = E.refusal(ids.length, repeat.checked);
    if (why) {
      throw new Error(why);
    }
    var m = mask(),
      any = offList().length > 0;
    var r = await E.run(ids, m);
    var key = ids.join(",");
    if (!any) {
      bases[key] = r.loss;
    } // kept: switching heads off then runs once
    if (any && !bases[key]) {
      bases[key] = (await E.run(ids, null)).loss;
    }
    return {
      tokens: tokens,
      ids: ids,
      h: M.h,
      loss: r.loss,
      attn: r.attn,
      base: any ? bases[key] : null,
      live: true,
    };
  }

  var seq = 0;
  async function update(reason) {
    var my = ++seq,
      t0 = performance.now();
    S.layer = Number(layer.value);
    try {
      S.off = parseOff(offText.value);
    } catch (err) {
      say(err.message);
      return;
    }
    try {
      var v = api.state === "ready" ? await live() : precomputed();
      if (my !== seq) {
        return;
      }
      if (!v) {
        say(
          api.state === "ready"
            ? ""
            : "Load SmolLM2 above to run your own sentence: before it loads, only the examples " +
                "(precomputed) are shown.",
        );
        return;
      }
      api.view = v;
      say("");
      draw(v);
      api.timings.push({
        reason: reason,
        ms: performance.now() - t0,
        live: v.live,
        L: v.tokens.length,
      });
    } catch (err) {
      if (my === seq) {
        say(err && err.message ? err.message : String(err));
      }
    }
  }
  function draw(v) {
    var n = v.tokens.length,
      half = n / 2,
      rep = repeat.checked && n % 2 === 0;
    header.textContent =
      "SmolLM2-135M, layer " +
      S.layer +
      " of " +
      M.layers +
      ": its " +
      M.h +
      " heads on " +
      n +
      " tokens" +
      (v.live ? "" : " (precomputed at build time)") +
      ". Rows are queries, columns keys.";
    var line = "Mean next-token loss " + mean(v.loss, 0, n - 1).toFixed(2) + " nats";
    if (rep) {
      line =
        "Next-token loss: first copy " +
        mean(v.loss, 1, half - 1).toFixed(2) +
        " nats, second copy " +
        mean(v.loss, half + 1, n - 1).toFixed(2);
      if (v.base) {
        line +=
          " (every head on: " +
          mean(v.base, 1, half - 1).toFixed(2) +
          ", " +
          mean(v.base, half + 1, n - 1).toFixed(2) +
          ")";
      }
    } else if (v.base) {
      line += " (every head on: " + mean(v.base, 0, n - 1).toFixed(2) + ")";
    }
    lossLine.textContent =
      line + (offList().length ? "; heads off: " + offList().join(", ") + "." : ".");
    drawLoss(chart, v.loss, v.base, v.tokens, getComputedStyle(root).color);
    allTitle.textContent =
      "All " +
      M.layers * M.h +
      " heads: a column a layer (1 to " +
      M.layers +
      "), a row a head (1 to " +
      M.h +
      "). Click a column to show its layer below" +
      (offList().length ? "; crossed out: switched off." : ".");
    cell = drawAll(all, v, S.layer, S.off, CMAP);
    drawHeads(grid, v, S.layer, CMAP, api.state === "ready" ? toggle : null);
  }

  text.addEventListener("input", function () {
    clearTimeout(text._t);
    text._t = setTimeout(function () {
      update("text");
    }, 250);
  });
  [repeat, layer].forEach(function (e) {
    e.addEventListener("change", function () {
      update(e.id);
    });
  });
  offText.addEventListener("change", function () {
    update("off");
  });
  topOff.addEventListener("click", function () {
    offText.value = M.induction_heads.join(", ");
    update("top-off");
  });
  reset.addEventListener("click", function () {
    offText.value = "";
    update("reset");
  });
  load.addEventListener("click", function () {
    load.disabled = true;
    bar.hidden = false;
    status.textContent = "Downloading SmolLM2 (" + (M.bytes / 1e6).toFixed(1) + " MB)…";
    E.load(function (got, total) {
      bar.value = got / total;
      load.textContent = "Loading SmolLM2… " + Math.round((100 * got) / total) + "%";
    })
      .then(function (r) {
        api.state = "ready";
        api.readyMs = r.readyMs;
        load.hidden = true;
        bar.hidden = true;
        status.textContent =
          "SmolLM2 is loaded: type any sentence (up to " +
          M.max_len +
          " tokens), repeat it, and switch heads off to see the loss change.";
        update("loaded");
      })
      .catch(function (err) {
        api.state = "failed";
        load.disabled = false;
        bar.hidden = true;
        load.textContent = "Load SmolLM2 again";
        status.textContent =
          "SmolLM2 could not load: " + (err && err.message ? err.message : err) + ".";
        update("load-failed");
      });
  });
  var why = E.memoryRefusal();
  if (why) {
    load.hidden = true;
    status.textContent = "Live SmolLM2 is off: " + why + ".";
  }
  api.update = update;
  update("first-paint");
  return api;
}
