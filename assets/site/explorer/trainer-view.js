// The elements of one trainer panel: the size inputs, the knobs' row
// (Knobs.element), the buttons, the read-outs' places and the sentence
// box, in two columns (the model and its training | the heads on a
// sentence). Every id starts with the panel's tag; every control's
// accessible name starts with the run's name on a page of two runs.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { sizeBounds } from "./sizes.js";

export const PROBE = "the cat sat on the mat because the cat was tired";

export function buildView(P, defaults, who, title) {
  const tag = P.tag, b = sizeBounds();
  const named = (e, name) => { e.setAttribute("aria-label", who + name); return e; };
  P.hIn = named(el("input", { type: "number", min: b.h.min, max: b.h.max, step: "1", value: String(defaults.h), id: tag + "-h" }), "h");
  P.dkIn = named(el("input", { type: "number", min: b.dk.min, max: b.dk.max, step: "1", value: String(defaults.dk), id: tag + "-dk" }), "d_k");
  P.budget = named(el("input", { type: "checkbox", id: tag + "-budget" }), "same budget: d_model = " + MAN.train.budget);
  P.seedIn = named(el("input", { type: "number", min: "0", max: "999", step: "1", value: "0", id: tag + "-seed" }), "seed");
  P.inputs = [P.hIn, P.dkIn, P.budget, P.seedIn];
  P.train = named(el("button", { type: "button", class: "mha-train-go", text: "Train" }), "Train");
  P.pause = named(el("button", { type: "button", class: "mha-train-pause", text: "Pause", disabled: "" }), "Pause");
  P.reset = named(el("button", { type: "button", class: "mha-train-reset", text: "Reset", disabled: "" }), "Reset");
  P.summary = el("p", { class: "mha-train-summary" });
  P.status = el("p", { class: "mha-train-status", role: "status" }); // milestones only: a screen reader hears each
  P.progress = el("p", { class: "mha-train-progress" }); // the step counter, not announced
  P.message = el("p", { class: "mha-train-message", role: "alert" });
  P.chart = el("canvas", { class: "mha-train-chart", width: "360", height: "150", role: "img",
    "aria-label": "Training loss: no steps yet", hidden: "" });
  P.accuracy = el("p", { class: "mha-train-accuracy" });
  P.lossNote = el("p", { class: "mha-train-loss-note" });
  P.curves = el("canvas", { class: "mha-train-curves", width: "360", height: "170", role: "img",
    "aria-label": "Held-out accuracy: no read-out yet", hidden: "" });
  P.curveKey = el("p", { class: "mha-train-key", hidden: "" });
  P.phase = el("p", { class: "mha-train-phase" });
  P.timeline = el("div", { class: "mha-train-timeline" });
  P.python = el("p", { class: "mha-train-python" });
  P.circuits = el("div", { class: "mha-train-circuits" });
  P.heads = el("div", { class: "mha-train-heads" });
  P.roles = el("p", { class: "mha-train-roles" });
  P.ablation = el("p", { class: "mha-train-ablation", "aria-live": "polite" });
  P.sentence = el("input", { type: "text", class: "mha-train-sentence", value: PROBE, id: tag + "-text", spellcheck: "false" });
  P.sentenceNote = el("p", { class: "mha-train-note" });
  const label = (input, text) => el("label", { for: input.id }, [text, " ", input]);
  return el("div", { class: "mha-train-panel", "data-run": String(P.index + 1) }, [
    el("div", { class: "mha-train-left" }, [
      title ? el("h4", { text: title }) : null,
      el("div", { class: "mha-train-controls" }, [label(P.hIn, "h"), label(P.dkIn, "d_k"),
        label(P.budget, "same budget: d_model = " + MAN.train.budget), label(P.seedIn, "seed")]),
      P.knobs.element,
      P.summary,
      el("div", { class: "mha-train-buttons" }, [P.train, P.pause, P.reset]),
      P.status, P.progress, P.message, P.chart, P.lossNote, P.curves, P.curveKey, P.accuracy, P.phase,
      P.timeline, P.circuits, P.python]),
    el("div", { class: "mha-train-right" }, [
      el("label", { for: P.sentence.id, class: "mha-train-sentence-label" }, [(who ? who : "") + "The heads on a sentence (type your own)"]),
      P.sentence, P.sentenceNote, P.ablation, P.heads, P.roles]),
  ]);
}
