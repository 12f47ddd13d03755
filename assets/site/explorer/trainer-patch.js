// The Patch view: activation patching and ablation on the reader's own
// model, after a run (or on a model file opened in the page). Choose a
// corruption (the manifest's train.patch.corruptions: the package's
// interventions.CORRUPTIONS, their pairs written by the build) and how many
// of its pairs; the read-out worker runs mhacourse.web_patch's `patch`
// graph (interventions._maps_core: no copy of the math here) and the view
// draws one layers x heads map per intervention, the fraction recovered
// (1 = the clean run's logit difference, 0 = the corrupted run's), with
// the Python line that gives the same numbers. The patching maps are drawn
// as soon as the `patch` graph answers, the ablation maps when `ablate`
// does (manifest train.patch.graphs, in that order). Bad input gets one line and
// no map: a run still training, no model yet, a one-layer model, an empty
// or too large batch, ends too close to divide by, numbers that are not.
import { MAN } from "./data.js";
import { el } from "./dom.js";
import { colour } from "./trainer-circuits.js";
import { reader } from "./trainer-readout.js";
import { REBUILD, headName, runLine } from "./trainer-text.js";

const CELL = 22; // px per head

function label(P, m) {
  return P.directions.indexOf(m) >= 0 ? "patching, " + m : m + " ablation";
}

// One map: layers x h cells, fraction recovered coloured on 0..1 (viridis,
// clipped), the number written in each cell, a text version as its label.
function grid(title, v, layers, h) {
  const cv = el("canvas", { width: String(h * CELL), height: String(layers * CELL), role: "img" });
  const g = cv.getContext("2d"),
    words = [];
  g.font = "9px sans-serif";
  g.textAlign = "center";
  g.textBaseline = "middle";
  for (let l = 0; l < layers; l++) {
    for (let i = 0; i < h; i++) {
      const x = v[l * h + i],
        c = colour(Math.max(0, Math.min(1, x)), 1);
      g.fillStyle = "rgb(" + c.join(",") + ")";
      g.fillRect(i * CELL, l * CELL, CELL, CELL);
      g.fillStyle = c[0] + c[1] + c[2] > 380 ? "#000" : "#fff";
      if (h <= 8) {
        g.fillText(x.toFixed(2), i * CELL + CELL / 2, l * CELL + CELL / 2);
      }
      words.push(headName(l, i) + " " + x.toFixed(2));
    }
  }
  cv.setAttribute(
    "aria-label",
    title +
      ", fraction recovered per head (rows: layers, columns: heads): " +
      words.join(", ") +
      ".",
  );
  return el("figure", { class: "mha-patch-map" }, [
    cv,
    el("figcaption", { text: title + " (rows L1..L" + layers + ", columns H1..H" + h + ")" }),
  ]);
}

