// The attention explorer's drawing: the colours (the viridis colour map),
// baseImage and paint for one heatmap, the grid of heads, the enlarged
// (detail) head, the d_model strip and the colour legend. Heatmaps owns the
// images it drew (one a head, and the enlarged one's); it reads the
// explorer's state (explorer-state.js) and writes none of it. explorer.js
// makes one, with the page's elements and the keyboard's part
// (explorer-a11y.js: wire, topSummary, drawTextAlt).
import { el } from "./dom.js";

export function buildLegend(CMAP) {
  var c = el("canvas", {
    class: "mha-legend-bar",
    width: "256",
    height: "12",
    "aria-hidden": "true",
  });
  var ctx = c.getContext("2d");
  for (var i = 0; i < 256; i++) {
    ctx.fillStyle = "rgb(" + CMAP[i].join(",") + ")";
    ctx.fillRect(i, 0, 1, 12);
  }
  return el(
    "div",
    {
      class: "mha-legend",
      role: "img",
      "aria-label": "Colour scale: dark purple is weight 0, yellow is weight 1.",
    },
    [el("span", { text: "weight 0" }), c, el("span", { text: "1" })],
  );
}
function clip(t) {
  return t.length > 12 ? t.slice(0, 11) + "…" : t;
}

// One head's L x L weights (from data[off]) as an L x L image.
function baseImage(CMAP, data, off, L) {
  var c = document.createElement("canvas");
  c.width = L;
  c.height = L;
  var ctx = c.getContext("2d"),
    img = ctx.createImageData(L, L);
  for (var i = 0; i < L * L; i++) {
    var col = CMAP[Math.max(0, Math.min(255, Math.round(data[off + i] * 255)))];
    img.data.set([col[0], col[1], col[2], 255], 4 * i);
  }
  ctx.putImageData(img, 0, 0);
  return c;
}

export class Heatmaps {
  // els: the page's root, pictures, header, notes, strip, grid, detailTitle
  // and detail; state: the ExplorerState (read only); parts: {a11y (wire,
  // topSummary, drawTextAlt), headToggle(i): MiniLM's switch of head i}.
  constructor(els, CMAP, state, parts) {
    this.els = els;
    this.CMAP = CMAP;
    this.state = state;
    this.parts = parts;
    this.thumbs = []; // {canvas, img, size}, one a head of the view drawn
    this.enlarged = null; // {img, size, margin, labels}: the detail's
  }

