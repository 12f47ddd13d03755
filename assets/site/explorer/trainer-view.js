// The elements of one trainer panel (View): the size inputs, the knobs' row
// (Knobs.element), the buttons, the read-outs' places and the sentence
// box, in two columns (the model and its training | the heads on a
// sentence). The view makes them once and is their one owner: the panel's
// parts write text and pictures into them (panel.view.status, ...), none
// replaces one. Every id starts with the panel's tag; every control's
// accessible name starts with the run's name on a page of two runs.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { sizeBounds } from "./sizes.js";
import { PROBE } from "./lab/link.js";
import { EMPTY } from "./trainer-charts.js";

function canvas(cls, height, label) {
  const attrs = { class: cls, width: "360", height: height, role: "img", "aria-label": label };
  return el("canvas", Object.assign(attrs, { hidden: "" }));
}

export class View {
  // tag: the panel's id prefix; index: its place on the page (0, 1);
  // defaults: {h, dk}; who: "Run A: " or ""; knobs: the knobs' row.
  constructor(tag, index, defaults, who, knobs) {
    const b = sizeBounds(),
      budget = "same budget: d_model = " + MAN.train.budget;
    const named = (e, name) => {
      e.setAttribute("aria-label", who + name);
      return e;
    };
    const number = (id, min, max, value) =>
      el("input", {
        type: "number",
        min: min,
        max: max,
        step: "1",
        value: String(value),
        id: tag + id,
      });
    const button = (cls, text, off) => {
      const b = el("button", { type: "button", class: cls, text: text });
      if (off) {
        b.disabled = true;
      }
      return named(b, text);
    };
    const p = (cls, more) => el("p", Object.assign({ class: cls }, more || {}));
    this.hIn = named(number("-h", b.h.min, b.h.max, defaults.h), "h");
    this.dkIn = named(number("-dk", b.dk.min, b.dk.max, defaults.dk), "d_k");
    this.budget = named(el("input", { type: "checkbox", id: tag + "-budget" }), budget);
    this.seedIn = named(number("-seed", "0", "999", 0), "seed");
    this.inputs = [this.hIn, this.dkIn, this.budget, this.seedIn];
    this.train = button("mha-train-go", "Train");
    this.pause = button("mha-train-pause", "Pause", true);
    this.reset = button("mha-train-reset", "Reset", true);
    this.summary = p("mha-train-summary");
    // the status line has milestones only: a screen reader hears each
    this.status = p("mha-train-status", { role: "status" });
    this.progress = p("mha-train-progress"); // the step counter, not announced
    this.message = p("mha-train-message", { role: "alert" });
    this.chart = canvas("mha-train-chart", "150", EMPTY.loss);
    this.accuracy = p("mha-train-accuracy");
    this.lossNote = p("mha-train-loss-note");
    this.curves = canvas("mha-train-curves", "170", EMPTY.curves);
    this.curveKey = p("mha-train-key", { hidden: "" });
    this.phase = p("mha-train-phase");
    this.timeline = el("div", { class: "mha-train-timeline" });
    this.python = p("mha-train-python");
    this.circuits = el("div", { class: "mha-train-circuits" });
    this.heads = el("div", { class: "mha-train-heads" });
    this.roles = p("mha-train-roles");
    this.ablation = p("mha-train-ablation", { "aria-live": "polite" });
    this.sentence = el("input", {
      type: "text",
      class: "mha-train-sentence",
      value: PROBE,
      id: tag + "-text",
      spellcheck: "false",
    });
    this.sentenceNote = p("mha-train-note");
    const label = (input, text) => el("label", { for: input.id }, [text, " ", input]);
    const title = who.replace(/: $/, "");
    this.box = el("div", { class: "mha-train-panel", "data-run": String(index + 1) }, [
      el("div", { class: "mha-train-left" }, [
        title ? el("h4", { text: title }) : null,
        el("div", { class: "mha-train-controls" }, [
          label(this.hIn, "h"),
          label(this.dkIn, "d_k"),
          label(this.budget, budget),
          label(this.seedIn, "seed"),
        ]),
        knobs,
        this.summary,
        el("div", { class: "mha-train-buttons" }, [this.train, this.pause, this.reset]),
        this.status,
        this.progress,
        this.message,
        this.chart,
        this.lossNote,
        this.curves,
        this.curveKey,
        this.accuracy,
        this.phase,
        this.timeline,
        this.circuits,
        this.python,
      ]),
      el("div", { class: "mha-train-right" }, [
        el("label", { for: this.sentence.id, class: "mha-train-sentence-label" }, [
          who + "The heads on a sentence (type your own)",
        ]),
        this.sentence,
        this.sentenceNote,
        this.ablation,
        this.heads,
        this.roles,
      ]),
    ]);
  }

  // The size in the controls: {h, dk, seed, budget}; with "same budget"
  // ticked, d_k follows h (locked: a run is under way, no control changes).
  read(locked) {
    const h = Number(this.hIn.value),
      b = this.budget.checked;
    const B = MAN.train.budget;
    if (b && h > 0 && B % h === 0) {
      this.dkIn.value = String(B / h);
    }
    this.dkIn.disabled = b || locked;
    return { h: h, dk: Number(this.dkIn.value), seed: Number(this.seedIn.value), budget: b };
  }

  // An experiment's size, seed and sentence on the controls ({h, d_k,
  // budget, seed, text}: a link's, a file's).
  set(e) {
    this.hIn.value = String(e.h);
    this.dkIn.value = String(e.d_k);
    this.budget.checked = !!e.budget;
    this.seedIn.value = String(e.seed);
    this.sentence.value = e.text;
  }

  // The controls for the run's state s (locked: a model exists; sized: the
  // size is valid). After Train is pressed it keeps the focus:
  // aria-disabled, not disabled.
  lock(s, locked, sized) {
    const go = this.train;
    this.inputs.forEach((i) => {
      i.disabled = locked;
    });
    if (!locked) {
      this.read(false);
    }
    go.disabled = !sized || s === "loading" || s === "idle" || s === "failed";
    go.setAttribute("aria-disabled", String(s === "running" || s === "done" || s === "diverged"));
    go.textContent = s === "paused" ? "Resume" : "Train";
    const name = go.getAttribute("aria-label").replace(/(Train|Resume)$/, go.textContent);
    go.setAttribute("aria-label", name);
    this.pause.disabled = s !== "running";
    this.reset.disabled = !(locked || s === "failed");
  }

  // A new run: what the last one drew in words goes, and its curves.
  clearRun() {
    const drawn = [this.roles, this.accuracy, this.lossNote, this.phase, this.python];
    drawn.concat([this.circuits, this.progress]).forEach((e) => {
      e.textContent = "";
    });
    this.curves.hidden = true;
    this.curveKey.hidden = true;
    this.curveKey.textContent = "";
  }

  // Where the lab and the Patch view put their sections: the left column.
  get left() {
    return this.box.querySelector(".mha-train-left");
  }

  // The run's lines at once: {summary, status, progress, message}, each
  // given replaced (a line not given stays).
  say(lines) {
    Object.keys(lines).forEach((k) => {
      this[k].textContent = lines[k];
    });
  }
}
