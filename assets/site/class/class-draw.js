// The class page's drawing: who handed in (a table), the step of the phase
// change against h and against d_k over the book's runs (two charts), the
// runs that never left the plateau or do not match their link, and the
// quiz key the class's runs give. It reads what class-read.js returns and
// draws into the elements class.js gives it; it keeps no state.
import { el } from "../explorer/dom.js";
import { knobWords } from "../explorer/lab/knobs.js";
import { COLOURS, chart, key } from "../explorer/svg.js";

const BAND = {
  before_200: "before 200",
  "200_399": "200–399",
  "400_799": "400–799",
  "800_or_later": "800 or later",
  never: "never",
};

export function pct(x) {
  return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %";
}
const stepText = (s) => (s === null ? "never" : String(s));
const sizeText = (s) => "h = " + s.h + ", d_k = " + s.d_k;

// The knobs off their defaults (the manifest's train.knobs), in words.
const knobsText = (s, knobs) => knobWords(knobs, s).join(", ");

// One row a student: the run, what she predicted against what it showed,
// the read-outs, the link check, and the re-run cell (class.js fills it).
// knobs: the manifest's train.knobs.
export function table(runs, onShow, onRerun, canRerun, knobs) {
  const head = [
    "student",
    "h",
    "d_k",
    "seed",
    "steps",
    "options",
    "phase change",
    "predicted",
    "grade",
    "accuracy",
    "lookup",
    "P in L1",
    "I in L2",
    "ablations",
    "link",
    "re-run",
  ];
  const rows = runs.map((run, i) => {
    const r = run.report,
      s = r.settings,
      last = r.curves.accuracy[r.curves.accuracy.length - 1] || [null, null, null];
    const end = r.roles.heads[r.roles.heads.length - 1] || [[], []];
    const p = r.predictions.find((q) => q.id === "phase_step");
    const show = el("button", {
      type: "button",
      class: "mha-class-show",
      text: r.student,
      "aria-label": "Show " + r.student + "'s report",
    });
    show.addEventListener("click", () => onShow(run));
    const again = el("button", { type: "button", class: "mha-class-rerun", text: "Re-run" });
    if (!canRerun) {
      again.disabled = true;
      again.title = "This page has no trainer to re-run with.";
    }
    again.addEventListener("click", () => onRerun(run, again.parentNode));
    const cells = [
      show,
      String(s.h),
      String(s.d_k),
      String(s.seed),
      r.step === s.steps ? String(r.step) : r.step + " of " + s.steps,
      knobsText(s, knobs) || "–",
      stepText(r.phase_step),
      p ? BAND[p.prediction] || p.prediction : "–",
      p ? p.grade.replace("_", " ") : "–",
      pct(last[0]),
      pct(last[2]),
      String((end[0] || []).filter((x) => x === "previous").length),
      String((end[1] || []).filter((x) => x === "induction").length),
      String(r.ablations.length),
      run.mismatch.length ? "does not match" : "matches",
      again,
    ];
    return el(
      "tr",
      {
        "data-file": run.file,
        class:
          (r.phase_step === null ? "mha-class-plateau " : "") +
          (run.mismatch.length ? "mha-class-mismatch" : ""),
      },
      cells.map((c, k) => el(k ? "td" : "th", k ? {} : { scope: "row" }, [c])),
    );
  });
  return el("div", {}, [
    el(
      "div",
      {
        class: "mha-class-scroll",
        tabindex: "0",
        role: "region",
        "aria-label": "The class's runs, one row a report",
      },
      [
        el("table", { class: "mha-class-table" }, [
          el("caption", { text: "The class's " + runs.length + " reports" }),
          el("thead", {}, [
            el(
              "tr",
              {},
              head.map((t) => el("th", { scope: "col", text: t })),
            ),
          ]),
          el("tbody", {}, rows),
        ]),
      ],
    ),
    el("p", {
      class: "mha-class-note",
      text:
        "Phase change: the first read-out at which held-out lookup accuracy beats the " +
        "previous-word rule's by 10 points. Predicted: the step band the student chose before " +
        "the run. Accuracy and lookup: " +
        "held-out, at the last read-out. P in L1, I in L2: heads named previous token in layer " +
        "1 and induction in layer 2 " +
        "at the last read-out. Ablations: the sets of heads switched off. Click a name for the " +
        "student's report.",
    }),
  ]);
}

