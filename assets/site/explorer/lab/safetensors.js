// The .safetensors format, as far as the course's model files use it:
// 8 bytes (little-endian u64) giving the header's length N, N bytes of
// JSON header ({"__metadata__": {str: str}, name: {dtype, shape,
// data_offsets: [begin, end]}}), then the tensors' bytes. F32 and F16
// tensors (the package saves float16 by default). Nothing in a file is
// trusted: every length and offset is checked against the bytes there are.
// Pure functions; no DOM, no globals. model-file.js builds on it.

export class ModelFileError extends Error {}

const fail = (line) => {
  throw new ModelFileError(line);
};
export const MAX_HEADER = 1 << 20; // bytes: a course model's header is a few kB
const BYTES = { F32: 4, F16: 2 };

// half-precision bits -> a number (IEEE 754 binary16)
function halfToFloat(bits) {
  const s = bits & 0x8000 ? -1 : 1,
    e = (bits >> 10) & 0x1f,
    m = bits & 0x3ff;
  if (e === 0) {
    return s * m * Math.pow(2, -24);
  }
  if (e === 31) {
    return m ? NaN : s * Infinity;
  }
  return s * (1 + m / 1024) * Math.pow(2, e - 15);
}

// {metadata, tensors: {name: {dtype, shape, begin, end}}, data: Uint8Array}
// of the bytes, or a ModelFileError with one line.
export function parseSafetensors(bytes) {
  if (!(bytes instanceof Uint8Array)) {
    fail("not a file's bytes.");
  }
  if (bytes.length < 8) {
    fail("the file is too short to be a model file (" + bytes.length + " bytes).");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const low = view.getUint32(0, true),
    high = view.getUint32(4, true);
  if (high !== 0 || low > MAX_HEADER) {
    fail("not a model file: its first 8 bytes do not give a header length a model file has.");
  }
  if (8 + low > bytes.length) {
    fail(
      "the file is truncated: its header says " +
        low +
        " bytes, the file holds " +
        (bytes.length - 8) +
        " after the length.",
    );
  }
  let header;
  try {
    header = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + low)),
    );
  } catch (e) {
    fail(
      "not a model file: its header is not JSON (a .safetensors file written by the course, or " +
        "by the page, is).",
    );
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    fail("not a model file: its header is not a JSON object.");
  }
  const data = bytes.subarray(8 + low);
  const metadata = header.__metadata__ === undefined ? {} : header.__metadata__;
  if (
    metadata === null ||
    typeof metadata !== "object" ||
    Array.isArray(metadata) ||
    Object.values(metadata).some((v) => typeof v !== "string")
  ) {
    fail(
      "the header's __metadata__ is not a map of strings: the file was edited or is not a model " +
        "file.",
    );
  }
  const tensors = {};
  Object.keys(header)
    .filter((k) => k !== "__metadata__")
    .forEach((name) => {
      const t = header[name];
      const ok =
        t &&
        typeof t === "object" &&
        typeof t.dtype === "string" &&
        Array.isArray(t.shape) &&
        t.shape.every((n) => Number.isSafeInteger(n) && n >= 0) &&
        Array.isArray(t.data_offsets) &&
        t.data_offsets.length === 2 &&
        t.data_offsets.every((n) => Number.isSafeInteger(n) && n >= 0);
      if (!ok) {
        fail(
          "tensor " +
            JSON.stringify(name).slice(0, 40) +
            " has a broken entry in the header (dtype, shape, data_offsets).",
        );
      }
      if (!(t.dtype in BYTES)) {
        fail(
          "tensor " +
            JSON.stringify(name).slice(0, 40) +
            " is stored as " +
            String(t.dtype).slice(0, 10) +
            "; model files hold F32 or F16 weights.",
        );
      }
      tensors[name] = {
        dtype: t.dtype,
        shape: t.shape.slice(),
        begin: t.data_offsets[0],
        end: t.data_offsets[1],
      };
    });
  // the offsets must tile the data exactly: no gap, no overlap, no byte past the end
  const spans = Object.entries(tensors).sort((a, b) => a[1].begin - b[1].begin);
  let at = 0;
  for (const [name, t] of spans) {
    const n = t.shape.reduce((a, b) => a * b, 1) * BYTES[t.dtype];
    if (t.begin !== at || t.end - t.begin !== n) {
      fail(
        "the header was tampered with: tensor " +
          JSON.stringify(name).slice(0, 40) +
          "'s offsets do not match its shape or its neighbours.",
      );
    }
    at = t.end;
  }
  if (at > data.length) {
    fail(
      "the file is truncated: its tensors need " +
        at +
        " bytes of data, it holds " +
        data.length +
        ".",
    );
  }
  if (at !== data.length) {
    fail("the header was tampered with: " + (data.length - at) + " bytes after the last tensor.");
  }
  return { metadata: metadata, tensors: tensors, data: data };
}

