"""The HTML around a slide deck: nbconvert's reveal.js template, extended to
load everything from the site (reveal.js, MathJax, the widget manager) and
to fit each slide to the slide box, and the deck's own CSS.

Used by scripts/build_slides.py (which documents the rules); the values in
``{{ resources.course.* }}`` come from its constants.
"""

TEMPLATE = r"""
{%- extends 'index.html.j2' -%}

{#- require.js from the site (reveal.js is loaded through it); no jQuery,
    no mermaid: nothing from a CDN -#}
{%- block html_head_js -%}
<script src="{{ resources.require_js_url }}"></script>
{%- endblock html_head_js -%}

{#- the site's widget manager, as on the chapter pages -#}
{% block jupyter_widgets %}
{%- if "widgets" in nb.metadata -%}
<script src="{{ resources.course.widgets_config }}"></script>
<script src="{{ resources.course.widgets_embed }}"></script>
{%- endif -%}
{% endblock jupyter_widgets %}

{#- MathJax 3 from the site (the template's default is MathJax 2 from a CDN,
    configured through MathJax.Hub, which MathJax 3 does not have) -#}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\(', '\\)']],
        displayMath: [['$$', '$$'], ['\\[', '\\]']],
        processEscapes: true, processEnvironments: true, tags: 'ams'},
  options: {ignoreHtmlClass: 'tex2jax_ignore', processHtmlClass: 'tex2jax_process'},
  startup: {ready: function () {
    MathJax.startup.defaultReady();
    MathJax.Hub = {Queue: typesetQueue};
  }}
};
// The widget manager (html-manager 1.0) typesets widget labels through
// MathJax 2's MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]); MathJax 3
// has no Hub: hand such calls to MathJax.typesetPromise instead.
function typesetQueue() {
  var els = [];
  for (var i = 0; i < arguments.length; i++) {
    var a = arguments[i];
    if (Array.isArray(a) && a[2] instanceof Element) { els.push(a[2]); }
  }
  if (window.MathJax && MathJax.typesetPromise) {
    return MathJax.typesetPromise(els.length ? els : undefined);
  }
}
window.MathJax.Hub = {Queue: typesetQueue};
</script>
<script defer src="{{ resources.mathjax_url }}"></script>
{%- endblock html_head_js_mathjax -%}

{%- block html_head_css -%}
<style>
{{ resources.course.css }}
</style>
{%- endblock html_head_css -%}

{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
     alt="{{ (output | get_metadata('alt', 'image/png') or '') | escape_html }}">
</div>
{% endblock data_png %}

{% block footer_js %}
<script>
require([
    "{{ resources.reveal.url_prefix }}/dist/reveal.js",
    "{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"
  ], function (Reveal, RevealNotes) {
    window.Reveal = Reveal;   // for the tests and the browser console
    Reveal.initialize({
      controls: true, progress: true, hash: true, center: false,
      slideNumber: "c/t", transition: "{{ resources.reveal.transition }}",
      transitionSpeed: "fast", width: {{ resources.reveal.width }},
      height: {{ resources.reveal.height }}, margin: 0.03,
      // printed (?print-pdf): one page a slide. A slide that fills its box
      // printed its number alone on a page of its own (chapter 11's 44
      // slides took 46 pages); the slides are checked to fit the box
      // (tests/test_slides.py), so nothing of theirs is cut.
      pdfMaxPagesPerSlide: 1,
      plugins: [RevealNotes]
    });
    // Printed: no blank page after the last slide (reveal breaks the page
    // after every slide, the last one too).
    Reveal.on("pdf-ready", function () {
      var pages = document.querySelectorAll(".reveal .pdf-page");
      if (pages.length) { pages[pages.length - 1].style.breakAfter = "auto"; }
    });
    // How far down the slide's content reaches (its notes aside).
    function contentHeight(section) {
      var bottom = 0;
      Array.prototype.forEach.call(section.children, function (c) {
        if (c.tagName !== "ASIDE") { bottom = Math.max(bottom, c.offsetTop + c.offsetHeight); }
      });
      return bottom;
    }
    // A slide with one picture drawn by a cell (a figure and its caption):
    // the picture fills the room the slide has, as wide as the slide or as
    // tall as the room below the heading and above the caption, up to
    // {{ resources.course.max_grow }} x its natural size (the chapters' figures are drawn for
    // a page column, with 12 px ticks: at natural size they took the top 45 %
    // of a slide).
    function grow(section, H) {
      var pics = Array.prototype.slice.call(section.querySelectorAll(
        ".jp-RenderedImage img, p.figure img")).filter(function (im) {
          return im.naturalWidth > 200 && im.offsetHeight > 0; });
      if (pics.length !== 1) { return; }
      var im = pics[0];
      var room = H - {{ resources.course.grow_margin }} - contentHeight(section) + im.offsetHeight;
      var k = Math.min(im.parentElement.clientWidth / im.naturalWidth,
                       room / im.naturalHeight, {{ resources.course.max_grow }});
      if (k * im.naturalWidth > im.offsetWidth + 1) {
        im.style.maxHeight = "none";
        im.style.maxWidth = "none";
        im.style.width = Math.floor(k * im.naturalWidth) + "px";
      }
    }
    // A slide cannot scroll on a projector: when the current slide's content
    // is taller than the slide box, shrink its pictures (to no less than
    // {{ resources.course.min_img }} px) and then its type (to no less than
    // {{ resources.course.fit_min }} of its size) until it fits.
    function fit(section) {
      if (!section) { return; }
      var H = Reveal.getConfig().height;
      section.style.removeProperty("--fit");
      var imgs = Array.prototype.slice.call(section.querySelectorAll("img"));
      imgs.forEach(function (im) {
        im.style.maxHeight = ""; im.style.maxWidth = ""; im.style.width = "";
      });
      var boxes = Array.prototype.slice.call(section.querySelectorAll(
        ".jp-OutputArea-output:not(.jp-RenderedImage)"));
      boxes.forEach(function (b) { b.style.zoom = ""; });
      grow(section, H);
      var over = section.scrollHeight - H;
      if (over <= 0) { return; }
      var big = imgs.filter(function (im) { return im.offsetHeight > 120; });
      var total = big.reduce(function (a, im) { return a + im.offsetHeight; }, 0);
      big.forEach(function (im) {
        var h = im.offsetHeight;
        im.style.maxHeight = Math.max({{ resources.course.min_img }},
                                      Math.floor(h - over * h / total) - 2) + "px";
      });
      for (var f = 0.95; section.scrollHeight > H && f > {{ resources.course.fit_min }} - 1e-6; f -= 0.05) {
        section.style.setProperty("--fit", f.toFixed(2));
      }
      // a picture drawn in HTML (a grid of heatmaps, a widget) is scaled as a
      // whole, to no less than {{ resources.course.min_zoom }} of its size
      var tall = boxes.filter(function (b) { return b.offsetHeight > 200 && !b.querySelector("pre"); });
      for (var z = 0.95; tall.length && section.scrollHeight > H && z > {{ resources.course.min_zoom }} - 1e-6; z -= 0.05) {
        tall.forEach(function (b) { b.style.zoom = z.toFixed(2); });
      }
    }
    var pending = null;
    function refit() {
      if (pending) { return; }
      pending = setTimeout(function () { pending = null; fit(Reveal.getCurrentSlide()); }, 30);
    }
    window.fitSlide = fit;
    Reveal.on("ready", refit);
    Reveal.on("slidechanged", function (e) { fit(e.currentSlide); });
    document.addEventListener("load", function (e) {
      if (e.target.tagName === "IMG") { refit(); }
    }, true);
    window.addEventListener("load", refit);
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(refit);
    }
    new MutationObserver(function (changes) {
      if (changes.some(function (c) { return c.type === "childList"; })) { refit(); }
    }).observe(document.querySelector(".reveal .slides"), {childList: true, subtree: true});
  });
</script>
{% endblock footer_js %}
"""