// The step of the phase change against one size (h or d_k, log2 axis), the
// class's distinct runs in colour, each named, over the book's in grey
// (those with every knob at its default); runs that never left the plateau
// on the "never" row at the top. distinct: distinctRuns' list.
function sizeChart(distinct, book, ref, axis) {
  const vals = distinct
    .map((d) => d.report.settings[axis])
    .concat(
      book.map((p) => p[axis]),
      ref.sweep.map((p) => p[axis]),
    );
  const lo = 0,
    hi = Math.max(1, Math.ceil(Math.log2(Math.max(...vals))));
  const maxStep = Math.max(
    800,
    ...distinct.map((d) => d.report.settings.steps),
    ...book.map((p) => p.steps),
  );
  const never = maxStep * 1.1,
    ticks = [];
  for (let t = lo; t <= hi; t++) {
    ticks.push(t);
  }
  const pt = (v, step) => ({ x: Math.log2(v) - lo + 0.3, y: step === null ? never : step });
  const points = [];
  book.forEach((p) =>
    points.push(
      Object.assign(pt(p[axis], p.phase_step), {
        colour: "#767676",
        shape: p.phase_step === null ? "x" : "ring",
        cls: "mha-class-book",
        title:
          "book (" +
          p.source +
          " " +
          p.name +
          "): h = " +
          p.h +
          ", d_k = " +
          p.d_k +
          ", seed " +
          p.seed +
          ": " +
          stepText(p.phase_step),
      }),
    ),
  );
  ref.sweep
    .filter((p) => !p.left)
    .forEach((p) =>
      points.push(
        Object.assign(pt(p[axis], null), {
          colour: "#767676",
          shape: "x",
          cls: "mha-class-book",
          title:
            "chapter 8's sweep: h = " + p.h + ", d_k = " + p.d_k + ", seed " + p.seed + ": never",
        }),
      ),
    );
  distinct.forEach((d, i) => {
    const r = d.report,
      at = pt(r.settings[axis], r.phase_step);
    at.x += ((i % 5) - 2) * 0.06; // side by side, not on top of each other
    const names = d.students.join(", ");
    points.push(
      Object.assign(at, {
        colour: r.phase_step === null ? COLOURS[1] : COLOURS[0],
        shape: r.phase_step === null ? "x" : "dot",
        cls: "mha-class-run",
        label: names.length > 18 ? names.slice(0, 17) + "…" : names,
        title:
          names +
          ": " +
          sizeText(r.settings) +
          ", seed " +
          r.settings.seed +
          ": " +
          stepText(r.phase_step),
      }),
    );
  });
  const shown = distinct.filter((d) => d.report.phase_step !== null).length;
  return chart({
    w: 380,
    h: 220,
    xMax: hi - lo + 0.6,
    yMax: never,
    xTicks: ticks.map((t) => t + 0.3),
    xFormat: (t) => String(2 ** Math.round(t - 0.3 + lo)),
    yTicks: [0, 400, 800, maxStep > 1000 ? 1200 : null, never].filter((t) => t !== null),
    yFormat: (t) => (t === never ? "never" : String(t)),
    xLabel: axis === "h" ? "h (heads)" : "d_k (width of a head)",
    yLabel: "step of the phase change",
    points,
    label:
      "Step of the phase change against " +
      axis +
      ": " +
      shown +
      " of the class's " +
      distinct.length +
      " distinct runs left the plateau; the book's " +
      book.length +
      " recorded runs with every knob at its default in grey.",
  });
}

export function charts(distinct, ref) {
  const book = ref.points.filter((p) => !Object.keys(p.knobs || {}).length);
  const grid = book.filter((p) => p.source === "grid");
  const every = [...new Set(book.map((p) => p.every))].sort((a, b) => a - b).join(" or ");
  const stuck = ref.sweep.filter((p) => !p.left);
  return el("div", { class: "mha-class-charts" }, [
    el("div", { class: "mha-class-chart-row" }, [
      sizeChart(distinct, book, ref, "h"),
      sizeChart(distinct, book, ref, "d_k"),
    ]),
    key([
      {
        colour: COLOURS[0],
        label: "a student's run (named; copies of one run are one point)",
        shape: "dot",
      },
      { colour: COLOURS[1], label: "a student's run that never left the plateau", shape: "x" },
      { colour: "#767676", label: "the book's runs", shape: "ring" },
    ]),
    el("p", {
      class: "mha-class-note",
      text:
        "Grey: the book's runs with every knob at its default, read with the same rule: the " +
        "trained grid (" +
        grid.length +
        " models, seed 0) and chapter 11's " +
        (book.length - grid.length) +
        " runs of h = 4, d_k = 16, recorded every " +
        every +
        " steps, so their steps are known to that many steps" +
        (ref.points.length > book.length
          ? " (its " +
            (ref.points.length - book.length) +
            " runs with a knob off its default are left out)"
          : "") +
        ". Chapter 8's sweep (d_model = 64, " +
        (ref.sweep[0] ? ref.sweep[0].steps : "–") +
        " steps) kept only each run's final accuracy: its " +
        stuck.length +
        " runs that never left the plateau (h = " +
        [...new Set(stuck.map((p) => p.h))].join(", ") +
        ') are the grey crosses on the "never" row; the others left it, at a step it did not ' +
        "record.",
    }),
  ]);
}

