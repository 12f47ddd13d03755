// The class page's re-run of a report's link, with the trainer's own
// engine: a trainer panel (explorer/trainer.js), never shown, set to the
// report's settings as its link would set them, trained to the end, and
// its curves returned for class-read.js's compareRerun. The page must
// load the explorer's manifest (explorer-data/manifest.js) before this
// module, as the trainer's pages do.
import { Panel } from "../explorer/trainer.js";
import { modelChecksum } from "../explorer/lab/report.js";

// A panel that keeps to itself: it neither reads nor writes the page's
// address (trainer-lab.js asks).
class Quiet extends Panel {
  get headless() { return true; }
}

// How long a re-run may go without a step (or the model being built)
// before it is given up, with one line.
export const STALL_MS = 120000;

// runner(settings, step, link) for mountClass: a promise of {loss, steps,
// accuracy, sha256} of the run the settings name, trained to `step`. A run
// the trainer refuses (a size it does not train: the format allows h 16 x
// d_k 32, the trainer d_model 256 at most), fails, or that stops moving
// rejects with the trainer's one line; the hidden panel, its worker and
// the timer go with it, whatever the end.
export function trainerRunner(host) {
  return (settings, step) => new Promise((resolve, reject) => {
    const box = document.createElement("div");
    box.hidden = true;
    host.appendChild(box);
    let P = null, watch = null, done = false;
    const end = (fn, value) => {
      if (done) { return; }
      done = true;
      clearInterval(watch);
      if (P && P.worker) { P.worker.terminate(); P.worker = null; }
      box.remove();
      fn(value);
    };
    const refusal = (why) => new Error("the trainer does not run these settings: " + String(why).replace(/\.$/, ""));
    try {
      P = new Quiet(box, 0, { h: settings.h, dk: settings.d_k }, "", () => {});
      P.lab.restore(Object.assign({}, settings, { budget: false, off: [], text: P.sentence.value }));
      P.seedIn.value = String(settings.seed);
      P.seen = true;
      P.sizeChanged();
    } catch (e) { end(reject, e); return; }
    if (!P.config) { end(reject, refusal(P.message.textContent || "no size")); return; }
    let started = false, checking = false, moved = performance.now(), last = "";
    watch = setInterval(() => {
      if (P.state === "failed" || P.state === "diverged") { end(reject, new Error(P.message.textContent || P.state)); return; }
      if (!P.config) { end(reject, refusal(P.message.textContent || "no size")); return; }
      const now = P.state + "/" + P.step + "/" + P.evals.length;
      if (now !== last) { last = now; moved = performance.now(); }
      if (performance.now() - moved > STALL_MS) {
        end(reject, new Error("the re-run stopped moving (" + P.state + " at step " + (P.step || 0) + " for " + STALL_MS / 1000 + " s)"));
        return;
      }
      if (P.state === "ready" && !started) { started = true; P.start(); return; }
      if (started && P.state === "running" && P.step >= step && step < P.config.steps) { P.stop(); }
      const read = P.evals[P.evals.length - 1];
      if ((P.state === "done" || P.state === "paused") && P.step >= step && read && read.step === P.step && !checking) {
        checking = true;
        modelChecksum(P.snapshot.params.map((p) => p.data)).then((m) => end(resolve, {
          loss: P.losses.slice(0, step), steps: P.evals.map((e) => e.step), accuracy: P.evals.map((e) => e.accuracy),
          sha256: P.step === step ? m.sha256 : null }), (e) => end(reject, e));
      }
    }, 100);
  });
}
