/* global require */
// Loaded between require.js and the widget manager on pages with widgets.
// 1. Points require.js at this site's own _static/ folder, so the fonts the
//    widget manager loads come from the site itself (not a CDN, not the page's
//    folder).
// 2. The widget manager (html-manager 1.0) typesets labels through MathJax 2's
//    MathJax.Hub.Queue; the site runs MathJax 3, which has no Hub: hand such
//    calls to MathJax.typesetPromise instead of letting them throw.
(function () {
  var here = document.currentScript.src; // .../_static/widgets-config.js?v=...
  require.config({ baseUrl: here.slice(0, here.lastIndexOf("/") + 1) });

  function queue() {
    var els = [];
    for (var i = 0; i < arguments.length; i++) {
      var a = arguments[i];
      if (Array.isArray(a) && a[2] instanceof Element) {
        els.push(a[2]);
      }
    }
    if (window.MathJax && window.MathJax.typesetPromise) {
      return window.MathJax.typesetPromise(els.length ? els : undefined);
    }
  }
  function shim() {
    if (window.MathJax && !window.MathJax.Hub) {
      window.MathJax.Hub = { Queue: queue };
    }
  }
  shim();
  window.addEventListener("load", shim); // before the widget manager renders
})();
