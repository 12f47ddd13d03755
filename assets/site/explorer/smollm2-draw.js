// The SmolLM2 view's drawing: every head at once as small squares, one
// layer's nine heads as heatmaps (viridis, as the explorer's), and the
// next-token loss at every position as bars,
// with the all-heads-on loss as a tick when heads are switched off.
// smollm2.js calls drawAll, drawHeads and drawLoss with what the engine
// returned.
import { el } from "./dom.js";

function heat(canvas, data, off, L, size, cmap) {
  var img = document.createElement("canvas");
  img.width = L;
  img.height = L;
  var g = img.getContext("2d"),
    px = g.createImageData(L, L);
  for (var i = 0; i < L * L; i++) {
    var c = cmap[Math.max(0, Math.min(255, Math.round(255 * data[off + i])))];
    px.data[4 * i] = c[0];
    px.data[4 * i + 1] = c[1];
    px.data[4 * i + 2] = c[2];
    px.data[4 * i + 3] = 255;
  }
  g.putImageData(px, 0, 0);
  var dpr = devicePixelRatio || 1;
  canvas.width = Math.round(size * dpr);
  canvas.height = Math.round(size * dpr);
  canvas.style.width = size + "px";
  canvas.style.height = size + "px";
  var ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
}

// grid: the element to fill; v: {tokens, attn, h}; layer (1-based);
// toggle(i): the checkbox element of head i (or null before the model is live).
export function drawHeads(grid, v, layer, cmap, toggle) {
  var L = v.tokens.length,
    h = v.h,
    data = v.attn[layer - 1];
  var width = Math.max(300, grid.clientWidth || 700);
  var size = Math.max(90, Math.min(200, Math.floor((width - 2 * 12) / 3) - 2));
  grid.textContent = "";
  grid.style.gridTemplateColumns = "repeat(3, " + size + "px)";
  for (var i = 0; i < h; i++) {
    var c = el("canvas", {
      class: "mha-smol-thumb",
      role: "img",
      "aria-label":
        "Layer " +
        layer +
        ", head " +
        (i + 1) +
        ": attention over " +
        L +
        " tokens; rows are queries, columns keys.",
    });
    var title = el("span", { class: "mha-smol-thumb-title" });
    var box = toggle ? toggle(i) : null;
    title.appendChild(box || document.createTextNode("Head " + (i + 1)));
    grid.appendChild(el("figure", { class: "mha-smol-thumb-fig" }, [title, c]));
    heat(c, data, i * L * L, L, size, cmap);
  }
}

