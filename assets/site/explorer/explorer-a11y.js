// The attention explorer's accessibility: keyboard navigation of the heatmaps
// (arrow keys move a cursor, Enter enlarges a head), the readout line that
// names the cell under the cursor or the mouse, focus handling, and the text
// alternative (each query's most-attended key, for every head). explorer.js
// calls installA11y(X) once the page's elements exist; wire, topSummary and
// drawTextAlt are added to the shared object X.
import { el } from "./dom.js";

export function installA11y(X) {
  var S = X.S, readout = X.readout, detail = X.detail, textAlt = X.textAlt;

  function weightAt(i, q, k) { var L = X.view.L; return X.view.data[i * L * L + q * L + k]; }

  function say(i, q, k) {
    var t = X.view.tokens;
    readout.textContent = X.view.titles[i] + ": query “" + t[q] + "” (" + (q + 1) + ") → key “" + t[k] + "” (" + (k + 1) + "): weight " + weightAt(i, q, k).toFixed(3);
  }

  function wire(canvas, i, size, margin, isDetail) {
    canvas.onmousemove = function (ev) {
      var r = canvas.getBoundingClientRect(), L = X.view.L;
      var k = Math.floor((ev.clientX - r.left - margin.left) / (size / L));
      var q = Math.floor((ev.clientY - r.top - margin.top) / (size / L));
      if (q < 0 || k < 0 || q >= L || k >= L) { return; }
      S.cursor = { q: q, k: k };
      say(i, q, k);
    };
    canvas.onclick = function () { if (!isDetail) { S.head = i; X.draw(); } };
    canvas.onfocus = function () { redrawCursor(canvas, i, isDetail); say(i, S.cursor.q, S.cursor.k); };
    canvas.onblur = function () { redrawCursor(canvas, i, isDetail, true); };
    canvas.onkeydown = function (ev) {
      var L = X.view.L, c = S.cursor, moved = true;
      if (ev.key === "ArrowUp") { c.q = Math.max(0, c.q - 1); } else if (ev.key === "ArrowDown") { c.q = Math.min(L - 1, c.q + 1); } else if (ev.key === "ArrowLeft") { c.k = Math.max(0, c.k - 1); } else if (ev.key === "ArrowRight") { c.k = Math.min(L - 1, c.k + 1); } else if ((ev.key === "Enter" || ev.key === " ") && !isDetail) {
        S.head = i; X.draw(); detail.focus(); ev.preventDefault(); return;
      } else { moved = false; }
      if (moved) { ev.preventDefault(); redrawCursor(canvas, i, isDetail); say(i, c.q, c.k); }
    };
  }

  function redrawCursor(canvas, i, isDetail, clear) {
    var L = X.view.L, cur = clear ? null : S.cursor;
    S.cursor.q = Math.min(S.cursor.q, L - 1); S.cursor.k = Math.min(S.cursor.k, L - 1);
    if (isDetail) { X.paint(detail, detail._img, L, detail._size, detail._margin, detail._labels, cur); } else { X.paint(canvas, X.thumbs[i].img, L, X.thumbs[i].size, { left: 0, top: 0 }, false, cur); }
  }

  function topSummary(i, max) {
    var v = X.view, L = v.L, parts = [];
    for (var q = 0; q < Math.min(L, max); q++) {
      var best = 0;
      for (var k = 1; k < L; k++) { if (weightAt(i, q, k) > weightAt(i, q, best)) { best = k; } }
      parts.push(v.tokens[q] + " → " + v.tokens[best] + " " + weightAt(i, q, best).toFixed(2));
    }
    return parts.join(", ") + (L > max ? ", …" : "");
  }

  function drawTextAlt() {
    var v = X.view;
    textAlt.textContent = "";
    textAlt.appendChild(el("summary", { text: "Text: each query's most-attended key, for every head" }));
    var list = el("ul");
    for (var i = 0; i < v.h; i++) { list.appendChild(el("li", { text: v.titles[i] + ": " + topSummary(i, 40) })); }
    textAlt.appendChild(list);
  }

  X.wire = wire;
  X.topSummary = topSummary;
  X.drawTextAlt = drawTextAlt;
}
