// The class page's drawing: who handed in (a table), the step of the phase
// change against h and against d_k over the book's runs (two charts), the
// runs that never left the plateau or do not match their link, and the
// quiz key the class's runs give. It reads what class-read.js returns and
// draws into the elements class.js gives it; it keeps no state.
import { COLOURS, chart, el, key } from "./svg.js";
import { knobWords } from "../explorer/lab/knobs.js";

const BAND = { before_200: "before 200", "200_399": "200–399", "400_799": "400–799", "800_or_later": "800 or later", never: "never" };

export function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %"; }
const stepText = (s) => (s === null ? "never" : String(s));
const sizeText = (s) => "h = " + s.h + ", d_k = " + s.d_k;

// The knobs off their defaults (the manifest's train.knobs), in words.
const knobsText = (s, knobs) => knobWords(knobs, s).join(", ");

// One row a student: the run, what she predicted against what it showed,
// the read-outs, the link check, and the re-run cell (class.js fills it).
// knobs: the manifest's train.knobs.
export function table(runs, onShow, onRerun, canRerun, knobs) {
  const head = ["student", "h", "d_k", "seed", "steps", "options", "phase change", "predicted", "grade",
    "accuracy", "lookup", "P in L1", "I in L2", "ablations", "link", "re-run"];
  const rows = runs.map((run, i) => {
    const r = run.report, s = r.settings, last = r.curves.accuracy[r.curves.accuracy.length - 1] || [null, null, null];
    const end = r.roles.heads[r.roles.heads.length - 1] || [[], []];
    const p = r.predictions.find((q) => q.id === "phase_step");
    const show = el("button", { type: "button", class: "mha-class-show", text: r.student, "aria-label": "Show " + r.student + "'s report" });
    show.addEventListener("click", () => onShow(run));
    const again = el("button", { type: "button", class: "mha-class-rerun", text: "Re-run" });
    if (!canRerun) { again.disabled = true; again.title = "This page has no trainer to re-run with."; }
    again.addEventListener("click", () => onRerun(run, again.parentNode));
    const cells = [show, String(s.h), String(s.d_k), String(s.seed), r.step === s.steps ? String(r.step) : r.step + " of " + s.steps,
      knobsText(s, knobs) || "–", stepText(r.phase_step), p ? BAND[p.prediction] || p.prediction : "–", p ? p.grade.replace("_", " ") : "–",
      pct(last[0]), pct(last[2]),
      String((end[0] || []).filter((x) => x === "previous").length), String((end[1] || []).filter((x) => x === "induction").length),
      String(r.ablations.length), run.mismatch.length ? "does not match" : "matches", again];
    return el("tr", { "data-file": run.file, class: (r.phase_step === null ? "mha-class-plateau " : "") + (run.mismatch.length ? "mha-class-mismatch" : "") },
      cells.map((c, k) => el(k ? "td" : "th", k ? {} : { scope: "row" }, [c])));
  });
  return el("div", {}, [
    el("div", { class: "mha-class-scroll", tabindex: "0", role: "region", "aria-label": "The class's runs, one row a report" }, [
      el("table", { class: "mha-class-table" }, [
        el("caption", { text: "The class's " + runs.length + " reports" }),
        el("thead", {}, [el("tr", {}, head.map((t) => el("th", { scope: "col", text: t })))]),
        el("tbody", {}, rows)])]),
    el("p", { class: "mha-class-note", text: "Phase change: the first read-out at which held-out lookup accuracy beats the " +
      "previous-word rule's by 10 points. Predicted: the step band the student chose before the run. Accuracy and lookup: " +
      "held-out, at the last read-out. P in L1, I in L2: heads named previous token in layer 1 and induction in layer 2 " +
      "at the last read-out. Ablations: the sets of heads switched off. Click a name for the student's report." })]);
}

// The step of the phase change against one size (h or d_k, log2 axis), the
// class's runs in colour over the book's in grey; runs that never left the
// plateau on the "never" row at the top.
function sizeChart(runs, ref, axis) {
  const vals = runs.map((x) => x.report.settings[axis]).concat(ref.points.map((p) => p[axis]), ref.sweep.map((p) => p[axis]));
  const lo = 0, hi = Math.max(1, Math.ceil(Math.log2(Math.max(...vals))));
  const maxStep = Math.max(800, ...runs.map((x) => x.report.settings.steps), ...ref.points.map((p) => p.steps));
  const never = maxStep * 1.1, ticks = [];
  for (let t = lo; t <= hi; t++) { ticks.push(t); }
  const pt = (v, step) => ({ x: Math.log2(v) - lo + 0.3, y: step === null ? never : step });
  const points = [];
  ref.points.forEach((p) => points.push(Object.assign(pt(p[axis], p.phase_step), { colour: "#767676", shape: p.phase_step === null ? "x" : "ring",
    cls: "mha-class-book", title: "book (" + p.source + " " + p.name + "): h = " + p.h + ", d_k = " + p.d_k + ", seed " + p.seed + ": " + stepText(p.phase_step) })));
  ref.sweep.filter((p) => !p.left).forEach((p) => points.push(Object.assign(pt(p[axis], null), { colour: "#767676", shape: "x",
    cls: "mha-class-book", title: "chapter 8's sweep: h = " + p.h + ", d_k = " + p.d_k + ", seed " + p.seed + ": never" })));
  runs.forEach((x, i) => {
    const r = x.report, at = pt(r.settings[axis], r.phase_step);
    at.x += ((i % 5) - 2) * 0.06; // side by side, not on top of each other
    points.push(Object.assign(at, { colour: r.phase_step === null ? COLOURS[1] : COLOURS[0],
      shape: r.phase_step === null ? "x" : "dot", cls: "mha-class-run", title: r.student + ": " + sizeText(r.settings) + ", seed " + r.settings.seed + ": " + stepText(r.phase_step) }));
  });
  const shown = runs.filter((x) => x.report.phase_step !== null).length;
  return chart({ w: 380, h: 220, xMax: hi - lo + 0.6, yMax: never, xTicks: ticks.map((t) => t + 0.3), xFormat: (t) => String(2 ** Math.round(t - 0.3 + lo)),
    yTicks: [0, 400, 800, maxStep > 1000 ? 1200 : null, never].filter((t) => t !== null), yFormat: (t) => (t === never ? "never" : String(t)),
    xLabel: axis === "h" ? "h (heads)" : "d_k (width of a head)", yLabel: "step of the phase change", points,
    label: "Step of the phase change against " + axis + ": " + shown + " of the class's " + runs.length + " runs left the plateau; the book's " +
      ref.points.length + " recorded runs in grey." });
}

