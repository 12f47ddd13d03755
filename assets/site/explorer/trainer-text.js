// The trainer's words, each written once: the advice after a failure, the
// lines of a run's life (lines), a head's name, and the read-outs in words
// (the first loss against ln V, the phase line, the roles' timeline, the
// accuracy and roles lines, the ablation line and the Python line of a
// run). The functions that take Q, the panel, read it and write into its
// view's elements; none keeps state.
import { MAN } from "./data.js";
import { el, pct } from "./dom.js";
import { headName, headWords } from "./lab/heads.js";
import { pythonLine } from "./lab/link.js";

// What to do when the build is incomplete, and when a file the page needs
// did not load (after "... failed: why.").
export const REBUILD = "rebuild the site with `make book`";
export const ADVICE =
  " Reset, then Train, to try again once the file is back; " +
  "if this comes back, " +
  REBUILD +
  ".";
export const MIDRUN =
  "The options apply when a run begins: this run goes on as it started. " +
  "Reset, then Train, to use them.";
export const ALL_OFF =
  "Every head is switched off: the model then reads no word but the " +
  "current one, so there is no attention to show and nothing to read out. " +
  "Switch at least one head back on.";

// A head's name, from the lab (one definition for the site).
export { headName, headWords };

// The lines of a run's life (trainer-panel.js, trainer-lab-file.js).
export const lines = {
  size: (h, dk, params) =>
    "d_model = " +
    h +
    " × " +
    dk +
    " = " +
    h * dk +
    "; " +
    params.toLocaleString("en-US") +
    " parameters",
  summary: (h, dk, params, steps) =>
    lines.size(h, dk, params) + "; " + steps + " steps of " + MAN.train.batch[0] + " sequences.",
  ready: "Ready: press Train.",
  progress: (m) =>
    "Training: step " +
    m.step +
    " of " +
    m.steps +
    ", loss " +
    m.losses[m.losses.length - 1].toFixed(3) +
    ", " +
    m.stepsPerSecond.toFixed(1) +
    " steps/s.",
  paused: (step) => "Paused at step " + step + ": Resume goes on, Reset discards the model.",
  done: (step, secs, explorer) =>
    "Done: " +
    step +
    " steps in " +
    secs.toFixed(1) +
    " s. Type a " +
    "sentence in the box below to see the trained heads on it" +
    (explorer ? ', or pick "Yours" as the model in the explorer above' : "") +
    "; Reset to train another size.",
  stopped: (step) => "Stopped at step " + step + ": the loss diverged.",
  diverged: (m) =>
    "The loss diverged at step " +
    (m.step + 1) +
    " (loss " +
    m.loss +
    ", gradient norm " +
    m.norm +
    "): training stopped" +
    (!m.kept
      ? "; no model is shown, as " +
        "its weights are not finite numbers either (a damaged data file?)"
      : m.step
        ? "; the model " + "after step " + m.step + ", the last finite one, is shown"
        : "; the initial model is shown") +
    ". Reset, and try a smaller d_model or another seed.",
};

// The one line for an error the worker reports: a file that did not load
// (before any step), or a step that failed (a run that had started).
export function failureLine(msg, step) {
  if (msg.stage === "load") {
    return (
      "Training cannot start: " +
      msg.message +
      ". Reload the page, or Reset once the file " +
      "is back; if this comes back, the site is incomplete: " +
      REBUILD +
      "."
    );
  }
  if (msg.stage === "setup") {
    return "The model could not be built: " + msg.message + ". Reset, or reload the page.";
  }
  return "Training stopped at step " + (step || 0) + ": " + msg.message + ". Reset to start again.";
}

// The training worker stopped (its file missing, or it crashed).
export function crashLine(why) {
  return (
    "The training worker stopped: " +
    why +
    ". Reset to start again; if this comes back, " +
    "reload the page, or " +
    REBUILD +
    "."
  );
}

export const ROLE_NAMES = {
  previous: "previous token",
  induction: "induction",
  duplicate: "duplicate token",
  self: "self",
  first: "first token",
  mixed: "mixed",
};

// The first loss, read against ln V.
export function lossNote(Q) {
  const first = Q.losses[0],
    V = Q.vocab,
    lnV = Math.log(V);
  let how;
  if (first > 2 * lnV) {
    how =
      "; far above it: an untrained model from the usual start lands near ln " +
      V +
      ", so these weights are not such a start (a damaged data file, or weights that had " +
      "already diverged).";
  } else if (first > lnV) {
    how =
      "; a little above, because its random logits are not quite flat, and a confident wrong " +
      "guess costs more than a uniform one.";
  } else {
    how = "; a little below, because its random logits happen to favour some right answers.";
  }
  Q.view.say({
    lossNote:
      "First loss " +
      first.toFixed(2) +
      "; ln " +
      V +
      " = " +
      lnV.toFixed(2) +
      " is the loss of a uniform guess over the " +
      V +
      " words (probability 1/" +
      V +
      " on every answer). An untrained model guesses almost uniformly, so it starts near ln " +
      V +
      how,
  });
}

