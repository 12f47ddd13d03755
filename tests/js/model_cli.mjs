// For tests/test_lab.py: the page's model files from the command line.
//   node model_cli.mjs write SPEC.json WEIGHTS.f32 RUN.json OUT.safetensors
//     (WEIGHTS.f32: the spec's params, float32, in order, at RUN's h, d_k)
//   node model_cli.mjs read SPEC.json FILE OUT.f32
//     -> {config, extra, layers, init} on stdout; the params, float32, to OUT.f32
import { readFileSync, writeFileSync } from "node:fs";
import { readModelFile, writeModelFile } from "../../assets/site/explorer/lab/model-file.js";

const [cmd, specPath, a, b, c] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
if (cmd === "write") {
  const run = JSON.parse(readFileSync(b, "utf8"));
  const raw = readFileSync(a),
    all = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const d = run.h * run.d_k;
  let at = 0;
  run.params = spec.params.map((p) => {
    const dims = p.dims.map((ab) => ab[0] * d + ab[1]),
      n = dims.reduce((x, y) => x * y, 1);
    const t = { data: all.slice(at, at + n), dims: dims };
    at += n;
    return t;
  });
  writeFileSync(c, await writeModelFile(run, spec));
} else {
  const m = await readModelFile(new Uint8Array(readFileSync(a)), spec);
  const parts = (m.params || []).map((p) =>
    Buffer.from(p.data.buffer, p.data.byteOffset, p.data.byteLength),
  );
  writeFileSync(b, Buffer.concat(parts));
  process.stdout.write(
    JSON.stringify({ config: m.config, extra: m.extra, layers: m.layers, init: m.init }),
  );
}
