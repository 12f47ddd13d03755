// Small SVG drawing helpers for the report view (report-view.js) and the
// class page (class/class-draw.js): vector pictures that print sharply and
// scale with the page. Okabe-Ito colours. Elements other than SVG's: dom.js.
import { el } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
export const COLOURS = [
  "#0072b2",
  "#d55e00",
  "#009e73",
  "#cc79a7",
  "#e69f00",
  "#56b4e9",
  "#000000",
];

export function svgEl(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  Object.keys(attrs).forEach((k) => e.setAttribute(k, String(attrs[k])));
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

// A chart: x from 0 to xMax, y from 0 to yMax, in a viewBox of w x h with
// margins for the axes. spec: {w, h, xMax, yMax, xLabel, yLabel, yTicks,
// series: [{xs, ys, colour, dash, width, label}], hlines: [{y, label, dash}],
// vlines: [{x, label}], points: [{x, y, colour, shape, title, label}], label: alt
// text}. Returns the <svg>.
export function chart(spec) {
  const W = spec.w || 360,
    H = spec.h || 170,
    L = 38,
    R = 8,
    T = spec.yLabel ? 22 : 10,
    B = 28;
  const X = (x) => L + ((W - L - R) * x) / spec.xMax;
  const Y = (y) => H - B - ((H - B - T) * Math.min(Math.max(y, 0), spec.yMax)) / spec.yMax;
  const s = svgEl("svg", {
    viewBox: "0 0 " + W + " " + H,
    role: "img",
    "aria-label": spec.label,
    class: "mha-chart",
  });
  s.appendChild(svgEl("title", {}, spec.label));
  s.appendChild(
    svgEl("path", {
      d: "M" + L + " " + T + "V" + (H - B) + "H" + (W - R),
      class: "mha-axis",
      fill: "none",
    }),
  );
  (spec.yTicks || [0, spec.yMax]).forEach((t) => {
    s.appendChild(
      svgEl(
        "text",
        { x: L - 4, y: Y(t) + 3, "text-anchor": "end", class: "mha-tick" },
        spec.yFormat ? spec.yFormat(t) : String(t),
      ),
    );
  });
  (spec.xTicks || [0, spec.xMax]).forEach((t) => {
    s.appendChild(
      svgEl(
        "text",
        { x: X(t), y: H - B + 12, "text-anchor": "middle", class: "mha-tick" },
        spec.xFormat ? spec.xFormat(t) : String(t),
      ),
    );
  });
  s.appendChild(
    svgEl(
      "text",
      { x: (L + W - R) / 2, y: H - 3, "text-anchor": "middle", class: "mha-axis-label" },
      spec.xLabel || "",
    ),
  );
  s.appendChild(svgEl("text", { x: 2, y: 10, class: "mha-axis-label" }, spec.yLabel || ""));
  (spec.hlines || []).forEach((l) => {
    s.appendChild(
      svgEl("path", {
        d: "M" + L + " " + Y(l.y) + "H" + (W - R),
        class: "mha-ref",
        "stroke-dasharray": l.dash || "4 3",
        fill: "none",
      }),
    );
    if (l.label) {
      s.appendChild(
        svgEl(
          "text",
          { x: W - R - 2, y: Y(l.y) - 3, "text-anchor": "end", class: "mha-tick" },
          l.label,
        ),
      );
    }
  });
  (spec.vlines || []).forEach((l) => {
    s.appendChild(
      svgEl("path", { d: "M" + X(l.x) + " " + T + "V" + (H - B), class: "mha-mark", fill: "none" }),
    );
    if (l.label) {
      s.appendChild(svgEl("text", { x: X(l.x) + 3, y: T + 9, class: "mha-tick" }, l.label));
    }
  });
  (spec.series || []).forEach((q) => {
    if (!q.xs.length) {
      return;
    }
    const d = q.xs
      .map((x, i) => (i ? "L" : "M") + X(x).toFixed(1) + " " + Y(q.ys[i]).toFixed(1))
      .join("");
    s.appendChild(
      svgEl("path", {
        d,
        fill: "none",
        stroke: q.colour,
        "stroke-width": q.width || 1.5,
        "stroke-dasharray": q.dash || "none",
      }),
    );
  });
  const placed = []; // the points' labels so far: none is drawn over another
  (spec.points || []).forEach((p) => {
    const x = X(p.x),
      y = Y(p.y),
      g = svgEl("g", { class: p.cls || "" });
    g.appendChild(svgEl("title", {}, p.title || ""));
    if (p.shape === "x") {
      g.appendChild(
        svgEl("path", {
          d: "M" + (x - 3.5) + " " + (y - 3.5) + "l7 7m0 -7l-7 7",
          stroke: p.colour,
          "stroke-width": 1.6,
          fill: "none",
        }),
      );
    } else if (p.shape === "ring") {
      g.appendChild(
        svgEl("circle", {
          cx: x,
          cy: y,
          r: 4,
          fill: "none",
          stroke: p.colour,
          "stroke-width": 1.3,
        }),
      );
    } else {
      g.appendChild(
        svgEl("circle", {
          cx: x,
          cy: y,
          r: 3.6,
          fill: p.colour,
          stroke: "#fff",
          "stroke-width": 0.8,
        }),
      );
    }
    if (p.label) {
      const at = placeLabel(placed, x + 5, y + 3, 4.4 * p.label.length, 9);
      g.appendChild(svgEl("text", { x: at.x, y: at.y, class: "mha-point-label" }, p.label));
    }
    s.appendChild(g);
  });
  return s;
}

// A key under a chart: [{colour, label, dash, shape}].
export function key(items) {
  return el(
    "p",
    { class: "mha-key" },
    items.map((it) =>
      el("span", { class: "mha-key-item" }, [
        el("span", {
          class: "mha-swatch" + (it.shape ? " mha-swatch-" + it.shape : ""),
          style: "--c:" + it.colour,
        }),
        it.label,
      ]),
    ),
  );
}

// Where a label of w x h (its baseline at y) goes near (x, y) without
// covering a label already placed: the nearest free row above or below,
// then to the right of those. Adds it to `placed`.
function placeLabel(placed, x, y, w, h) {
  const free = (bx, by) =>
    placed.every((b) => bx >= b.x + b.w || bx + w <= b.x || by - h >= b.y || by <= b.y - b.h);
  for (let k = 0; k < 40; k++) {
    const dx = Math.floor(k / 10) * (w + 4),
      step = k % 10,
      dy = (step % 2 ? 1 : -1) * Math.ceil(step / 2) * h;
    if (free(x + dx, y + dy)) {
      placed.push({ x: x + dx, y: y + dy, w, h });
      return { x: x + dx, y: y + dy };
    }
  }
  placed.push({ x, y, w, h });
  return { x, y };
}