export class PatchView {
  constructor(P) {
    this.P = P;
    this.spec = MAN.train.patch || null;
    // the last maps drawn, all of them: {corruption, n, step, ends, maps, fractions, ms, msFirst,
    // msTotal} (tests read it)
    this.last = null;
    // called with each answer drawn, the first graph's and the last (the benchmark times them)
    this.onDrawn = null;
    const tag = P.tag,
      S = this.spec;
    this.choice = el(
      "select",
      { id: tag + "-corruption" },
      (S ? S.corruptions : []).map((c) =>
        el("option", { value: c.name, text: c.name, title: c.help }),
      ),
    );
    if (S) {
      this.choice.value = S.default;
    }
    this.count = el("input", {
      type: "number",
      id: tag + "-pairs",
      min: "1",
      max: String(S ? S.n_pairs : 1),
      step: "1",
      value: String(S ? S.n_pairs : 1),
    });
    this.go = el("button", { type: "button", class: "mha-patch-go", text: "Patch" });
    this.note = el("p", { class: "mha-patch-note", role: "status" });
    this.maps = el("div", { class: "mha-patch-maps" });
    this.python = el("p", { class: "mha-patch-python" });
    this.help = el("p", { class: "mha-patch-help" });
    // each control named once on a page of two runs: "Run A: corruption"
    const who = (P.view.train.getAttribute("aria-label") || "").replace(/Train$/, "");
    [
      [this.choice, "corruption"],
      [this.count, "pairs"],
      [this.go, "Patch"],
    ].forEach(([e, n]) => e.setAttribute("aria-label", who + n));
    const lab = (input, text) => el("label", { for: input.id }, [text, " ", input]);
    this.element = el("details", { class: "mha-patch" }, [
      el("summary", { text: "Patch: what flows through each head" }),
      el("p", {
        text:
          "After a run: each head's output put in from the other input (patching), or replaced " +
          "(ablation), one head at a time, on pairs of a clean and a corrupted sequence (page " +
          "11c). Each cell is the " +
          "fraction recovered: 1 = the clean run's logit difference, 0 = the corrupted run's.",
      }),
      el("div", { class: "mha-patch-controls" }, [
        lab(this.choice, "corruption"),
        lab(this.count, "pairs"),
        this.go,
      ]),
      this.help,
      this.note,
      this.maps,
      this.python,
    ]);
    this.choice.addEventListener("change", () => {
      this.describe();
      this.clear();
      this.linked();
    });
    this.count.addEventListener("change", () => this.linked());
    if (P.lab && P.lab.linkPatch) {
      this.choose(P.lab.linkPatch);
    } // a link's choice (lab/link.js, checked there)
    this.go.addEventListener("click", () => this.request());
    this.describe();
    P.view.left.appendChild(this.element);
    // a new run (Reset, a new size, a file): no stale map
    P.run.addEventListener("run", () => {
      this.clear();
      this.note.textContent = "";
    });
  }

  // A link's corruption and pairs on the controls ({corruption, pairs},
  // already checked against train.patch by lab/link.js).
  choose(c) {
    if (!this.spec || !c || !c.corruption) {
      return;
    }
    this.choice.value = c.corruption;
    this.count.value = String(c.pairs);
    this.describe();
  }

  // The page's address follows the choice (the lab's link).
  linked() {
    if (this.P.lab) {
      this.P.lab.remember();
    }
  }

  describe() {
    const c = this.spec && this.spec.corruptions.find((x) => x.name === this.choice.value);
    this.help.textContent = c ? "\u201c" + c.name + "\u201d " + c.help + "." : "";
  }

  // Forget the maps (a new run, another corruption): nothing stale stays.
  clear() {
    this.maps.textContent = "";
    this.python.textContent = "";
    this.last = null;
  }

  refuse(line) {
    this.clear();
    this.note.textContent = line;
    return null;
  }

  // Why the model now cannot be patched, in one line, or null.
  refusal(n) {
    const P = this.P,
      S = this.spec;
    if (!S) {
      return "This build has no Patch graph; " + REBUILD + ".";
    }
    if (P.state === "running") {
      return (
        "The model is still training (step " +
        (P.step || 0) +
        "): pause it, or let the run finish, then Patch."
      );
    }
    if (!P.snapshot || (P.state !== "paused" && P.state !== "done")) {
      return "No trained model yet: train one (or open a model file), then Patch.";
    }
    const layers = P.knobs.layers();
    if (layers < S.layers) {
      return (
        "This model has " +
        layers +
        " layer: patching compares the heads of " +
        S.layers +
        " layers (one reads what the other writes); train with " +
        S.layers +
        " layers."
      );
    }
    if (!Number.isSafeInteger(n) || n < 1) {
      return "The batch is empty: choose 1 to " + S.n_pairs + " pairs.";
    }
    if (n > S.n_pairs) {
      return (
        "The build wrote " + S.n_pairs + " pairs of each corruption: choose 1 to " + S.n_pairs + "."
      );
    }
    return null;
  }

