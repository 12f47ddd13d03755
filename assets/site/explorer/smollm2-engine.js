// SmolLM2-135M in the browser: the mhacourse package's own forward pass
// (mhacourse/real_lm/web.py exports real_lm.model._forward_core with the next-token
// loss and every layer's attention weights; its matrices stay in the GGUF
// file's 4-bit blocks, multiplied by onnxruntime's MatMulNBits). Nothing is
// fetched until the reader asks (load). The tokenizer is the model's own,
// as tokenizer.json, read by @huggingface/tokenizers.
//
// Exports smol: load(onProgress), run(ids, mask), tokenize(text),
// refusal(tok) and memoryRefusal(), which the SmolLM2 view (smollm2.js)
// and the browser tests use.
import { SMOL, STATIC } from "./data.js";
import { createSession, fetchJSON, fetchOk, float32, int64, loadOrt } from "./ort.js";

const DIR = STATIC + "explorer-data/smollm2/";
const M = SMOL ? SMOL.manifest : null;

var tokenizer = null,
  session = null,
  loading = null;
var queue = Promise.resolve();

// Out of memory, as the browser or onnxruntime says it: one line for all.
function memoryError(err) {
  var t = String(err && err.message ? err.message : err);
  return err instanceof RangeError || /memory|OOM|allocat/i.test(t);
}
function memoryLine() {
  return (
    "SmolLM2 ran out of memory in this tab (it needs about " +
    M.memory_mb +
    " MB): close other tabs and load it again; the precomputed examples below still work"
  );
}

// Why this browser should not try, or null: too little memory to hold the
// model (Chromium reports the device's memory, in GB, rounded down).
function memoryRefusal() {
  var gb = navigator.deviceMemory;
  if (typeof gb === "number" && gb * 1024 < 2 * M.memory_mb) {
    return (
      "this device reports " +
      gb +
      " GB of memory; SmolLM2 needs about " +
      M.memory_mb +
      " MB in this tab, so it is not loaded here. Below: the example sentences, precomputed " +
      "when the site was built"
    );
  }
  return null;
}

// One file's bytes (its size from the manifest), with progress: done is
// what came before it, all the whole download; a short, long or failed
// download says so.
async function fetchFile(file, size, done, all, onProgress) {
  var resp = await fetchOk(DIR + file, file);
  var bytes = new Uint8Array(size),
    got = 0,
    reader = resp.body.getReader();
  for (;;) {
    var chunk = await reader.read();
    if (chunk.done) {
      break;
    }
    if (got + chunk.value.length > size) {
      throw new Error(file + " is larger than the build wrote (a damaged file)");
    }
    bytes.set(chunk.value, got);
    got += chunk.value.length;
    if (onProgress) {
      onProgress(done + got, all);
    }
  }
  if (got !== size) {
    throw new Error(file + " stopped after " + got + " of " + size + " bytes");
  }
  return bytes;
}

// The graph and its weights (ONNX external data, a file of their own).
async function fetchModel(onProgress) {
  var graph = await fetchFile(M.file, M.graph_bytes, 0, M.bytes, onProgress);
  var data = await fetchFile(M.data, M.data_bytes, M.graph_bytes, M.bytes, onProgress);
  return { graph: graph, data: data };
}

