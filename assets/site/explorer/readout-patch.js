// The Patch view's numbers, in the read-out worker (readout-worker.js
// sends it the "patch" requests): mhacourse.web_patch's two graphs, `patch`
// then `ablate` (manifest train.patch.graphs: the package's own
// interventions._patch_maps_core and _ablation_maps_core, the halves of
// _maps_core), run one after the other on the weights the page holds and
// one corruption's pairs as the build wrote them (interventions.corrupt:
// manifest train.patch.corruptions); the patching maps are sent as soon as
// they are computed, so the page draws them while the ablation maps run.
// It computes nothing itself. The graphs and each corruption's pairs load
// on the first request that needs them, not with the worker.
import { int64, only } from "./ort.js";
import { graph, words, weightFeeds } from "./worker-common.js";

const sessions = {}; // graph name -> its session
const tables = {}; // corruption -> its pairs, (N, 2 L + 3) 16-bit words

// The first n rows of a pairs table as the graph's inputs: clean and
// corrupted (n, L), answer, rival and positions (n,), int64.
function pairFeeds(t, width, n) {
  const L = (width - 3) / 2,
    col = (name, from, count) => {
      const a = new Array(n * count);
      for (let r = 0; r < n; r++) {
        for (let j = 0; j < count; j++) {
          a[r * count + j] = t[r * width + from + j];
        }
      }
      return [name, int64(a, count === 1 ? [n] : [n, count])];
    };
  return Object.fromEntries([
    col("clean", 0, L),
    col("corrupted", L, L),
    col("answer", 2 * L, 1),
    col("rival", 2 * L + 1, 1),
    col("positions", 2 * L + 2, 1),
  ]);
}

// One Patch request: {id, run, params, h, corruption, n}. Each graph of
// train.patch.graphs in turn; post(part) gets each one's {type: "patch",
// id, run, corruption, n, h, ends (2), maps (its names), fractions (maps x
// layers x h), ms, last}; the last part holds every map so far (maps in
// train.patch.maps order) and ms the graphs' time together.
export async function patchMaps(T, dir, msg, post) {
  const P = T.patch,
    c = P.corruptions.find((x) => x.name === msg.corruption);
  if (!c) {
    throw new Error("no corruption " + JSON.stringify(msg.corruption) + " in this build");
  }
  if (!tables[c.name]) {
    tables[c.name] = await words(dir, c);
  }
  const feeds = weightFeeds(T, msg.params, msg.h, pairFeeds(tables[c.name], c.shape[1], msg.n));
  const kinds = Object.keys(P.graphs),
    maps = [],
    fractions = [];
  let ms = 0,
    ends = null;
  for (let k = 0; k < kinds.length; k++) {
    if (!sessions[kinds[k]]) {
      sessions[kinds[k]] = await graph(dir, T.graphs[kinds[k]]);
    }
    const s = sessions[kinds[k]],
      t0 = performance.now();
    const r = await s.run(only(s, feeds));
    ms += performance.now() - t0;
    ends = ends || Array.from(r.ends.data);
    maps.push(...P.graphs[kinds[k]]);
    fractions.push(...r.fractions.data);
    post({
      type: "patch",
      id: msg.id,
      run: msg.run,
      corruption: c.name,
      n: msg.n,
      h: msg.h,
      ends: ends,
      maps: maps.slice(),
      fractions: fractions.slice(),
      ms: ms,
      last: k === kinds.length - 1,
    });
  }
}