// A tensor's values as a Float32Array (F16 widened exactly).
export function tensorValues(parsed, name) {
  const t = parsed.tensors[name],
    n = t.end - t.begin;
  // copied: aligned, and the file's bytes stay as they were
  const raw = parsed.data.slice(t.begin, t.end);
  if (t.dtype === "F32") {
    return new Float32Array(raw.buffer, 0, n / 4);
  }
  const bits = new Uint16Array(raw.buffer, 0, n / 2),
    out = new Float32Array(n / 2);
  for (let i = 0; i < bits.length; i++) {
    out[i] = halfToFloat(bits[i]);
  }
  return out;
}

// What a model file's digest is the SHA-256 of (the package's
// tiny_model/files.py _digest, the same recipe): "mhacourse-model-digest-1\n",
// each of DIGESTED the metadata has as "key\nN\nvalue\n" (N: the value's
// UTF-8 bytes), then each tensor in name order as "name\ndtype\nd0,d1\nN\n",
// its N stored (little-endian) bytes and "\n". tensors: [{name, dtype, shape,
// bytes: Uint8Array}].
export const DIGESTED = ["config", "extra", "init_seed", "fingerprint"];
export function digestInput(metadata, tensors) {
  const enc = new TextEncoder(),
    parts = [enc.encode("mhacourse-model-digest-1\n")];
  DIGESTED.filter((k) => typeof metadata[k] === "string").forEach((k) => {
    const v = enc.encode(metadata[k]);
    parts.push(enc.encode(k + "\n" + v.length + "\n"), v, enc.encode("\n"));
  });
  tensors
    .slice()
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .forEach((t) => {
      parts.push(
        enc.encode(
          t.name + "\n" + t.dtype + "\n" + t.shape.join(",") + "\n" + t.bytes.length + "\n",
        ),
        t.bytes,
        enc.encode("\n"),
      );
    });
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  parts.forEach((x) => {
    out.set(x, at);
    at += x.length;
  });
  return out;
}

// A parsed file's tensors as digestInput takes them (the stored bytes).
export function storedTensors(parsed) {
  return Object.entries(parsed.tensors).map(([name, t]) => ({
    name: name,
    dtype: t.dtype,
    shape: t.shape,
    bytes: parsed.data.subarray(t.begin, t.end),
  }));
}

// The bytes of a .safetensors file: metadata {str: str} and tensors
// [{name, shape, data: Float32Array}] stored as F32 in that order.
export function writeSafetensors(metadata, tensors) {
  const header = { __metadata__: metadata };
  let at = 0;
  tensors.forEach((t) => {
    header[t.name] = { dtype: "F32", shape: t.shape, data_offsets: [at, at + 4 * t.data.length] };
    at += 4 * t.data.length;
  });
  let json = JSON.stringify(header);
  // align the data to 8
  json += " ".repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + at);
  const view = new DataView(out.buffer);
  view.setUint32(0, head.length, true);
  view.setUint32(4, 0, true);
  out.set(head, 8);
  let p = 8 + head.length;
  tensors.forEach((t) => {
    // little-endian hosts
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), p);
    p += t.data.byteLength;
  });
  return out;
}
