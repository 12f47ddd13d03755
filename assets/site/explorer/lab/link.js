// A link for every experiment: the trainer's settings in the page's
// address (its query string), and back. decodeExperiment trusts nothing:
// every field is checked against the manifest's limits (passed in), what
// is valid is restored, what is not is left at the default and named in
// one line. The knobs are the manifest's (limits.knobs: train.knobs), each
// under its own name (knobs.js): a knob the manifest adds is linked with
// no change here. Values are data (numbers, booleans, a plain string),
// never HTML: the page shows the sentence with textContent. The Patch
// view's corruption and number of pairs are checked against the manifest's
// train.patch (limits.patch: its corruptions, default and n_pairs), as the
// knobs are. Pure functions; no DOM, no globals.
//
//   ?v=1&h=4&dk=16&budget=0&seed=0&steps=800&KNOB=VALUE...
//    &off=1.2,2.3&text=the+cat+sat&predict=phase_step:200_399,one_layer:no
//    &corruption=successor&pairs=256
//   (each knob of the manifest: a count's number, a switch's 1 or 0)

import { knobDefaults, knobFromText, knobText, layersOf, pythonArgs } from "./knobs.js";

export const LINK_VERSION = 1;
const MAX_LINK = 4000; // characters: a longer address is not one this page wrote
const MAX_TEXT = 200; // characters of the sentence
const SEED_MAX = 999; // the seed box's range
const KEYS = [
  "v",
  "h",
  "dk",
  "budget",
  "seed",
  "steps",
  "off",
  "text",
  "predict",
  "corruption",
  "pairs",
]; // and the knobs' names

// The sentence under the heads when a link names none.
export const PROBE = "the cat sat on the mat because the cat was tired";

// The experiment the page starts with when a link says nothing (start:
// the panel's own defaults, e.g. {h: 1, d_k: 64}, override these).
export function defaultExperiment(limits, start) {
  const e = Object.assign(
    { h: 4, d_k: 16, budget: false, seed: 0, steps: 0 },
    knobDefaults(limits.knobs),
    { off: [], text: PROBE, predict: {} },
    patchDefault(limits.patch),
  );
  Object.keys(e).forEach((k) => {
    if (start && Object.prototype.hasOwnProperty.call(start, k)) {
      e[k] = start[k];
    }
  });
  e.steps = e.steps || stepsFor(limits, e.h * e.d_k);
  return e;
}

// The Patch view's default choice of the manifest's train.patch `spec`
// ({corruption, pairs}; {} for a build without one).
export function patchDefault(spec) {
  return spec && spec.corruptions ? { corruption: spec.default, pairs: spec.n_pairs } : {};
}

// A corruption and a number of pairs checked against train.patch `spec`:
// {corruption, pairs} (the name one of spec.corruptions', the pairs a whole
// number from 1 to spec.n_pairs; text as a link holds them, or values), or
// {bad: the field that is not} (corruption first).
export function patchChoice(spec, corruption, pairs) {
  const names = spec && spec.corruptions ? spec.corruptions.map((c) => c.name) : [];
  if (typeof corruption !== "string" || names.indexOf(corruption) < 0) {
    return { bad: "corruption" };
  }
  const n =
    typeof pairs === "number"
      ? Number.isSafeInteger(pairs)
        ? pairs
        : null
      : wholeIn(pairs, 1, spec.n_pairs);
  return n === null || n < 1 || n > spec.n_pairs
    ? { bad: "pairs" }
    : { corruption: corruption, pairs: n };
}

function stepsFor(limits, d) {
  const s = limits.steps_for && limits.steps_for[String(d)];
  return Number.isInteger(s) ? s : limits.max_steps;
}

