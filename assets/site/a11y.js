// Small accessibility repairs to the book theme, found by the axe-core scan
// (tests/test_site.py): each control's accessible name contains the text it
// shows (WCAG 2.5.3, "label in name"), and a control that shows only an icon
// has one (WCAG 4.1.2); scrollable regions can be reached with
// the keyboard from the moment they are on the page (WCAG 2.1.1); a figure
// shrunk to a narrow screen can be shown at full size (WCAG 1.4.4).
(function () {
  function text(el) {
    return el.textContent.replace(/\s+/g, " ").trim();
  }
  // sphinx-exercise gives every exercise's and solution's body the same id
  // ("exercise-content", "solution-content"): number the repeats, so that
  // no id is used twice on a page (nothing links to them)
  function uniqueIds() {
    var seen = {};
    document.querySelectorAll("[id]").forEach(function (el) {
      var id = el.id;
      if (seen[id]) {
        seen[id] += 1;
        el.id = id + "-" + seen[id];
      } else {
        seen[id] = 1;
      }
    });
  }
  document.addEventListener("DOMContentLoaded", uniqueIds);
  function repair() {
    // search buttons show "Search Ctrl+K" but were labelled "Search"
    document.querySelectorAll(".search-button__button").forEach(function (el) {
      if (text(el)) {
        el.setAttribute("aria-label", text(el));
      }
    });
    // folded code cells (sphinx-togglebutton): name the summary by the text
    // it shows ("Show code cell source"), not "Toggle hidden content"
    document.querySelectorAll("summary[aria-label]").forEach(function (el) {
      if (el.closest(".bd-docs-nav")) {
        return;
      } // the sidebar's folds: below
      el.setAttribute("aria-label", text(el.querySelector(".collapsed") || el));
    });
    // a chapter with a companion page (a section in _toc.yml) gets a fold in
    // the sidebar whose summary shows only a chevron, and had no name: name
    // it by its chapter ("Sections of 11. How heads form, ...")
    document.querySelectorAll(".bd-docs-nav li > details > summary").forEach(function (el) {
      var link = el.parentElement.parentElement.querySelector(":scope > a");
      var name = "Sections of " + (link ? text(link) : "this chapter");
      if (el.getAttribute("aria-label") !== name) {
        el.setAttribute("aria-label", name);
      }
    });
    // the colour-mode button shows only icons: hide them from assistive
    // technology and name the button by its tooltip ("Color mode") instead
    document.querySelectorAll(".theme-switch-button").forEach(function (el) {
      el.querySelectorAll("i").forEach(function (i) {
        i.removeAttribute("title");
        i.setAttribute("aria-hidden", "true");
      });
      if (el.hasAttribute("aria-label")) {
        el.setAttribute("title", el.getAttribute("aria-label"));
        el.removeAttribute("aria-label");
      }
    });
  }
  // the theme and togglebutton scripts build these on DOMContentLoaded / load,
  // and the theme may put the tooltips back later: repair whenever they change
  document.addEventListener("DOMContentLoaded", function () {
    repair();
    new MutationObserver(function (changes) {
      if (
        changes.some(function (c) {
          return c.attributeName !== "aria-label";
        })
      ) {
        repair();
      }
    }).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["title"],
    });
  });
  window.addEventListener("load", repair);

  // Scrollable regions (code, printouts and tables wider than the column)
  // must take the keyboard focus. The theme gives them tabindex="0" only on
  // the window's "load" event, which on a busy machine comes seconds after
  // the text is readable. Mark them as the parser adds them (this script runs
  // in the <head>, before the body exists), and again whenever the layout may
  // have changed (fonts, pictures, MathJax, the window's size): the same rule
  // as the theme's, which takes over after "load".
  var SCROLLERS = [
    "pre",
    ".nboutput > .output_area",
    ".cell_output > .output",
    ".jp-RenderedHTMLCommon",
    ".pst-scrollable-table-container",
  ].join(", ");
  function markScrollers() {
    document.querySelectorAll(SCROLLERS).forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
      var want = scrolls ? "0" : "-1";
      if (el.getAttribute("tabindex") !== want) {
        el.setAttribute("tabindex", want);
      }
    });
  }
  // At most once a frame: reading a size makes the browser lay the page out,
  // and the parser adds nodes many times a frame (a microtask per batch laid
  // the explorer's page out ~80 ms' worth while it loaded). Just before a
  // frame is drawn, the layout read here is the one the frame uses.
  var queued = false;
  function queueMark() {
    if (queued) {
      return;
    }
    queued = true;
    requestAnimationFrame(function () {
      queued = false;
      markScrollers();
    });
  }
  var parsing = new MutationObserver(function (changes) {
    if (
      changes.some(function (c) {
        return c.type === "childList";
      })
    ) {
      queueMark();
    }
  });
  parsing.observe(document.documentElement, { childList: true, subtree: true });
  // from "load" on, the theme's own observer keeps them marked: stop ours
  // (a page that redraws often, like the trainer's, need not pay twice)
  window.addEventListener("load", function () {
    parsing.disconnect();
    markScrollers();
  });
  document.addEventListener("DOMContentLoaded", markScrollers);
  document.addEventListener("load", queueMark, true); // each picture, in capture
  window.addEventListener("resize", queueMark);
  if (document.fonts) {
    document.fonts.ready.then(markScrollers);
  }

  // Figures on a narrow screen. The chapters' figures are drawn for a wide
  // page; on a phone they shrink to 4-5 px text. A figure shown below
  // ZOOM_BELOW of its natural width gets an "Enlarge figure" button (a tap on
  // the picture does the same): the picture is then shown at its natural
  // size in a box that scrolls sideways, so the page stays as wide as the
  // screen. Not the widgets' pictures nor the HTML heatmaps (they have
  // their own layout).
  var ZOOM_BELOW = 0.8;
  function zoomable(img) {
    return !img.closest(".jupyter-widgets, .widget-subarea, .mha-heads, .mha-trainer, a, button");
  }
  function setZoom(box, on) {
    box.classList.toggle("mha-zoomed", on);
    var btn = box.previousElementSibling;
    btn.setAttribute("aria-pressed", on ? "true" : "false");
    btn.textContent = on ? "Fit figure to the page" : "Enlarge figure";
    if (on) {
      // a region that scrolls: reachable by keyboard
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", "Figure at full size (scrolls sideways)");
    } else {
      ["tabindex", "role", "aria-label"].forEach(function (a) {
        box.removeAttribute(a);
      });
    }
    updateZoom();
  }
  function setUpZoom(img) {
    var box = document.createElement("div");
    box.className = "mha-zoom";
    img.parentNode.insertBefore(box, img);
    box.appendChild(img);
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "mha-zoom-button";
    btn.hidden = true;
    box.parentNode.insertBefore(btn, box);
    setZoom(box, false);
    btn.addEventListener("click", function () {
      setZoom(box, !box.classList.contains("mha-zoomed"));
    });
    img.addEventListener("click", function () {
      if (!btn.hidden) {
        setZoom(box, !box.classList.contains("mha-zoomed"));
      }
    });
  }
  function updateZoom() {
    document.querySelectorAll(".mha-zoom").forEach(function (box) {
      var img = box.querySelector("img");
      var shrunk = img.naturalWidth > 0 && img.clientWidth < ZOOM_BELOW * img.naturalWidth;
      box.previousElementSibling.hidden = !(shrunk || box.classList.contains("mha-zoomed"));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document
      .querySelectorAll(".bd-article .cell_output img, .bd-article figure img")
      .forEach(function (img) {
        if (zoomable(img)) {
          setUpZoom(img);
        }
      });
    updateZoom();
  });
  document.addEventListener(
    "load",
    function (e) {
      if (e.target.tagName === "IMG") {
        updateZoom();
      }
    },
    true,
  );
  window.addEventListener("resize", updateZoom);
  window.addEventListener("load", updateZoom);
})();
