// A "Slides" button on each chapter page that has a reveal.js deck.
// scripts/build_slides.py writes the decks after the book is built, with
// slides/decks.js listing them (window.mhaSlideDecks). That list is loaded
// with a <script> tag rather than fetch(), so the button also appears when
// the site is opened from disk (file://). No list, or no deck for this
// chapter: no button.
(function () {
  "use strict";

  function pageName() {
    var opts = window.DOCUMENTATION_OPTIONS || {};
    if (opts.pagename) { return opts.pagename; }
    var m = window.location.pathname.match(/([^/]+\/[^/]+)\.html$/);
    return m ? m[1] : "";
  }

  function addButton(href, title) {
    if (document.querySelector("a.slides-button")) { return; }
    var a = document.createElement("a");
    a.href = href;
    a.className = "btn btn-sm slides-button";
    a.setAttribute("data-deck-title", title);
    // sized like the theme's header icons, its label beside the icon
    a.style.cssText = "display:inline-flex;align-items:center;gap:0.35em;font-size:0.9rem;";
    var icon = document.createElement("span");
    icon.className = "btn__icon-container";
    icon.setAttribute("aria-hidden", "true");
    icon.innerHTML = '<i class="fa-solid fa-person-chalkboard"></i>';
    var text = document.createElement("span");
    text.className = "btn__text-container";
    text.textContent = "Slides";
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
    list.src = root + "slides/decks.js";
    list.onload = function () {
      var deck = (window.mhaSlideDecks || {})[m[1]];
      if (deck) { addButton(root + "slides/" + deck.file, deck.title); }
    };
    document.head.appendChild(list);
  });
})();
