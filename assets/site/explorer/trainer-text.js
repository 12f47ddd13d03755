// The trainer's read-outs in words: the first loss against ln V, the phase
// line, the roles' timeline, the accuracy and roles lines, the ablation
// line and the Python line of a run. Each function takes Q, the panel, and
// writes into its elements; none keeps state.
import { MAN } from "./data.js";
import { el, pct } from "./dom.js";

export const ROLE_NAMES = { previous: "previous token", induction: "induction", duplicate: "duplicate token",
  self: "self", first: "first token", mixed: "mixed" };

export function headName(l, i) { return "L" + (l + 1) + "H" + (i + 1); }

// The first loss, read against ln V.
export function lossNote(Q) {
  const first = Q.losses[0], V = Q.vocab, lnV = Math.log(V);
  let how;
  if (first > 2 * lnV) {
    how = "; far above it: an untrained model from the usual start lands near ln " + V +
      ", so these weights are not such a start (a damaged data file, or weights that had already diverged).";
  } else if (first > lnV) {
    how = "; a little above, because its random logits are not quite flat, and a confident wrong guess costs more than a uniform one.";
  } else {
    how = "; a little below, because its random logits happen to favour some right answers.";
  }
  Q.lossNote.textContent = "First loss " + first.toFixed(2) + "; ln " + V + " = " + lnV.toFixed(2) +
    " is the loss of a uniform guess over the " + V + " words (probability 1/" + V +
    " on every answer). An untrained model guesses almost uniformly, so it starts near ln " + V + how;
}

// The phase line: what was measured, and the induction heads only when the
// roles name them.
export function phase(Q, margin) {
  const rule = Q.base.previousWord[2];
  const words = "Lookup leaves its plateau at the first read-out where lookup accuracy is more than " +
    (100 * margin).toFixed(0) + " points above the previous-word rule's " + pct(rule);
  if (Q.phaseStep == null) { Q.phase.textContent = Q.evals.length ? words + ": not yet." : ""; return; }
  const r = Q.evals.find((e) => e.step === Q.phaseStep), last = Q.evals[Q.evals.length - 1];
  const induction = [];
  (last.roleNames || []).forEach((row, l) => row.forEach((name, i) => { if (name === "induction") { induction.push(headName(l, i)); } }));
  Q.phase.textContent = words + ": step " + Q.phaseStep + ", lookup " + pct(r.accuracy[2]) + ". " +
    (induction.length ? "At step " + last.step + " the roles name induction heads: " + induction.join(", ") + "."
      : "No head's role is induction at step " + last.step + " (head_roles, held-out set): the accuracy alone does not show which heads do the lookup.");
}

// When each head first took its role: previous-token, induction.
export function timeline(Q) {
  const box = Q.timeline;
  box.textContent = "";
  if (!Q.roleSteps || !Q.roleSteps.length) { return; }
  const table = el("table", { class: "mha-train-roletable" }, [
    el("caption", { text: "Roles over the run (head_roles on the held-out set, every " + Q.readEvery + " steps)" }),
    el("thead", {}, [el("tr", {}, ["Head", "Role now", "Previous token from step", "Induction from step"].map((t) =>
      el("th", { scope: "col", text: t })))])]);
  const body = el("tbody");
  Q.roleSteps.forEach((row, l) => {
    row.forEach((r, i) => {
      const now = Q.roleNames && Q.roleNames[l] ? ROLE_NAMES[Q.roleNames[l][i]] : "";
      body.appendChild(el("tr", {}, [el("th", { scope: "row", text: headName(l, i) }),
        el("td", { text: now }), el("td", { text: r.previous == null ? "—" : String(r.previous) }),
        el("td", { text: r.induction == null ? "—" : String(r.induction) })]));
    });
  });
  table.appendChild(body);
  box.appendChild(table);
}

// The held-out accuracy and each head's role, from one evaluation.
export function readouts(Q, e) {
  const a = e.accuracy;
  Q.accuracy.textContent = "Held-out accuracy after " + e.step + " steps: " + pct(a[0]) +
    " (previous word " + pct(a[1]) + ", lookup " + pct(a[2]) + ").";
  const parts = [];
  Q.roleNames.forEach((row, l) => row.forEach((name, i) => parts.push(headName(l, i) + " " + ROLE_NAMES[name])));
  Q.roles.textContent = "Roles (head_roles, held-out set): " + parts.join(", ") + ".";
}

// The ablated model's read-out, against the model with every head on; a
// head switched off has no role (zeroing its output leaves its pattern,
// which is not what it does).
export function ablation(Q, off) {
  const r = Q.ablated, a = r.accuracy, full = Q.evals.find((e) => e.step === r.step), parts = [];
  r.roleNames.forEach((row, l) => row.forEach((name, i) => {
    if (name !== "mixed" && !Q.switches.isOff(l, i, r.h)) { parts.push(headName(l, i) + " " + ROLE_NAMES[name]); }
  }));
  Q.ablation.textContent = "Switched off: " + off.join(", ") + ". At step " + r.step + ", held-out accuracy " + pct(a[0]) +
    " (previous word " + pct(a[1]) + ", lookup " + pct(a[2]) + ")" +
    (full ? ", against " + pct(full.accuracy[0]) + " (" + pct(full.accuracy[1]) + ", " + pct(full.accuracy[2]) + ") with every head on" : "") +
    ". Roles of the heads still on: " + (parts.length ? parts.join(", ") : "none named") + ". The pictures below are the ablated model's.";
}

// The Python line that reproduces a page run (tm.train's signature), with
// the knobs that differ from their defaults (Knobs.python).
export function pythonLine(c, steps, knobs) {
  const args = knobs.python();
  const cfg = ["h=" + c.h, "d_k=" + c.dk].concat(args.TinyConfig).join(", ");
  return "model, metrics = tm.train(tm.TinyConfig(" + cfg + "), " +
    ["steps=" + steps, "seed=" + c.seed].concat(args.train).join(", ") + ")";
}

export function showPython(Q, steps) {
  Q.python.textContent = "";
  Q.python.appendChild(document.createTextNode("The same run in Python (with from mhacourse import tiny_model as tm): "));
  Q.python.appendChild(el("code", { text: pythonLine(Q.config, steps, Q.knobs) }));
}
