// The model leaves the page, and comes back: the package's own model file
// (mhacourse.tiny_model.files: a .safetensors file whose metadata holds the
// TinyConfig as JSON under "config" and a JSON dict under "extra"), written
// from the page's float32 weights, and read with strict checks. One line
// (a ModelFileError) for a file that is not a model, truncated, tampered
// with, of sizes the page cannot run, with NaN weights, or too large.
// Every file carries a digest (metadata "digest": "sha256:" + hex, over its
// config, extra and tensors: safetensors.js digestInput, the package's
// recipe), which ties the config to the weights: h 4 x d_k 4 and h 2 x d_k 8
// have the same shapes, so an edited config would otherwise open. A file
// whose digest does not match is refused; a trained model's file without one
// (written before 2026-11-29) is refused with one line; an untrained model
// (its seed, no weights) without one is read: the page rebuilds it from the
// config and seed it states, so there is nothing to mismatch.
//
// spec (from the manifest's "train" entry): {params: [{name, dims}],
// limits: {h_max, d_k_min, d_k_max, d_model_max}, n_layers, vocab_size,
// max_len, batch, knobs (train.knobs: each knob's value is written to
// extra.knobs, and a TinyConfig knob's to the config too: knobs.js)}. Params are in spec.params
// order, each
// {data: Float32Array, dims}, as the trainer holds them. Pure functions.

import {
  ModelFileError,
  parseSafetensors,
  tensorValues,
  writeSafetensors,
  MAX_HEADER,
  digestInput,
  storedTensors,
} from "./safetensors.js";
import { configFields, knobSettings, knobsOfFile, layersOf } from "./knobs.js";
import { sha256Hex } from "./report.js";

export { ModelFileError };
const fail = (line) => {
  throw new ModelFileError(line);
};

const dimsAt = (p, d) => p.dims.map((ab) => ab[0] * d + ab[1]);
const size = (dims) => dims.reduce((a, b) => a * b, 1);
const layerOf = (name) => {
  const m = /^blocks\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : -1;
};

// The largest file the page accepts: the weights of the widest model it
// runs, in float32, and a header. A larger file is refused unread.
export function maxFileBytes(spec) {
  return (
    4 * spec.params.reduce((n, p) => n + size(dimsAt(p, spec.limits.d_model_max)), 0) +
    MAX_HEADER +
    8
  );
}

// null, or the line refusing a file of `bytes` bytes before it is read.
export function fileSizeProblem(bytes, spec) {
  const max = maxFileBytes(spec);
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    return "not a file.";
  }
  if (bytes === 0) {
    return "the file is empty (0 bytes): download or save it again.";
  }
  if (bytes > max) {
    return (
      "the file is too large (" +
      (bytes / 1e6).toFixed(1) +
      " MB) for a model the page runs (at most " +
      (max / 1e6).toFixed(1) +
      " MB): it is not a course model file."
    );
  }
  return null;
}

function configOf(meta, spec) {
  if (typeof meta.config !== "string") {
    fail(
      "not a course model file: its metadata has no tiny-model config (tiny_model.save and the " +
        "page write one).",
    );
  }
  let c;
  try {
    c = JSON.parse(meta.config);
  } catch (e) {
    fail("the file's config is not JSON: the header was edited.");
  }
  if (!c || typeof c !== "object" || Array.isArray(c)) {
    fail("the file's config is not a JSON object: the header was edited.");
  }
  const L = spec.limits,
    whole = (v) => Number.isSafeInteger(v) && v > 0;
  if (!whole(c.h) || !whole(c.d_k) || !whole(c.n_layers)) {
    fail("the file's config has no whole h, d_k and n_layers.");
  }
  const why =
    c.h > L.h_max
      ? "h = " + c.h + " (the page runs h 1 to " + L.h_max + ")"
      : c.d_k < L.d_k_min || c.d_k > L.d_k_max
        ? "d_k = " + c.d_k + " (the page runs d_k " + L.d_k_min + " to " + L.d_k_max + ")"
        : c.h * c.d_k > L.d_model_max
          ? "d_model = " + c.h * c.d_k + " (the page runs at most " + L.d_model_max + ")"
          : c.n_layers > spec.n_layers
            ? "n_layers = " + c.n_layers + " (the page runs 1 or " + spec.n_layers + ")"
            : c.ff_mult !== undefined && c.ff_mult !== 1
              ? "ff_mult = " + c.ff_mult + " (the page runs 1)"
              : c.vocab_size !== spec.vocab_size || c.max_len !== spec.max_len
                ? "vocab_size " +
                  c.vocab_size +
                  ", max_len " +
                  c.max_len +
                  " (the course's task: " +
                  spec.vocab_size +
                  ", " +
                  spec.max_len +
                  ")"
                : null;
  if (why) {
    fail("a model of sizes the page cannot run: " + why + ".");
  }
  return c;
}

