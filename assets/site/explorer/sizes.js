// The sizes the trainer accepts, and what a size costs. Every limit and
// every word of a refusal comes from the manifest (train.limits, written by
// mhacourse.web_train beside check_sizes): the page writes none of its own.
import { MAN } from "./data.js";

// The line for the size rule `key`: the manifest's template (limits.messages,
// str.format-style) filled with these sizes and the manifest's limits.
function sizeMessage(key, h, dk) {
  const L = MAN.train.limits;
  const fields = {
    h: h,
    d_k: dk,
    d_model: h * dk,
    h_max: L.h_max,
    d_k_min: L.d_k_min,
    d_k_max: L.d_k_max,
    d_model_max: L.d_model_max,
    budget: MAN.train.budget,
  };
  return L.messages[key].replace(/\{(\w+)\}/g, (all, name) =>
    name in fields ? String(fields[name]) : all,
  );
}

// null, or the line that says why the page does not train this size
// (mhacourse.web_train.check_sizes' rules).
export function checkSizes(h, dk, budget) {
  const L = MAN.train.limits;
  if (!Number.isInteger(h) || h < 1 || h > L.h_max) {
    return sizeMessage("h", h, dk);
  }
  if (budget && MAN.train.budget % h !== 0) {
    return sizeMessage("budget", h, dk);
  }
  if (!Number.isInteger(dk) || dk < L.d_k_min || dk > L.d_k_max) {
    return sizeMessage("d_k", h, dk);
  }
  if (h * dk > L.d_model_max) {
    return sizeMessage("d_model", h, dk);
  }
  return null;
}

// The bounds of the size inputs, as attributes.
export function sizeBounds() {
  const L = MAN.train.limits;
  return {
    h: { min: "1", max: String(L.h_max) },
    dk: { min: String(L.d_k_min), max: String(L.d_k_max) },
  };
}

// Parameters of a model of width d: the sizes of the manifest's shapes
// (each dimension a * d_model + b), the tensors the init graph makes.
export function paramCount(d) {
  return MAN.train.params.reduce(
    (n, p) => n + p.dims.reduce((m, ab) => m * (ab[0] * d + ab[1]), 1),
    0,
  );
}
