// The heads on the panel's sentence (Pictures): every head's attention as
// a heatmap with its title (its place and role) and the switch that takes
// it out (the ablation, Switches). Only the layers the run has are drawn.
// Pictures owns its canvases, the last attention drawn and whether a
// drawing is under way; the sentence box's typing is its to answer.
import { CMAP, MAN } from "./data.js";
import { el } from "./dom.js";
import { engine as E } from "./engine.js";
import { quietWorkers } from "./trainer-client.js";
import { ADVICE, ROLE_NAMES, headName, headWords } from "./trainer-text.js";

// One head's pixels: A (h, L, L) row-major, head `head`, cell px a token.
function paint(g, A, head, L, cell) {
  const img = g.createImageData(L * cell, L * cell);
  for (let q = 0; q < L; q++) {
    for (let k = 0; k < L; k++) {
      const rgb = CMAP[Math.max(0, Math.min(255, Math.round(255 * A[head * L * L + q * L + k])))];
      for (let dy = 0; dy < cell; dy++) {
        for (let dx = 0; dx < cell; dx++) {
          const o = 4 * ((q * cell + dy) * L * cell + k * cell + dx);
          img.data[o] = rgb[0];
          img.data[o + 1] = rgb[1];
          img.data[o + 2] = rgb[2];
          img.data[o + 3] = 255;
        }
      }
    }
  }
  g.putImageData(img, 0, 0);
}

export class Pictures {
  constructor(panel) {
    this.P = panel;
    this.grids = null; // the canvases: {h, L, layers, canvases, titles}
    this.lastAttention = null; // the last attention drawn: {step, h, L, attn}
    this.drawing = false; // a forward pass for the pictures is under way
    this.again = false; // and one more is asked for, with what is newest then
    this.words = [];
    let typing = null;
    const box = panel.view.sentence;
    box.addEventListener("input", () => {
      clearTimeout(typing);
      panel.run.mark("keystroke", performance.now());
      quietWorkers(); // input first: the workers start nothing for a moment
      typing = setTimeout(() => this.probe(), 0);
    });
  }

  // The canvases go (Reset, a file): the next run makes them anew.
  clear() {
    this.P.view.say({ heads: "" });
    this.grids = null;
  }

  // The canvases of the heads' pictures: made anew when the number of
  // heads, layers or tokens changes, or when they are no longer in the box.
  canvases(h, L, layers, cell) {
    const box = this.P.view.heads;
    let G = this.grids;
    if (
      G &&
      G.h === h &&
      G.L === L &&
      G.layers === layers &&
      G.canvases.every((c) => box.contains(c))
    ) {
      return G;
    }
    box.textContent = "";
    G = this.grids = { h: h, L: L, layers: layers, canvases: [], titles: [] };
    for (let l = 0; l < layers; l++) {
      const row = el("div", { class: "mha-train-layer" }, [
        el("span", { class: "mha-train-layer-name", text: "Layer " + (l + 1) }),
      ]);
      for (let i = 0; i < h; i++) {
        const cv = el("canvas", { width: String(L * cell), height: String(L * cell), role: "img" });
        const title = el("span", { class: "mha-train-head-title" });
        row.appendChild(
          el("figure", { class: "mha-train-head" }, [cv, title, this.P.switches.element(l, i, h)]),
        );
        G.canvases.push(cv);
        G.titles.push(title);
      }
      box.appendChild(row);
    }
    return G;
  }