async function digestOf(metadata, tensors) {
  try {
    return "sha256:" + (await sha256Hex(digestInput(metadata, tensors)));
  } catch (e) {
    return fail("could not check the file's digest: " + String(e && e.message).slice(0, 160) + ".");
  }
}

async function checkDigest(f) {
  const m = f.metadata;
  if (m.digest === undefined) {
    if (m.init_seed !== undefined) {
      return;
    }
    fail(
      "the file has no digest (written before 2026-11-29, or by another program): nothing ties " +
        "its config to its weights; save it again with tm.save, or download it again from the " +
        "page.",
    );
  }
  if ((await digestOf(m, storedTensors(f))) !== m.digest) {
    fail(
      "the file does not match its digest: its config, extra or weights were changed after it " +
        "was saved (an edited header?); save or download the model again.",
    );
  }
}

// Read a model file's bytes (Uint8Array or ArrayBuffer). Resolves to {config,
// extra, layers, init, params}: params in spec.params order for the page's
// graphs (a one-layer model's second block as zeros, which the page
// switches off with layer_on); init: {seed} for an untrained model stored
// as its seed (params null: the page's init graph rebuilds it). Rejects
// with a ModelFileError of one line.
export async function readModelFile(bytes, spec) {
  const b = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes;
  if (!(b instanceof Uint8Array)) {
    fail("not a file's bytes.");
  }
  const big = fileSizeProblem(b.length, spec);
  if (big) {
    fail(big);
  }
  const f = parseSafetensors(b);
  const c = configOf(f.metadata, spec);
  await checkDigest(f);
  let extra = {};
  if (f.metadata.extra !== undefined) {
    try {
      extra = JSON.parse(f.metadata.extra);
    } catch (e) {
      fail("the file's 'extra' metadata is not JSON: the header was edited.");
    }
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) {
      fail("the file's 'extra' metadata is not a JSON object.");
    }
  }
  const d = c.h * c.d_k,
    layers = c.n_layers;
  const out = { config: c, extra: extra, layers: layers, init: null, params: null };
  if (f.metadata.init_seed !== undefined) {
    // an untrained model: its seed, no weights
    const seed = /^\d{1,9}$/.test(f.metadata.init_seed) ? Number(f.metadata.init_seed) : null;
    if (seed === null || Object.keys(f.tensors).length) {
      fail("the file's untrained-model metadata is broken (init_seed, or weights beside it).");
    }
    out.init = { seed: seed };
    return out;
  }
  const want = spec.params.filter((p) => layerOf(p.name) < layers);
  const names = Object.keys(f.tensors);
  const missing = want.filter((p) => !(p.name in f.tensors)).map((p) => p.name);
  const unknown = names.filter((n) => !want.some((p) => p.name === n));
  if (missing.length || unknown.length) {
    fail(
      "the file's tensors do not match its config (h = " +
        c.h +
        ", d_k = " +
        c.d_k +
        ", n_layers = " +
        layers +
        "): " +
        (missing.length
          ? "missing " + missing.slice(0, 2).join(", ")
          : "unexpected " +
            unknown
              .slice(0, 2)
              .map((n) => JSON.stringify(n).slice(0, 30))
              .join(", ")) +
        ".",
    );
  }
  out.params = spec.params.map((p) => {
    const dims = dimsAt(p, d);
    if (layerOf(p.name) >= layers) {
      return { data: new Float32Array(size(dims)), dims: dims };
    }
    const t = f.tensors[p.name];
    if (t.shape.length !== dims.length || t.shape.some((n, i) => n !== dims[i])) {
      fail(
        "tensor " +
          p.name +
          " has shape [" +
          t.shape.join(", ") +
          "], but its config needs [" +
          dims.join(", ") +
          "]: the header was edited.",
      );
    }
    const data = tensorValues(f, p.name);
    for (let i = 0; i < data.length; i++) {
      if (!Number.isFinite(data[i])) {
        fail(
          "tensor " +
            p.name +
            " holds NaN or infinite weights: the model is broken (a diverged run?).",
        );
      }
    }
    return { data: data, dims: dims };
  });
  return out;
}

