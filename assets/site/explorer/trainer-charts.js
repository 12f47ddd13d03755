// The trainer's two charts: the loss over the steps, and the held-out
// accuracy per part with the baselines it is read against; both mark the
// step where lookup left its plateau. Each function takes Q, the panel.
import { el, pct } from "./dom.js";

const FONT = "12px sans-serif";
// Okabe-Ito colours, read by colour-blind readers; each curve also has a
// dash pattern of its own for the baseline, and a word in the key.
const PARTS = [
  { name: "overall", colour: "#0072b2" },
  { name: "previous word", colour: "#e69f00" },
  { name: "lookup", colour: "#009e73" },
];
const PHASE_COLOUR = "#cc79a7";
// The charts' text alternatives before there is anything to draw.
export const EMPTY = {
  loss: "Training loss: no steps yet",
  curves: "Held-out accuracy: no read-out yet",
};

// The phase change's line and its label; the label on a halo of the page's
// background, so that it stays readable where a curve runs under it (at a
// phone's width the curves fill the chart).
function phaseMark(g, x, top, bottom, W, ink, label, y) {
  g.save();
  g.strokeStyle = PHASE_COLOUR;
  g.lineWidth = 2;
  g.beginPath();
  g.moveTo(x, top);
  g.lineTo(x, bottom);
  g.stroke();
  g.restore();
  const lx = Math.min(x + 3, W - 6 - g.measureText(label).width),
    ly = y == null ? top + 12 : y;
  g.save();
  g.strokeStyle = getComputedStyle(document.body).backgroundColor || "#fff";
  g.lineWidth = 4;
  g.lineJoin = "round";
  g.strokeText(label, lx, ly);
  g.restore();
  g.fillStyle = ink;
  g.fillText(label, lx, ly);
}

// The loss over the steps so far (x: steps of the whole run).
export function chart(Q) {
  const c = Q.view.chart,
    g = c.getContext("2d"),
    W = c.width,
    H = c.height,
    pad = 34;
  g.clearRect(0, 0, W, H);
  const ink = getComputedStyle(c).color || "#222";
  g.fillStyle = ink;
  g.font = FONT;
  g.fillText("loss", 2, 12);
  const n = Q.losses.length,
    steps = Q.stepsTotal || (Q.config && Q.config.steps) || 1;
  c.hidden = !n; // no empty axes before the first step
  if (!n) {
    c.setAttribute("aria-label", EMPTY.loss);
    return;
  }
  const top = Math.max.apply(null, Q.losses.slice(0, Math.min(n, 50)).concat([1]));
  const xOf = (s) => pad + ((W - pad - 4) * s) / steps,
    yOf = (v) => H - 18 - ((H - 22) * Math.min(v, top)) / top;
  g.strokeStyle = "#888";
  g.beginPath();
  g.moveTo(pad, 4);
  g.lineTo(pad, H - 18);
  g.lineTo(W - 4, H - 18);
  g.stroke();
  g.fillText(top.toFixed(1), 2, 26);
  g.fillText("0", 20, H - 18);
  g.fillText("step " + steps, W - 72, H - 3);
  g.strokeStyle = PARTS[0].colour;
  g.lineWidth = 1.5;
  g.beginPath();
  Q.losses.forEach((v, i) => {
    if (i === 0) {
      g.moveTo(xOf(i + 1), yOf(v));
    } else {
      g.lineTo(xOf(i + 1), yOf(v));
    }
  });
  g.stroke();
  const lnV = Math.log(Q.vocab); // the loss of a uniform guess over the V words
  if (lnV <= top) {
    g.save();
    g.setLineDash([4, 3]);
    g.strokeStyle = "#888";
    g.lineWidth = 1;
    g.beginPath();
    g.moveTo(pad, yOf(lnV));
    g.lineTo(W - 4, yOf(lnV));
    g.stroke();
    g.restore();
    g.fillText("ln " + Q.vocab + " = " + lnV.toFixed(2), W - 112, yOf(lnV) - 3);
  }
  if (Q.phaseStep != null) {
    // its label half-way up, clear of ln V's (the loss has fallen by then)
    phaseMark(
      g,
      xOf(Q.phaseStep),
      4,
      H - 18,
      W,
      ink,
      "lookup jumps, step " + Q.phaseStep,
      Math.round(H / 2),
    );
  }
  c.setAttribute(
    "aria-label",
    "Training loss over " +
      n +
      " steps: from " +
      Q.losses[0].toFixed(2) +
      " to " +
      Q.losses[n - 1].toFixed(2) +
      "; dashed: ln " +
      Q.vocab +
      ", the loss of a uniform guess" +
      (Q.phaseStep != null ? "; lookup left its plateau at step " + Q.phaseStep : "") +
      ".",
  );
}

