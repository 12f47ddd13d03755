// The explorer's engine: runs the course's exported models in the browser.
//
// It computes nothing itself. The models are the mhacourse package's own
// forward passes, exported to ONNX at build time: the tiny models' is one
// graph for every (h, d_k) with the weights as inputs (mhacourse/web_train.py;
// each tiny model is a file of weights, mhacourse/web_export.py), MiniLM's a
// graph of its own. onnxruntime-web runs them (set up in ort.js), and
// @huggingface/tokenizers reads each model's tokenizer.json.
// Both come from npm at build time (scripts/vendor_js.py).
//
// It exports `engine` (start, tiny, tinyText, forwardWith, minilm,
// loadMiniLM, tokenizeTiny, ...), which the explorer and the trainer use and
// the page's entry (page.js) offers to the browser tests.
import { MAN as manifest, STATIC } from "./data.js";
import { feedsOf } from "./knob-feeds.js";
import {
  createSession,
  fetchJSON,
  fetchOk,
  float32,
  int64,
  knobFeeds,
  loadOrt,
  only,
  sessionFrom,
} from "./ort.js";

const DATA = STATIC + "explorer-data/";

var Tokenizer = null;
var tokenizers = {};
var sessions = {};

// Start the engine: onnxruntime-web and the tiny models' tokenizer.
// Rejects with a one-line reason when the browser cannot run it.
var started = null;
function start() {
  if (started) {
    return started;
  }
  started = (async function () {
    if (location.protocol === "file:") {
      throw new Error(
        "the live engine needs the site served over http(s) " +
          "(browsers block WebAssembly modules on file:// pages); run " +
          "`python -m http.server -d _build/html` and open it there",
      );
    }
    if (typeof WebAssembly !== "object" || typeof WebAssembly.instantiate !== "function") {
      throw new Error("this browser has no WebAssembly, which the live engine needs");
    }
    await loadOrt();
    Tokenizer = (await import(STATIC + "tokenizers/tokenizers.min.mjs")).Tokenizer;
    var t = manifest.tiny_tokenizer;
    var spec = await Promise.all([
      fetchJSON(DATA + "tokenizers/" + t.file),
      fetchJSON(DATA + "tokenizers/" + t.config),
    ]);
    tokenizers.tiny = new Tokenizer(spec[0], spec[1]);
    await session("train/" + manifest.train.graphs.forward.file); // every tiny model runs it
    return true;
  })();
  started.catch(function () {
    started = null;
  }); // a file back in place: the next call tries again
  return started;
}

// A graph under explorer-data/, loaded once (a failure names the file).
function session(file) {
  if (!sessions[file]) {
    sessions[file] = sessionFrom(DATA + file, file.split("/").pop());
    sessions[file].catch(function () {
      delete sessions[file];
    });
  }
  return sessions[file];
}

// Tokenize for a tiny model: word ids, tokens as the model sees them, how
// many tokens the text had (before keeping the first max_len), and how many
// are unknown ([UNK]).
function tokenizeTiny(text) {
  var t = manifest.tiny_tokenizer;
  var enc = tokenizers.tiny.encode(text, { add_special_tokens: false });
  var n = enc.ids.length;
  var keep = Math.min(n, t.max_len);
  var ids = Array.from(enc.ids.slice(0, keep), Number);
  var tokens = enc.tokens.slice(0, keep);
  var unk = tokens.filter(function (x) {
    return x === t.unk;
  }).length;
  return { ids: ids, tokens: tokens, total: n, kept: keep, unk: unk };
}

// Why a tiny model cannot read this text, or null: no words at all, or
// none that its word list knows (a right-to-left script, emoji, ...). The
// explorer and the trainer both refuse with this line.
function tinyRefusal(tok) {
  if (tok.kept === 0) {
    return "Type a sentence: no words were found in the text.";
  }
  if (tok.unk === tok.kept) {
    return (
      "None of these words is in the tiny models' vocabulary (" +
      tok.kept +
      " tokens, all [UNK]): they know only the English word list of their task; try an example " +
      "sentence."
    );
  }
  return null;
}

// The tiny model's forward pass on word ids, for any weights: params is
// one {data: Float32Array, dims} per manifest.train.params entry, in that
// order; h the number of heads; opts.mask (n_layers * h, 1 keep, 0 off)
// and opts.feeds (the knobs' inputs). Returns every layer's attention, (h, L, L)
// row-major. Runs are queued: one session runs one call at a time.
var queue = Promise.resolve();
async function forwardWith(params, h, ids, opts) {
  await start();
  var T = manifest.train;
  var s = await session("train/" + T.graphs.forward.file);
  var feeds = { ids: int64(ids, [1, ids.length]) };
  // some heads switched off (opts.mask); the knobs' inputs the graph has
  // (opts.feeds: {input: {data, dims}}, the trainer's knobs; their defaults
  // for the explorer's models)
  var mask = (opts && opts.mask) || new Float32Array(T.n_layers * h).fill(1);
  feeds.head_mask = float32(mask, [T.n_layers, h]);
  knobFeeds((opts && opts.feeds) || feedsOf({}), feeds);
  T.params.forEach(function (p, i) {
    feeds[p.input] = float32(params[i].data, params[i].dims);
  });
  var names = [];
  for (var l = 1; l <= T.n_layers; l++) {
    names.push("attn_" + l);
  }
  feeds = only(s, feeds); // the graph reads h from head_mask
  var run = queue.then(function () {
    return s.run(feeds, names);
  });
  queue = run.catch(function () {});
  var r = await run;
  return names.map(function (n) {
    return r[n].data;
  });
}

