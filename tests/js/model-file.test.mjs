// Model files (lab/model-file.js, lab/safetensors.js): the page's weights
// written and read back exactly, and 16 bad files refused with one line
// each. tests/test_lab.py checks the files against tm.load.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  readModelFile,
  writeModelFile,
  fileSizeProblem,
  maxFileBytes,
  ModelFileError,
} from "../../assets/site/explorer/lab/model-file.js";
import {
  parseSafetensors,
  writeSafetensors,
  digestInput,
} from "../../assets/site/explorer/lab/safetensors.js";
import { sha256Hex } from "../../assets/site/explorer/lab/report.js";
import { KNOBS, withDefaults } from "./knobs.mjs";

// the manifest's train.params, from the package's parameter rules
const NAMES = ["W_E", "W_pos", "gamma_f", "beta_f", "W_U"];
const BLOCK = [
  "W_1",
  "b_1",
  "W_2",
  "b_2",
  "gamma_1",
  "beta_1",
  "gamma_2",
  "beta_2",
  "attn.W_Q",
  "attn.W_K",
  "attn.W_V",
  "attn.W_O",
  "attn.b_Q",
  "attn.b_K",
  "attn.b_V",
  "attn.b_O",
];
const D = [[1, 0]],
  DD = [
    [1, 0],
    [1, 0],
  ];
const params = [
  {
    name: "W_E",
    dims: [
      [0, 288],
      [1, 0],
    ],
  },
  {
    name: "W_pos",
    dims: [
      [0, 16],
      [1, 0],
    ],
  },
  { name: "gamma_f", dims: D },
  { name: "beta_f", dims: D },
  {
    name: "W_U",
    dims: [
      [1, 0],
      [0, 288],
    ],
  },
];
for (const l of [0, 1]) {
  BLOCK.forEach((n) => params.push({ name: "blocks." + l + "." + n, dims: /W_/.test(n) ? DD : D }));
}
const SPEC = {
  params: params,
  limits: { h_max: 16, d_k_min: 2, d_k_max: 64, d_model_max: 256 },
  n_layers: 2,
  vocab_size: 288,
  max_len: 16,
  batch: 32,
  knobs: KNOBS,
};
assert.equal(params.length, NAMES.length + 2 * BLOCK.length);

function weights(h, dk, fill) {
  const d = h * dk;
  return params.map((p, i) => {
    const dims = p.dims.map((ab) => ab[0] * d + ab[1]),
      n = dims.reduce((a, b) => a * b, 1);
    return {
      data: Float32Array.from({ length: n }, (_, k) =>
        fill ? fill(i, k) : Math.sin(i * 7.1 + k * 0.37),
      ),
      dims: dims,
    };
  });
}
const run = (over) =>
  Object.assign(
    {
      params: weights(2, 4),
      h: 2,
      d_k: 4,
      layers: 2,
      warmup: true,
      identical: false,
      seed: 3,
      steps: 1500,
      step: 700,
      courseVersion: "0.1.0",
      accuracy: 0.5,
    },
    over || {},
  );

test("a page run is written and read back exactly", async () => {
  const r = run(),
    bytes = await writeModelFile(r, SPEC);
  const m = await readModelFile(bytes, SPEC);
  assert.deepEqual(m.config, {
    h: 2,
    d_k: 4,
    n_layers: 2,
    ff_mult: 1,
    vocab_size: 288,
    max_len: 16,
    lr: null,
    warmup: 100,
    batch: 32,
    weight_decay: 0,
  });
  assert.deepEqual(
    m.extra.knobs,
    withDefaults({ layers: 2, warmup: true, identical: false, clip: true }),
  );
  assert.equal(m.extra.trained_steps, 700);
  m.params.forEach((p, i) => {
    assert.deepEqual(p.dims, r.params[i].dims);
    assert.deepEqual(p.data, r.params[i].data);
  });
  const one = await readModelFile(
    await writeModelFile(run({ layers: 1, warmup: false }), SPEC),
    SPEC,
  );
  assert.equal(one.layers, 1);
  assert.equal(one.config.warmup, 0);
  assert.ok(
    one.params
      .filter((p, i) => params[i].name.startsWith("blocks.1."))
      .every((p) => p.data.every((x) => x === 0)),
  );
});

// A file written with a correct digest over the given metadata and tensors.
async function digested(meta, tensors) {
  const bytes = tensors.map((t) => ({
    name: t.name,
    dtype: "F32",
    shape: t.shape,
    bytes: new Uint8Array(t.data.buffer),
  }));
  const m = Object.assign({}, meta, {
    digest: "sha256:" + (await sha256Hex(digestInput(meta, bytes))),
  });
  return writeSafetensors(m, tensors);
}

