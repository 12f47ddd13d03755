// Loaded between require.js and the widget manager on pages with widgets.
// Points require.js at this site's own _static/ folder, so the fonts the widget
// manager loads come from the site itself (not a CDN, not the page's folder).
(function () {
  var here = document.currentScript.src;  // .../_static/widgets-config.js?v=...
  require.config({ baseUrl: here.slice(0, here.lastIndexOf("/") + 1) });
})();