export function charts(runs, ref) {
  const grid = ref.points.filter((p) => p.source === "grid");
  const every = [...new Set(ref.points.map((p) => p.every))].sort((a, b) => a - b).join(" or ");
  const stuck = ref.sweep.filter((p) => !p.left);
  return el("div", { class: "mha-class-charts" }, [
    el("div", { class: "mha-class-chart-row" }, [sizeChart(runs, ref, "h"), sizeChart(runs, ref, "d_k")]),
    key([{ colour: COLOURS[0], label: "a student's run", shape: "dot" }, { colour: COLOURS[1], label: "a student's run that never left the plateau", shape: "x" },
      { colour: "#767676", label: "the book's runs", shape: "ring" }]),
    el("p", { class: "mha-class-note", text: "Grey: the book's runs, read with the same rule: the trained grid (" + grid.length +
      " models, seed 0) and chapter 11's " + (ref.points.length - grid.length) + " runs of h = 4, d_k = 16, recorded every " + every +
      " steps, so their steps are known to that many steps. Chapter 8's sweep (d_model = 64, " + (ref.sweep[0] ? ref.sweep[0].steps : "–") +
      " steps) kept only each run's final accuracy: its " + stuck.length + " runs that never left the plateau (h = " +
      [...new Set(stuck.map((p) => p.h))].join(", ") + ") are the grey crosses on the \"never\" row; the others left it, at a step it did not record." }),
  ]);
}

// The runs to talk about: never left the plateau; do not match their link.
export function lists(runs, knobs) {
  const stuck = runs.filter((x) => x.report.phase_step === null);
  const odd = runs.filter((x) => x.mismatch.length);
  const item = (x, extra) => el("li", { text: x.report.student + " (" + x.file + "): " + sizeText(x.report.settings) + ", seed " + x.report.settings.seed +
    (knobsText(x.report.settings, knobs) ? ", " + knobsText(x.report.settings, knobs) : "") + extra });
  return el("div", { class: "mha-class-lists" }, [
    el("h3", { text: "Never left the plateau (" + stuck.length + ")" }),
    stuck.length ? el("ul", { class: "mha-class-stuck" }, stuck.map((x) => item(x, ", " + x.report.step + " steps"))) : el("p", { text: "Every run left the plateau." }),
    el("h3", { text: "Does not match its own link (" + odd.length + ")" }),
    odd.length ? el("ul", { class: "mha-class-odd" }, odd.map((x) => item(x, ": " + x.mismatch.join("; ")))) :
      el("p", { text: "Every report has the settings its link names." }),
  ]);
}

// The quiz key from the class's runs (the lesson's questions, by number).
export function quiz(stats) {
  const prev = Object.keys(stats.previousIn).sort().map((k) => k + ": " + stats.previousIn[k]).join(", ");
  const byH = stats.medianByH.map((m) => "h = " + m.h + ": step " + m.median + " (" + m.n + (m.n === 1 ? " run" : " runs") + ")").join("; ");
  const sp = stats.spread;
  const items = [
    "Q1. Runs that left the plateau: " + stats.left + " of " + stats.runs + ".",
    "Q2. Median step of the phase change at d_model = 64, by h: " + (byH || "no run of d_model 64 left the plateau") + ".",
    "Q3. Where the previous-token heads were at the end (runs): " + (prev || "–") + ".",
    "Q4. Phase-change predictions graded right: " + stats.right + " of " + stats.predicted + ".",
    "Q5. " + (sp ? "The settings most of the class ran, " + sp.size + " (h × d_k and the knobs off their defaults, " + sp.n +
      " runs): phase change from step " +
      stepText(sp.lo) + " to " + stepText(sp.hi) + ", " + sp.never + " never." : "No run."),
    "Q6. Lookup accuracy with every head of layer 1 off (median of " + stats.layer1Off.n + " runs that tried it): " + pct(stats.layer1Off.median) + ".",
  ];
  return el("ol", { class: "mha-class-quiz" }, items.map((t) => el("li", { text: t })));
}