DECK_CSS = """
html body .reveal .slides { text-align: left; }
html body .reveal .jp-InputPrompt, html body .reveal .jp-OutputPrompt { display: none; }
html body .reveal .jp-Cell, html body .reveal .jp-RenderedHTMLCommon { max-width: 100%; box-sizing: border-box; overflow-wrap: anywhere; }
html body .reveal .slides > section > section { height: 100%; overflow-y: auto; padding: 0 0.5em; box-sizing: border-box; }
html body .reveal h1 { font-size: 1.6em; } html body .reveal h2 { font-size: 1.25em; } html body .reveal h3 { font-size: 1.05em; }
html body .reveal h1, html body .reveal h2, html body .reveal h3 { text-transform: none; text-align: left; }
html body .reveal .jp-RenderedHTMLCommon { font-size: calc(24px * var(--fit, 1)); line-height: 1.35; }
html body .reveal .jp-RenderedHTMLCommon p, html body .reveal .jp-RenderedHTMLCommon li { font-size: calc(24px * var(--fit, 1)); }
html body .reveal pre, html body .reveal code { font-size: calc(18px * var(--fit, 1)); line-height: 1.3; }
/* printed output: larger than the code (it is what the slide shows), and
   wrapped between words, not inside one (a long line of a printout broke as
   "indu / ction"); overflow-wrap only breaks a word longer than a line */
html body .reveal .jp-OutputArea-output pre { font-size: calc(20px * var(--fit, 1)); line-height: 1.3;
  white-space: pre-wrap; overflow-wrap: break-word; word-break: normal; }
html body .reveal .jp-InputArea pre { overflow-wrap: break-word; }
html body .reveal pre { box-shadow: none; width: 100%; margin: 8px 0; }
html body .reveal .jp-RenderedImage img, html body .reveal p.figure img { max-height: 520px; margin: 0 auto; display: block; }
html body .reveal p.caption { font-size: calc(20px * var(--fit, 1)); font-style: italic; color: #444; text-align: center; }
html body .reveal p.deck-continued { font-size: 18px; color: #555; margin: 0 0 8px 0; }
html body .reveal .admonition { border-left: 0.3em solid #0072b2; background: #f3f8fc;
                      padding: 0.3em 0.8em; margin: 0.4em 0; }
html body .reveal .admonition.myth-vs-fact { border-left-color: #d55e00; background: #fdf5ef; }
html body .reveal .admonition-title { font-weight: bold; margin: 0.2em 0; }
html body .reveal .deck-links { font-size: 22px; margin-top: 1.5em; }
html body .reveal .slides a { text-decoration: underline; }   /* a link is more than its colour */
html body .reveal .slide-number { background-color: #555; color: #fff; }   /* 7.5:1, not 2.84:1 on #999 */
/* code colours with >= 4.5:1 on the code's #f5f5f5 (JupyterLab's are 4.17:1 for comments, 4.26:1 for numbers) */
html:root { --jp-mirror-editor-comment-color: #3d6b6b; --jp-mirror-editor-number-color: #007400;
            --jp-mirror-editor-operator-color: #9a1ee8; --jp-mirror-editor-meta-color: #9a1ee8;
            --jp-mirror-editor-error-color: #c00000; --jp-mirror-editor-quote-color: #007a00;
            --jp-mirror-editor-atom-color: #4f4fe0; --jp-mirror-editor-bracket-color: #6b6b45;
            --jp-mirror-editor-hr-color: #666; }
"""
