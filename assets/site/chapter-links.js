// The "Slides" and "Handout" buttons on each chapter page that has a deck or
// a printable PDF. scripts/build_slides.py and scripts/build_handouts.py run
// after the book is built and write slides/decks.js (window.mhaSlideDecks)
// and handouts/handouts.js (window.mhaHandouts). Each list is loaded with a
// <script> tag rather than fetch(), so the buttons also appear when the site
// is opened from disk (file://). No list, or no entry for this chapter: no
// button.
(function () {
  "use strict";

  // one row per button: where its list is, how to read an entry
  var KINDS = [
    {
      list: "slides/decks.js",
      global: "mhaSlideDecks",
      dir: "slides/",
      cls: "slides-button",
      icon: "fa-person-chalkboard",
      label: "Slides",
      extra: function (a, deck) {
        a.setAttribute("data-deck-title", deck.title);
      },
    },
    {
      list: "handouts/handouts.js",
      global: "mhaHandouts",
      dir: "handouts/",
      cls: "handout-button",
      icon: "fa-file-pdf",
      label: "Handout",
      extra: function (a, h) {
        a.setAttribute("download", "");
        a.title =
          "Printable handout (PDF, " +
          h.pages +
          (h.pages === 1 ? " page" : " pages") +
          ", without the solutions)";
      },
    },
  ];

  function pageName() {
    var opts = window.DOCUMENTATION_OPTIONS || {};
    if (opts.pagename) {
      return opts.pagename;
    }
    var m = window.location.pathname.match(/([^/]+\/[^/]+)\.html$/);
    return m ? m[1] : "";
  }

  function addButton(kind, href, entry) {
    if (document.querySelector("a." + kind.cls)) {
      return;
    }
    var a = document.createElement("a");
    a.href = href;
    a.className = "btn btn-sm " + kind.cls;
    kind.extra(a, entry);
    // sized like the theme's header icons, its label beside the icon
    a.style.cssText = "display:inline-flex;align-items:center;gap:0.35em;font-size:0.9rem;";
    var icon = document.createElement("span");
    icon.className = "btn__icon-container";
    icon.setAttribute("aria-hidden", "true");
    icon.innerHTML = '<i class="fa-solid ' + kind.icon + '"></i>';
    var text = document.createElement("span");
    text.className = "btn__text-container";
    text.textContent = kind.label;
    a.appendChild(icon);
    a.appendChild(text);
    var bar = document.querySelector(".article-header-buttons");
    if (bar) {
      bar.insertBefore(a, bar.firstChild);
    } else {
      // another theme: top of the page
      var main = document.querySelector("main, article, body");
      main.insertBefore(a, main.firstChild);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var m = pageName().match(/^chapters\/([0-9][0-9]_[\w-]+)$/);
    if (!m) {
      return;
    }
    var root = document.documentElement.getAttribute("data-content_root") || "";
    KINDS.forEach(function (kind) {
      var list = document.createElement("script");
      list.src = root + kind.list;
      list.onload = function () {
        var entry = (window[kind.global] || {})[m[1]];
        if (entry) {
          addButton(kind, root + kind.dir + entry.file, entry);
        }
      };
      document.head.appendChild(list);
    });
  });
})();
