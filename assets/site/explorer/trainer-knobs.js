// The trainer's knobs and switches. The knobs (the run's options) are the
// manifest's train.knobs, written once by mhacourse.web_train.KNOBS: each
// entry gives the control, its label and help, its default, the graph
// input it feeds and the Python it stands for; nothing here names a knob.
// The switches (Switches) are the ablation: any heads of the model
// switched off, the forward and evaluate graphs' head_mask.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { feedsOf } from "./knob-feeds.js";
import { MIDRUN, headName } from "./trainer-text.js";

export class Knobs {
  // tag: the panel's id prefix; who: the run's name for the controls'
  // accessible names ("" for a page with one run); onChange(): a knob
  // changed while no run is under way; onMidRun(line): one changed during
  // a run (the control goes back to what the run uses).
  constructor(tag, who, onChange, onMidRun) {
    this.inputs = {};
    this.onChange = onChange;
    this.onMidRun = onMidRun;
    this.locked = false;
    this.element = el(
      "div",
      { class: "mha-train-knobs" },
      MAN.train.knobs.map((k) => this.control(k, tag, who)),
    );
    this.chosen = this.read();
  }

  control(k, tag, who) {
    let input;
    if (k.control === "count") {
      input = el("select", { id: tag + "-" + k.name });
      for (let n = k.max; n >= k.min; n--) {
        input.appendChild(el("option", { value: String(n), text: String(n) }));
      }
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

  // The controls set to the values `e` names (by knob name; a knob it
  // does not name keeps its control), then chosen.
  show(e) {
    MAN.train.knobs.forEach((k) => {
      if (!(k.name in e)) {
        return;
      }
      const i = this.inputs[k.name];
      if (k.control === "count") {
        i.value = String(e[k.name]);
      } else {
        i.checked = !!e[k.name];
      }
    });
    this.chosen = this.read();
  }

  // A knob changed: the next run's option if none is under way; else one
  // line, and the control goes back to what this run uses.
  changed() {
    if (this.locked) {
      this.show(this.chosen);
      if (this.onMidRun) {
        this.onMidRun(MIDRUN);
      }
      return;
    }
    this.chosen = this.read();
    this.onChange();
  }

  lock(locked) {
    this.locked = locked;
    Object.keys(this.inputs).forEach((name) => {
      this.inputs[name].disabled = locked;
    });
  }

  // The inputs to feed the graphs: {input: {data, dims}} (knob-feeds.js).
  feeds() {
    return feedsOf(this.chosen);
  }

  // The layers a run has: the count knob's value.
  layers() {
    const k = MAN.train.knobs.find((x) => x.control === "count");
    return k ? this.chosen[k.name] : MAN.train.n_layers;
  }

  key() {
    return JSON.stringify(this.chosen);
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
    const k = l * h + i,
      id = this.tag + "-use-" + k,
      name = headName(l, i);
    const box = el("input", {
      type: "checkbox",
      id: id,
      class: "mha-train-use",
      "aria-label": this.who + name + ": on",
    });
    box.checked = !this.off[k];
    box.addEventListener("change", () => {
      this.off[k] = !box.checked;
      this.onChange();
    });
    return el("span", { class: "mha-train-toggle", title: "Untick to switch " + name + " off" }, [
      box,
      el("label", { for: id, text: "on", "aria-hidden": "true" }),
    ]);
  }

  clear() {
    this.off = {};
  }

  // Exactly the heads `pairs` ([layer, head] from 1, a link's) off, for h heads.
  set(pairs, h) {
    this.clear();
    pairs.forEach(([l, i]) => {
      this.off[(l - 1) * h + (i - 1)] = true;
    });
  }

  // The heads switched off as the graphs' head_mask (n_layers * h, 1 keep,
  // 0 off), or null when every head is on.
  mask(h) {
    const N = MAN.train.n_layers,
      m = new Float32Array(N * h).fill(1);
    let any = false;
    Object.keys(this.off).forEach((k) => {
      if (this.off[k] && Number(k) < N * h) {
        m[Number(k)] = 0;
        any = true;
      }
    });
    return any ? m : null;
  }

  // Whether every head of the layers the run has is off.
  allOff(h, layers) {
    const m = this.mask(h);
    if (!m) {
      return false;
    }
    for (let k = 0; k < layers * h; k++) {
      if (m[k]) {
        return false;
      }
    }
    return true;
  }

  isOff(l, i, h) {
    return !!this.off[l * h + i];
  }

  // The heads switched off (off: these switches, a copy taken earlier), by name.
  names(h, off = this.off) {
    return Object.keys(off)
      .filter((k) => off[k])
      .map((k) => headName(Math.floor(k / h), k % h));
  }
}
