// The attention explorer's accessibility: keyboard navigation of the heatmaps
// (arrow keys move a cursor, Enter enlarges a head), the readout line that
// names the cell under the cursor or the mouse, focus handling, and the text
// alternative (each query's most-attended key, for every head). A11y reads
// the explorer's state (explorer-state.js) and changes it only through its
// methods (the cursor); choosing a head and repainting one are the
// explorer's (explorer.js passes them as `on`).
import { el } from "./dom.js";

export class A11y {
  // els: {readout, detail, textAlt}; state: the ExplorerState; on:
  // {select(i): show head i enlarged, repaint(i, isDetail, cursor)}.
  constructor(els, state, on) {
    this.els = els;
    this.state = state;
    this.on = on;
  }

  weightAt(i, q, k) {
    var v = this.state.view,
      L = v.L;
    return v.data[i * L * L + q * L + k];
  }

  say(i, q, k) {
    var v = this.state.view,
      t = v.tokens;
    this.els.readout.textContent =
      v.titles[i] +
      ": query “" +
      t[q] +
      "” (" +
      (q + 1) +
      ") → key “" +
      t[k] +
      "” (" +
      (k + 1) +
      "): weight " +
      this.weightAt(i, q, k).toFixed(3);
  }

  // Mouse and keyboard on head i's canvas (size px past margin; the
  // enlarged one or a grid's).
  wire(canvas, i, size, margin, isDetail) {
    var S = this.state;
    canvas.onmousemove = (ev) => {
      var r = canvas.getBoundingClientRect(),
        L = S.view.L;
      var k = Math.floor((ev.clientX - r.left - margin.left) / (size / L));
      var q = Math.floor((ev.clientY - r.top - margin.top) / (size / L));
      if (q < 0 || k < 0 || q >= L || k >= L) {
        return;
      }
      S.setCursor(q, k);
      this.say(i, q, k);
    };
    canvas.onclick = () => {
      if (!isDetail) {
        this.on.select(i);
      }
    };
    canvas.onfocus = () => {
      this.redrawCursor(i, isDetail);
      this.say(i, S.cursor.q, S.cursor.k);
    };
    canvas.onblur = () => {
      this.redrawCursor(i, isDetail, true);
    };
    canvas.onkeydown = (ev) => {
      if ((ev.key === "Enter" || ev.key === " ") && !isDetail) {
        this.on.select(i);
        this.els.detail.focus();
        ev.preventDefault();
        return;
      }
      if (S.moveCursor(ev.key, S.view.L)) {
        ev.preventDefault();
        this.redrawCursor(i, isDetail);
        this.say(i, S.cursor.q, S.cursor.k);
      }
    };
  }

  redrawCursor(i, isDetail, clear) {
    this.state.fitCursor(this.state.view.L);
    this.on.repaint(i, isDetail, clear ? null : this.state.cursor);
  }

  // Head i's first `max` queries, each with the key it attends to most.
  topSummary(i, max) {
    var v = this.state.view,
      L = v.L,
      parts = [];
    for (var q = 0; q < Math.min(L, max); q++) {
      var best = 0;
      for (var k = 1; k < L; k++) {
        if (this.weightAt(i, q, k) > this.weightAt(i, q, best)) {
          best = k;
        }
      }
      parts.push(v.tokens[q] + " → " + v.tokens[best] + " " + this.weightAt(i, q, best).toFixed(2));
    }
    return parts.join(", ") + (L > max ? ", …" : "");
  }

  drawTextAlt() {
    var v = this.state.view,
      textAlt = this.els.textAlt;
    textAlt.textContent = "";
    textAlt.appendChild(
      el("summary", { text: "Text: each query's most-attended key, for every head" }),
    );
    var list = el("ul");
    for (var i = 0; i < v.h; i++) {
      list.appendChild(el("li", { text: v.titles[i] + ": " + this.topSummary(i, 40) }));
    }
    textAlt.appendChild(list);
  }
}
