// onnxruntime-web, set up once for the page and its two workers: the one
// module that loads it, sets it (single-threaded WebAssembly: no
// SharedArrayBuffer, so no COOP/COEP headers; no proxy worker; errors only),
// makes sessions from a graph's bytes, and builds the feeds a graph takes.
// The explorer's engine (engine.js), SmolLM2's (smollm2-engine.js) and the
// module workers (through worker-common.js) import it. onnxruntime-web
// comes from npm at build time (scripts/vendor_js.py) into _static/ort/.

const ORT = new URL("../ort/", import.meta.url).href; // _static/ort/, beside _static/explorer/

// A failure to load what the page or a worker needs (onnxruntime, a graph,
// the data): the page says so, and what to do, instead of "training stopped".
export class LoadError extends Error {}

let ort = null;
let loading = null;

// onnxruntime-web, loaded once and set; rejects with one line if it cannot be.
export function loadOrt() {
  if (!loading) {
    loading = import(ORT + "ort.wasm.min.mjs").then(
      (m) => {
        m.env.wasm.numThreads = 1;
        m.env.wasm.proxy = false;
        m.env.wasm.wasmPaths = ORT;
        m.env.logLevel = "error";
        ort = m;
        return m;
      },
      () => {
        loading = null; // a file back in place: the next call tries again
        throw new LoadError("could not load onnxruntime (ort.wasm.min.mjs)");
      },
    );
  }
  return loading;
}

// The answer for a file of the site, or the one failure text that names the
// file (`name`: its name, not its whole address) and what went wrong. Every
// file the page and the workers load comes through here (onnxruntime itself
// says "failed to load external data file" for a 404).
export async function fetchOk(url, name) {
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new LoadError("could not load " + name + " (no answer from the server)");
  }
  if (!r.ok) {
    throw new LoadError("could not load " + name + " (HTTP " + r.status + ")");
  }
  return r;
}

// The bytes at url (see fetchOk).
export async function fetchBytes(url, name) {
  return new Uint8Array(await (await fetchOk(url, name)).arrayBuffer());
}

// The JSON at url, named by its file name (see fetchOk).
export async function fetchJSON(url) {
  return (await fetchOk(url, url.split("/").pop())).json();
}

// A session for a graph's bytes (named `name` in the error). options:
// onnxruntime's session options over these defaults (WebAssembly, every
// graph optimisation). The error keeps onnxruntime's as its cause (SmolLM2
// tells running out of memory from a damaged file).
export async function createSession(bytes, name, options) {
  await loadOrt();
  const settings = Object.assign(
    { executionProviders: ["wasm"], graphOptimizationLevel: "all", logSeverityLevel: 3 },
    options || {},
  );
  try {
    return await ort.InferenceSession.create(bytes, settings);
  } catch (e) {
    const why = name + " is not a model onnxruntime can read (a damaged file)";
    throw new LoadError(why, { cause: e });
  }
}

// A session for the graph at url (fetched here, so that a failure names it).
export async function sessionFrom(url, name) {
  return createSession(await fetchBytes(url, name), name);
}

// Tensors (onnxruntime loaded): float32 of an array or typed array, and
// int64 of whole numbers (word ids).
export function float32(data, dims) {
  const values = data instanceof Float32Array ? data : Float32Array.from(data);
  return new ort.Tensor("float32", values, dims);
}
export function int64(values, dims) {
  const a = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    a[i] = BigInt(values[i]);
  }
  return new ort.Tensor("int64", a, dims);
}
export function isTensor(x) {
  return ort !== null && x instanceof ort.Tensor;
}

// The knobs' inputs (the page's {input: {data, dims}}) as tensors, into
// `into`; each graph is fed those it has (only).
export function knobFeeds(given, into) {
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
  for (const k of session.inputNames) {
    if (k in feeds) {
      out[k] = feeds[k];
    }
  }
  return out;
}
