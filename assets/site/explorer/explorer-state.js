// The attention explorer's state, with one owner: ExplorerState. Its fields
// (the reader's choices, the view drawn now, the live engine's and MiniLM's
// status) are private and change only through its methods, which keep them
// consistent (a new source switches every head back on, a new h picks head
// 1, the layer and the cursor stay inside the model and the sentence).
// The drawing (explorer-draw.js) and the keyboard (explorer-a11y.js) read
// it through its getters; the controls (explorer.js) call its methods.
// It also holds the manifest lookups (tinyCell, tinyEntry, yours, nLayers),
// the decoding of the views precomputed at build time, and compute(), which
// turns the state into a view with the live engine (engine.js) or the
// precomputed pictures.
import { MAN, PRE } from "./data.js";
import { headName } from "./lab/heads.js";

// A reason this view cannot be drawn, shown as it is (not "Could not compute").
export class Notice extends Error {}

function decode(b64, h, L) {
  var bin = atob(b64),
    n = bin.length / 2,
    out = new Float32Array(n);
  for (var i = 0; i < n; i++) {
    out[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535;
  }
  if (n !== h * L * L) {
    throw new Error("precomputed view has the wrong size");
  }
  return out;
}

function headTitles(h) {
  var t = [];
  for (var i = 0; i < h; i++) {
    t.push("Head " + (i + 1));
  }
  return t;
}

export class ExplorerState {
  #s = { source: "trained", mode: "budget", h: 4, dk: 16, layer: 2, text: "", off: {}, head: 0 };
  #cursor = { q: 0, k: 0 };
  #view = null; // what is drawn now (compute's result), or null
  #engine = "loading"; // the live engine: loading | ready | failed
  #minilm = "absent"; // MiniLM: absent | loading | ready | failed
  #minilmRuns = []; // the last few MiniLM runs: changing the layer only redraws

  // engine: engine.js's; trainers(): the page's trainer panels (page.js).
  constructor(engine, trainers) {
    this.E = engine;
    this.trainers = trainers;
    this.#s.text = PRE.sentences[0];
  }

  // ------------------------------------------------------------ reads
  get source() {
    return this.#s.source;
  }
  get mode() {
    return this.#s.mode;
  }
  get h() {
    return this.#s.h;
  }
  get dk() {
    return this.#s.dk;
  }
  get layer() {
    return this.#s.layer;
  }
  get text() {
    return this.#s.text;
  }
  get head() {
    return this.#s.head;
  }
  get cursor() {
    return { q: this.#cursor.q, k: this.#cursor.k };
  }
  get view() {
    return this.#view;
  }
  get engine() {
    return this.#engine;
  }
  get minilm() {
    return this.#minilm;
  }
  isOff(k) {
    return !!this.#s.off[k];
  }
  // a copy of the reader's choices (the browser tests read it)
  get settings() {
    return Object.assign({}, this.#s, { off: Object.assign({}, this.#s.off), cursor: this.cursor });
  }

  // ------------------------------------------------------------ writes
  chooseSource(v) {
    this.#s.source = v;
    this.#s.off = {};
    this.#s.layer = Math.min(this.#s.layer, this.nLayers());
  }
  chooseMode(v) {
    this.#s.mode = v;
    var wide = MAN.wide.h;
    if (v === "wide" && wide.indexOf(this.#s.h) < 0) {
      this.#s.h = wide[wide.length - 1];
    }
  }
  chooseH(v) {
    this.#s.h = v;
    this.#s.head = 0;
  }
  chooseDk(v) {
    this.#s.dk = v;
  }
  chooseLayer(v) {
    this.#s.layer = v;
  }
  setText(t) {
    this.#s.text = t;
  }
  setHead(k, on) {
    this.#s.off[k] = !on;
  }
  allHeadsOn() {
    this.#s.off = {};
  }
  selectHead(i) {
    this.#s.head = i;
  }
  setView(v) {
    this.#view = v;
  }
  setEngine(status) {
    this.#engine = status;
  }
  setMiniLM(status) {
    this.#minilm = status;
  }
  // the layer inside the model shown (1..nLayers)
  fitLayer() {
    this.#s.layer = Math.min(Math.max(this.#s.layer, 1), this.nLayers());
  }
  // the selected head inside the model shown
  fitHead() {
    var entry = this.#s.source === "yours" ? this.tinyEntry() : null;
    var h = this.#s.source === "minilm" ? MAN.minilm.h : entry ? entry.h : this.tinyCell().h;
    this.#s.head = Math.min(this.#s.head, h - 1);
  }
  // the cursor (query q, key k) on a cell of an L x L heatmap
  setCursor(q, k) {
    this.#cursor = { q: q, k: k };
  }
  fitCursor(L) {
    this.#cursor.q = Math.min(this.#cursor.q, L - 1);
    this.#cursor.k = Math.min(this.#cursor.k, L - 1);
  }
  // an arrow key moves the cursor one cell; returns whether it was one
  moveCursor(key, L) {
    var c = this.#cursor;
    if (key === "ArrowUp") {
      c.q = Math.max(0, c.q - 1);
    } else if (key === "ArrowDown") {
      c.q = Math.min(L - 1, c.q + 1);
    } else if (key === "ArrowLeft") {
      c.k = Math.max(0, c.k - 1);
    } else if (key === "ArrowRight") {
      c.k = Math.min(L - 1, c.k + 1);
    } else {
      return false;
    }
    return true;
  }

  // ------------------------------------------------------------ lookups
  tinyCell() {
    var s = this.#s;
    return s.mode === "budget" ? { h: s.h, dk: MAN.budget.d_model / s.h } : { h: s.h, dk: s.dk };
  }
  // A model trained in this page ("Train it yourself", trainer.js), shown as
  // one more source: the newest run that has taken at least one step.
  yours() {
    var ps = this.trainers().filter(function (p) {
      return p.step > 0 && p.worker;
    });
    return ps.length ? ps[ps.length - 1] : null;
  }
  tinyEntry() {
    if (this.#s.source === "yours") {
      var y = this.yours();
      return y ? y.entry() : null;
    }
    var c = this.tinyCell(),
      trained = this.#s.source === "trained";
    return MAN.tiny.find(function (m) {
      return m.h === c.h && m.d_k === c.dk && m.trained === trained;
    });
  }
  nLayers() {
    if (this.#s.source === "minilm") {
      return MAN.minilm.layers;
    }
    var e = this.tinyEntry();
    return e ? e.layers : 2;
  }

  // Every layer of one precomputed view (for the tests).
  precomputed(name, i) {
    var v = name === "minilm" ? PRE.minilm[i] : PRE.tiny[name][i];
    var h =
      name === "minilm"
        ? MAN.minilm.h
        : MAN.tiny.find(function (m) {
            return m.name === name;
          }).h;
    var L = v.tokens.length;
    var attn = v.attn.map(function (a) {
      return Array.from(decode(a, h, L));
    });
    return { tokens: v.tokens, attn: attn };
  }

  // ------------------------------------------------------------ compute
  // The view of the state as it is now: live where the engine (or MiniLM)
  // is ready, the precomputed pictures of an example sentence otherwise;
  // a Notice where neither can be drawn.
  async compute() {
    var s = this.#s,
      E = this.E,
      t = s.text,
      live,
      e,
      ex = PRE.sentences.indexOf(t.trim());
    if (!t.trim()) {
      throw new Notice("Type a sentence: the text is empty (or only spaces).");
    }
    if (s.source === "yours") {
      var y = this.yours();
      if (!y) {
        throw new Notice(
          "No model has been trained in this page yet: press Train under " +
            '"Train it yourself" below.',
        );
      }
      live = await y.runText(t);
      if (E.tinyRefusal(live)) {
        throw new Notice(E.tinyRefusal(live));
      }
      return this.tinyView(y.entry(), live.tokens, live.attn[s.layer - 1], live, true);
    }
    if (s.source !== "minilm") {
      e = this.tinyEntry();
      if (this.#engine === "ready") {
        live = await E.tiny(e.name, t);
        if (E.tinyRefusal(live)) {
          throw new Notice(E.tinyRefusal(live));
        }
        return this.tinyView(e, live.tokens, live.attn[s.layer - 1], live, true);
      }
      if (ex >= 0) {
        var p = PRE.tiny[e.name][ex];
        var data = decode(p.attn[s.layer - 1], e.h, p.tokens.length);
        return this.tinyView(e, p.tokens, data, null, false);
      }
      throw new Notice(
        this.#engine === "failed"
          ? "Without the live engine only the example sentences can be shown: pick one of them."
          : "The live engine is still loading; your sentence will be drawn in a moment.",
      );
    }
    var m = MAN.minilm;
    if (this.#minilm === "ready") {
      var mask = this.headMask();
      live = await this.runMiniLM(t, mask);
      if (live.kept <= 2) {
        throw new Notice(
          "The text gives no tokens besides [CLS] and [SEP]: " + "type at least one word.",
        );
      }
      var base = null;
      if (
        mask.some(function (x) {
          return x === 0;
        })
      ) {
        base = await this.runMiniLM(t, null);
      }
      return this.minilmView(live.tokens, live.attn[s.layer - 1], live, base, true);
    }
    if (ex >= 0) {
      var q = PRE.minilm[ex];
      var pre = decode(q.attn[s.layer - 1], m.h, q.tokens.length);
      return this.minilmView(q.tokens, pre, null, null, false);
    }
    throw new Notice(
      this.#minilm === "loading"
        ? "MiniLM is loading; your sentence will be drawn when it is ready."
        : "These are the examples' precomputed pictures. " +
            "To run MiniLM on your own sentence, load it (button above).",
    );
  }

  runMiniLM(t, mask) {
    var key = t + "\u0000" + (mask ? Array.from(mask).join("") : "all");
    var hit = this.#minilmRuns.find(function (r) {
      return r.key === key;
    });
    if (hit) {
      return hit.result;
    }
    var result = this.E.minilm(t, mask);
    this.#minilmRuns.unshift({ key: key, result: result });
    this.#minilmRuns.length = Math.min(this.#minilmRuns.length, 4);
    result.catch(() => {
      this.#minilmRuns = this.#minilmRuns.filter(function (r) {
        return r.key !== key;
      });
    });
    return result;
  }

  headMask() {
    var m = MAN.minilm,
      mask = new Float32Array(m.layers * m.h).fill(1),
      off = this.#s.off;
    Object.keys(off).forEach(function (k) {
      if (off[k]) {
        mask[Number(k)] = 0;
      }
    });
    return mask;
  }

  tinyView(e, tokens, data, live, isLive) {
    var ns = [];
    if (live && live.total > live.kept) {
      ns.push(
        "The tiny models read at most " +
          e.max_len +
          " tokens: kept the first " +
          live.kept +
          " of " +
          live.total +
          ".",
      );
    }
    if (live && live.unk) {
      ns.push(
        live.unk +
          " of " +
          live.kept +
          " tokens are not in the tiny models' word list and are shown as [UNK].",
      );
    }
    var acc =
      e.accuracy == null ? "" : "; held-out accuracy " + (100 * e.accuracy).toFixed(1) + "%";
    var who = e.yours
      ? "Your model, trained in this page for " + e.steps + " steps"
      : "Tiny model, " + (e.trained ? "trained" : "untrained");
    return {
      tokens: tokens,
      data: data,
      h: e.h,
      L: tokens.length,
      live: isLive,
      header:
        who +
        ": h = " +
        e.h +
        " heads × d_k = " +
        e.d_k +
        " = d_model " +
        e.d_model +
        "; " +
        e.params.toLocaleString("en-US") +
        " parameters" +
        acc +
        "; layer " +
        this.#s.layer +
        " of " +
        e.layers +
        ".",
      notes: ns,
      dModel: e.d_model,
      dk: e.d_k,
      titles: headTitles(e.h),
    };
  }

  minilmView(tokens, data, live, base, isLive) {
    var m = MAN.minilm,
      ns = [],
      off = this.#s.off,
      layer = this.#s.layer;
    if (live && live.total > live.kept) {
      ns.push(
        "MiniLM reads at most " +
          m.max_len +
          " tokens: kept the first " +
          (live.kept - 1) +
          " and [SEP], " +
          live.kept +
          " of " +
          live.total +
          ".",
      );
    }
    var offList = Object.keys(off)
      .filter(function (k) {
        return off[k];
      })
      .map(function (k) {
        return headName(Math.floor(k / m.h), k % m.h);
      });
    var v = {
      tokens: tokens,
      data: data,
      h: m.h,
      L: tokens.length,
      live: isLive,
      header:
        "MiniLM (all-MiniLM-L6-v2, trained): layer " +
        layer +
        " of " +
        m.layers +
        ", h = " +
        m.h +
        " heads of d_k = " +
        m.d_k +
        " (d_model " +
        m.d_model +
        "); " +
        tokens.length +
        " tokens.",
      notes: ns,
      titles: headTitles(m.h),
      minilm: true,
      delta: null,
    };
    if (base) {
      var a = live.embedding,
        b = base.embedding,
        dot = 0;
      for (var i = 0; i < a.length; i++) {
        dot += a[i] * b[i];
      } // both have unit norm
      var bl = base.attn[layer - 1],
        delta = [],
        LL = v.L * v.L;
      for (var hh = 0; hh < m.h; hh++) {
        var mx = 0;
        for (var j = 0; j < LL; j++) {
          mx = Math.max(mx, Math.abs(data[hh * LL + j] - bl[hh * LL + j]));
        }
        delta.push(mx);
      }
      v.delta = delta;
      ns.push(
        "Switched off: " +
          offList.join(", ") +
          ". Cosine between the sentence " +
          "embedding and the one with every head on: " +
          dot.toFixed(4) +
          ".",
      );
    }
    return v;
  }
}
