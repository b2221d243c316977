/* ctxbook: offline set-up for the ipywidgets html-manager (written for this book, not vendored).
 *
 * Loaded by myst-nb (nb_ipywidgets_js in _config.yml) on pages with widgets, after require.js
 * and before html-manager's embed-amd.js. Paths are resolved against this script's own URL, so
 * they work from a page at any depth and under any site prefix.
 *
 * 1. html-manager's CSS points at its Font Awesome fonts through webpack's public path, which
 *    each bundle derives from its AMD module's URL; by default that is the module name under
 *    the page's folder (book/@jupyter-widgets/..., which does not exist). require.js paths map
 *    the bundled modules into vendor/html-manager/, where the fonts are (nothing is fetched
 *    for them: embed-amd.js defines them all).
 * 2. html-manager loads widget modules it does not bundle from the "CDN" named by a script's
 *    data-jupyter-widgets-cdn attribute: this script carries that attribute (set in
 *    _config.yml, relative to this file) and rewrites it to an absolute URL here.
 * 3. ipywidgets 8's controls typeset a widget's description with the MathJax 2 API
 *    (MathJax.Hub.Queue) whenever window.MathJax exists; the book runs MathJax 3, where that
 *    call throws. MathJax.Hub.Queue(["Typeset", MathJax.Hub, el]) is mapped onto MathJax 3.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  var here = me && me.src ? me.src : document.baseURI;
  var hm = new URL("html-manager/", here).href;
  window.__jupyter_widgets_assets_path__ = hm;
  if (window.requirejs) {
    var paths = {};
    ["base", "base7", "controls", "controls7", "html-manager"].forEach(function (name) {
      paths["@jupyter-widgets/" + name] = hm + name;
    });
    paths["@jupyter-widgets/html-manager/dist/libembed-amd"] = hm + "libembed-amd";
    window.requirejs.config({ paths: paths });
  } else {
    console.error("widgets-setup.js: require.js must be loaded before it");
  }
  if (me) {
    var cdn = me.getAttribute("data-jupyter-widgets-cdn") || "npm/";
    me.setAttribute("data-jupyter-widgets-cdn", new URL(cdn, here).href);
  }

  function bridgeMathJax2() {
    var mj = window.MathJax;
    if (!mj || !mj.version || mj.version.charAt(0) !== "3" || mj.Hub) return;
    mj.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (cmd) {
          if (!Array.isArray(cmd) || cmd[0] !== "Typeset") return;
          var el = cmd[2];
          var start = (mj.startup && mj.startup.promise) || Promise.resolve();
          mj.startup.promise = start
            .then(function () { return mj.typesetPromise(el ? [el] : undefined); })
            .catch(function (err) { console.warn("MathJax typeset of a widget failed:", err); });
        });
      },
    };
  }
  // MathJax 3 is loaded with "defer": it is in place by DOMContentLoaded; the widgets render
  // after the window's load event.
  document.addEventListener("DOMContentLoaded", bridgeMathJax2);
  window.addEventListener("load", bridgeMathJax2);
})();