  // One heatmap (canvas) of image img at size px (past margin), with the
  // tokens as labels or not, and the cursor's cell ({q, k}) marked or not.
  paint(canvas, img, L, size, margin, labels, cursor) {
    var dpr = devicePixelRatio || 1,
      w = margin.left + size,
      hgt = margin.top + size;
    canvas.style.width = w + "px";
    canvas.style.height = hgt + "px";
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(hgt * dpr);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = size < L; // enlarge crisply, shrink smoothly
    ctx.drawImage(img, margin.left, margin.top, size, size);
    var cell = size / L,
      tokens = this.state.view.tokens;
    if (labels) {
      ctx.fillStyle = getComputedStyle(this.els.root).color;
      ctx.font = Math.min(13, Math.max(10, cell * 0.8)) + "px sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      tokens.forEach(function (t, i) {
        ctx.fillText(clip(t), margin.left - 4, margin.top + (i + 0.5) * cell);
      });
      ctx.textAlign = "left";
      tokens.forEach(function (t, i) {
        ctx.save();
        ctx.translate(margin.left + (i + 0.5) * cell, margin.top - 4);
        ctx.rotate(-Math.PI / 3);
        ctx.fillText(clip(t), 0, 0);
        ctx.restore();
      });
    }
    if (cursor) {
      ctx.strokeStyle = "#ff2d95";
      ctx.lineWidth = 2;
      ctx.strokeRect(
        margin.left + cursor.k * cell + 1,
        margin.top + cursor.q * cell + 1,
        Math.max(cell - 2, 2),
        Math.max(cell - 2, 2),
      );
    }
  }

  // Head i's heatmap again (the grid's, or the enlarged one), with the
  // cursor or none: the keyboard moved it.
  repaint(i, isDetail, cursor) {
    var L = this.state.view.L;
    if (isDetail) {
      var d = this.enlarged;
      this.paint(this.els.detail, d.img, L, d.size, d.margin, d.labels, cursor);
    } else {
      var t = this.thumbs[i];
      this.paint(t.canvas, t.img, L, t.size, { left: 0, top: 0 }, false, cursor);
    }
  }

  // The whole view: header, notes, strip, every head, the enlarged one and
  // the text alternative.
  draw() {
    var v = this.state.view,
      L = v.L,
      LL = L * L,
      E = this.els,
      a11y = this.parts.a11y;
    E.header.textContent = v.header + (v.live ? "" : " (precomputed at build time)");
    E.notes.textContent = v.notes.join(" ");
    E.notes.hidden = !v.notes.length;
    this.drawStrip(v);
    var width = Math.max(280, E.pictures.clientWidth || E.root.clientWidth || 700);
    var cols = v.h <= 4 ? v.h : v.h <= 8 ? 4 : v.h <= 12 ? 6 : 8;
    var size = Math.min(v.h <= 2 ? 260 : 200, Math.floor((width - (cols - 1) * 12) / cols) - 2);
    E.grid.textContent = "";
    E.grid.style.gridTemplateColumns = "repeat(" + cols + ", " + size + "px)";
    this.thumbs = [];
    for (var i = 0; i < v.h; i++) {
      var img = baseImage(this.CMAP, v.data, i * LL, L);
      var c = el("canvas", {
        class: "mha-thumb",
        tabindex: "0",
        role: "img",
        "aria-label":
          v.titles[i] +
          ": " +
          a11y.topSummary(i, 6) +
          ". Arrow keys move between cells; Enter shows this head large.",
      });
      var title = el("span", { class: "mha-thumb-title" });
      if (v.minilm && this.state.minilm === "ready") {
        title.appendChild(this.parts.headToggle(i));
      } else {
        title.appendChild(document.createTextNode(v.titles[i]));
      }
      if (v.delta) {
        title.appendChild(
          el("span", {
            class: "mha-delta",
            text: " Δ" + v.delta[i].toFixed(2),
            title: "largest change of a weight in this head after switching heads off",
          }),
        );
      }
      var selected = i === this.state.head ? " mha-selected" : "";
      E.grid.appendChild(el("figure", { class: "mha-thumb-fig" + selected }, [title, c]));
      this.thumbs.push({ canvas: c, img: img, size: size });
      this.paint(c, img, L, size, { left: 0, top: 0 }, false, null);
      a11y.wire(c, i, size, { left: 0, top: 0 }, false);
    }
    this.drawDetail();
    a11y.drawTextAlt();
  }

  // The selected head, enlarged, with the tokens when they fit.
  drawDetail() {
    var v = this.state.view,
      L = v.L,
      i = this.state.head,
      E = this.els;
    var width = Math.max(280, E.pictures.clientWidth || 700);
    var labels = L <= 48;
    var margin = labels ? { left: 96, top: 84 } : { left: 0, top: 0 };
    var size = Math.min(Math.max(L * 10, 240), width - margin.left - 8, 560);
    E.detailTitle.textContent =
      v.titles[i] +
      ", larger: rows are queries (the token that attends), columns are keys; each row sums to 1." +
      (labels ? "" : " Hover or use the arrow keys to read the tokens.");
    E.detail.setAttribute("aria-label", v.titles[i] + " enlarged. Arrow keys move between cells.");
    var img = baseImage(this.CMAP, v.data, i * L * L, L);
    this.enlarged = { img: img, size: size, margin: margin, labels: labels };
    var cursor = document.activeElement === E.detail ? this.state.cursor : null;
    this.paint(E.detail, img, L, size, margin, labels, cursor);
    this.parts.a11y.wire(E.detail, i, size, margin, true);
  }

  // X·W_Q's d_model columns cut into h blocks of d_k (the tiny models only).
  drawStrip(v) {
    var strip = this.els.strip;
    strip.textContent = "";
    if (v.minilm) {
      strip.hidden = true;
      return;
    }
    strip.hidden = false;
    var maxD = 256,
      shown = this.els.pictures.clientWidth || 640;
    var full = Math.max(200, Math.min(640, shown - 10));
    var bar = el("div", { class: "mha-strip-bar" });
    bar.style.width = Math.round((full * v.dModel) / maxD) + "px";
    for (var i = 0; i < v.h; i++) {
      var b = el("span", {
        class: "mha-block mha-block-" + (i % 2),
        text: (v.dk * full) / maxD >= 22 ? String(v.dk) : "",
      });
      b.style.flex = "1 1 0";
      bar.appendChild(b);
    }
    strip.setAttribute(
      "aria-label",
      "The projected vector X W_Q, d_model = " +
        v.dModel +
        " wide, cut into " +
        v.h +
        " blocks of d_k = " +
        v.dk +
        ".",
    );
    strip.appendChild(bar);
    strip.appendChild(
      el("span", {
        class: "mha-strip-caption",
        text:
          "X·W_Q (d_model = " +
          v.dModel +
          ") cut into h = " +
          v.h +
          " blocks of d_k = " +
          v.dk +
          ": block i is head i's query. Each head still reads all " +
          v.dModel +
          " input dimensions.",
      }),
    );
  }
}
