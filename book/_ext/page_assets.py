"""Drop duplicate inline <script> tags from every page.

Sphinx 7.4 registers an inline script (``app.add_js_file(None, body=...)``) that an extension
adds after the builder started twice: once as filename ``None`` and again as ``''`` when it
collects late assets, and the two do not compare equal. sphinx-thebe's ``const THEBE_JS_URL``
then runs twice, and the second copy throws "Identifier 'THEBE_JS_URL' has already been
declared" on every page.
"""

from sphinx.application import Sphinx


def _dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    files = context.get("script_files")
    if not files:
        return
    seen, keep = set(), []
    for js in files:
        key = (getattr(js, "filename", js) or "", getattr(js, "priority", 0),
               tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            keep.append(js)
    files[:] = keep


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
