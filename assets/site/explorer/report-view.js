// A report on screen and on paper: its curves, its predictions and grades,
// its roles and ablations (reportView), and the trainer's "Export report"
// and "Print report" controls (exportControls). The trainer's lab
// (trainer-lab.js) wires exportControls under a finished run (a function
// that returns the run: see buildReport in lab/report.js for its fields);
// the class page (class/class.js) shows a student's report with reportView.
import { el } from "./dom.js";
import { knobWords } from "./lab/knobs.js";
import { buildReport, reportFileName, reportText } from "./lab/report.js";
import { checkLink, shownText } from "./lab/site-link.js";
import { COLOURS, chart, key } from "./svg.js";

const PARTS = ["all", "previous", "lookup"];
const ROLE_SHORT = {
  previous: "P",
  induction: "I",
  duplicate: "D",
  self: "S",
  first: "F",
  mixed: "·",
};

function pct(x) {
  return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %";
}

// The loss of every step, and the held-out accuracy (its three parts) at
// every read-out, with the previous-word rule's lookup line and the phase
// change marked. `ruleLookup`: the rule's lookup accuracy.
export function curves(report, ruleLookup) {
  const c = report.curves,
    n = Math.max(report.settings.steps, 1);
  const loss = c.loss,
    top = Math.max(1, ...loss.slice(0, 50));
  const xs = loss.map((_, i) => i + 1);
  const lossChart = chart({
    w: 360,
    h: 150,
    xMax: n,
    yMax: Math.ceil(top),
    yTicks: [0, Math.ceil(top)],
    xTicks: [0, n],
    xLabel: "step",
    yLabel: "loss",
    series: [{ xs, ys: loss, colour: COLOURS[0] }],
    label:
      "Training loss over " +
      loss.length +
      " steps" +
      (loss.length
        ? ", from " + loss[0].toFixed(2) + " to " + loss[loss.length - 1].toFixed(2)
        : "") +
      ".",
  });
  const phase = report.phase_step;
  const accChart = chart({
    w: 360,
    h: 170,
    xMax: n,
    yMax: 1,
    yTicks: [0, 0.5, 1],
    yFormat: (t) => t * 100 + "%",
    xTicks: [0, n],
    xLabel: "step",
    yLabel: "held-out accuracy",
    series: PARTS.map((p, k) => ({
      xs: c.steps,
      ys: c.accuracy.map((a) => a[k]),
      colour: COLOURS[k],
      dash: k === 1 ? "5 2" : "none",
    })),
    hlines: [{ y: ruleLookup, label: "previous-word rule, lookup" }],
    vlines: phase === null ? [] : [{ x: phase, label: "phase change, step " + phase }],
    label:
      "Held-out accuracy at " +
      c.steps.length +
      " read-outs: all, previous part, lookup part; " +
      (phase === null
        ? "lookup never left the plateau."
        : "lookup left the plateau at step " + phase + "."),
  });
  return el("div", { class: "mha-report-curves" }, [
    lossChart,
    accChart,
    key(PARTS.map((p, k) => ({ colour: COLOURS[k], label: p }))),
  ]);
}

// A question's or an answer's id in words ("phase_step": "phase step",
// "200_399": "200–399"), and a read-out as the trainer shows it (a share
// as a percentage to one decimal, a step as a whole number).
export function words(id) {
  return String(id)
    .replace(/^(\d+)_(\d+)$/, "$1–$2")
    .replace(/_/g, " ");
}
export function valueText(v) {
  return typeof v !== "number" ? String(v) : Number.isInteger(v) ? "step " + v : pct(v);
}

function predictionsTable(report) {
  if (!report.predictions.length) {
    return el("p", { text: "No prediction was made before this run." });
  }
  const rows = report.predictions.map((p) =>
    el("tr", { class: "mha-grade-" + p.grade }, [
      el("td", { text: words(p.id) }),
      el("td", { text: words(p.prediction) }),
      el("td", {
        text:
          p.grade === "waiting"
            ? "not read yet"
            : p.grade === "not_applicable"
              ? "not graded on this run"
              : (p.answer === null ? "–" : words(p.answer)) +
                (p.value === null || p.value === p.answer ? "" : " (" + valueText(p.value) + ")"),
      }),
      el("td", { text: p.grade.replace("_", " ") }),
    ]),
  );
  return el("table", { class: "mha-report-grades" }, [
    el("caption", { text: "Predictions, and the run's read-out each was graded against" }),
    el("thead", {}, [
      el(
        "tr",
        {},
        ["question", "predicted", "the run", "grade"].map((t) =>
          el("th", { scope: "col", text: t }),
        ),
      ),
    ]),
    el("tbody", {}, rows),
  ]);
}

// The heads' roles at the first read-out, at the phase change and at the
// end, one letter a head (P previous token, I induction, D duplicate, S
// self, F first, · mixed), layer by layer.
function rolesLine(report) {
  const r = report.roles;
  if (!r.steps.length) {
    return el("p", { text: "No read-out of the roles." });
  }
  const pick = [0, r.steps.indexOf(report.phase_step), r.steps.length - 1].filter(
    (i, k, a) => i >= 0 && a.indexOf(i) === k,
  );
  const text = pick
    .map(
      (i) =>
        "step " +
        r.steps[i] +
        ": " +
        r.heads[i]
          .map((row, l) => "L" + (l + 1) + " " + row.map((x) => ROLE_SHORT[x] || "?").join(""))
          .join(", "),
    )
    .join("; ");
  return el("p", { class: "mha-report-roles" }, [
    "Roles (P previous token, I induction, D duplicate, S self, F first, · mixed) at " + text + ".",
  ]);
}

