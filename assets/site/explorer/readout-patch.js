// The Patch view's numbers, in the read-out worker (readout-worker.js
// sends it the "patch" requests): mhacourse.web_patch's `patch` graph, the
// package's own interventions.maps_core, run on the weights the page holds
// and one corruption's pairs as the build wrote them
// (interventions.corrupt: manifest train.patch.corruptions). It computes
// nothing itself. The graph and each corruption's pairs load on the first
// request that needs them, not with the worker.
import { graph, words, weightFeeds, only } from "./worker-common.js";

let session = null;
const tables = {}; // corruption -> its pairs, (N, 2 L + 3) 16-bit words

// The first n rows of a pairs table as the graph's inputs: clean and
// corrupted (n, L), answer, rival and positions (n,), int64.
function pairFeeds(ort, t, width, n) {
  const L = (width - 3) / 2, col = (name, from, count) => {
    const a = new BigInt64Array(n * count);
    for (let r = 0; r < n; r++) { for (let j = 0; j < count; j++) { a[r * count + j] = BigInt(t[r * width + from + j]); } }
    return [name, new ort.Tensor("int64", a, count === 1 ? [n] : [n, count])];
  };
  return Object.fromEntries([col("clean", 0, L), col("corrupted", L, L), col("answer", 2 * L, 1),
    col("rival", 2 * L + 1, 1), col("positions", 2 * L + 2, 1)]);
}

// One Patch request: {id, run, params, h, corruption, n}. Answers {type:
// "patch", id, run, corruption, n, h, ends (2), fractions (maps x layers x
// h, manifest train.patch.maps order), ms}.
export async function patchMaps(ort, T, dir, msg) {
  const P = T.patch, c = P.corruptions.find((x) => x.name === msg.corruption);
  if (!c) { throw new Error("no corruption " + JSON.stringify(msg.corruption) + " in this build"); }
  if (!session) { session = await graph(ort, dir, T.graphs.patch); }
  if (!tables[c.name]) { tables[c.name] = await words(dir, c); }
  const feeds = weightFeeds(ort, T, msg.params, msg.h, pairFeeds(ort, tables[c.name], c.shape[1], msg.n));
  const t0 = performance.now();
  const r = await session.run(only(session, feeds));
  return { type: "patch", id: msg.id, run: msg.run, corruption: c.name, n: msg.n, h: msg.h,
    ends: Array.from(r.ends.data), fractions: Array.from(r.fractions.data), ms: performance.now() - t0 };
}
