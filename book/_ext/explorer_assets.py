"""Load Vega and the explorers' script on the pages that have a static explorer, and only there.

A static explorer (``ctxlib.viz.static_view.StaticExplorer``) is raw HTML in a cell's output:
``<div class="ctx-explorer" ...>`` with its spec and data. Its page needs
``vendor/vega/vega.min.js`` (0.52 MB) and ``ctx-explorers.js``, which mounts the views; every
other page is spared both. They go in the head, deferred, in this order and before any AMD
loader myst-nb adds for ipywidgets (priority 200 < 500): Vega's UMD build registers itself as an
anonymous AMD module, not as ``window.vega``, when require.js is already on the page.
"""

from sphinx.application import Sphinx

MARKER = 'class="ctx-explorer"'
SCRIPTS = ("vendor/vega/vega.min.js", "ctx-explorers.js")


def _add_explorer_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    if MARKER in (context.get("body") or ""):
        for offset, path in enumerate(SCRIPTS):
            app.add_js_file(path, priority=200 + offset, loading_method="defer")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("html-page-context", _add_explorer_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
