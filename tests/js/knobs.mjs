// The manifest's train.knobs and train.readouts (mhacourse.web_train.KNOBS
// and READOUTS, as the build exports them) and what link.js reads of its
// train.patch (mhacourse.web_patch.manifest_entry: the corruptions' names,
// the default, n_pairs), for the Node tests of the lab's modules, which run
// with no build. tests/test_lab.py checks this copy against the package.
export const KNOBS = [
  {
    name: "layers",
    label: "layers",
    control: "count",
    default: 2,
    min: 1,
    max: 2,
    input: "layer_on",
    help: "One layer cannot form an induction head: it has no previous-token head below it.",
    python: { call: "TinyConfig", arg: "n_layers" },
  },
  {
    name: "warmup",
    label: "warm-up",
    control: "switch",
    default: true,
    input: "warmup",
    on: 100,
    off: 0,
    help: "The learning rate rises linearly over the first 100 steps (TinyConfig.warmup).",
    python: { call: "TinyConfig", arg: "warmup", on: "100", off: "0" },
  },
  {
    name: "identical",
    label: "identical start",
    control: "switch",
    default: false,
    input: "identical",
    on: 1,
    off: 0,
    help:
      "Every head of a layer starts as a copy of its first head (W_Q, W_K, W_V columns and " +
      "W_O rows).",
    python: { call: "train", arg: "identical_heads", on: "True", off: "False" },
  },
  {
    name: "clip",
    label: "clip gradients",
    control: "switch",
    default: true,
    input: "clip",
    on: 1.0,
    off: 0,
    help:
      "Before each AdamW step the gradients' global norm is cut to 1 (clip_grad_norm_); " +
      "unticked, the gradients are used as they are.",
    python: { call: "train", arg: "clip", on: "1.0", off: "None" },
  },
];

export const READOUTS = [
  {
    name: "comp_k",
    output: "comp_k",
    label: "K-composition",
    draw: "map",
    baseline: "comp_k",
    layers: [1, 2],
    help: "how much a layer-2 head's keys read what a layer-1 head writes (induction)",
  },
  {
    name: "comp_q",
    output: "comp_q",
    label: "Q-composition",
    draw: "map",
    baseline: "comp_q",
    layers: [1, 2],
    help: "how much a layer-2 head's queries read what a layer-1 head writes",
  },
  {
    name: "comp_v",
    output: "comp_v",
    label: "V-composition",
    draw: "map",
    baseline: "comp_v",
    layers: [1, 2],
    help: "how much a layer-2 head's values read what a layer-1 head writes",
  },
  {
    name: "prev_band",
    output: "prev_band",
    label: "prev band",
    draw: "column",
    layers: [1],
    help:
      "positional QK at offset −1 (layer 1 only: a layer-2 head also reads what layer 1 " +
      "wrote, which this score leaves out)",
  },
  {
    name: "prefix",
    output: "prefix",
    label: "prefix",
    draw: "column",
    layers: [1, 2],
    help: "prefix matching on repeated random tokens",
  },
  {
    name: "copying",
    output: "copying",
    label: "copying",
    draw: "column",
    layers: [1, 2],
    help: "copying: how much the OV circuit maps a word to itself",
  },
];

export const PATCH = {
  corruptions: [{ name: "successor" }, { name: "occurrence" }, { name: "query" }],
  default: "successor",
  n_pairs: 256,
};

// values with every knob they do not name at its default: what a link, a
// report or a model file gives back for a run that set only these, so that a
// test's expected values still hold when a knob is added by CONTRIBUTING's
// recipe.
export function withDefaults(values, knobs = KNOBS) {
  return Object.assign(Object.fromEntries(knobs.map((k) => [k.name, k.default])), values);
}