  // Draw the heads on the sentence in the box, with the latest weights the
  // worker sent. One run at a time: a keystroke or a new copy of the weights
  // that arrives meanwhile asks for one more run, with what is newest then.
  probe() {
    const P = this.P,
      R = P.run,
      V = P.view;
    if (!R.snapshot || ["loading", "failed", "idle"].includes(R.state)) {
      return;
    }
    if (this.drawing) {
      this.again = true;
      return;
    }
    if (!V.sentence.value.trim()) {
      V.heads.hidden = true; // never leave a stale picture on screen
      V.say({ sentenceNote: "Type a sentence: the text is empty." });
      return;
    }
    const snap = R.snapshot,
      key = R.key,
      run = R.id,
      typed = R.timings.keystroke;
    this.drawing = true;
    this.again = false;
    this.tokens()
      .then((tok) => {
        const refused = E.tinyRefusal(tok); // the explorer's rule and words
        if (refused) {
          V.heads.hidden = true;
          V.say({ sentenceNote: refused });
          return null;
        }
        const off = P.switches.allOff(snap.h, P.knobs.layers());
        V.heads.classList.toggle("mha-train-all-off", off); // no pictures, the switches stay
        if (off) {
          return null;
        } // the ablation line says why
        const opts = { mask: P.switches.mask(snap.h), feeds: P.knobs.feeds() };
        return E.forwardWith(snap.params, snap.h, tok.ids, opts).then((attn) => {
          if (key !== R.key || run !== R.id || !R.snapshot) {
            return;
          } // reset or resized meanwhile
          this.draw({ step: snap.step, h: snap.h, L: tok.ids.length, attn: attn });
          // the benchmark's "keystroke to repaint": only a run that started
          // after the last keystroke drew what was typed
          if (typed != null && R.timings.keystroke === typed) {
            R.mark("keystroke", null);
            requestAnimationFrame(() => R.repainted(performance.now() - typed));
          }
        });
      })
      .catch((err) => {
        V.heads.hidden = true;
        V.say({
          sentenceNote:
            "Could not run the model on this sentence: " + (err.message || err) + "." + ADVICE,
        });
      })
      .then(() => {
        this.drawing = false;
        if (this.again) {
          this.probe();
        }
      });
  }

  // The sentence's tokens, with a note when some are cut or unknown.
  tokens() {
    const V = this.P.view;
    return E.tokenizeTiny(V.sentence.value).then((tok) => {
      this.words = tok.tokens;
      const notes = [];
      if (tok.total > tok.kept) {
        notes.push(
          "The model reads at most " +
            MAN.tiny_tokenizer.max_len +
            " tokens: kept the first " +
            tok.kept +
            " of " +
            tok.total +
            ".",
        );
      }
      if (tok.unk) {
        notes.push(
          tok.unk +
            " of " +
            tok.kept +
            " tokens are not in the task's word list and are shown as [UNK].",
        );
      }
      V.say({ sentenceNote: notes.join(" ") });
      return tok;
    });
  }

  // msg: {step, h, L, attn: one (h, L, L) row-major array per layer}.
  draw(msg) {
    const P = this.P,
      V = P.view,
      L = msg.L,
      h = msg.h,
      cell = Math.max(5, Math.floor(96 / L));
    const layers = Math.min(P.knobs.layers(), msg.attn.length),
      attn = msg.attn.slice(0, layers);
    if (!attn.every((A) => A.every(Number.isFinite))) {
      // never draw NaN: say so, and show no picture
      V.heads.hidden = true;
      V.say({
        sentenceNote:
          "The model's attention on this sentence is not a number at step " +
          msg.step +
          " (its weights diverged): nothing to draw.",
      });
      return;
    }
    const G = this.canvases(h, L, layers, cell);
    V.heads.hidden = false;
    attn.forEach((A, layer) => {
      for (let head = 0; head < h; head++) {
        paint(G.canvases[layer * h + head].getContext("2d"), A, head, L, cell);
      }
    });
    this.lastAttention = msg;
    this.titles();
  }

  // Each head's title and text alternative: its place and its role (a head
  // switched off has none: its pattern stays, but it writes nothing).
  titles() {
    const P = this.P,
      G = this.grids;
    if (!G) {
      return;
    }
    const toks = this.words.join(" ");
    G.titles.forEach((t, k) => {
      const l = Math.floor(k / G.h),
        i = k % G.h,
        off = P.switches.isOff(l, i, G.h);
      // with some heads off, the others' roles then
      const names = P.ablated ? P.ablated.roleNames : P.roleNames;
      const role = off ? null : names && names[l] ? names[l][i] : null;
      t.textContent =
        headName(l, i) +
        (off ? " · off" : role && role !== "mixed" ? " · " + ROLE_NAMES[role] : "");
      G.canvases[k].setAttribute(
        "aria-label",
        headWords(l, i) +
          (off ? ", switched off" : role ? ", role " + ROLE_NAMES[role] : "") +
          ': attention of each token of "' +
          toks +
          '" (rows) to the tokens before it (columns).',
      );
    });
  }
}
