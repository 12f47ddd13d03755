// The class page (chapters/class.md): the teacher picks or drops the
// class's report files; the page reads them where they are (File.text(),
// no request carries them anywhere) and shows who handed in, what each
// predicted against what each run showed, the step of the phase change
// against h and d_k over the book's runs, the runs that never left the
// plateau or do not match their link, and the quiz key. A file that is not
// a good report gets one line; the rest of the class still shows.
//
// The page's one entry: mountClass(root, {runner, parseLink}). It loads
// three files of this site: the explorer's manifest (the build, the
// previous-word rule, the model's sizes), this format's schema and the book's
// runs (scripts/class_reference.py). runner(settings, steps, link), when the
// trainer page wires one, re-runs a report's link in this page and returns
// a promise of {loss, steps, accuracy, sha256}.
import {
  MAX_BYTES,
  TOLERANCE,
  classStats,
  compareRerun,
  distinctRuns,
  parseLink,
  readClass,
} from "./class-read.js";
import { charts, lists, quiz, table } from "./class-draw.js";
import { linksForm } from "./links.js";
import { el } from "../explorer/dom.js";
import { buildId } from "../explorer/lab/report.js";
import { fetchJSON } from "../explorer/ort.js";
import { printReport, reportView } from "../explorer/report-view.js";

const STATIC = new URL("../", import.meta.url).href; // .../_static/
const pages = [];
export function classPages() {
  return pages;
}

async function getJSON(path) {
  return fetchJSON(new URL(path, STATIC).href);
}

// Parameters of the tiny model of width d (the manifest's shapes: each
// dimension a * d_model + b), as the trainer counts them.
function paramCounter(man) {
  return (d) =>
    man.train.params.reduce((n, p) => n + p.dims.reduce((m, ab) => m * (ab[0] * d + ab[1]), 1), 0);
}

function toleranceText(positions) {
  const pts = ((100 * TOLERANCE.positions) / positions).toFixed(3);
  return (
    "A re-run agrees with its report when every loss is within " +
    TOLERANCE.lossRel.toExponential(0) +
    " of the report's (relative) and every held-out accuracy within " +
    TOLERANCE.positions +
    " of the " +
    positions.toLocaleString("en-US") +
    " scored positions (" +
    pts +
    " points). Not bit for bit: the page computes in " +
    "float32 with WebAssembly, whose results may differ in the last bits from one CPU or " +
    "browser to another " +
    "(WebAssembly's relaxed SIMD instructions, which an engine may use, are allowed to fuse a " +
    "multiply and an add " +
    "on one machine and not on another), and a " +
    "difference in the last bit of one step moves every later step a little. The book's own " +
    "parity figures set the " +
    "scale: a page run and its Python line, two different engines, agree to about 2.5e-7 in " +
    "loss (relative) at the first " +
    "step, but the gap grows as the run goes on, to about 7e-5 by the end of a whole run, and " +
    "to 1 scored position in " +
    "accuracy. The tolerance is over ten times that gap, and is still far smaller than any " +
    "edit one would make by hand (one point of accuracy is " +
    Math.round(positions / 100) +
    " positions)."
  );
}