function ablationsLine(report) {
  if (!report.ablations.length) {
    return el("p", { text: "No head was switched off." });
  }
  return el(
    "ul",
    { class: "mha-report-ablations" },
    report.ablations.map((a) =>
      el("li", {
        text:
          a.off.join(", ") +
          " off at step " +
          a.step +
          ": accuracy " +
          pct(a.accuracy[0]) +
          ", lookup " +
          pct(a.accuracy[2]),
      }),
    ),
  );
}

// The whole report: who, which run, the curves, the grades, the roles, the
// ablations, the model's checksum and the experiment's link (a link only
// to this site's trainer: site-link.js). Fits one printed page. knobs:
// the manifest's train.knobs (those off their defaults are named).
export function reportView(report, ruleLookup, knobs) {
  const s = report.settings,
    last = report.curves.accuracy[report.curves.accuracy.length - 1];
  const link = Object.assign({ text: shownText(report.link) }, checkLink(report.link));
  const odd = knobWords(knobs, s);
  return el("section", { class: "mha-report", "aria-label": "Report of " + report.student }, [
    el("h3", { text: report.student + ": h = " + s.h + ", d_k = " + s.d_k + ", seed " + s.seed }),
    el("p", {
      class: "mha-report-meta",
      text:
        "d_model " +
        s.d_model +
        "; " +
        report.step +
        " of " +
        s.steps +
        " steps (" +
        report.state +
        ")" +
        (odd.length ? "; " + odd.join(", ") : "") +
        (report.patch
          ? "; patched on " +
            report.patch.pairs +
            " \u201c" +
            report.patch.corruption +
            "\u201d pairs"
          : "") +
        "; final accuracy " +
        pct(last && last[0]) +
        ", lookup " +
        pct(last && last[2]) +
        "; " +
        (report.phase_step === null
          ? "never left the plateau"
          : "phase change at step " + report.phase_step) +
        ".",
    }),
    curves(report, ruleLookup),
    predictionsTable(report),
    rolesLine(report),
    ablationsLine(report),
    el(
      "p",
      { class: "mha-report-meta" },
      [
        "Model checksum (SHA-256 of its float32 weights) ",
        el("code", { text: report.model.sha256.slice(0, 16) }),
        "…; course build ",
        el("code", { text: report.course.build }),
        "; saved " + report.created + "; ",
      ].concat(linkPart(link), ["."]),
    ),
    link.why
      ? el("p", {
          class: "mha-report-link-refused",
          text: "Its link is shown as text, not as a link: " + link.why + ".",
        })
      : null,
  ]);
}

// The report's link: a link only to this site's trainer (site-link.js);
// anything else as plain text.
function linkPart(link) {
  return link.href
    ? [el("a", { href: link.href, text: "the experiment's link", rel: "noopener" })]
    : ["the experiment's link ", el("code", { class: "mha-report-link-text", text: link.text })];
}

// Set the page up to print one report alone (the rest of the page hidden
// on paper); returns the function that undoes it.
export function preparePrint(report, ruleLookup, knobs) {
  const box = el("div", { class: "mha-report-print" }, [reportView(report, ruleLookup, knobs)]);
  document.body.appendChild(box);
  document.documentElement.classList.add("mha-printing-report");
  return () => {
    box.remove();
    document.documentElement.classList.remove("mha-printing-report");
  };
}

export function printReport(report, ruleLookup, knobs) {
  window.addEventListener("afterprint", preparePrint(report, ruleLookup, knobs), { once: true });
  window.print();
}

// Save a report as its file (no server: a download made in the page).
export function download(report) {
  const blob = new Blob([reportText(report)], { type: "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: reportFileName(report) });
  document.body.appendChild(a);
  a.click();
  setTimeout(() => {
    URL.revokeObjectURL(a.href);
    a.remove();
  }, 0);
  return blob.size;
}

// The trainer's controls under a run: the student's name, "Export report"
// and "Print report". getRun() returns the run (buildReport's argument,
// without student) or throws with the reason there is none yet. knobs:
// the manifest's train.knobs.
export function exportControls(getRun, ruleLookup, idPrefix = "mha-report", knobs = []) {
  const name = el("input", {
    type: "text",
    id: idPrefix + "-name",
    maxlength: "80",
    autocomplete: "name",
  });
  const save = el("button", { type: "button", class: "mha-report-export", text: "Export report" });
  const print = el("button", {
    type: "button",
    class: "mha-report-printbtn",
    text: "Print report",
  });
  const line = el("p", { class: "mha-report-status", role: "status" });
  const make = () =>
    Promise.resolve().then(() => buildReport(Object.assign({}, getRun(), { student: name.value })));
  save.addEventListener("click", () =>
    make()
      .then((r) => {
        const bytes = download(r);
        line.textContent =
          "Saved " +
          reportFileName(r) +
          " (" +
          (bytes / 1000).toFixed(1) +
          " KB). Hand this file in; it stays on your machine until you do.";
      })
      .catch((e) => {
        line.textContent = e.message + ".";
      }),
  );
  print.addEventListener("click", () =>
    make()
      .then((r) => printReport(r, ruleLookup, knobs))
      .catch((e) => {
        line.textContent = e.message + ".";
      }),
  );
  return el("div", { class: "mha-report-controls" }, [
    el("label", { for: name.id }, ["Your name ", name]),
    save,
    print,
    line,
  ]);
}
