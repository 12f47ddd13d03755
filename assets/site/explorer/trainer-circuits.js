// The circuits of the model now (a read-out's r.circuits), drawn from the
// manifest's train.readouts (mhacourse.web_train.READOUTS, written once):
// a "map" read-out is an h x h heatmap of layer-1 head i (rows) into
// layer-2 head j (columns) with its colour scale, read against the random
// baseline the entry names; a "column" read-out is a column of the
// per-head table, for the layers it means something in. The table's last
// column is each head's role on the first probe_n held-out sequences.
import { MAN, CMAP } from "./data.js";
import { el } from "./dom.js";
import { ROLE_NAMES, headName } from "./trainer-text.js";

export function colour(v, top) {
  return CMAP[Math.max(0, Math.min(255, Math.round((255 * v) / top)))];
}

// The colour scale of a map: 0 to `top`.
function scale(top) {
  const W = 64,
    bar = el("canvas", {
      class: "mha-train-scale-bar",
      width: String(W),
      height: "8",
      "aria-hidden": "true",
    });
  const g = bar.getContext("2d");
  for (let x = 0; x < W; x++) {
    g.fillStyle = "rgb(" + colour(x, W - 1).join(",") + ")";
    g.fillRect(x, 0, 1, 8);
  }
  return el("span", { class: "mha-train-scale" }, ["0 ", bar, " " + top.toFixed(2)]);
}

function map(R, M, base, h) {
  const top = Math.max(2 * base, Math.max.apply(null, M)) || 1;
  const cell = Math.max(6, Math.floor(96 / h)),
    cv = el("canvas", { width: String(h * cell), height: String(h * cell), role: "img" });
  const g = cv.getContext("2d");
  let best = 0,
    sum = 0;
  for (let i = 0; i < h; i++) {
    for (let j = 0; j < h; j++) {
      const v = M[i * h + j];
      g.fillStyle = "rgb(" + colour(v, top).join(",") + ")";
      g.fillRect(j * cell, i * cell, cell, cell);
      if (v > M[best]) {
        best = i * h + j;
      }
      sum += v;
    }
  }
  // like with like: the mean over the h x h pairs against the mean of random pairs
  const mean = sum / (h * h),
    pair = headName(0, Math.floor(best / h)) + " → " + headName(1, best % h);
  cv.setAttribute(
    "aria-label",
    R.label +
      " of layer-1 head i (rows) into layer-2 head j (columns), " +
      h +
      " × " +
      h +
      ": mean " +
      mean.toFixed(3) +
      ", " +
      (mean / base).toFixed(1) +
      " × the random baseline " +
      base.toFixed(3) +
      " (the mean of random pairs); largest " +
      pair +
      " = " +
      M[best].toFixed(3) +
      ".",
  );
  const axes = el("div", { class: "mha-train-comp-axes" }, [
    el("span", { class: "mha-train-comp-y", text: "rows: L1 heads" }),
    cv,
  ]);
  return el("figure", { class: "mha-train-comp" }, [
    el("span", { class: "mha-train-comp-x", text: "cols: L2 heads" }),
    axes,
    scale(top),
    el("figcaption", {
      text:
        R.label +
        ": mean " +
        mean.toFixed(3) +
        " over the " +
        h * h +
        " pairs, random pairs " +
        base.toFixed(3) +
        "; top " +
        pair +
        " " +
        M[best].toFixed(2),
    }),
  ]);
}

function table(r, c, h, layers, columns) {
  const caption =
    "Per head: " +
    columns.map((R) => R.label + " (" + R.help + ")").join("; ") +
    "; and the role on the first " +
    MAN.train.probe_n +
    " held-out sequences (the quick read-out; the timeline's roles use all of them)";
  const t = el("table", { class: "mha-train-roletable" }, [
    el("caption", { text: caption }),
    el("thead", {}, [
      el(
        "tr",
        {},
        ["Head"]
          .concat(
            columns.map((R) => R.label),
            ["role"],
          )
          .map((x) => el("th", { scope: "col", text: x })),
      ),
    ]),
  ]);
  const body = el("tbody");
  for (let l = 0; l < layers; l++) {
    for (let i = 0; i < h; i++) {
      const k = l * h + i;
      body.appendChild(
        el(
          "tr",
          {},
          [el("th", { scope: "row", text: headName(l, i) })].concat(
            columns.map((R) =>
              el("td", { text: R.layers.indexOf(l + 1) >= 0 ? c[R.output][k].toFixed(2) : "—" }),
            ),
            [el("td", { text: ROLE_NAMES[r.quickRoles[l][i]] })],
          ),
        ),
      );
    }
  }
  t.appendChild(body);
  return t;
}

export function circuits(Q, r) {
  const box = Q.view.circuits,
    c = r.circuits,
    h = r.h,
    layers = Q.knobs.layers();
  box.textContent = "";
  if (!c) {
    return;
  }
  const shown = MAN.train.readouts.filter((R) => R.layers.every((l) => l <= layers));
  const maps = shown.filter((R) => R.draw === "map"),
    columns = MAN.train.readouts.filter((R) => R.draw === "column");
  // what is drawn must be numbers: the maps of the layers the run has, and
  // each column's heads of those layers (a one-layer model opened from its
  // file has a second block of zeros, whose scores are not numbers and are
  // never drawn)
  const drawn = (R, k) => k < layers * h && R.layers.indexOf(Math.floor(k / h) + 1) >= 0;
  const finite =
    maps.every(
      (R) => c[R.output].every(Number.isFinite) && Number.isFinite(c.baseline[R.baseline]),
    ) && columns.every((R) => c[R.output].every((v, k) => !drawn(R, k) || Number.isFinite(v)));
  if (!finite) {
    box.appendChild(
      el("p", {
        text:
          "The circuits at step " +
          r.step +
          " are not numbers (the weights diverged): nothing to draw.",
      }),
    );
    return;
  }
  if (maps.length) {
    box.appendChild(
      el("p", {
        class: "mha-train-circuits-title",
        text:
          "Circuits at step " +
          r.step +
          ": how the layer-2 heads read what the layer-1 heads write",
      }),
    );
    box.appendChild(
      el(
        "div",
        { class: "mha-train-comps" },
        maps.map((R) => map(R, c[R.output], c.baseline[R.baseline], h)),
      ),
    );
  } else {
    box.appendChild(
      el("p", {
        class: "mha-train-circuits-title",
        text:
          "Circuits at step " +
          r.step +
          ": this run has " +
          layers +
          " layer, so no head reads another's output (no composition).",
      }),
    );
  }
  box.appendChild(
    el("details", {}, [
      el("summary", { text: "Per-head scores" }),
      table(r, c, h, layers, columns),
    ]),
  );
}