// The bytes of the package's model file for a page run: run = {params,
// h, d_k, seed, steps (the run's length), step (the steps done),
// courseVersion, accuracy (held-out, or null), and each knob by its name}.
// The metadata's config is the run's TinyConfig (tm.load rebuilds it);
// extra records the settings, steps, every knob and the course's version;
// digest ties them to the weights. Resolves to the bytes.
export async function writeModelFile(run, spec) {
  const d = run.h * run.d_k,
    knobs = knobSettings(spec.knobs, run),
    layers = layersOf(spec.knobs, knobs, spec.n_layers);
  if (!Array.isArray(run.params) || run.params.length !== spec.params.length) {
    fail("the run's weights do not match the manifest's parameters.");
  }
  const tensors = [];
  spec.params.forEach((p, i) => {
    const dims = dimsAt(p, d),
      w = run.params[i];
    if (!w || !(w.data instanceof Float32Array) || w.data.length !== size(dims)) {
      fail("weight " + p.name + " does not have the size h and d_k need.");
    }
    if (layerOf(p.name) >= layers) {
      return;
    } // a one-layer run: its first block only
    for (let k = 0; k < w.data.length; k++) {
      if (!Number.isFinite(w.data[k])) {
        fail(
          "weight " +
            p.name +
            " is NaN or infinite: there is no model to save (reset, and train again).",
        );
      }
    }
    tensors.push({ name: p.name, shape: dims, data: w.data });
  });
  const config = Object.assign(
    {
      h: run.h,
      d_k: run.d_k,
      n_layers: layers,
      ff_mult: 1,
      vocab_size: spec.vocab_size,
      max_len: spec.max_len,
      lr: null,
      batch: spec.batch,
      weight_decay: 0,
    },
    configFields(spec.knobs, knobs),
  );
  const extra = {
    source: "page",
    steps: run.steps,
    trained_steps: run.step,
    seed: run.seed,
    data_seed: 0,
    knobs: knobs,
    course_version: String(run.courseVersion || ""),
    accuracy: Number.isFinite(run.accuracy) ? run.accuracy : null,
  };
  const meta = { config: JSON.stringify(config), extra: JSON.stringify(extra) };
  meta.digest = await digestOf(
    meta,
    tensors.map((t) => ({
      name: t.name,
      dtype: "F32",
      shape: t.shape,
      bytes: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
    })),
  );
  return writeSafetensors(meta, tensors);
}

// The experiment a model file read by readModelFile stands for, in the
// link's terms (link.js): {h, d_k, seed, steps (the run's length), step
// (the steps it was trained), and each knob of spec.knobs (knobs.js
// knobsOfFile)}; spec.steps_for: each width's steps, for a file that does
// not say. A seed the page cannot take (over 999) is read as 0.
export function experimentOf(model, spec) {
  const c = model.config,
    x = model.extra || {};
  const whole = (v, hi) => Number.isSafeInteger(v) && v >= 0 && v <= hi;
  const seedOf = model.init ? model.init.seed : x.seed;
  const steps = whole(x.steps, 1e6) && x.steps > 0 ? x.steps : spec.steps_for[String(c.h * c.d_k)];
  return Object.assign(
    { h: c.h, d_k: c.d_k, budget: false, seed: whole(seedOf, 999) ? seedOf : 0 },
    knobsOfFile(spec.knobs, c, x.knobs),
    { steps: steps, step: model.init ? 0 : whole(x.trained_steps, 1e6) ? x.trained_steps : steps },
  );
}

// The spec (this file's header) from the manifest's training entry and
// the tokenizer's max_len (the manifest's batch is [sequences, length];
// TinyConfig's batch is the sequences).
export function specOf(train, maxLen) {
  return {
    params: train.params,
    limits: train.limits,
    n_layers: train.n_layers,
    vocab_size: train.vocab_size,
    max_len: maxLen,
    knobs: train.knobs || [],
    steps_for: train.steps_for,
    batch: Array.isArray(train.batch) ? train.batch[0] : train.batch,
  };
}