// The phase line: what was measured, and the induction heads only when the
// roles name them.
export function phase(Q, margin) {
  const rule = Q.base.previousWord[2];
  const words =
    "Lookup leaves its plateau at the first read-out where lookup accuracy is more than " +
    (100 * margin).toFixed(0) +
    " points above the previous-word rule's " +
    pct(rule);
  if (Q.phaseStep == null) {
    Q.view.say({ phase: Q.evals.length ? words + ": not yet." : "" });
    return;
  }
  const r = Q.evals.find((e) => e.step === Q.phaseStep),
    last = Q.evals[Q.evals.length - 1];
  const induction = [];
  (last.roleNames || []).forEach((row, l) =>
    row.forEach((name, i) => {
      if (name === "induction") {
        induction.push(headName(l, i));
      }
    }),
  );
  Q.view.say({
    phase:
      words +
      ": step " +
      Q.phaseStep +
      ", lookup " +
      pct(r.accuracy[2]) +
      ". " +
      (induction.length
        ? "At step " + last.step + " the roles name induction heads: " + induction.join(", ") + "."
        : "No head's role is induction at step " +
          last.step +
          " (head_roles, held-out set): the accuracy alone does not show which heads do the " +
          "lookup."),
  });
}

// When each head first took its role: previous-token, induction.
export function timeline(Q) {
  const box = Q.view.timeline;
  box.textContent = "";
  if (!Q.roleSteps || !Q.roleSteps.length) {
    return;
  }
  const table = el("table", { class: "mha-train-roletable" }, [
    el("caption", {
      text: "Roles over the run (head_roles on the held-out set, every " + Q.readEvery + " steps)",
    }),
    el("thead", {}, [
      el(
        "tr",
        {},
        ["Head", "Role now", "Previous token from step", "Induction from step"].map((t) =>
          el("th", { scope: "col", text: t }),
        ),
      ),
    ]),
  ]);
  const body = el("tbody");
  Q.roleSteps.forEach((row, l) => {
    row.forEach((r, i) => {
      const now = Q.roleNames && Q.roleNames[l] ? ROLE_NAMES[Q.roleNames[l][i]] : "";
      body.appendChild(
        el("tr", {}, [
          el("th", { scope: "row", text: headName(l, i) }),
          el("td", { text: now }),
          el("td", { text: r.previous == null ? "—" : String(r.previous) }),
          el("td", { text: r.induction == null ? "—" : String(r.induction) }),
        ]),
      );
    });
  });
  table.appendChild(body);
  box.appendChild(table);
}

// An accuracy triple [all, previous word, lookup] in words:
// "93.8% (previous word 94.1%, lookup 93.4%)".
function accuracyWords(a) {
  return pct(a[0]) + " (previous word " + pct(a[1]) + ", lookup " + pct(a[2]) + ")";
}

// The held-out accuracy and each head's role, from one evaluation.
export function readouts(Q, e) {
  const a = e.accuracy;
  Q.view.say({
    accuracy: "Held-out accuracy after " + e.step + " steps: " + accuracyWords(a) + ".",
  });
  const parts = [];
  Q.roleNames.forEach((row, l) =>
    row.forEach((name, i) => parts.push(headName(l, i) + " " + ROLE_NAMES[name])),
  );
  Q.view.say({ roles: "Roles (head_roles, held-out set): " + parts.join(", ") + "." });
}

// The ablated model's read-out, against the model with every head on; a
// head switched off has no role (zeroing its output leaves its pattern,
// which is not what it does).
export function ablation(Q, off) {
  const r = Q.ablated,
    a = r.accuracy,
    full = Q.evals.find((e) => e.step === r.step),
    parts = [];
  r.roleNames.forEach((row, l) =>
    row.forEach((name, i) => {
      if (name !== "mixed" && !Q.switches.isOff(l, i, r.h)) {
        parts.push(headName(l, i) + " " + ROLE_NAMES[name]);
      }
    }),
  );
  Q.view.say({
    ablation:
      "Switched off: " +
      off.join(", ") +
      ". At step " +
      r.step +
      ", held-out accuracy " +
      accuracyWords(a) +
      (full
        ? ", against " +
          pct(full.accuracy[0]) +
          " (" +
          pct(full.accuracy[1]) +
          ", " +
          pct(full.accuracy[2]) +
          ") with every head on"
        : "") +
      ". Roles of the heads still on: " +
      (parts.length ? parts.join(", ") : "none named") +
      ". The pictures below are the ablated model's.",
  });
}

// The Python line that reproduces a page run of config c ({h, dk, seed})
// to `steps` with the knobs' choice (lab/link.js writes it, for a link too).
export function runLine(c, steps, knobs) {
  return pythonLine(
    Object.assign({}, knobs.chosen, { h: c.h, d_k: c.dk, seed: c.seed, steps: steps }),
    MAN.train.knobs,
  );
}

export function showPython(Q, steps) {
  Q.view.say({ python: "" });
  Q.view.python.appendChild(
    document.createTextNode(
      "The same run in Python (with from mhacourse import tiny_model as tm): ",
    ),
  );
  Q.view.python.appendChild(el("code", { text: runLine(Q.config, steps, Q.knobs) }));
}