function edited(bytes, fn) {
  // the header as JSON, changed by fn, written back with its tensors
  const f = parseSafetensors(bytes),
    n = new DataView(bytes.buffer).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  fn(head);
  const h = new TextEncoder().encode(JSON.stringify(head)),
    out = new Uint8Array(8 + h.length + f.data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(f.data, 8 + h.length);
  return out;
}

test("16 bad files: one clear line each", async () => {
  const good = await writeModelFile(run(), SPEC);
  const nan = run();
  nan.params[3].data[1] = NaN;
  const nanFile = await writeModelFile(run(), SPEC);
  // the last weight, after saving
  new DataView(nanFile.buffer).setFloat32(nanFile.length - 4, NaN, true);
  const bad = [
    [new TextEncoder().encode("this is a sentence, not a model file at all"), /not a model file/],
    [
      Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
      /not a model file/,
    ],
    [good.subarray(0, good.length - 100), /truncated|tampered/],
    [good.subarray(0, 60), /truncated/],
    [
      edited(good, (hd) => {
        hd["W_U"].data_offsets[1] += 4;
      }),
      /tampered/,
    ],
    [
      edited(good, (hd) => {
        hd.__metadata__.config = hd.__metadata__.config.replace('"h":2', '"h":32');
      }),
      /sizes the page cannot run: h = 32/,
    ],
    [
      edited(good, (hd) => {
        hd.__metadata__.config = hd.__metadata__.config.replace('"d_k":4', '"d_k":2');
      }),
      /does not match its digest/,
    ],
    // the same shapes: h 2 x d_k 4 relabelled h 4 x d_k 2 (issue 48, finding 5)
    [
      edited(good, (hd) => {
        hd.__metadata__.config = hd.__metadata__.config.replace('"h":2,"d_k":4', '"h":4,"d_k":2');
      }),
      /does not match its digest/,
    ],
    [
      edited(good, (hd) => {
        hd.__metadata__.extra = hd.__metadata__.extra.replace('"seed":3', '"seed":4');
      }),
      /does not match its digest/,
    ],
    [
      edited(good, (hd) => {
        delete hd.__metadata__.digest;
      }),
      /has no digest/,
    ],
    [nanFile, /does not match its digest/], // a weight changed after saving
    [new Uint8Array(maxFileBytes(SPEC) + 1), /too large/],
    [new Uint8Array(0), /empty/],
    [
      edited(good, (hd) => {
        delete hd.__metadata__.config;
      }),
      /no tiny-model config/,
    ],
    [
      await digested(
        { config: JSON.stringify({ h: 2, d_k: 4, n_layers: 2, vocab_size: 288, max_len: 16 }) },
        [{ name: "W_E", shape: [288, 8], data: new Float32Array(288 * 8) }],
      ),
      /missing W_pos/,
    ],
    [
      await digested(
        {
          config: JSON.stringify({ h: 2, d_k: 4, n_layers: 2, vocab_size: 288, max_len: 16 }),
          init_seed: "1",
        },
        [{ name: "W_E", shape: [288, 8], data: new Float32Array(288 * 8) }],
      ),
      /weights beside it/,
    ],
  ];
  assert.equal(bad.length, 16);
  for (const [bytes, words] of bad) {
    let err = null;
    try {
      await readModelFile(bytes, SPEC);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ModelFileError, String(err) + " " + words);
    assert.match(err.message, words);
    assert.ok(!err.message.includes("\n") && err.message.length < 300, err.message);
  }
  await assert.rejects(writeModelFile(nan, SPEC), /NaN or infinite/);
  assert.match(fileSizeProblem(5e9, SPEC), /too large \(5000\.0 MB\)/);
  assert.equal(fileSizeProblem(good.length, SPEC), null);
});

test("the package's own file, assets/models/h4_dk16.safetensors (float16), reads", async () => {
  const m = await readModelFile(
    new Uint8Array(
      readFileSync(new URL("../../assets/models/h4_dk16.safetensors", import.meta.url)),
    ),
    SPEC,
  );
  assert.deepEqual([m.config.h, m.config.d_k, m.layers], [4, 16, 2]);
  assert.equal(m.params[0].data.length, 288 * 64);
  const init = await readModelFile(
    new Uint8Array(
      readFileSync(new URL("../../assets/models/h4_dk16_init.safetensors", import.meta.url)),
    ),
    SPEC,
  );
  assert.deepEqual(init.init, { seed: 0 });
});
