// The attention explorer's state and computation: the state object S, the
// manifest lookups (tinyCell, tinyEntry, yours, nLayers), the decoding of the
// views precomputed at build time (decode, api.precomputed), and compute(),
// which turns the state into a view with the live engine (engine.js) or the
// precomputed pictures. explorer.js calls installState(X) with the explorer's
// shared object X; the functions are added to X.

export function Notice(msg) { this.message = msg; }

export function installState(X) {
  var PRE = X.PRE, MAN = X.MAN, E = X.E, api = X.api, EXAMPLES = X.EXAMPLES;

  // ------------------------------------------------------------ state
  var S = X.S = api.state = {
    source: "trained", mode: "budget", h: 4, dk: 16, layer: 2,
    text: EXAMPLES[0], off: {}, head: 0, cursor: { q: 0, k: 0 },
  };

  function tinyCell() {
    if (S.mode === "budget") { return { h: S.h, dk: MAN.budget.d_model / S.h }; }
    return { h: S.h, dk: S.dk };
  }
  // A model trained in this page ("Train it yourself", trainer.js), shown as
  // one more source: the newest run that has taken at least one step
  // (X.trainers(): the page's trainer panels, page.js gives them).
  function yours() {
    var ps = X.trainers().filter(function (p) { return p.step > 0 && p.worker; });
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
      if (E.tinyRefusal(live)) { throw new Notice(E.tinyRefusal(live)); }
      return tinyView(y.entry(), live.tokens, live.attn[S.layer - 1], live, true);
    }
    if (S.source !== "minilm") {
      e = tinyEntry();
      if (api.engine === "ready") {
        live = await E.tiny(e.name, t);
        if (E.tinyRefusal(live)) { throw new Notice(E.tinyRefusal(live)); }
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
    if (X.minilmState === "ready") {
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
    throw new Notice(X.minilmState === "loading" ? "MiniLM is loading; your sentence will be drawn when it is ready."
      : "These are the examples' precomputed pictures. To run MiniLM on your own sentence, load it (button above).");
  }

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

  X.Notice = Notice;
  X.tinyCell = tinyCell;
  X.yours = yours;
  X.tinyEntry = tinyEntry;
  X.nLayers = nLayers;
  X.compute = compute;
}
