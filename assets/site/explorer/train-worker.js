// The training worker: trains a tiny model in the reader's browser, off the
// page's main thread, with the package's own exported graphs.
//
// It computes nothing itself. mhacourse.web_train exports, once for every
// (h, d_k): `init` (the initial weights) and `step` (one training step: the
// tiny model's forward pass, the loss, torch.func's gradients, clipping and
// AdamW with train()'s schedule). onnxruntime-web runs them (WebAssembly,
// one thread). This file only feeds the tensors back in, in order, and
// reports what the graphs return.
//
// Nothing is read out from here: a copy of the weights goes to the page
// every few steps (`weights` in "ready", "progress" and "state"); the page
// draws the heads from it with the `forward` graph (engine.js, forwardWith),
// and the read-out worker (readout-worker.js) scores it with `evaluate`
// on the held-out set, beside this one. Training never waits for either.
//
// The messages: trainer-client.js, the page's side, lists them.

import { knobFeeds, loadOrt, only } from "./ort.js";
import { graph, words, ids64, weightFeeds, report, quietFor, afterQuiet } from "./worker-common.js";

let ort = null;
let T = null; // the manifest's "train" entry
let DATA = "";
const sessions = {};
const data = {};
let run = null; // the one model this worker trains

// Every message names the run it is about (the page's run id, from setup):
// the page keeps none about an earlier model.
function post(msg, transfer) {
  if (msg.run === undefined && run) {
    msg.run = run.id;
  }
  self.postMessage(msg, transfer || []);
}

let booting = null; // one start, however many setups arrive while it runs
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
  DATA = base + "explorer-data/train/";
  ort = await loadOrt();
  for (const k of ["init", "step"]) {
    sessions[k] = await graph(DATA, T.graphs[k]);
  }
  for (const k of ["pool", "batches"]) {
    data[k] = await words(DATA, T.data[k]);
  }
}

function scalar(x) {
  return new ort.Tensor("float32", new Float32Array([x]), []);
}

async function setup(msg) {
  await boot(msg.base, msg.manifest);
  const d = msg.h * msg.d_k;
  // the knobs are inputs of the same graphs: each graph is fed those it has
  const init = knobFeeds(msg.feeds, {
    noise: new ort.Tensor("float16", data.pool, [data.pool.length]),
    width: new ort.Tensor("float32", new Float32Array(d), [d]),
    seed: new ort.Tensor("int64", new BigInt64Array([BigInt(msg.seed)]), []),
    heads: new ort.Tensor("float32", new Float32Array(msg.h), [msg.h]),
  });
  const r = await sessions.init.run(only(sessions.init, init));
  const params = T.params.map((p) => r[p.input]);
  const count = params.reduce((n, p) => n + p.size, 0);
  // AdamW's moments: one vector each of every weight (the step keeps them flat)
  const zeros = () => new ort.Tensor("float32", new Float32Array(count), [count]);
  run = {
    id: msg.run,
    h: msg.h,
    d_k: msg.d_k,
    d_model: d,
    seed: msg.seed,
    params: params,
    m: zeros(),
    v: zeros(),
    s: 0,
    steps: msg.steps,
    running: false,
    drawEvery: msg.drawEvery,
    feeds: msg.feeds || {},
  };
  await warmUp();
  postWithWeights({
    type: "ready",
    h: msg.h,
    d_k: msg.d_k,
    d_model: d,
    params: count,
    steps: msg.steps,
    key: msg.key,
    run: msg.run,
  });
}

// Post `msg` with a copy of the weights as `msg.weights` (the copy is moved,
// not copied again, by postMessage).
function postWithWeights(msg) {
  const params = run.params.map((p) => ({ data: p.data.slice(), dims: p.dims.slice() }));
  msg.weights = { step: run.s, h: run.h, params: params };
  post(
    msg,
    params.map((p) => p.data.buffer),
  );
}

const stepFetches = () =>
  ["loss", "grad_norm", "new_m", "new_v"].concat(T.params.map((p) => "new_" + p.input));

// The step graph's inputs at step s of the run: its weights and moments, the
// schedule, the knobs and step s's batch.
function stepFeeds(s) {
  const B = T.batch[0],
    L = T.batch[1];
  const feeds = weightFeeds(T, run.params, run.h, { m: run.m, v: run.v });
  feeds.s = scalar(s);
  feeds.steps = scalar(run.steps);
  knobFeeds(run.feeds, feeds);
  feeds.x = ids64(data.batches, s * B * L, B * L, [B, L]);
  return only(sessions.step, feeds);
}

