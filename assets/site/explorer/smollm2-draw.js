// The SmolLM2 view's drawing: one layer's nine heads as heatmaps (viridis,
// as the explorer's), and the next-token loss at every position as bars,
// with the all-heads-on loss as a tick when heads are switched off.
// smollm2.js calls drawHeads and drawLoss with what the engine returned.
import { el } from "./dom.js";

function heat(canvas, data, off, L, size, cmap) {
  var img = document.createElement("canvas");
  img.width = L; img.height = L;
  var g = img.getContext("2d"), px = g.createImageData(L, L);
  for (var i = 0; i < L * L; i++) {
    var c = cmap[Math.max(0, Math.min(255, Math.round(255 * data[off + i])))];
    px.data[4 * i] = c[0]; px.data[4 * i + 1] = c[1]; px.data[4 * i + 2] = c[2]; px.data[4 * i + 3] = 255;
  }
  g.putImageData(px, 0, 0);
  var dpr = devicePixelRatio || 1;
  canvas.width = Math.round(size * dpr); canvas.height = Math.round(size * dpr);
  canvas.style.width = size + "px"; canvas.style.height = size + "px";
  var ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
}

// grid: the element to fill; v: {tokens, attn, h}; layer (1-based);
// toggle(i): the checkbox element of head i (or null before the model is live).
export function drawHeads(grid, v, layer, cmap, toggle) {
  var L = v.tokens.length, h = v.h, data = v.attn[layer - 1];
  var width = Math.max(300, grid.clientWidth || 700);
  var size = Math.max(90, Math.min(200, Math.floor((width - 2 * 12) / 3) - 2));
  grid.textContent = "";
  grid.style.gridTemplateColumns = "repeat(3, " + size + "px)";
  for (var i = 0; i < h; i++) {
    var c = el("canvas", { class: "mha-smol-thumb", role: "img",
      "aria-label": "Layer " + layer + ", head " + (i + 1) + ": attention over " + L + " tokens; rows are queries, columns keys." });
    var title = el("span", { class: "mha-smol-thumb-title" });
    var box = toggle ? toggle(i) : null;
    title.appendChild(box || document.createTextNode("Head " + (i + 1)));
    grid.appendChild(el("figure", { class: "mha-smol-thumb-fig" }, [title, c]));
    heat(c, data, i * L * L, L, size, cmap);
  }
}

// canvas: the chart; loss (L - 1) predicting tokens 2..L; base: the same
// with every head on (or null); tokens: the L tokens.
export function drawLoss(canvas, loss, base, tokens, color) {
  var n = loss.length, width = Math.max(300, Math.min(720, (canvas.parentNode && canvas.parentNode.clientWidth) || 640));
  var height = 140, top = 8, bottom = 22, dpr = devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr); canvas.height = Math.round(height * dpr);
  canvas.style.width = width + "px"; canvas.style.height = height + "px";
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  var hi = 0;
  for (var i = 0; i < n; i++) { hi = Math.max(hi, loss[i], base ? base[i] : 0); }
  hi = Math.max(1, Math.ceil(hi));
  var w = width / Math.max(n, 1), y = function (x) { return top + (height - top - bottom) * (1 - x / hi); };
  for (var j = 0; j < n; j++) {
    ctx.fillStyle = "#3b528b";
    ctx.fillRect(j * w + 1, y(loss[j]), Math.max(w - 2, 1), y(0) - y(loss[j]));
    if (base) { ctx.fillStyle = "#f1605d"; ctx.fillRect(j * w, y(base[j]) - 1, w, 2); }
  }
  ctx.fillStyle = color;
  ctx.font = "11px sans-serif";
  ctx.textBaseline = "top";
  ctx.fillText("0", 2, y(0) + 4);
  ctx.fillText(hi + " nats", 2, top);
  canvas.setAttribute("aria-label", "Next-token loss at each of " + n + " positions, 0 to " + hi + " nats" +
    (base ? "; red ticks: every head on" : "") + ". Largest: " +
    tokens[1 + argmax(loss)].trim() + " (" + loss[argmax(loss)].toFixed(2) + ").");
}

function argmax(a) {
  var k = 0;
  for (var i = 1; i < a.length; i++) { if (a[i] > a[k]) { k = i; } }
  return k;
}
