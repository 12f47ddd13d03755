// The class page's re-run of a report's link, with the trainer's own
// engine: a trainer panel (explorer/trainer.js), never shown, set to the
// report's settings as its link would set them, trained to the end, and
// its curves returned for class-read.js's compareRerun. The page must
// load the explorer's manifest (explorer-data/manifest.js) before this
// module, as the trainer's pages do.
import { Panel } from "../explorer/trainer.js";
import { modelChecksum } from "./report.js";

// A panel that keeps to itself: it neither reads nor writes the page's
// address (trainer-lab.js asks).
class Quiet extends Panel {
  get headless() { return true; }
}

// runner(settings, step, link) for mountClass: a promise of {loss, steps,
// accuracy, sha256} of the run the settings name, trained to `step`.
export function trainerRunner(host) {
  return (settings, step) => new Promise((resolve, reject) => {
    const box = document.createElement("div");
    box.hidden = true;
    host.appendChild(box);
    const P = new Quiet(box, 0, { h: settings.h, dk: settings.d_k }, "", () => {});
    P.lab.restore(Object.assign({}, settings, { budget: false, off: [], text: P.sentence.value }));
    P.seedIn.value = String(settings.seed);
    P.seen = true;
    P.sizeChanged();
    let started = false;
    const end = (fn, value) => {
      clearInterval(watch);
      if (P.worker) { P.worker.terminate(); P.worker = null; }
      box.remove();
      fn(value);
    };
    const watch = setInterval(() => {
      if (P.state === "failed" || P.state === "diverged") { end(reject, new Error(P.message.textContent || P.state)); return; }
      if (P.state === "ready" && !started) { started = true; P.start(); return; }
      if (started && P.state === "running" && P.step >= step && step < P.config.steps) { P.stop(); }
      const last = P.evals[P.evals.length - 1];
      if ((P.state === "done" || P.state === "paused") && P.step >= step && last && last.step === P.step) {
        modelChecksum(P.snapshot.params.map((p) => p.data)).then((m) => end(resolve, {
          loss: P.losses.slice(0, step), steps: P.evals.map((e) => e.step), accuracy: P.evals.map((e) => e.accuracy),
          sha256: P.step === step ? m.sha256 : null }), (e) => end(reject, e));
      }
    }, 100);
  });
}
