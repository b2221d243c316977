"""Two fixes to what every page loads: duplicate inline <script> tags, and a second copy of
Font Awesome.

Sphinx 7.4 registers an inline script (``app.add_js_file(None, body=...)``) that an extension
adds after the builder started twice: once as filename ``None`` and again as ``''`` when it
collects late assets, and the two do not compare equal. sphinx-thebe's ``const THEBE_JS_URL``
then runs twice, and the second copy throws "Identifier 'THEBE_JS_URL' has already been
declared" on every page.

pydata-sphinx-theme loads Font Awesome twice: as webfonts with their CSS rules (in its
stylesheet: ``.fa-solid``, ``.fa-download:before`` ...) and as ``scripts/fontawesome.js``, 1.49 MB
that swaps every ``<i class="fa-...">`` for an inline SVG. The CSS alone draws every icon the
pages use, and the script is 30% of what a page downloads (``bench/page_weight.py``), so its
tag is removed from every written page. The tag is in the theme's template, not in
``script_files``, hence the rewrite after the build.
"""

import re
from pathlib import Path

from sphinx.application import Sphinx

_FONTAWESOME_JS = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?')


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


def _drop_fontawesome_script(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lean = _FONTAWESOME_JS.sub("", text)
        if lean != text:
            page.write_text(lean, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("build-finished", _drop_fontawesome_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