// The address's query string for experiment e with the manifest's knobs
// (encodeURIComponent: any character of the sentence survives, none is
// markup).
export function encodeExperiment(e, knobs) {
  const off = (e.off || []).map((p) => p[0] + "." + p[1]).join(",");
  const predict = Object.keys(e.predict || {})
    .sort()
    .map((k) => k + ":" + e.predict[k])
    .join(",");
  const parts = [
    ["v", LINK_VERSION],
    ["h", e.h],
    ["dk", e.d_k],
    ["budget", e.budget ? 1 : 0],
    ["seed", e.seed],
    ["steps", e.steps],
  ];
  (knobs || []).forEach((k) => {
    if (e[k.name] !== undefined) {
      parts.push([k.name, knobText(k, e[k.name])]);
    }
  });
  if (off) {
    parts.push(["off", off]);
  }
  if (e.text) {
    parts.push(["text", e.text]);
  }
  if (predict) {
    parts.push(["predict", predict]);
  }
  if (e.corruption !== undefined) {
    parts.push(["corruption", e.corruption], ["pairs", e.pairs]);
  }
  return "?" + parts.map((p) => p[0] + "=" + encodeURIComponent(String(p[1]))).join("&");
}

function wholeIn(raw, lo, hi) {
  if (typeof raw !== "string" || !/^\d{1,7}$/.test(raw)) {
    return null;
  }
  const n = Number(raw);
  return n >= lo && n <= hi ? n : null;
}

function flag(raw) {
  return raw === "1" ? true : raw === "0" ? false : null;
}

function sizeProblem(limits, h, dk, budget) {
  if (h === null || h < 1 || h > limits.h_max) {
    return "h";
  }
  if (budget && limits.budget % h !== 0) {
    return "budget";
  }
  if (dk === null || dk < limits.d_k_min || dk > limits.d_k_max) {
    return "d_k";
  }
  if (h * dk > limits.d_model_max) {
    return "d_model";
  }
  return null;
}

