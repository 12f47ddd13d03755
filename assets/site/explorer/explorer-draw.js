// The attention explorer's drawing: the element helper el, the colours (the
// viridis colour map), baseImage and paint for one heatmap, the grid of heads,
// the enlarged (detail) head, the d_model strip and the colour legend.
// explorer.js calls installDraw(X) once the page's elements exist; draw,
// drawDetail and paint are added to the shared object X.
import { el } from "./dom.js";

export function buildLegend(CMAP) {
  var c = el("canvas", { class: "mha-legend-bar", width: "256", height: "12", "aria-hidden": "true" });
  var ctx = c.getContext("2d");
  for (var i = 0; i < 256; i++) { var col = CMAP[i]; ctx.fillStyle = "rgb(" + col.join(",") + ")"; ctx.fillRect(i, 0, 1, 12); }
  return el("div", { class: "mha-legend", role: "img", "aria-label": "Colour scale: dark purple is weight 0, yellow is weight 1." }, [
    el("span", { text: "weight 0" }), c, el("span", { text: "1" })]);
}
export function installDraw(X) {
  var S = X.S, CMAP = X.CMAP, root = X.root, pictures = X.pictures, header = X.header, notes = X.notes,
    strip = X.strip, grid = X.grid, detailTitle = X.detailTitle, detail = X.detail;

  function rgb(w) { var c = CMAP[Math.max(0, Math.min(255, Math.round(w * 255)))]; return c; }

  function baseImage(data, off, L) {
    var c = document.createElement("canvas");
    c.width = L; c.height = L;
    var ctx = c.getContext("2d"), img = ctx.createImageData(L, L);
    for (var i = 0; i < L * L; i++) {
      var col = rgb(data[off + i]);
      img.data[4 * i] = col[0]; img.data[4 * i + 1] = col[1]; img.data[4 * i + 2] = col[2]; img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return c;
  }

  function textColor() { return getComputedStyle(root).color; }

  function paint(canvas, img, L, size, margin, labels, cursor) {
    var dpr = devicePixelRatio || 1, w = margin.left + size, hgt = margin.top + size;
    canvas.style.width = w + "px"; canvas.style.height = hgt + "px";
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(hgt * dpr);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = size < L; // enlarge crisply, shrink smoothly
    ctx.drawImage(img, margin.left, margin.top, size, size);
    var cell = size / L;
    if (labels) {
      ctx.fillStyle = textColor();
      ctx.font = Math.min(13, Math.max(10, cell * 0.8)) + "px sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      X.view.tokens.forEach(function (t, i) { ctx.fillText(clip(t), margin.left - 4, margin.top + (i + 0.5) * cell); });
      ctx.save();
      ctx.textAlign = "left";
      X.view.tokens.forEach(function (t, i) {
        ctx.save();
        ctx.translate(margin.left + (i + 0.5) * cell, margin.top - 4);
        ctx.rotate(-Math.PI / 3);
        ctx.fillText(clip(t), 0, 0);
        ctx.restore();
      });
      ctx.restore();
    }
    if (cursor) {
      ctx.strokeStyle = "#ff2d95"; ctx.lineWidth = 2;
      ctx.strokeRect(margin.left + cursor.k * cell + 1, margin.top + cursor.q * cell + 1, Math.max(cell - 2, 2), Math.max(cell - 2, 2));
    }
  }
  function clip(t) { return t.length > 12 ? t.slice(0, 11) + "…" : t; }

  function draw() {
    var v = X.view, L = v.L, LL = L * L;
    header.textContent = v.header + (v.live ? "" : " (precomputed at build time)");
    notes.textContent = v.notes.join(" ");
    notes.hidden = !v.notes.length;
    drawStrip(v);
    var width = Math.max(280, pictures.clientWidth || root.clientWidth || 700);
    var cols = v.h <= 4 ? v.h : v.h <= 8 ? 4 : v.h <= 12 ? 6 : 8;
    var size = Math.min(v.h <= 2 ? 260 : 200, Math.floor((width - (cols - 1) * 12) / cols) - 2);
    grid.textContent = "";
    grid.style.gridTemplateColumns = "repeat(" + cols + ", " + size + "px)";
    X.thumbs = [];
    for (var i = 0; i < v.h; i++) {
      var img = baseImage(v.data, i * LL, L);
      var c = el("canvas", { class: "mha-thumb", tabindex: "0", role: "img",
        "aria-label": v.titles[i] + ": " + X.topSummary(i, 6) + ". Arrow keys move between cells; Enter shows this head large." });
      var title = el("span", { class: "mha-thumb-title" });
      if (v.minilm && X.minilmState === "ready") { title.appendChild(X.headToggle(i)); } else { title.appendChild(document.createTextNode(v.titles[i])); }
      if (v.delta) {
        title.appendChild(el("span", { class: "mha-delta", text: " Δ" + v.delta[i].toFixed(2),
          title: "largest change of a weight in this head after switching heads off" }));
      }
      var fig = el("figure", { class: "mha-thumb-fig" + (i === S.head ? " mha-selected" : "") }, [title, c]);
      grid.appendChild(fig);
      X.thumbs.push({ canvas: c, img: img, size: size });
      paint(c, img, L, size, { left: 0, top: 0 }, false, null);
      X.wire(c, i, size, { left: 0, top: 0 }, false);
    }
    drawDetail();
    X.drawTextAlt();
  }

  function drawDetail() {
    var v = X.view, L = v.L, i = S.head;
    var width = Math.max(280, pictures.clientWidth || 700);
    var labels = L <= 48;
    var margin = labels ? { left: 96, top: 84 } : { left: 0, top: 0 };
    var size = Math.min(Math.max(L * 10, 240), width - margin.left - 8, 560);
    detailTitle.textContent = v.titles[i] + ", larger: rows are queries (the token that attends), columns are keys; each row sums to 1." +
      (labels ? "" : " Hover or use the arrow keys to read the tokens.");
    detail.setAttribute("aria-label", v.titles[i] + " enlarged. Arrow keys move between cells.");
    var img = baseImage(v.data, i * L * L, L);
    detail._img = img; detail._size = size; detail._margin = margin; detail._labels = labels;
    paint(detail, img, L, size, margin, labels, document.activeElement === detail ? S.cursor : null);
    X.wire(detail, i, size, margin, true);
  }

  function drawStrip(v) {
    strip.textContent = "";
    if (v.minilm) { strip.hidden = true; return; }
    strip.hidden = false;
    var maxD = 256, full = Math.max(200, Math.min(640, (pictures.clientWidth || 640) - 10));
    var bar = el("div", { class: "mha-strip-bar" });
    bar.style.width = Math.round(full * v.dModel / maxD) + "px";
    for (var i = 0; i < v.h; i++) {
      var b = el("span", { class: "mha-block mha-block-" + (i % 2), text: v.dk * full / maxD >= 22 ? String(v.dk) : "" });
      b.style.flex = "1 1 0";
      bar.appendChild(b);
    }
    strip.setAttribute("aria-label", "The projected vector X W_Q, d_model = " + v.dModel + " wide, cut into " + v.h + " blocks of d_k = " + v.dk + ".");
    strip.appendChild(bar);
    strip.appendChild(el("span", { class: "mha-strip-caption",
      text: "X·W_Q (d_model = " + v.dModel + ") cut into h = " + v.h + " blocks of d_k = " + v.dk +
        ": block i is head i's query. Each head still reads all " + v.dModel + " input dimensions." }));
  }

  X.paint = paint;
  X.draw = draw;
  X.drawDetail = drawDetail;
}
