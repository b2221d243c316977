"""Load Vega and the explorers' script on the pages that have a static explorer, and only there.

A static explorer (``ctxlib.viz.static_view.StaticExplorer``) is raw HTML in a cell's output:
``<div class="ctx-explorer" ...>`` with its spec and data. Its page needs
``vendor/vega/vega.min.js`` (0.52 MB) and ``ctx-explorers.js``, which mounts the views; every
other page is spared both. Vega's UMD build registers itself as an anonymous AMD module, not as
``window.vega``, when require.js is already on the page, and then also answers bertviz's
``require(["d3"])`` (chapter 4: "d3.scale.category10 is not a function"). So Vega loads in the
head, before any AMD loader: not deferred (bertviz's require.js is a plain script in the body,
which runs before deferred ones) and ahead of myst-nb's ipywidgets scripts (priority 200 < 500).
The explorers' script only needs the DOM and Vega, so it is deferred.
"""

from sphinx.application import Sphinx

MARKER = 'class="ctx-explorer"'


def _add_explorer_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    if MARKER in (context.get("body") or ""):
        app.add_js_file("vendor/vega/vega.min.js", priority=200)
        app.add_js_file("ctx-explorers.js", priority=201, loading_method="defer")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("html-page-context", _add_explorer_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
