// The read-out worker: scores the model the page is training (or has
// trained) on the held-out set, beside the training worker, so that
// training never waits for a read-out and the page's controls never wait
// for either.
//
// It computes nothing itself: mhacourse.web_train's `evaluate` graph gives
// the held-out accuracy (overall, previous, lookup), every head's task
// statistics and its role (the package's head_roles), with `head_mask`
// (some heads switched off) and the knobs' inputs the graph has
// (`feeds`). The `circuits` graph, once per copy of the
// weights, gives the circuit read-outs and the quick roles (on the first
// probe_n held-out sequences): the "full read-out" the benchmark times.
// Requests are answered in the order they came.
//
// The messages: trainer-client.js (Reader), the page's side, lists them.
import { float32, knobFeeds, loadOrt, only } from "./ort.js";
import {
  afterQuiet,
  bytes,
  graph,
  ids64,
  quietFor,
  report,
  weightFeeds,
  words,
} from "./worker-common.js";
import { patchMaps } from "./readout-patch.js";

let T = null; // the manifest's "train" entry
let DIR = null; // where its files are
let evaluate = null;
let circuits = null;
let heldout = null;
let baseline = null; // rows of T.data.baseline.columns: the random baseline of every size

let booting = null;
function boot(base, manifest) {
  if (!booting) {
    booting = start(base, manifest);
    booting.catch(() => {
      booting = null;
    });
  }
  return booting;
}

async function start(base, manifest) {
  T = manifest.train;
  const dir = (DIR = base + "explorer-data/train/");
  await loadOrt();
  evaluate = await graph(dir, T.graphs.evaluate);
  circuits = await graph(dir, T.graphs.circuits);
  const b = await bytes(dir, T.data.baseline.file);
  baseline = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  const h = await words(dir, T.data.heldout),
    L = T.batch[1];
  heldout = ids64(h, 0, h.length, [h.length / L, L]);
}

// One read-out of the weights msg.params (as the page holds them).
async function read(msg) {
  const feeds = weightFeeds(T, msg.params, msg.h, { x: heldout });
  const layers = T.n_layers;
  feeds.head_mask = float32(msg.mask || new Float32Array(layers * msg.h).fill(1), [layers, msg.h]);
  knobFeeds(msg.feeds, feeds);
  const typing = afterQuiet(); // the reader is typing: the page draws first
  if (typing) {
    await typing;
  }
  const t0 = performance.now();
  const r = await evaluate.run(only(evaluate, feeds));
  const out = {
    type: "read",
    id: msg.id,
    run: msg.run,
    step: msg.step,
    accuracy: Array.from(r.accuracy.data),
    stats: Array.from(r.stats.data),
    role: Array.from(r.role.data, Number),
    named: Array.from(r.named.data, Boolean),
    layers: layers,
    h: msg.h,
    circuits: null,
    msEvaluate: performance.now() - t0,
    msCircuits: 0,
  };
  // the circuits read the weights alone: once a copy, not for an ablation
  if (!msg.mask) {
    const cf = weightFeeds(T, msg.params, msg.h, {});
    const later = afterQuiet();
    if (later) {
      await later;
    }
    const t1 = performance.now();
    const c = await circuits.run(only(circuits, cf));
    out.msCircuits = performance.now() - t1;
    out.circuits = { baseline: baselineOf(msg.params[0].dims[1], msg.h) };
    for (const k of circuits.outputNames) {
      out.circuits[k] = Array.from(c[k].data, Number);
    } // int64, bool too
  }
  out.ms = performance.now() - t0;
  return out;
}

// The build's random baseline for d_model and h, by column name (a
// read-out's `baseline` names one): a function of the sizes alone
// (mhacourse.web_train.baseline_table), not of the weights.
function baselineOf(d_model, h) {
  const d_k = d_model / h,
    names = T.data.baseline.columns,
    n = names.length;
  for (let r = 0; r < baseline.length; r += n) {
    if (baseline[r] === d_model && baseline[r + 1] === d_k) {
      const row = {};
      names.forEach((name, i) => {
        row[name] = baseline[r + i];
      });
      return row;
    }
  }
  throw new Error("the build has no random baseline for d_model " + d_model + ", d_k " + d_k);
}

let queue = Promise.resolve();
self.onmessage = (e) => {
  const msg = e.data;
  if (msg.type === "quiet") {
    quietFor(msg.ms);
    return;
  } // at once, not behind the reads
  queue = queue.then(async () => {
    try {
      if (msg.type === "setup") {
        await boot(msg.base, msg.manifest);
        self.postMessage({ type: "booted" });
      } else if (msg.type === "read") {
        if (!booting) {
          throw new Error("the read-out worker was not set up");
        }
        await booting;
        self.postMessage(await read(msg));
      } else if (msg.type === "patch") {
        // the Patch view (readout-patch.js)
        if (!booting) {
          throw new Error("the read-out worker was not set up");
        }
        await booting;
        await patchMaps(T, DIR, msg, (part) => self.postMessage(part)); // patch, then ablate
      }
    } catch (err) {
      const out = report(err, msg.type);
      out.id = msg.id;
      out.run = msg.run;
      self.postMessage(out);
    }
  });
};
