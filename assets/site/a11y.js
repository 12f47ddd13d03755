// Small accessibility repairs to the book theme, found by the axe-core scan
// (tests/test_site.py), so that each control's accessible name contains the
// text it shows (WCAG 2.5.3, "label in name").
(function () {
  function text(el) { return el.textContent.replace(/\s+/g, " ").trim(); }
  // sphinx-exercise gives every exercise's and solution's body the same id
  // ("exercise-content", "solution-content"): number the repeats, so that
  // no id is used twice on a page (nothing links to them)
  function uniqueIds() {
    var seen = {};
    document.querySelectorAll("[id]").forEach(function (el) {
      var id = el.id;
      if (seen[id]) { seen[id] += 1; el.id = id + "-" + seen[id]; } else { seen[id] = 1; }
    });
  }
  document.addEventListener("DOMContentLoaded", uniqueIds);
  function repair() {
    // search buttons show "Search Ctrl+K" but were labelled "Search"
    document.querySelectorAll(".search-button__button").forEach(function (el) {
      if (text(el)) { el.setAttribute("aria-label", text(el)); }
    });
    // folded code cells (sphinx-togglebutton): name the summary by the text
    // it shows ("Show code cell source"), not "Toggle hidden content"
    document.querySelectorAll("summary[aria-label]").forEach(function (el) {
      el.setAttribute("aria-label", text(el.querySelector(".collapsed") || el));
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
      if (changes.some(function (c) { return c.attributeName !== "aria-label"; })) {
        repair();
      }
    }).observe(document.body, { subtree: true, childList: true,
                                attributes: true, attributeFilter: ["title"] });
  });
  window.addEventListener("load", repair);
})();