// Every head at once: one canvas, a column a layer and a row a head, each
// square one head's L x L pattern (scaled down); the shown layer framed,
// the heads switched off crossed out. Returns the square's size in CSS
// pixels (the view maps a click to its layer with it).
export function drawAll(canvas, v, layer, off, cmap) {
  var L = v.tokens.length,
    h = v.h,
    n = v.attn.length;
  var width = Math.max(
    280,
    Math.min(720, (canvas.parentNode && canvas.parentNode.clientWidth) || 640),
  );
  var cell = Math.max(8, Math.floor(width / n)),
    gap = cell >= 14 ? 1 : 0;
  var big = document.createElement("canvas");
  big.width = n * L;
  big.height = h * L;
  var g = big.getContext("2d"),
    px = g.createImageData(n * L, h * L),
    W = n * L;
  var pixels = new Uint32Array(px.data.buffer),
    colour = new Uint32Array(256);
  for (var j = 0; j < 256; j++) {
    // RGBA as one little-endian word: a pixel a store
    colour[j] = ((255 << 24) | (cmap[j][2] << 16) | (cmap[j][1] << 8) | cmap[j][0]) >>> 0;
  }
  for (var l = 0; l < n; l++) {
    var a = v.attn[l];
    for (var i = 0; i < h; i++) {
      for (var q = 0; q < L; q++) {
        var from = (i * L + q) * L,
          row = (i * L + q) * W + l * L;
        for (var k = 0; k < L; k++) {
          var w = a[from + k];
          pixels[row + k] = colour[w <= 0 ? 0 : w >= 1 ? 255 : (255 * w + 0.5) | 0];
        }
      }
    }
  }
  g.putImageData(px, 0, 0);
  var dpr = devicePixelRatio || 1,
    cw = n * cell,
    ch = h * cell;
  canvas.width = Math.round(cw * dpr);
  canvas.height = Math.round(ch * dpr);
  canvas.style.width = cw + "px";
  canvas.style.height = ch + "px";
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.imageSmoothingEnabled = true; // each square an average of its pattern
  ctx.imageSmoothingQuality = "high";
  for (var x = 0; x < n; x++) {
    for (var y = 0; y < h; y++) {
      ctx.drawImage(
        big,
        x * L,
        y * L,
        L,
        L,
        x * cell + gap,
        y * cell + gap,
        cell - 2 * gap,
        cell - 2 * gap,
      );
      if (off[x * h + y]) {
        ctx.strokeStyle = "#ffffff";
        ctx.lineWidth = 1.5; // on viridis's darkest, too
        ctx.beginPath();
        ctx.moveTo(x * cell + 2, y * cell + 2);
        ctx.lineTo((x + 1) * cell - 2, (y + 1) * cell - 2);
        ctx.moveTo((x + 1) * cell - 2, y * cell + 2);
        ctx.lineTo(x * cell + 2, (y + 1) * cell - 2);
        ctx.stroke();
      }
    }
  }
  ctx.strokeStyle = "#f1605d";
  ctx.lineWidth = 2;
  ctx.strokeRect((layer - 1) * cell + 1, 1, cell - 2, ch - 2);
  canvas.setAttribute(
    "aria-label",
    "Every head of SmolLM2 on " +
      L +
      " tokens: " +
      n +
      " columns, layers 1 to " +
      n +
      ", of " +
      h +
      " heads each; each square is one head's attention pattern. " +
      "Layer " +
      layer +
      " is framed and shown below." +
      (Object.keys(off).some(function (k) {
        return off[k];
      })
        ? " Crossed out: the heads switched off."
        : ""),
  );
  return cell;
}

// canvas: the chart; loss (L - 1) predicting tokens 2..L; base: the same
// with every head on (or null); tokens: the L tokens.
export function drawLoss(canvas, loss, base, tokens, color) {
  var n = loss.length,
    width = Math.max(
      300,
      Math.min(720, (canvas.parentNode && canvas.parentNode.clientWidth) || 640),
    );
  var height = 140,
    top = 8,
    bottom = 22,
    dpr = devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = width + "px";
  canvas.style.height = height + "px";
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  var hi = 0;
  for (var i = 0; i < n; i++) {
    hi = Math.max(hi, loss[i], base ? base[i] : 0);
  }
  hi = Math.max(1, Math.ceil(hi));
  var w = width / Math.max(n, 1),
    y = function (x) {
      return top + (height - top - bottom) * (1 - x / hi);
    };
  for (var j = 0; j < n; j++) {
    ctx.fillStyle = "#3b528b";
    ctx.fillRect(j * w + 1, y(loss[j]), Math.max(w - 2, 1), y(0) - y(loss[j]));
    if (base) {
      ctx.fillStyle = "#f1605d";
      ctx.fillRect(j * w, y(base[j]) - 1, w, 2);
    }
  }
  ctx.fillStyle = color;
  ctx.font = "11px sans-serif";
  ctx.textBaseline = "top";
  ctx.fillText("0", 2, y(0) + 4);
  ctx.fillText(hi + " nats", 2, top);
  canvas.setAttribute(
    "aria-label",
    "Next-token loss at each of " +
      n +
      " positions, 0 to " +
      hi +
      " nats" +
      (base ? "; red ticks: every head on" : "") +
      ". Largest: " +
      tokens[1 + argmax(loss)].trim() +
      " (" +
      loss[argmax(loss)].toFixed(2) +
      ").",
  );
}

function argmax(a) {
  var k = 0;
  for (var i = 1; i < a.length; i++) {
    if (a[i] > a[k]) {
      k = i;
    }
  }
  return k;
}
