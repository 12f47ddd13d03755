// "Train it yourself": pick h and d_k, press Train, and watch a tiny model
// learn in this page: its loss, its held-out accuracy, every head's
// attention on a sentence, and the role the package's analysis gives each
// head. Every element <div class="mha-trainer" data-runs="2"> on a page
// becomes a trainer with that many runs side by side (same batches, same
// seed); mountTrainers does it (page.js calls it).
//
// A panel is one class, Panel (trainer-panel.js); this module makes the
// panels of each .mha-trainer, with "Train both" on a page of two runs.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { Panel } from "./trainer-panel.js";
import { PHASE_MARGIN } from "./trainer-readout.js";
import { unavailable } from "./trainer-run.js";
import { REBUILD } from "./trainer-text.js";

let rows = 0; // .mha-trainer elements mounted on this page

// Every .mha-trainer on the page; onChange(reason) is told when a panel's
// state changes (the explorer shows "Yours"). Returns {panels, phaseMargin}.
export function mountTrainers(onChange) {
  const api = { panels: [], phaseMargin: PHASE_MARGIN };
  document.querySelectorAll(".mha-trainer").forEach((root) => {
    if (!MAN || !MAN.train) {
      root.textContent = "The trainer's data did not load; " + REBUILD + ".";
      return;
    }
    const n = Math.max(1, Math.min(2, Number(root.getAttribute("data-runs") || "1")));
    root.textContent = "";
    const both = el("button", {
      type: "button",
      class: "mha-train-both",
      text: "Train both",
      disabled: "",
    });
    const bothNote = el("span", {
      class: "mha-train-both-note",
      id: "mha-train-both-note-" + ++rows,
    });
    both.setAttribute("aria-describedby", bothNote.id);
    if (n > 1) {
      root.appendChild(
        el("p", { class: "mha-train-intro" }, [
          "Each run trains a fresh model (two layers unless you pick one) on the course's " +
            "lookup task, in this page, with the " +
            "package's own training step (mhacourse.web_train). Both runs read the same batches " +
            "in the same order.",
        ]),
      );
      root.appendChild(el("div", { class: "mha-train-both-row" }, [both, bothNote]));
    }
    const row = el("div", { class: "mha-train-runs" });
    root.appendChild(row);
    const defaults = [
        { h: 1, dk: 64 },
        { h: 16, dk: 4 },
      ],
      panels = [];
    const changed = (why) => {
      const waiting = panels.filter((p) => p.state !== "ready" && p.state !== "paused");
      both.disabled = panels.length < n || waiting.length > 0;
      bothNote.textContent =
        panels.length < n
          ? ""
          : waiting.some((p) => p.state === "loading")
            ? "Waiting for the models to be built (a few seconds)."
            : waiting.length
              ? "Both runs must be ready (or paused) to start together."
              : "";
      if (why) {
        onChange(why);
      }
    };
    for (let i = 0; i < n; i++) {
      panels.push(
        new Panel(
          row,
          i,
          defaults[i],
          n > 1 ? "Run " + String.fromCharCode(65 + i) + ": " : "",
          changed,
        ),
      );
    }
    changed();
    both.addEventListener("click", () => panels.forEach((p) => p.start()));
    Array.prototype.push.apply(api.panels, panels);
    const why = unavailable();
    if (why) {
      panels.forEach((p) => p.fail(why));
    }
  });
  addEventListener("beforeunload", (e) => {
    if (api.panels.some((p) => p.state === "running" || p.state === "paused")) {
      e.preventDefault();
      e.returnValue = "A model is training in this page; leaving discards it.";
    }
  });
  return api;
}
