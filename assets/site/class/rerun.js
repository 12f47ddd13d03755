// The class page's re-run of a report's link, with the trainer's own
// engine: a trainer panel (explorer/trainer-panel.js), never shown, set to the
// report's settings as its link would set them, trained to the end, and
// its curves returned for class-read.js's compareRerun. The page must
// load the explorer's manifest (explorer-data/manifest.js) before this
// module, as the trainer's pages do.
import { Panel } from "../explorer/trainer-panel.js";
import { modelChecksum } from "../explorer/lab/report.js";

// A panel that keeps to itself: it neither reads nor writes the page's
// address (trainer-lab.js asks).
class Quiet extends Panel {
  get headless() {
    return true;
  }
}

// How long a re-run may go without a step, a read-out or a change of
// state (or the model being built) before it is given up, with one line.
export const STALL_MS = 120000;

// runner(settings, step, link) for mountClass: a promise of {loss, steps,
// accuracy, sha256} of the run the settings name, trained to `step`. A run
// the trainer refuses (a size it does not train: the format allows h 16 x
// d_k 32, the trainer d_model 256 at most), fails, or that stops moving
// rejects with the trainer's one line; the hidden panel, its worker and
// the stall timer go with it, whatever the end. The re-run follows the
// panel's run and read-outs by their events (trainer-run.js, "state",
// "step", "failed"; trainer-readout.js, "read"): it polls nothing.
export function trainerRunner(host) {
  return (settings, step) =>
    new Promise((resolve, reject) => {
      const box = document.createElement("div");
      box.hidden = true;
      host.appendChild(box);
      let P = null,
        stall = null,
        done = false;
      const end = (fn, value) => {
        if (done) {
          return;
        }
        done = true;
        clearTimeout(stall);
        if (P) {
          P.run.end();
        }
        box.remove();
        fn(value);
      };
      const refusal = (why) =>
        new Error("the trainer does not run these settings: " + String(why).replace(/\.$/, ""));
      try {
        P = new Quiet(box, 0, { h: settings.h, dk: settings.d_k }, "", () => {});
        const text = P.view.sentence.value;
        P.lab.restore(Object.assign({}, settings, { budget: false, off: [], text: text }));
      } catch (e) {
        end(reject, e);
        return;
      }
      const R = P.run;
      let started = false,
        checking = false;
      const moving = () => {
        clearTimeout(stall);
        const line = () =>
          "the re-run stopped moving (" +
          R.state +
          " at step " +
          (R.step || 0) +
          " for " +
          STALL_MS / 1000 +
          " s)";
        stall = setTimeout(() => end(reject, new Error(line())), STALL_MS);
      };
      // Each event: the run moved; start it once ready, pause it at `step`,
      // and once it rests there with that step read out, return its curves.
      const next = () => {
        if (done) {
          return;
        }
        moving();
        const said = P.view.message.textContent;
        if (R.state === "diverged") {
          end(reject, new Error(said || R.state));
          return;
        }
        if (R.state === "ready" && !started) {
          started = true;
          P.start();
          return;
        }
        if (started && R.state === "running" && R.step >= step && step < R.config.steps) {
          P.stop();
        }
        const read = P.evals[P.evals.length - 1];
        const resting = R.state === "done" || R.state === "paused";
        if (resting && R.step >= step && read && read.step === R.step && !checking) {
          checking = true;
          const curves = (m) => ({
            loss: R.losses.slice(0, step),
            steps: P.evals.map((e) => e.step),
            accuracy: P.evals.map((e) => e.accuracy),
            sha256: R.step === step ? m.sha256 : null,
          });
          modelChecksum(R.snapshot.params.map((p) => p.data)).then(
            (m) => end(resolve, curves(m)),
            (e) => end(reject, e),
          );
        }
      };
      R.addEventListener("failed", (e) => end(reject, new Error(e.detail.line)));
      ["state", "step"].forEach((type) => R.addEventListener(type, next));
      P.readout.addEventListener("read", next);
      try {
        P.shown();
      } catch (e) {
        end(reject, e);
        return;
      }
      if (!done && !R.config) {
        end(reject, refusal(P.view.message.textContent || "no size"));
      } else {
        next();
      }
    });
}
