// The page's one entry point (a module): it mounts the attention explorer
// (#mha-explorer) and every trainer (.mha-trainer) on the page, and offers
// them, with SmolLM2's view (#mha-smollm2), as window.mha = {engine,
// explorer, trainer, smol, smollm2}, the one global the
// page's code defines (the browser tests and the benchmarks drive the page
// through it). A page opened from disk never runs it: browsers refuse
// modules on file:// pages, and fallback.js says so there.
import { engine } from "./engine.js";
import { mountExplorer } from "./explorer.js";
import { mountSmolLM2 } from "./smollm2.js";
import { smol } from "./smollm2-engine.js";
import { mountTrainers } from "./trainer.js";

const mha = { engine: engine, explorer: null, trainer: null, smol: smol, smollm2: null };
// a trainer's model changed: the explorer's "Yours" follows it
mha.trainer = mountTrainers(() => {
  const X = mha.explorer;
  if (!X) {
    return;
  }
  X.syncControls();
  if (X.state.source === "yours") {
    X.update("trainer");
  }
});
// A link's experiment first (issue 49): the trainers restore it in a
// microtask after they mount, and the explorer and SmolLM2's view, which
// draw their build-time pictures, wait a task for it. Mounted in the
// other order, the restore waited for both: a cold link to this page was
// restored in 898 ms (median of 6) against 680 ms this way.
await new Promise((resolve) => setTimeout(resolve, 0));
const root = document.getElementById("mha-explorer");
if (root) {
  mha.explorer = mountExplorer(root, () => (mha.trainer ? mha.trainer.panels : []));
}
const smolRoot = document.getElementById("mha-smollm2");
if (smolRoot) {
  mha.smollm2 = mountSmolLM2(smolRoot);
}
window.mha = mha;
