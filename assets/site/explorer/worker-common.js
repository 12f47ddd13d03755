// What the two workers of the trainer share (train-worker.js trains,
// readout-worker.js reads the model out), beyond onnxruntime (ort.js): the
// files of the export, the tensors the graphs read, the error as the page
// shows it, and the quiet window. Both are module workers and import this file.
import { LoadError, fetchBytes, float32, int64, isTensor, sessionFrom } from "./ort.js";

// A session for one exported graph (the manifest's train.graphs entry) under dir.
export function graph(dir, entry) {
  return sessionFrom(dir + entry.file, entry.file);
}

// A file of the export under dir, as bytes.
export function bytes(dir, file) {
  return fetchBytes(dir + file, file);
}

// A data file of the manifest (train.data entry) as 16-bit words.
export async function words(dir, entry) {
  const b = await bytes(dir, entry.file);
  return new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2);
}

// Word ids as the int64 tensor the graphs read.
export function ids64(u16, start, count, shape) {
  return int64(u16.subarray(start, start + count), shape);
}

// The weights (one {data, dims} per manifest train.params entry) and the
// heads' placeholder as the feeds of a graph.
export function weightFeeds(T, params, h, into) {
  T.params.forEach((p, i) => {
    const w = params[i];
    into[p.input] = isTensor(w) ? w : float32(w.data, w.dims);
  });
  into.heads = float32(new Float32Array(h), [h]);
  return into;
}

// The error message as the page shows it, and where it happened.
export function report(err, stage) {
  return {
    type: "error",
    message: String(err && err.message ? err.message : err),
    stage: err instanceof LoadError ? "load" : stage,
  };
}

// Input comes first. On two cores the page's main thread shares them with
// the training worker and the read-out worker: when the reader types, the
// page asks both to start nothing new for a moment (a "quiet" message), so
// the keystroke's picture is drawn on a free core. A graph already running
// finishes; the next one waits until the window closes.
let quietUntil = 0;
export function quietFor(ms) {
  const ok = typeof ms === "number" && ms > 0 && ms <= 1000;
  if (ok) {
    quietUntil = Math.max(quietUntil, performance.now() + ms);
  }
}
export function afterQuiet() {
  const wait = quietUntil - performance.now();
  return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : null;
}