export async function mountClass(root, opts = {}) {
  root.textContent = "";
  const status = el("p", {
    class: "mha-class-status",
    role: "status",
    text: "Loading the course's data …",
  });
  root.appendChild(status);
  let man, ref, schema, build;
  try {
    [man, ref, schema] = await Promise.all([
      getJSON("explorer-data/manifest.json"),
      getJSON("class-data/reference.json"),
      getJSON("class/report.schema.json"),
    ]);
  } catch (e) {
    status.textContent =
      "The class page's data did not load (" + e.message + "); rebuild the site with `make book`.";
    return null;
  }
  try {
    build = await buildId(man);
  } catch (e) {
    // no SHA-256: no crypto.subtle, and the build lacks its fallback
    status.textContent = "The class page cannot check reports here: " + e.message + ".";
    return null;
  }
  const page = { runner: opts.runner || null, files: new Map(), lastOpenMs: null, result: null };
  const positions = man.train.heldout_n * (man.train.batch[1] - 1);
  const ruleLookup = man.train.baselines["previous word"].lookup;
  const ctx = {
    schema,
    build,
    ruleLookup,
    margin: man.train.phase_margin,
    paramCount: paramCounter(man),
    parseLink: opts.parseLink || parseLink,
    knobs: man.train.knobs || [],
    patch: man.train.patch || null,
  };

  const projector = el("button", {
    type: "button",
    class: "mha-class-projector-btn",
    "aria-pressed": "false",
    text: "Projector view",
  });
  projector.addEventListener("click", () => {
    const on = root.classList.toggle("mha-class-projecting");
    projector.setAttribute("aria-pressed", String(on));
    projector.textContent = on ? "Leave projector view" : "Projector view";
  });
  root.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && root.classList.contains("mha-class-projecting")) {
      projector.click();
    }
  });
  const input = el("input", {
    type: "file",
    id: "mha-class-files",
    multiple: "",
    accept: ".json,application/json",
  });
  const clear = el("button", { type: "button", class: "mha-class-clear", text: "Clear" });
  const drop = el("div", { class: "mha-class-drop" }, [
    el("label", { for: input.id, text: "Choose the class's report files" }),
    " ",
    input,
    " ",
    clear,
    el("p", {
      text: "or drop them here. The files are read in this browser: nothing is sent anywhere.",
    }),
    projector,
  ]);
  const problems = el("ul", { class: "mha-class-problems", "aria-label": "Files set aside" });
  const out = el("div", { class: "mha-class-out" });
  const detail = el("div", { class: "mha-class-detail", "aria-live": "polite" });
  status.textContent =
    "No report yet: choose or drop the class's report-*.json files. This site is build " +
    ctx.build +
    ".";
  root.append(
    linksForm(),
    drop,
    status,
    problems,
    out,
    detail,
    el("h2", { id: "re-running-a-report", text: "Re-running a report" }),
    el("p", { class: "mha-class-tolerance", text: toleranceText(positions) }),
    el("p", {
      class: "mha-class-runner",
      text: page.runner
        ? "Re-run: ready."
        : "Re-run needs the trainer's engine in this page; until it is wired here, the Re-run " +
          "buttons are off.",
    }),
  );

  const showReport = (run) => {
    detail.textContent = "";
    const close = el("button", { type: "button", class: "mha-class-close", text: "Close" });
    close.addEventListener("click", () => {
      detail.textContent = "";
    });
    const print = el("button", {
      type: "button",
      class: "mha-class-close",
      text: "Print this report",
    });
    print.addEventListener("click", () => printReport(run.report, ruleLookup, ctx.knobs));
    detail.append(
      el("h2", { text: run.report.student + "'s report (" + run.file + ")" }),
      reportView(run.report, ruleLookup, ctx.knobs),
      print,
      " ",
      close,
    );
    detail.scrollIntoView({ block: "nearest" });
  };

  const rerun = (run, cell) => {
    if (!page.runner) {
      return;
    }
    const r = run.report;
    const note = el("span", {
      class: "mha-class-rerun-note",
      text: " re-running " + r.step + " steps …",
    });
    cell.appendChild(note);
    Promise.resolve()
      .then(() => page.runner(r.settings, r.step, r.link))
      .then((again) => {
        const c = compareRerun(r, again, positions);
        run.rerun = c;
        note.textContent =
          " " +
          (c.agrees ? "agrees" : "differs") +
          ": loss within " +
          c.lossRel.toExponential(1) +
          " relative, accuracy within " +
          c.positions.toFixed(1) +
          " positions" +
          (c.sameBits ? "; the same model, bit for bit" : "") +
          (c.complete ? "" : "; the re-run stopped early") +
          ".";
        cell.parentNode.classList.toggle("mha-class-differs", !c.agrees);
      })
      .catch((e) => {
        note.textContent = " the re-run failed: " + e.message + ".";
      });
  };

  const draw = async (t0 = performance.now()) => {
    const files = Array.from(page.files, ([name, f]) => ({ name, text: f.text, size: f.size }));
    const got = await readClass(files, ctx);
    const trusted = got.runs.filter((x) => !x.mismatch.length);
    const distinct = distinctRuns(trusted, ctx.knobs),
      copies = distinct.filter((d) => d.reports > 1);
    problems.textContent = "";
    got.problems.forEach((p) => problems.appendChild(el("li", { text: p.line })));
    out.textContent = "";
    detail.textContent = "";
    if (got.runs.length) {
      out.append(
        el("h2", { id: "who-handed-in", text: "Who handed in" }),
        table(got.runs, showReport, rerun, !!page.runner, ctx.knobs),
        el("p", {
          class: "mha-class-copies",
          text:
            "The same link gives the same run, to the bit: the " +
            trusted.length +
            " reports that match their links are " +
            distinct.length +
            " distinct runs." +
            (copies.length
              ? " One run handed in more than once: " +
                copies
                  .map(
                    (d) =>
                      d.students.join(" = ") +
                      " (" +
                      d.setting +
                      ", seed " +
                      d.report.settings.seed +
                      ")",
                  )
                  .join("; ") +
                ". Each counts once below."
              : ""),
        }),
        el("h2", {
          id: "the-phase-change-against-h-and-d-k",
          text: "The phase change against h and d_k",
        }),
        charts(distinct, ref),
        lists(got.runs, ctx.knobs),
        el("h2", { id: "quiz-key", text: "Quiz key from the class's runs" }),
        el("p", {
          text:
            "From the " +
            distinct.length +
            " distinct runs of the " +
            trusted.length +
            " reports that match their links, grouped by every " +
            "setting but the seed (the lesson's questions, chapter 11's class plan).",
        }),
        quiz(classStats(trusted, ctx.knobs)),
      );
    }
    await new Promise((ok) => requestAnimationFrame(() => ok()));
    page.lastOpenMs = performance.now() - t0;
    page.result = got;
    status.textContent =
      "Read " +
      files.length +
      (files.length === 1 ? " file" : " files") +
      " in " +
      Math.round(page.lastOpenMs) +
      " ms: " +
      got.runs.length +
      " reports shown, " +
      got.problems.length +
      " set aside" +
      (got.problems.length ? " (below)" : "") +
      ". This site is build " +
      ctx.build +
      ".";
  };

  // Read the files chosen or dropped (one too large to be a report is not
  // read), then draw: lastOpenMs counts both.
  const add = async (list) => {
    const t0 = performance.now();
    await Promise.all(
      Array.from(list, async (f) => {
        page.files.set(f.name, { size: f.size, text: f.size > MAX_BYTES ? null : await f.text() });
      }),
    );
    await draw(t0);
  };
  input.addEventListener("change", () => {
    add(input.files).then(() => {
      input.value = "";
    });
  });
  clear.addEventListener("click", () => {
    page.files.clear();
    draw();
  });
  root.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("mha-class-over");
  });
  root.addEventListener("dragleave", () => drop.classList.remove("mha-class-over"));
  root.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("mha-class-over");
    add(e.dataTransfer.files);
  });
  page.setRunner = (fn) => {
    page.runner = fn;
    root.querySelector(".mha-class-runner").textContent = "Re-run: ready.";
    return draw();
  };
  page.open = add;
  pages.push(page);
  return page;
}