// The runs to talk about: never left the plateau; do not match their link.
export function lists(runs, knobs) {
  const stuck = runs.filter((x) => x.report.phase_step === null);
  const odd = runs.filter((x) => x.mismatch.length);
  const item = (x, extra) =>
    el("li", {
      text:
        x.report.student +
        " (" +
        x.file +
        "): " +
        sizeText(x.report.settings) +
        ", seed " +
        x.report.settings.seed +
        (knobsText(x.report.settings, knobs) ? ", " + knobsText(x.report.settings, knobs) : "") +
        extra,
    });
  return el("div", { class: "mha-class-lists" }, [
    el("h3", { text: "Never left the plateau (" + stuck.length + ")" }),
    stuck.length
      ? el(
          "ul",
          { class: "mha-class-stuck" },
          stuck.map((x) => item(x, ", " + x.report.step + " steps")),
        )
      : el("p", { text: "Every run left the plateau." }),
    el("h3", { text: "Does not match its own link (" + odd.length + ")" }),
    odd.length
      ? el(
          "ul",
          { class: "mha-class-odd" },
          odd.map((x) => item(x, ": " + x.mismatch.join("; "))),
        )
      : el("p", { text: "Every report has the settings its link names." }),
  ]);
}

const runsText = (n) => n + (n === 1 ? " run" : " runs");
const seedsText = (g) => (g.seeds.length === 1 ? "seed " : "seeds ") + g.seeds.join(", ");
const prevText = (prev) =>
  Object.keys(prev)
    .sort()
    .map((k) => k + " " + prev[k])
    .join(", ");

// The quiz key from the class's runs (the lesson's questions, by number):
// every line over distinct runs, one group a setting (all but the seed),
// each with the runs it rests on.
export function quiz(stats) {
  const gs = stats.groups,
    spread = gs.filter((g) => g.n > 1);
  const each = (f) => gs.map((g) => g.setting + " (" + seedsText(g) + "): " + f(g)).join("; ");
  const c = stats.constant;
  const items = [
    "Q1. Runs that left the plateau: " +
      stats.left +
      " of " +
      stats.runs +
      " distinct runs (" +
      stats.reports +
      " reports). By setting: " +
      each((g) => g.left + " of " + g.n) +
      ".",
    "Q2. Median step of the phase change at d_model = 64, every knob at its default, by h: " +
      (stats.byH.length
        ? stats.byH
            .map(
              (m) =>
                "h = " +
                m.h +
                ": " +
                (m.median === null ? "none left the plateau" : "step " + m.median) +
                " (" +
                m.left +
                " of " +
                runsText(m.n) +
                ")",
            )
            .join("; ")
        : "no such run") +
      ".",
    "Q3. Where the previous-token heads were at the end (distinct runs): " +
      each((g) => prevText(g.previousIn)) +
      ".",
    "Q4. Phase-change predictions graded right: " +
      stats.right +
      " of " +
      stats.predicted +
      "." +
      (c
        ? ' The best constant answer, "' +
          (BAND[c.band] || c.band) +
          '" every time, would have been right ' +
          c.right +
          " of " +
          stats.predicted +
          " times: the class did " +
          (stats.right > c.right
            ? "better than"
            : stats.right === c.right
              ? "as well as"
              : "worse than") +
          " it."
        : ""),
    "Q5. " +
      (spread.length
        ? "Runs that differ only in the seed: " +
          spread
            .map(
              (g) =>
                g.setting +
                " (" +
                runsText(g.n) +
                ", " +
                seedsText(g) +
                "): " +
                (g.left
                  ? "phase change from step " + g.lo + " to " + g.hi
                  : "none left the plateau") +
                (g.left && g.never ? ", " + g.never + " never" : ""),
            )
            .join("; ") +
          "."
        : "No two distinct runs share their settings: give each student her own seed (Links for " +
          "the class, above)."),
    "Q6. Lookup accuracy with every head of layer 1 off (median over the runs that tried it): " +
      (gs.some((g) => g.layer1Off.n)
        ? gs
            .filter((g) => g.layer1Off.n)
            .map(
              (g) =>
                g.setting + ": " + pct(g.layer1Off.median) + " (" + runsText(g.layer1Off.n) + ")",
            )
            .join("; ")
        : "no run tried it") +
      ".",
  ];
  return el(
    "ol",
    { class: "mha-class-quiz" },
    items.map((t) => el("li", { text: t })),
  );
}