// Parse the query string `search` (location.search) against `limits`:
// {h_max, d_k_min, d_k_max, d_model_max, max_steps, budget, n_layers,
// steps_for, knobs, patch} (the manifest's train.limits, with train.budget,
// n_layers, steps_for, knobs and patch), `bank` (questions.json, for the predictions; optional) and
// `start` (defaultExperiment's). Returns {experiment, ignored}: ignored is
// "" or one line naming what was left at its default.
export function decodeExperiment(search, limits, bank, start) {
  const e = defaultExperiment(limits, start),
    ignored = [];
  if (typeof search !== "string" || search.length > MAX_LINK) {
    return {
      experiment: e,
      ignored:
        "The link was not read (" +
        (typeof search === "string" ? "over " + MAX_LINK + " characters" : "not text") +
        "): the trainer starts from its defaults.",
    };
  }
  let q;
  try {
    q = new URLSearchParams(search.replace(/^[?#]/, ""));
  } catch (err) {
    q = new URLSearchParams("");
  }
  const get = (k) => q.get(k);
  const knobs = limits.knobs || [],
    names = KEYS.concat(knobs.map((k) => k.name));
  const unknown = Array.from(new Set(Array.from(q.keys()).filter((k) => names.indexOf(k) < 0)));
  if (unknown.length) {
    ignored.push(
      "unknown field" +
        (unknown.length > 1 ? "s " : " ") +
        unknown.slice(0, 3).map(safe).join(", ") +
        (unknown.length > 3 ? " …" : ""),
    );
  }
  const v = get("v");
  if (v !== null && wholeIn(v, 1, LINK_VERSION) === null) {
    ignored.push("v (a link from another build)");
  }
  // the sizes, as the page's own rules (the manifest's limits)
  const h = get("h") === null ? e.h : wholeIn(get("h"), 1, 1e6);
  const budget = get("budget") === null ? e.budget : flag(get("budget"));
  if (budget === null) {
    ignored.push("budget");
  }
  let dk = get("dk") === null ? e.d_k : wholeIn(get("dk"), 1, 1e6);
  if (budget && h) {
    dk = limits.budget % h === 0 ? limits.budget / h : dk;
  }
  const bad = sizeProblem(limits, h, dk, !!budget);
  if (bad) {
    ignored.push(
      "the size (" +
        bad +
        ": h = " +
        safe(get("h") || e.h) +
        ", d_k = " +
        safe(get("dk") || e.d_k) +
        ")",
    );
  } else {
    e.h = h;
    e.d_k = dk;
    e.budget = !!budget;
  }
  e.steps = stepsFor(limits, e.h * e.d_k);
  [
    ["seed", 0, SEED_MAX],
    ["steps", 1, limits.max_steps],
  ].forEach(([k, lo, hi]) => {
    if (get(k) === null) {
      return;
    }
    const n = wholeIn(get(k), lo, hi);
    if (n === null) {
      ignored.push(k);
    } else {
      e[k] = n;
    }
  });
  knobs.forEach((k) => {
    if (get(k.name) === null) {
      return;
    }
    const v = knobFromText(k, get(k.name));
    if (v === null) {
      ignored.push(k.name);
    } else {
      e[k.name] = v;
    }
  });
  if (get("off") !== null) {
    const pairs = [],
      seen = new Set();
    let dropped = 0;
    get("off")
      .split(",")
      .slice(0, 64)
      .forEach((s) => {
        const m = /^(\d{1,2})\.(\d{1,2})$/.exec(s);
        const l = m ? Number(m[1]) : 0,
          i = m ? Number(m[2]) : 0;
        if (
          !m ||
          l < 1 ||
          l > layersOf(knobs, e, limits.n_layers) ||
          i < 1 ||
          i > e.h ||
          seen.has(l + "." + i)
        ) {
          dropped++;
          return;
        }
        seen.add(l + "." + i);
        pairs.push([l, i]);
      });
    if (dropped) {
      ignored.push(dropped + " head switch" + (dropped > 1 ? "es" : ""));
    }
    e.off = pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  }
  if (get("text") !== null) {
    const t = get("text")
      // eslint-disable-next-line no-control-regex -- control characters are what it removes
      .replace(/[\u0000-\u001f\u007f]/g, " ")
      .trim();
    if (t.length > MAX_TEXT || !t) {
      ignored.push("the sentence");
    } else {
      e.text = t;
    }
  }
  if (get("predict") !== null) {
    const byId = {};
    ((bank && bank.questions) || []).forEach((x) => {
      byId[x.id] = x;
    });
    let dropped = 0;
    get("predict")
      .split(",")
      .slice(0, 32)
      .forEach((s) => {
        const k = s.indexOf(":"),
          id = s.slice(0, k),
          a = s.slice(k + 1);
        const ok =
          k > 0 &&
          Object.prototype.hasOwnProperty.call(byId, id) &&
          Object.prototype.hasOwnProperty.call(byId[id].answers, a) &&
          !Object.prototype.hasOwnProperty.call(e.predict, id);
        if (ok) {
          e.predict[id] = a;
        } else {
          dropped++;
        }
      });
    if (dropped) {
      ignored.push(dropped + " prediction" + (dropped > 1 ? "s" : ""));
    }
  }
  ["corruption", "pairs"].forEach((k) => {
    // the Patch view's, each checked alone against train.patch
    if (get(k) === null) {
      return;
    }
    const got = limits.patch
      ? patchChoice(
          limits.patch,
          k === "corruption" ? get(k) : e.corruption,
          k === "pairs" ? get(k) : e.pairs,
        )
      : { bad: k };
    if (got.bad) {
      ignored.push(k + " (" + safe(get(k)) + ")");
    } else {
      e[k] = got[k];
    }
  });
  return {
    experiment: e,
    ignored: ignored.length
      ? "Ignored from the link (not valid here; the defaults stand): " + ignored.join("; ") + "."
      : "",
  };
}

// A piece of the address, shown in a message: at most 20 plain characters.
function safe(s) {
  const t = String(s).replace(/[^\w.\- ]/g, "?");
  return t.length > 20 ? t.slice(0, 19) + "…" : t;
}

// The Python line that repeats the experiment's run: the trainer's own
// line (tm.train's signature), with each knob of the manifest (knobs) only
// when it differs from its default.
export function pythonLine(e, knobs) {
  const args = pythonArgs(knobs, e);
  return (
    "model, metrics = tm.train(tm.TinyConfig(" +
    ["h=" + e.h, "d_k=" + e.d_k].concat(args.TinyConfig).join(", ") +
    "), " +
    ["steps=" + e.steps, "seed=" + e.seed].concat(args.train).join(", ") +
    ")"
  );
}
