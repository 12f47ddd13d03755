// What the page's modules share to build and word their elements: el, one
// element with its attributes and children, and pct, a fraction as "12.3%".

export function el(tag, attrs, children) {
  const e = document.createElement(tag);
  Object.keys(attrs || {}).forEach((k) => {
    if (k === "text") {
      e.textContent = attrs[k];
    } else if (k === "class") {
      e.className = attrs[k];
    } else {
      e.setAttribute(k, attrs[k]);
    }
  });
  (children || []).forEach((c) => {
    if (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
  });
  return e;
}

export function pct(a) {
  return (100 * a).toFixed(1) + "%";
}
