// The model leaves the panel and comes back: "Download model" writes the
// paused or finished run as the package's own .safetensors file
// (lab/model-file.js; tm.load reads it), and "Open a model file" reads one
// (from a notebook run or assets/models) into the panel: its heads drawn,
// its roles and circuits read, its heads' switches working. A bad file
// gets one line; the panel keeps what it had.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { experimentOf, specOf, writeModelFile } from "./lab/model-file.js";
import { download, modelFileName, readModel } from "./lab/ui.js";
import { paramCount } from "./sizes.js";
import { lines } from "./trainer-text.js";

// What model-file.js checks a file against: the manifest's training entry.
export function modelSpec() {
  return specOf(MAN.train, MAN.tiny_tokenizer.max_len);
}

export class LabFiles {
  constructor(lab) {
    this.lab = lab;
    this.P = lab.P;
    this.opened = null; // the file's name while the panel shows a model read from a file
    const id = this.P.tag + "-open";
    this.save = el("button", {
      type: "button",
      class: "mha-lab-download",
      text: "Download model",
      disabled: "",
    });
    this.input = el("input", {
      type: "file",
      id: id,
      class: "mha-lab-open",
      accept: ".safetensors",
    });
    this.element = el("span", { class: "mha-lab-files" }, [
      this.save,
      " ",
      el("label", { for: id, class: "mha-lab-open-label" }, ["Open a model file ", this.input]),
    ]);
    this.save.addEventListener("click", () => this.download());
    this.input.addEventListener("change", () => {
      const f = this.input.files && this.input.files[0];
      this.input.value = ""; // the same file may be chosen again
      if (f) {
        this.open(f);
      }
    });
  }

  lock() {
    const s = this.P.state;
    this.save.disabled = !((s === "paused" || s === "done") && this.P.snapshot);
    this.input.disabled = s === "running";
    if (s !== "done") {
      this.opened = null;
    }
  }

  // The run now, as the package's model file (resolves to its name, or null).
  async download() {
    const P = this.P,
      snap = P.snapshot,
      s = this.lab.settings();
    if (!snap) {
      this.lab.line.textContent =
        "There is no model to save yet: train one, then pause or let it finish.";
      return null;
    }
    const last = P.evals.filter((e) => e.step === snap.step).pop();
    try {
      const bytes = await writeModelFile(
        Object.assign({}, s, {
          params: snap.params,
          step: snap.step,
          courseVersion: this.lab.version(),
          accuracy: last ? last.accuracy[0] : null,
        }),
        modelSpec(),
      );
      const name = modelFileName(s, snap.step);
      download(document, bytes, name);
      this.lab.line.textContent =
        "Saved " +
        name +
        " (" +
        (bytes.length / 1e6).toFixed(2) +
        " MB). In a notebook: " +
        'model = tm.load("' +
        name +
        '").';
      return name;
    } catch (err) {
      this.lab.line.textContent = "Could not save the model: " + err.message;
      return null;
    }
  }

  // A chosen file: read and checked, then shown in the panel as a finished
  // model (Reset leaves it and builds a fresh one).
  async open(file) {
    const P = this.P,
      t0 = performance.now();
    if (P.state === "running") {
      this.lab.line.textContent = "Pause or Reset the run before opening a model file.";
      return false;
    }
    const got = await readModel(file, modelSpec());
    if (got.error) {
      this.lab.line.textContent = got.error;
      return false;
    }
    const m = got.model,
      e = experimentOf(m, modelSpec()),
      name = file.name.slice(0, 60);
    if (m.init) {
      // an untrained model: its seed; the page's init graph builds it
      if (P.locked()) {
        P.resetRun();
      }
      this.lab.restore(Object.assign(e, { text: P.view.sentence.value, off: [] }), false);
      P.sizeChanged();
      this.lab.line.textContent =
        name + ": an untrained model (seed " + e.seed + "); press Train to train it here.";
      return true;
    }
    this.lab.restore(Object.assign(e, { text: P.view.sentence.value, off: [] }), false);
    const d = e.h * e.d_k,
      step = e.step,
      layers = e.layers,
      params = paramCount(d);
    const show = P.openModel(
      { h: e.h, dk: e.d_k, seed: e.seed, d_model: d, steps: e.steps },
      step,
      params,
      { params: m.params, h: e.h, step: step },
    );
    this.opened = name; // lock() forgets it for any other state
    this.lab.fileOpened();
    P.view.say({
      summary:
        lines.size(e.h, e.d_k, params) +
        "; read from " +
        name +
        " (" +
        layers +
        " layer" +
        (layers > 1 ? "s" : "") +
        ", " +
        step +
        " steps).",
      message: "",
      status:
        "Opened " +
        name +
        ": its heads are drawn below and its roles read; switch heads off " +
        "to see what they do. Reset builds a fresh model to train.",
    });
    this.lab.line.textContent = "";
    show();
    this.timings = { read: performance.now() - t0, opened: t0 };
    P.onChange("yours");
    return true;
  }
}