// A graph's first runs at new sizes are slow (the first four steps took
// 300 ms more than four later ones in Node at h 4, d_k 16): onnxruntime
// plans their memory, and V8 is still compiling the engine's hot
// WebAssembly functions with its optimising tier (in the page, with V8's
// tiering off, the background compile during training fell from 1.3 to
// 0.6 s of CPU). Two steps of the new model, their results dropped (the
// graph has no state), before the page says "ready", so that Train's first
// steps run closer to speed.
async function warmUp() {
  for (let i = 0; i < 2; i++) {
    await sessions.step.run(stepFeeds(0), stepFetches());
  }
}

async function step() {
  const s = run.s;
  const r = await sessions.step.run(stepFeeds(s), stepFetches());
  const loss = r.loss.data[0],
    norm = r.grad_norm.data[0];
  if (!Number.isFinite(loss) || !Number.isFinite(norm)) {
    return { loss: loss, norm: norm, diverged: true };
  }
  run.params = T.params.map((p) => r["new_" + p.input]);
  run.m = r.new_m;
  run.v = r.new_v;
  run.s = s + 1;
  return { loss: loss, norm: norm, diverged: false };
}

// A macrotask turn between steps, so that "pause" and the test hooks are
// read while the model trains (setTimeout(0) would wait 4 ms each time).
const channel = new MessageChannel();
function yieldToMessages() {
  return new Promise((resolve) => {
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
}

async function train() {
  if (run.running) {
    post({ type: "state", state: "running", note: "already training" });
    return;
  }
  if (run.s >= run.steps) {
    post({ type: "state", state: "done" });
    return;
  }
  run.running = true;
  post({ type: "state", state: "running" });
  let losses = [],
    t0 = performance.now(),
    s0 = run.s;
  const progress = () => {
    postWithWeights({
      type: "progress",
      step: run.s,
      steps: run.steps,
      losses: losses,
      stepsPerSecond: (run.s - s0) / ((performance.now() - t0) / 1000),
    });
    losses = [];
  };
  while (run.running && run.s < run.steps) {
    const r = await step();
    if (r.diverged) {
      run.running = false;
      // with the weights before the step that diverged (finite, unless they were not to start with)
      postWithWeights({
        type: "state",
        state: "diverged",
        step: run.s,
        loss: r.loss,
        norm: r.norm,
      });
      return;
    }
    losses.push(r.loss);
    const done = run.s >= run.steps;
    if (run.s % run.drawEvery === 0 || done) {
      progress();
    }
    await yieldToMessages();
    const typing = afterQuiet(); // the reader is typing: the page draws first
    if (typing) {
      await typing;
    }
  }
  const finished = run.s >= run.steps;
  run.running = false;
  if (losses.length) {
    progress();
  } // paused between two copies: the page is at run.s too
  postWithWeights({ type: "state", state: finished ? "done" : "paused", step: run.s });
}

// The tests read the weights (to compare with the package) through this.
function weights() {
  return {
    type: "weights",
    step: run.s,
    names: T.params.map((p) => p.name),
    arrays: run.params.map((p) => Array.from(p.data)),
  };
}

// Setups are handled one after another, in the order they came (the reader
// may change h three times in a second); "pause" and the test hooks act at
// once, between two steps.
let queue = Promise.resolve();
self.onmessage = (e) => {
  const msg = e.data;
  if (msg.type === "setup" || msg.type === "weights") {
    queue = queue.then(() => handle(msg));
  } else {
    handle(msg);
  }
};

async function handle(msg) {
  try {
    if (msg.type === "setup") {
      await setup(msg);
    } else if (msg.type === "train") {
      await train();
    } else if (msg.type === "pause") {
      if (run) {
        run.running = false;
      }
    } else if (msg.type === "quiet") {
      quietFor(msg.ms);
    } else if (msg.type === "weights") {
      post(weights());
    } else if (msg.type === "steps") {
      run.steps = msg.steps;
    } // tests: a short run
    else if (msg.type === "resources") {
      // the benchmark: what this worker loaded
      post({
        type: "resources",
        entries: performance
          .getEntriesByType("resource")
          .map((r) => ({ name: r.name, bytes: r.encodedBodySize || r.transferSize || 0 })),
      });
    } else if (msg.type === "poison") {
      run.params[0].data[0] = Infinity;
    } // tests: divergence
  } catch (err) {
    if (run) {
      run.running = false;
    }
    const out = report(err, msg.type);
    // a setup's failure is its own run's
    out.run = msg.type === "setup" ? msg.run : run ? run.id : null;
    post(out);
  }
}
