// The trainer's knobs as the lab and the class page read them: the
// manifest's train.knobs (written once, mhacourse.web_train.KNOBS), passed
// in. Each entry: name, label, control ("count": min..max; "switch": on or
// off), default, and python {call, arg, on, off}. The link, the report,
// the model file, the comparison with the book's runs and the class page's
// grouping all go through these functions, so a knob added to the
// manifest travels everywhere with no file of lab/ or class/ changed.
// Pure functions; no DOM, no globals.

// A value of knob k, or null when it is not one: a count is a whole number
// in min..max, a switch true or false.
export function knobValue(k, v) {
  if (k.control === "count") {
    return Number.isSafeInteger(v) && v >= k.min && v <= k.max ? v : null;
  }
  return typeof v === "boolean" ? v : null;
}

// The layers a run of settings s has: the count knob's value (else n).
export function layersOf(knobs, s, n) {
  const k = (knobs || []).find((x) => x.control === "count");
  return k && s && Number.isSafeInteger(s[k.name]) ? s[k.name] : n;
}

// {name: default} of every knob.
export function knobDefaults(knobs) {
  const out = {};
  (knobs || []).forEach((k) => {
    out[k.name] = k.default;
  });
  return out;
}

// {name: value} of every knob: s's where it holds one, else the default.
export function knobSettings(knobs, s) {
  const out = {};
  (knobs || []).forEach((k) => {
    const v = s ? knobValue(k, s[k.name]) : null;
    out[k.name] = v === null ? k.default : v;
  });
  return out;
}

// A knob's value in a link ("1"/"0" for a switch, the number for a count)
// and back (null for text that is not one of its values).
export function knobText(k, v) {
  return k.control === "count" ? String(v) : v ? "1" : "0";
}

export function knobFromText(k, raw) {
  if (typeof raw !== "string") {
    return null;
  }
  if (k.control === "count") {
    return /^\d{1,3}$/.test(raw) ? knobValue(k, Number(raw)) : null;
  }
  return raw === "1" ? true : raw === "0" ? false : null;
}

// The knobs of s that differ from their defaults, in words: "layers 1",
// "warm-up off" (the labels the trainer shows); [] when none does.
export function knobWords(knobs, s) {
  return (knobs || [])
    .filter((k) => s && s[k.name] !== undefined && s[k.name] !== k.default)
    .map(
      (k) => k.label + " " + (k.control === "count" ? String(s[k.name]) : s[k.name] ? "on" : "off"),
    );
}

// The arguments of TinyConfig(...) and train(...) that differ from the
// defaults: {TinyConfig: ["n_layers=1"], train: ["clip=None"]}.
export function pythonArgs(knobs, s) {
  const out = { TinyConfig: [], train: [] };
  (knobs || []).forEach((k) => {
    const v = s[k.name];
    if (v === undefined || v === k.default) {
      return;
    }
    out[k.python.call].push(
      k.python.arg + "=" + (k.control === "count" ? String(v) : k.python[v ? "on" : "off"]),
    );
  });
  return out;
}

// The model file's TinyConfig fields the knobs of s set (a count's value;
// a switch's graph value, on or off: the warm-up's steps, or 0).
export function configFields(knobs, s) {
  const out = {};
  (knobs || [])
    .filter((k) => k.python.call === "TinyConfig")
    .forEach((k) => {
      out[k.python.arg] = k.control === "count" ? s[k.name] : s[k.name] ? k.on : k.off;
    });
  return out;
}

// The knobs a model file stands for: what its TinyConfig field says (the
// model's own), else extra.knobs[name] where it is a value of the knob,
// else the default.
export function knobsOfFile(knobs, config, stored) {
  const out = {};
  (knobs || []).forEach((k) => {
    const saved = stored ? knobValue(k, stored[k.name]) : null;
    const field = k.python.call === "TinyConfig" && config ? config[k.python.arg] : undefined;
    const fromConfig =
      field === undefined ? null : k.control === "count" ? knobValue(k, field) : field !== k.off;
    out[k.name] = fromConfig !== null ? fromConfig : saved !== null ? saved : k.default;
  });
  return out;
}