// Load everything (once): onnxruntime-web, the tokenizer, the model.
// Resolves with {bytes, readyMs}: readyMs, from the bytes being local to
// the first forward pass done.
function load(onProgress) {
  if (loading) {
    return loading;
  }
  loading = (async function () {
    if (!M) {
      throw new Error("the build wrote no SmolLM2 data; rebuild the site with `make book`");
    }
    var why = memoryRefusal();
    if (why) {
      throw new Error(why);
    }
    await loadOrt();
    var Tokenizer = (await import(STATIC + "tokenizers/tokenizers.min.mjs")).Tokenizer;
    var spec = await Promise.all([
      fetchJSON(DIR + M.tokenizer),
      fetchJSON(DIR + M.tokenizer_config),
    ]);
    tokenizer = new Tokenizer(spec[0], spec[1]);
    var files = await fetchModel(onProgress);
    var t0 = performance.now();
    try {
      // The weights as external data: onnxruntime copies each tensor once
      // into its memory (a model of 105 MB in one buffer took 271 MB there).
      // No graph optimisation: it folds the 4-bit zero points and the
      // vocabulary's slices into float copies (562 MB in all, measured by
      // benchmarks/bench_explorer_smollm2.py), for no faster run.
      session = await createSession(files.graph, M.file, {
        graphOptimizationLevel: "disabled",
        externalData: [{ path: M.data, data: files.data }],
      });
    } catch (err) {
      if (memoryError(err.cause || err)) {
        throw new Error(memoryLine());
      }
      throw err;
    }
    await run([M.pad, M.pad], null); // the first run sets up the kernels
    return { bytes: files.graph.length + files.data.length, readyMs: performance.now() - t0 };
  })();
  loading.catch(function () {
    loading = null;
    session = null;
  });
  return loading;
}

function tokenize(text) {
  var enc = tokenizer.encode(text, { add_special_tokens: false });
  var ids = Array.from(enc.ids, Number);
  var tokens = ids.map(function (i) {
    return tokenizer.decode([i], { skip_special_tokens: false });
  });
  return { ids: ids, tokens: tokens };
}

// Why these ids cannot run, or null (the graph's limits: 2..max_len tokens).
// repeated: the sentence's tokens are there twice.
function refusal(n, repeated) {
  if (n === 0) {
    return "Type a sentence: the text is empty (or only spaces).";
  }
  if (n < 2) {
    return "Type at least two tokens: the loss is the model's surprise at the next token.";
  }
  if (n > M.max_len) {
    return (
      "This is " +
      n +
      " tokens" +
      (repeated ? " repeated" : "") +
      "; SmolLM2 runs here on at most " +
      M.max_len +
      " (the exported graph's limit): shorten the sentence" +
      (repeated && n / 2 <= M.max_len ? " or do not repeat it." : ".")
    );
  }
  return null;
}

// One forward pass: ids (2..max_len), mask a Float32Array of layers * h
// (1 keep, 0 off) or null. Returns {loss: Float32Array(L - 1), attn: one
// Float32Array (h, L, L) per layer}. Runs are queued (one at a time).
async function run(ids, mask) {
  if (!session) {
    throw new Error("SmolLM2 is not loaded");
  }
  var why = refusal(ids.length);
  if (why) {
    throw new Error(why);
  }
  // padded to the graph's max_len: the model is causal, so the padding
  // changes nothing of the first L rows and L - 1 losses, which are kept
  var L = ids.length,
    P = M.max_len,
    padded = new Array(P).fill(M.pad);
  ids.forEach(function (x, i) {
    padded[i] = x;
  });
  var m = mask || new Float32Array(M.layers * M.h).fill(1);
  var feeds = { input_ids: int64(padded, [1, P]), head_mask: float32(m, [M.layers, M.h]) };
  var go = queue.then(function () {
    return session.run(feeds);
  });
  queue = go.catch(function () {});
  var r;
  try {
    r = await go;
  } catch (err) {
    if (memoryError(err)) {
      throw new Error(memoryLine());
    }
    throw err;
  }
  var attn = [];
  for (var l = 1; l <= M.layers; l++) {
    var full = r["attn_" + l].data,
      A = new Float32Array(M.h * L * L);
    for (var h = 0; h < M.h; h++) {
      for (var q = 0; q < L; q++) {
        A.set(full.subarray((h * P + q) * P, (h * P + q) * P + L), (h * L + q) * L);
      }
    }
    attn.push(A);
  }
  return { loss: r.loss.data.slice(0, L - 1), attn: attn };
}

export const smol = {
  manifest: M,
  load: load,
  run: run,
  refusal: refusal,
  memoryRefusal: function () {
    return M ? memoryRefusal() : null;
  },
  tokenize: function (t) {
    return load().then(function () {
      return tokenize(t);
    });
  },
  loaded: function () {
    return !!session;
  },
};
