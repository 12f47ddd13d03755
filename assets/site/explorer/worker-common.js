// What the two workers of the trainer share (train-worker.js trains,
// readout-worker.js reads the model out): starting onnxruntime-web, loading
// a file of the export with a failure that names it, and the tensors the
// graphs read. Both are module workers and import this file.

// A failure to load what a worker needs (a graph, the data): the page says
// so, and what to do, instead of "training stopped".
export class LoadError extends Error {}

// onnxruntime-web, single-threaded WebAssembly (no SharedArrayBuffer).
export async function loadOrt(base) {
  let ort;
  try { ort = await import(base + "ort/ort.wasm.min.mjs"); } catch (e) {
    throw new LoadError("could not load onnxruntime (ort.wasm.min.mjs)");
  }
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = base + "ort/";
  ort.env.logLevel = "error";
  return ort;
}

// The bytes of explorer-data/train/<file>.
export async function fetchBytes(dir, file) {
  let r;
  try { r = await fetch(dir + file); } catch (e) { throw new LoadError("could not load " + file + " (no answer from the server)"); }
  if (!r.ok) { throw new LoadError("could not load " + file + " (HTTP " + r.status + ")"); }
  return new Uint8Array(await r.arrayBuffer());
}

// A session for one exported graph (the manifest's train.graphs entry).
export async function graph(ort, dir, entry) {
  const bytes = await fetchBytes(dir, entry.file);
  try {
    return await ort.InferenceSession.create(bytes, {
      executionProviders: ["wasm"], graphOptimizationLevel: "all", logSeverityLevel: 3 });
  } catch (e) {
    throw new LoadError(entry.file + " is not a model onnxruntime can read (a damaged file)");
  }
}

// A data file of the manifest (train.data entry) as 16-bit words.
export async function words(dir, entry) {
  const b = await fetchBytes(dir, entry.file);
  return new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2);
}

// Word ids as the int64 tensor the graphs read.
export function ids64(ort, u16, start, count, shape) {
  const a = new BigInt64Array(count);
  for (let i = 0; i < count; i++) { a[i] = BigInt(u16[start + i]); }
  return new ort.Tensor("int64", a, shape);
}

// The weights (one {data, dims} per manifest train.params entry) and the
// heads' placeholder as the feeds of a graph.
export function weightFeeds(ort, T, params, h, into) {
  T.params.forEach((p, i) => {
    const w = params[i];
    into[p.input] = w instanceof ort.Tensor ? w : new ort.Tensor("float32", w.data, w.dims);
  });
  into.heads = new ort.Tensor("float32", new Float32Array(h), [h]);
  return into;
}

// The knobs' inputs (the page's {input: {data, dims}}) as tensors, into
// `into`; each graph is fed those it has (only).
export function knobFeeds(ort, given, into) {
  Object.keys(given || {}).forEach((k) => {
    into[k] = new ort.Tensor("float32", Float32Array.from(given[k].data), given[k].dims);
  });
  return into;
}

// The feeds a graph takes, of those given: onnxruntime refuses a feed the
// graph does not have (forward and evaluate read h from head_mask, not
// from `heads`; a knob's input is in some graphs only).
export function only(session, feeds) {
  const out = {};
  for (const k of session.inputNames) { if (k in feeds) { out[k] = feeds[k]; } }
  return out;
}

// The error message as the page shows it, and where it happened.
export function report(err, stage) {
  return { type: "error", message: String(err && err.message ? err.message : err),
    stage: err instanceof LoadError ? "load" : stage };
}

// Input comes first. On two cores the page's main thread shares them with
// the training worker and the read-out worker: when the reader types, the
// page asks both to start nothing new for a moment (a "quiet" message), so
// the keystroke's picture is drawn on a free core. A graph already running
// finishes; the next one waits until the window closes.
let quietUntil = 0;
export function quietFor(ms) {
  const ok = typeof ms === "number" && ms > 0 && ms <= 1000;
  if (ok) { quietUntil = Math.max(quietUntil, performance.now() + ms); }
}
export function afterQuiet() {
  const wait = quietUntil - performance.now();
  return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : null;
}
