// The page's training step with nothing around it: the built step graph
// (explorer-data/train/step.onnx) run by onnxruntime-web's own WebAssembly
// engine in Node, one thread, the settings the page uses (explorer/ort.js),
// each step's new weights and moments fed to the next, as train-worker.js
// does. No page, no messages, no read-outs, no drawing: the time the page's
// step cannot go below, whatever the page does around it.
//
//   node benchmarks/step_engine.mjs DATA H D_K STEPS
//     DATA: the export's folder (_build/html/_static/explorer-data)
//
// Prints one JSON line: {"ms_per_step": median, "p10", "p90", "steps",
// "n_weights", "h", "d_k"}. benchmarks/bench_reader.py runs it beside tm.train.
// The weights are small normals, not the init graph's (the time of a step
// does not depend on them; the batches are the page's own).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ort = await import(
  path.join(here, "..", "node_modules", "onnxruntime-web", "dist", "ort.node.min.mjs")
);

const [dir, hArg, dkArg, stepsArg] = process.argv.slice(2);
if (!dir || !fs.existsSync(path.join(dir, "manifest.json"))) {
  console.error("usage: node benchmarks/step_engine.mjs DATA H D_K STEPS (DATA: explorer-data)");
  process.exit(2);
}
const h = Number(hArg || 4),
  dK = Number(dkArg || 16),
  steps = Number(stepsArg || 200);
const T = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")).train;
const dModel = h * dK;

ort.env.wasm.numThreads = 1; // as the page (explorer/ort.js)
ort.env.logLevel = "error";
const file = fs.readFileSync(path.join(dir, "train", T.graphs.step.file));
const session = await ort.InferenceSession.create(file, {
  executionProviders: ["wasm"],
  graphOptimizationLevel: "all",
  ...(process.env.PROF ? { enableProfiling: true } : {}),
  ...(process.env.FDO ? { freeDimensionOverrides: JSON.parse(process.env.FDO) } : {}),
  logSeverityLevel: 3,
});

// a fixed stream of small normals (Park-Miller, Box-Muller)
let state = 1;
const uniform = () => (state = (state * 16807) % 2147483647) / 2147483647;
const normal = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
const float32 = (data, dims) => new ort.Tensor("float32", data, dims);
const scalar = (x) => float32(new Float32Array([x]), []);

// each weight's shape: the manifest's dims, one [a, b] a dimension, a * d_model + b
const weights = T.params.map((p) => {
  const dims = p.dims.map(([a, b]) => a * dModel + b);
  const n = dims.reduce((a, b) => a * b, 1);
  return float32(
    Float32Array.from({ length: n }, () => 0.05 * normal()),
    dims,
  );
});
const count = weights.reduce((n, w) => n + w.size, 0);
let m = float32(new Float32Array(count), [count]),
  v = float32(new Float32Array(count), [count]);
const [B, L] = T.batch;
const words = fs.readFileSync(path.join(dir, "train", T.data.batches.file));
const ids = new Uint16Array(words.buffer, words.byteOffset, words.byteLength / 2);
const fixed = {
  steps: scalar(800),
  warmup: scalar(100),
  clip: scalar(1),
  layer_on: float32(new Float32Array(T.n_layers).fill(1), [T.n_layers]),
  heads: float32(new Float32Array(h), [h]),
};
const fetches = ["loss", "grad_norm", "new_m", "new_v", ...T.params.map((p) => "new_" + p.input)];

async function step(s) {
  const feeds = { ...fixed, m: m, v: v, s: scalar(s) };
  T.params.forEach((p, i) => (feeds[p.input] = weights[i]));
  const x = BigInt64Array.from(ids.subarray(s * B * L, (s + 1) * B * L), BigInt);
  feeds.x = new ort.Tensor("int64", x, [B, L]);
  const only = Object.fromEntries(session.inputNames.map((k) => [k, feeds[k]]));
  const r = await session.run(only, fetches);
  if (!Number.isFinite(r.loss.data[0])) {
    throw new Error(`step ${s}: the loss is ${r.loss.data[0]}`);
  }
  T.params.forEach((p, i) => (weights[i] = r["new_" + p.input]));
  m = r.new_m;
  v = r.new_v;
}

for (let s = 0; s < 20; s++) {
  await step(s); // warm-up: the engine's first runs allocate
}
const times = [];
for (let s = 20; s < 20 + steps; s++) {
  const t0 = performance.now();
  await step(s);
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
const at = (q) => Math.round(times[Math.floor(q * (times.length - 1))] * 100) / 100;
console.log(
  JSON.stringify({
    ms_per_step: at(0.5),
    p10: at(0.1),
    p90: at(0.9),
    steps: steps,
    n_weights: count,
    h: h,
    d_k: dK,
  }),
);
if (process.env.PROF) { session.endProfiling(); }
