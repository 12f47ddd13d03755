// A "Handout" button on each chapter page that has a printable PDF.
// scripts/build_handouts.py prints the chapters after the book is built,
// with handouts/handouts.js listing them (window.mhaHandouts). As for the
// slides (slides-link.js), the list is loaded with a <script> tag so the
// button also appears when the site is opened from disk (file://). No list,
// or no handout for this chapter: no button.
(function () {
  "use strict";

  function pageName() {
    var opts = window.DOCUMENTATION_OPTIONS || {};
    if (opts.pagename) { return opts.pagename; }
    var m = window.location.pathname.match(/([^/]+\/[^/]+)\.html$/);
    return m ? m[1] : "";
  }

  function addButton(href, pages) {
    if (document.querySelector("a.handout-button")) { return; }
    var a = document.createElement("a");
    a.href = href;
    a.className = "btn btn-sm handout-button";
    a.setAttribute("download", "");
    a.title = "Printable handout (PDF, " + pages + (pages === 1 ? " page" : " pages")
      + ", without the solutions)";
    a.style.cssText = "display:inline-flex;align-items:center;gap:0.35em;font-size:0.9rem;";
    var icon = document.createElement("span");
    icon.className = "btn__icon-container";
    icon.setAttribute("aria-hidden", "true");
    icon.innerHTML = '<i class="fa-solid fa-file-pdf"></i>';
    var text = document.createElement("span");
    text.className = "btn__text-container";
    text.textContent = "Handout";
    a.appendChild(icon);
    a.appendChild(text);
    var bar = document.querySelector(".article-header-buttons");
    if (bar) {
      bar.insertBefore(a, bar.firstChild);
    } else {                                  // another theme: top of the page
      var main = document.querySelector("main, article, body");
      main.insertBefore(a, main.firstChild);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var m = pageName().match(/^chapters\/([0-9][0-9]_[\w-]+)$/);
    if (!m) { return; }
    var root = document.documentElement.getAttribute("data-content_root") || "";
    var list = document.createElement("script");
    list.src = root + "handouts/handouts.js";
    list.onload = function () {
      var h = (window.mhaHandouts || {})[m[1]];
      if (h) { addButton(root + "handouts/" + h.file, h.pages); }
    };
    document.head.appendChild(list);
  });
})();
