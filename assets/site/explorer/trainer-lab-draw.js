// The book's run drawn faintly under the reader's accuracy curves (the
// panel's curves canvas, after trainer-charts.js's curves() has drawn it):
// the same axes, the same colour per part, a third as strong, and behind
// what is there (the canvas's "destination-over"). The geometry repeats
// curves()'s: the left margin, the bottom strip and the step scale.
// overall, previous word, lookup (trainer-charts.js)
const COLOURS = ["#0072b2", "#e69f00", "#009e73"];
const PARTS = ["accuracy", "previous", "lookup"];
const LEFT = 38,
  TOP = 6,
  BELOW = 18,
  RIGHT = 6;

// ref: a book run ({steps, seed, history: [{step, accuracy, previous,
// lookup}]}) or null; drawn on the panel's curves when they are shown.
export function faintCurves(P, ref) {
  const c = P.view.curves;
  if (!ref || c.hidden || !P.evals.length) {
    return false;
  }
  const g = c.getContext("2d"),
    W = c.width,
    H = c.height,
    bottom = H - BELOW;
  const steps = P.stepsTotal || (P.config && P.config.steps) || 1;
  const hist = ref.history.filter(
    (e) => e.step <= steps && PARTS.every((p) => Number.isFinite(e[p])),
  );
  if (!hist.length) {
    return false;
  }
  const xOf = (s) => LEFT + ((W - LEFT - RIGHT) * s) / steps,
    yOf = (a) => bottom - (bottom - TOP) * a;
  g.save();
  g.globalCompositeOperation = "destination-over";
  g.globalAlpha = 0.3;
  g.lineWidth = 3;
  PARTS.forEach((p, k) => {
    g.strokeStyle = COLOURS[k];
    g.beginPath();
    hist.forEach((e, i) => {
      if (i) {
        g.lineTo(xOf(e.step), yOf(e[p]));
      } else {
        g.moveTo(xOf(e.step), yOf(e[p]));
      }
    });
    g.stroke();
  });
  g.restore();
  const label = c.getAttribute("aria-label") || "";
  if (!/the book's run/.test(label)) {
    c.setAttribute(
      "aria-label",
      label + " Faint, under them: the book's run with these settings (seed " + ref.seed + ").",
    );
  }
  return true;
}
