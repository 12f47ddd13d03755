// The trainer's knobs and switches. The knobs (the run's options) are the
// manifest's train.knobs, written once by mhacourse.web_train.KNOBS: each
// entry gives the control, its label and help, its default, the graph
// input it feeds and the Python it stands for; nothing here names a knob.
// The switches (Switches) are the ablation: any heads of the model
// switched off, the forward and evaluate graphs' head_mask.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { feedsOf } from "./knob-feeds.js";

export const MIDRUN = "The options apply when a run begins: this run goes on as it started. " +
  "Reset, then Train, to use them.";
export const ALL_OFF = "Every head is switched off: the model then reads no word but the current one, so there is no " +
  "attention to show and nothing to read out. Switch at least one head back on.";

export class Knobs {
  // tag: the panel's id prefix; who: the run's name for the controls'
  // accessible names ("" for a page with one run); onChange(): a knob
  // changed while no run is under way.
  constructor(tag, who, onChange) {
    this.inputs = {};
    this.onChange = onChange;
    this.locked = false;
    this.element = el("div", { class: "mha-train-knobs" }, MAN.train.knobs.map((k) => this.control(k, tag, who)));
    this.chosen = this.read();
  }

  control(k, tag, who) {
    let input;
    if (k.control === "count") {
      input = el("select", { id: tag + "-" + k.name });
      for (let n = k.max; n >= k.min; n--) { input.appendChild(el("option", { value: String(n), text: String(n) })); }
      input.value = String(k.default);
    } else {
      input = el("input", { type: "checkbox", id: tag + "-" + k.name });
      input.checked = k.default;
    }
    input.setAttribute("aria-label", who + k.label);
    input.title = k.help;
    input.addEventListener("change", () => this.changed());
    this.inputs[k.name] = input;
    return el("label", { for: input.id, title: k.help }, [k.label, " ", input]);
  }

  read() {
    const out = {};
    MAN.train.knobs.forEach((k) => {
      const i = this.inputs[k.name];
      out[k.name] = k.control === "count" ? Number(i.value) : i.checked;
    });
    return out;
  }

  // A knob changed: the next run's option if none is under way; else one
  // line (returned), and the control goes back to what this run uses.
  changed() {
    if (this.locked) {
      MAN.train.knobs.forEach((k) => {
        const i = this.inputs[k.name], v = this.chosen[k.name];
        if (k.control === "count") { i.value = String(v); } else { i.checked = v; }
      });
      if (this.onMidRun) { this.onMidRun(MIDRUN); }
      return;
    }
    this.chosen = this.read();
    this.onChange();
  }

  lock(locked) {
    this.locked = locked;
    Object.keys(this.inputs).forEach((name) => { this.inputs[name].disabled = locked; });
  }

  // The inputs to feed the graphs: {input: {data, dims}} (knob-feeds.js).
  feeds() { return feedsOf(this.chosen); }

  // The layers a run has: the count knob's value.
  layers() {
    const k = MAN.train.knobs.find((x) => x.control === "count");
    return k ? this.chosen[k.name] : MAN.train.n_layers;
  }

  key() { return JSON.stringify(this.chosen); }

  // The arguments of TinyConfig(...) and of train(...) that differ from the
  // defaults: {TinyConfig: ["n_layers=1"], train: ["clip=None"]}.
  python() {
    const out = { TinyConfig: [], train: [] };
    MAN.train.knobs.forEach((k) => {
      const v = this.chosen[k.name];
      if (v === k.default) { return; }
      const literal = k.control === "count" ? String(v) : k.python[v ? "on" : "off"];
      out[k.python.call].push(k.python.arg + "=" + literal);
    });
    return out;
  }
}

// The ablation's switches: ticked = the head is on.
export class Switches {
  constructor(tag, who, onChange) {
    this.tag = tag;
    this.who = who;
    this.off = {}; // by layer * h + head
    this.onChange = onChange;
  }

  // The switch under head i of layer l (named for its run and head: "Run A: L1H3: on").
  element(l, i, h) {
    const k = l * h + i, id = this.tag + "-use-" + k, name = "L" + (l + 1) + "H" + (i + 1);
    const box = el("input", { type: "checkbox", id: id, class: "mha-train-use", "aria-label": this.who + name + ": on" });
    box.checked = !this.off[k];
    box.addEventListener("change", () => { this.off[k] = !box.checked; this.onChange(); });
    return el("span", { class: "mha-train-toggle", title: "Untick to switch " + name + " off" },
      [box, el("label", { for: id, text: "on", "aria-hidden": "true" })]);
  }

  clear() { this.off = {}; }

  // The heads switched off as the graphs' head_mask (n_layers * h, 1 keep,
  // 0 off), or null when every head is on.
  mask(h) {
    const N = MAN.train.n_layers, m = new Float32Array(N * h).fill(1);
    let any = false;
    Object.keys(this.off).forEach((k) => { if (this.off[k] && Number(k) < N * h) { m[Number(k)] = 0; any = true; } });
    return any ? m : null;
  }

  // Whether every head of the layers the run has is off.
  allOff(h, layers) {
    const m = this.mask(h);
    if (!m) { return false; }
    for (let k = 0; k < layers * h; k++) { if (m[k]) { return false; } }
    return true;
  }

  isOff(l, i, h) { return !!this.off[l * h + i]; }

  // The heads switched off (off: these switches, a copy taken earlier), by name.
  names(h, off = this.off) {
    return Object.keys(off).filter((k) => off[k]).map((k) => "L" + (Math.floor(k / h) + 1) + "H" + (k % h + 1));
  }
}