// Held-out accuracy per part over the steps (one point a read-out), with
// the previous-word rule (dashed, same colour) and chance (dotted), and
// the phase change marked.
export function curves(Q) {
  const c = Q.view.curves,
    g = c.getContext("2d"),
    W = c.width,
    H = c.height,
    left = 38,
    bottom = H - 18,
    top = 6;
  const E = Q.evals || [],
    steps = Q.stepsTotal || (Q.config && Q.config.steps) || 1;
  c.hidden = !E.length;
  Q.view.curveKey.hidden = !E.length;
  g.clearRect(0, 0, W, H);
  if (!E.length) {
    c.setAttribute("aria-label", EMPTY.curves);
    return;
  }
  const ink = getComputedStyle(c).color || "#222";
  const xOf = (s) => left + ((W - left - 6) * s) / steps,
    yOf = (a) => bottom - (bottom - top) * a;
  g.font = FONT;
  g.fillStyle = ink;
  g.strokeStyle = "#888";
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(left, top);
  g.lineTo(left, bottom);
  g.lineTo(W - 4, bottom);
  g.stroke();
  [0, 0.5, 1].forEach((a) => g.fillText(String(100 * a) + "%", 0, yOf(a) + 4));
  g.fillText("step " + steps, W - 72, H - 3);
  g.save();
  g.setLineDash([1, 3]);
  g.strokeStyle = ink; // chance
  g.beginPath();
  g.moveTo(left, yOf(Q.base.chance));
  g.lineTo(W - 4, yOf(Q.base.chance));
  g.stroke();
  g.restore();
  PARTS.forEach((part, k) => {
    // the previous-word rule
    g.save();
    g.setLineDash([6, 4]);
    g.strokeStyle = part.colour;
    g.globalAlpha = 0.8;
    const y = yOf(Q.base.previousWord[k]) + (k === 1 ? 1 : 0);
    g.beginPath();
    g.moveTo(left, y);
    g.lineTo(W - 4, y);
    g.stroke();
    g.restore();
  });
  if (Q.phaseStep != null) {
    phaseMark(g, xOf(Q.phaseStep), top, bottom, W, ink, "phase change, step " + Q.phaseStep);
  }
  PARTS.forEach((part, k) => {
    g.strokeStyle = part.colour;
    g.lineWidth = 2;
    g.beginPath();
    E.forEach((r, i) => {
      if (i === 0) {
        g.moveTo(xOf(r.step), yOf(r.accuracy[k]));
      } else {
        g.lineTo(xOf(r.step), yOf(r.accuracy[k]));
      }
    });
    g.stroke();
  });
  const last = E[E.length - 1];
  c.setAttribute(
    "aria-label",
    "Held-out accuracy over " +
      E.length +
      " read-outs to step " +
      last.step +
      ": overall " +
      pct(last.accuracy[0]) +
      ", previous word " +
      pct(last.accuracy[1]) +
      ", lookup " +
      pct(last.accuracy[2]) +
      "; dashed lines: the previous-word rule (" +
      Q.base.previousWord.map(pct).join(", ") +
      "); dotted: chance (" +
      pct(Q.base.chance) +
      ")" +
      (Q.phaseStep != null ? "; phase change at step " + Q.phaseStep : "") +
      ".",
  );
  if (!Q.view.curveKey.childNodes.length) {
    key(Q);
  }
}

// The key under the curves: each colour's part, and the two baselines.
function key(Q) {
  const b = Q.base.previousWord;
  PARTS.forEach((part, k) => {
    Q.view.curveKey.appendChild(
      el("span", {
        class: "mha-train-swatch",
        style: "background:" + part.colour,
        "aria-hidden": "true",
      }),
    );
    Q.view.curveKey.appendChild(document.createTextNode(part.name + " (rule " + pct(b[k]) + ") "));
  });
  Q.view.curveKey.appendChild(
    document.createTextNode(
      '— solid: your model; dashed: the rule "always answer the previous word"; dotted: chance, ' +
        "1/" +
        Q.vocab +
        " = " +
        pct(Q.base.chance) +
        ". Scored every " +
        Q.readEvery +
        " steps on the held-out set.",
    ),
  );
}