// A tiny model's weights file, cut into tensors by the shapes the manifest
// gives for its d_model.
var weights = {};
function tinyWeights(entry) {
  if (!weights[entry.file]) {
    weights[entry.file] = fetchOk(DATA + "models/" + entry.file, entry.file)
      .then(function (r) {
        return r.arrayBuffer();
      })
      .then(function (buf) {
        var all = new Float32Array(buf),
          at = 0,
          d = entry.d_model;
        var params = manifest.train.params.map(function (p) {
          var dims = p.dims.map(function (ab) {
            return ab[0] * d + ab[1];
          });
          var n = dims.reduce(function (a, b) {
            return a * b;
          }, 1);
          var t = { data: all.subarray(at, at + n), dims: dims };
          at += n;
          return t;
        });
        if (at !== all.length) {
          throw new Error(
            entry.file + " holds " + all.length + " numbers; d_model " + d + " needs " + at,
          );
        }
        return params;
      });
    weights[entry.file].catch(function () {
      delete weights[entry.file];
    });
  }
  return weights[entry.file];
}

// A tiny model of weights params (as forwardWith's) on text: its tokens
// and every layer's (h, L, L) attention, row-major.
async function tinyText(params, h, text, opts) {
  await start();
  var tok = tokenizeTiny(text);
  var out = {
    tokens: tok.tokens,
    ids: tok.ids,
    total: tok.total,
    kept: tok.kept,
    unk: tok.unk,
    h: h,
    attn: [],
  };
  if (tok.kept > 0) {
    out.attn = await forwardWith(params, h, tok.ids, opts);
  }
  return out;
}

// One run of a tiny model of the manifest.
async function tiny(name, text) {
  await start();
  var entry = (manifest.tiny || []).find(function (m) {
    return m.name === name;
  });
  if (!entry) {
    throw new Error("no tiny model named " + name);
  }
  return tinyText(await tinyWeights(entry), entry.h, text);
}

// MiniLM: loaded only when the reader asks (its size is in the manifest).
var minilmLoading = null;
function loadMiniLM(onProgress) {
  if (minilmLoading) {
    return minilmLoading;
  }
  var m = manifest.minilm;
  minilmLoading = (async function () {
    await start();
    var spec = await Promise.all([
      fetchJSON(DATA + "tokenizers/" + m.tokenizer),
      fetchJSON(DATA + "tokenizers/" + m.config),
    ]);
    tokenizers.minilm = new Tokenizer(spec[0], spec[1]);
    var resp = await fetchOk(DATA + "models/" + m.file, "MiniLM");
    var total = m.bytes,
      got = 0,
      parts = [];
    var reader = resp.body.getReader();
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) {
        break;
      }
      parts.push(chunk.value);
      got += chunk.value.length;
      if (onProgress) {
        onProgress(got, total);
      }
    }
    var bytes = new Uint8Array(got),
      at = 0;
    parts.forEach(function (p) {
      bytes.set(p, at);
      at += p.length;
    });
    sessions["models/" + m.file] = createSession(bytes, m.file);
    await sessions["models/" + m.file];
    return true;
  })();
  minilmLoading.catch(function () {
    minilmLoading = null;
  });
  return minilmLoading;
}

// WordPiece ids with [CLS] ... [SEP]; a text longer than the model's
// positions keeps its first max_len - 1 tokens and [SEP], as
// mhacourse.bert.tokenize does.
function tokenizeMiniLM(text) {
  var m = manifest.minilm;
  var enc = tokenizers.minilm.encode(text);
  var ids = Array.from(enc.ids, Number),
    tokens = enc.tokens.slice();
  var total = ids.length;
  if (total > m.max_len) {
    var sep = ids[ids.length - 1];
    ids = ids.slice(0, m.max_len - 1).concat([sep]);
    tokens = tokens.slice(0, m.max_len - 1).concat(["[SEP]"]);
  }
  return { ids: ids, tokens: tokens, total: total, kept: ids.length };
}

// One run of MiniLM with some heads switched off: headMask is a
// Float32Array of n_layers * h, 1 = keep, 0 = remove.
async function minilm(text, headMask) {
  await loadMiniLM();
  var m = manifest.minilm;
  var tok = tokenizeMiniLM(text);
  var out = {
    tokens: tok.tokens,
    ids: tok.ids,
    total: tok.total,
    kept: tok.kept,
    h: m.h,
    attn: [],
    embedding: null,
  };
  if (tok.kept <= 2) {
    return out;
  }
  var mask = headMask || new Float32Array(m.layers * m.h).fill(1);
  var s = await sessions["models/" + m.file];
  var r = await s.run({
    input_ids: int64(tok.ids, [1, tok.ids.length]),
    head_mask: float32(mask, [m.layers, m.h]),
  });
  for (var l = 1; l <= m.layers; l++) {
    out.attn.push(r["attn_" + l].data);
  }
  out.embedding = r.embedding.data;
  return out;
}

export const engine = {
  start: start,
  tiny: tiny,
  tinyRefusal: tinyRefusal,
  tinyText: tinyText,
  forwardWith: forwardWith,
  minilm: minilm,
  loadMiniLM: loadMiniLM,
  tokenizeTiny: function (t) {
    return start().then(function () {
      return tokenizeTiny(t);
    });
  },
  tokenizeMiniLM: function (t) {
    return loadMiniLM().then(function () {
      return tokenizeMiniLM(t);
    });
  },
  minilmLoaded: function () {
    return !!tokenizers.minilm;
  },
};
