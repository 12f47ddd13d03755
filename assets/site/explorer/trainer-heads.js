// Every head's attention on the panel's sentence, as a heatmap with its
// title (its place and role) and the switch that takes it out (the
// ablation, Switches). Only the layers the run has are drawn.
import { CMAP } from "./data.js";
import { el } from "./dom.js";
import { ROLE_NAMES, headName } from "./trainer-text.js";

// The canvases of the heads' pictures: made anew when the number of heads,
// layers or tokens changes, or when they are no longer in the box (Reset
// empties it).
function grids(Q, h, L, layers, cell) {
  let G = Q.grids;
  if (G && G.h === h && G.L === L && G.layers === layers && G.canvases.every((c) => Q.heads.contains(c))) { return G; }
  Q.heads.textContent = "";
  G = Q.grids = { h: h, L: L, layers: layers, canvases: [], titles: [] };
  for (let l = 0; l < layers; l++) {
    const row = el("div", { class: "mha-train-layer" }, [el("span", { class: "mha-train-layer-name", text: "Layer " + (l + 1) })]);
    for (let i = 0; i < h; i++) {
      const cv = el("canvas", { width: String(L * cell), height: String(L * cell), role: "img" });
      const title = el("span", { class: "mha-train-head-title" });
      row.appendChild(el("figure", { class: "mha-train-head" }, [cv, title, Q.switches.element(l, i, h)]));
      G.canvases.push(cv); G.titles.push(title);
    }
    Q.heads.appendChild(row);
  }
  return G;
}

// msg: {step, h, L, attn: one (h, L, L) row-major array per layer}.
export function heads(Q, msg) {
  const L = msg.L, h = msg.h, cell = Math.max(5, Math.floor(96 / L)), layers = Math.min(Q.knobs.layers(), msg.attn.length);
  const attn = msg.attn.slice(0, layers);
  if (!attn.every((A) => A.every(Number.isFinite))) { // never draw NaN: say so, and show no picture
    Q.heads.hidden = true;
    Q.sentenceNote.textContent = "The model's attention on this sentence is not a number at step " + msg.step +
      " (its weights diverged): nothing to draw.";
    return;
  }
  const G = grids(Q, h, L, layers, cell);
  Q.heads.hidden = false;
  attn.forEach((A, layer) => {
    for (let head = 0; head < h; head++) {
      const g = G.canvases[layer * h + head].getContext("2d"), img = g.createImageData(L * cell, L * cell);
      for (let q = 0; q < L; q++) {
        for (let k = 0; k < L; k++) {
          const rgb = CMAP[Math.max(0, Math.min(255, Math.round(255 * A[head * L * L + q * L + k])))];
          for (let dy = 0; dy < cell; dy++) {
            for (let dx = 0; dx < cell; dx++) {
              const o = 4 * ((q * cell + dy) * L * cell + k * cell + dx);
              img.data[o] = rgb[0]; img.data[o + 1] = rgb[1]; img.data[o + 2] = rgb[2]; img.data[o + 3] = 255;
            }
          }
        }
      }
      g.putImageData(img, 0, 0);
    }
  });
  Q.lastAttention = msg;
  titles(Q);
}

// Each head's title and text alternative: its place and its role (a head
// switched off has none: its pattern stays, but it writes nothing).
export function titles(Q) {
  const G = Q.grids;
  if (!G) { return; }
  const toks = (Q.probeTokens || []).join(" ");
  G.titles.forEach((t, k) => {
    const l = Math.floor(k / G.h), i = k % G.h, off = Q.switches.isOff(l, i, G.h);
    const names = Q.ablated ? Q.ablated.roleNames : Q.roleNames; // with some heads off, the others' roles then
    const role = off ? null : names && names[l] ? names[l][i] : null;
    t.textContent = headName(l, i) + (off ? " · off" : role && role !== "mixed" ? " · " + ROLE_NAMES[role] : "");
    G.canvases[k].setAttribute("aria-label", "Layer " + (l + 1) + ", head " + (i + 1) +
      (off ? ", switched off" : role ? ", role " + ROLE_NAMES[role] : "") + ": attention of each token of \"" + toks +
      "\" (rows) to the tokens before it (columns).");
  });
}