  // Run the patch graph on the model now; resolves with what was drawn
  // (or null, with the line that says why not).
  request(corruption, n) {
    if (corruption) {
      this.choice.value = corruption;
      this.describe();
    }
    const raw = n != null ? String(n) : this.count.value.trim();
    if (n != null) {
      this.count.value = raw;
    }
    if (corruption || n != null) {
      this.linked();
    }
    const count = /^\d+$/.test(raw) ? Number(raw) : raw === "" ? 0 : NaN;
    const why = this.refusal(count);
    if (why) {
      return Promise.resolve(this.refuse(why));
    }
    const P = this.P,
      snap = P.snapshot,
      run = P.run.id,
      name = this.choice.value,
      t0 = performance.now();
    this.clear();
    this.note.textContent =
      "Patching every head on " + count + " \u201c" + name + "\u201d pairs\u2026";
    let first = null; // ms from the request to the first maps drawn
    const part = (r) => {
      // the patching maps, while the ablation maps run
      if (run !== P.run.id || this.note.textContent.indexOf("Patching every head") !== 0) {
        return;
      }
      if (this.draw(Object.assign(r, { step: snap.step }))) {
        first = performance.now() - t0;
      }
    };
    return reader()
      .patch(snap.params, snap.h, name, count, run, part)
      .then(
        (r) => {
          if (run !== P.run.id) {
            return this.refuse("The model changed while it was patched: press Patch again.");
          }
          return this.draw(
            Object.assign(r, { step: snap.step, msFirst: first, msTotal: performance.now() - t0 }),
          );
        },
        (err) => this.refuse("Could not patch: " + (err.message || err) + "."),
      );
  }

  // Draw an answer's maps (r.maps, by default all of train.patch.maps); an
  // answer without every map (the patch graph's, before ablate's) says the
  // rest are coming, and is not `last`.
  draw(r) {
    const S = this.spec,
      h = r.h,
      layers = S.layers,
      per = layers * h,
      names = r.maps || S.maps;
    const [clean, bad] = r.ends;
    if (
      !r.ends.every(Number.isFinite) ||
      (!r.fractions.every(Number.isFinite) && Math.abs(clean - bad) >= S.min_gap)
    ) {
      return this.refuse(
        "The model's logits are not numbers (the weights diverged): nothing to patch.",
      );
    }
    if (Math.abs(clean - bad) < S.min_gap) {
      return this.refuse(
        "The clean and corrupted logit differences are " +
          clean.toPrecision(4) +
          " and " +
          bad.toPrecision(4) +
          ": a difference under " +
          S.min_gap +
          " leaves nothing to recover (the corruption barely changes the answer, " +
          "or the model has not learned the lookup yet). Train longer, or choose another " +
          "corruption.",
      );
    }
    this.maps.textContent = "";
    names.forEach((m, k) =>
      this.maps.appendChild(
        grid(label(S, m), r.fractions.slice(k * per, (k + 1) * per), layers, h),
      ),
    );
    const done = names.length === S.maps.length;
    this.note.textContent =
      "\u201c" +
      r.corruption +
      "\u201d, " +
      r.n +
      " pairs, the model at step " +
      r.step +
      ": logit difference clean " +
      clean.toFixed(2) +
      ", corrupted " +
      bad.toFixed(2) +
      " (" +
      r.ms.toFixed(0) +
      " ms)" +
      (done ? "." : "; the ablation maps are being computed\u2026");
    this.python.textContent = "";
    this.python.appendChild(
      document.createTextNode("The same maps in Python (import mhacourse as mc): "),
    );
    this.python.appendChild(el("code", { text: this.line(r) }));
    if (done) {
      this.last = r;
    }
    if (this.onDrawn) {
      this.onDrawn(r);
    }
    return r;
  }

  // The Python that gives the same numbers: the model (the run's line, or
  // the opened file), the pairs, the maps.
  line(r) {
    const P = this.P,
      S = this.spec,
      file = P.lab && P.lab.files && P.lab.files.opened;
    const model = file
      ? "model = tm.load(" + JSON.stringify(file) + ")"
      : runLine(P.config, r.step, P.knobs).replace(/^model, metrics/, "model, _");
    const pairs =
      "p = mc.corrupt(" +
      JSON.stringify(r.corruption) +
      ", " +
      S.n_pairs +
      ", seed=" +
      S.seed +
      ")" +
      (r.n < S.n_pairs ? "; p = mc.Pairs(*(t[:" + r.n + "] for t in p))" : "");
    return (
      model +
      "; " +
      pairs +
      "; " +
      S.directions
        .map((d) => "mc.patching_map(model, p, " + JSON.stringify(d) + ")")
        .concat(S.methods.map((m) => "mc.ablation_map(model, p, " + JSON.stringify(m) + ")"))
        .join("; ")
    );
  }
}
