"""Browser check of the rendered book: every page works with no network.

Each built page is opened in Debian's headless Chromium (never a Playwright browser download),
served from a local threaded HTTP server on 127.0.0.1. Any request to another host is aborted
and counted as a failure, so a page that needs a CDN fails here. A page fails on:

- any console error, uncaught page error, failed request or HTTP status >= 400;
- any blocked non-local request;
- a widget view (``script[type="application/vnd.jupyter.widget-view+json"]``) that the
  ipywidgets html-manager did not render;
- a math element (``span.math``, ``div.math``) that MathJax did not typeset, or raw ``$$``,
  ``\\(`` or ``\\[`` left visible in the text;
- a bertviz container (``div[id^="bertviz-"]``) with no drawn ``svg``.

A full-page screenshot of every page goes to ``_build/screenshots/<page>.png`` for humans.

Environment:
  CTXBOOK_HTML         the built site (default ``<repo>/_build/html``)
  CTXBOOK_SCREENSHOTS  where screenshots go (default: ``screenshots`` next to the site folder)
  CTXBOOK_CHROMIUM     the browser (default ``/usr/bin/chromium``)
  CI                   under ``CI=true`` a missing site, browser or Playwright FAILS the run
                       instead of skipping it.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ctxlib.analysis.attention_views import BERTVIZ_CDN_TO_VENDOR, offline_html

REPO = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("CTXBOOK_HTML", REPO / "_build" / "html")).resolve()
SCREENSHOTS = Path(os.environ.get("CTXBOOK_SCREENSHOTS", HTML.parent / "screenshots")).resolve()
CHROMIUM = os.environ.get("CTXBOOK_CHROMIUM", "/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Folders of the built site that hold assets, not pages.
ASSET_DIRS = {"_static", "_sources", "_images", "_downloads", "_panels_static", ".doctrees"}
# How long to wait for asynchronous rendering (MathJax, widgets, bertviz) on one page: a bound on
# a page that never finishes, not a speed. A page renders in 1-3 s on an idle machine; the
# patience leaves room for a machine several times slower, or one whose cores are busy
# (tools/test.sh --under-load).
RENDER_TIMEOUT_MS = 120_000

# The self-test page: bertviz's own output, rewritten to the vendored d3/jQuery/require.js the
# way a chapter does it (ctxlib.analysis.attention_views; bertviz 1.4.1 hard-codes cdnjs URLs). Served only by this test's
# server, at a path in book/ like every chapter, so the relative paths resolve the same way.
SELFTEST_BERTVIZ = "book/__selftest_bertviz.html"

SKIP_BANNER = "!!! BROWSER CHECK SKIPPED"


def _missing(what: str, detail: str = "") -> None:
    """Skip outside CI (loudly: conftest.py repeats it at the end of the run), fail under CI."""
    if IN_CI:
        pytest.fail(f"CI=true: {what} {detail}; the browser check cannot run", pytrace=False)
    pytest.skip(f"{SKIP_BANNER}: {what.upper()} !!! {detail}".rstrip())


def _is_redirect_stub(path: Path) -> bool:
    """Jupyter Book's index.html: a few lines whose only content is a meta refresh."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return len(text) < 1000 and 'http-equiv="refresh"' in text.lower()


def book_pages() -> list[str]:
    """Every HTML page of the built site, relative to its root, skipping asset folders and
    Jupyter Book's redirect stub (index.html), which only forwards to the root chapter."""
    if not HTML.is_dir():
        return []
    pages = []
    for path in sorted(HTML.rglob("*.html")):
        rel = path.relative_to(HTML)
        if rel.parts[0] in ASSET_DIRS or _is_redirect_stub(path):
            continue
        pages.append(rel.as_posix())
    return pages


PAGES = book_pages()


# --------------------------------------------------------------------------------------------
# the local server (the fixtures `site` and `browser` are in conftest.py, shared by every test file)


class _Handler(SimpleHTTPRequestHandler):
    extra: dict[str, bytes] = {}
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".woff2": "font/woff2",
                      ".woff": "font/woff", ".js": "text/javascript", ".mjs": "text/javascript"}

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = self.extra.get(urlsplit(self.path).path.lstrip("/"))
        if body is None:
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep pytest's output clean
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 at a free port for the block; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(directory)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="ctxbook-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --------------------------------------------------------------------------------------------
# what is checked in the page

# Content that runs past the article column's right edge and is not inside something that
# scrolls: the theme cuts it there (a long claim line, a wide equation, bertviz's fixed width).
_CUT_AT_EDGE_JS = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  if (!article) return [];
  const edge = article.getBoundingClientRect().right + 1;
  const scrolls = el => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      const overflow = getComputedStyle(a).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return true;
    }
    return false;
  };
  const cut = [];
  for (const el of article.querySelectorAll('pre, mjx-container, img, svg, table, div.output')) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > edge && !scrolls(el)) {
      cut.push(`<${el.tagName.toLowerCase()}> ${Math.round(box.right - edge)} px past the column: ` +
               (el.textContent || el.getAttribute('alt') || '').trim().slice(0, 60));
    }
  }
  return cut.slice(0, 5);
}
"""

# Text nodes that are visible prose (not code, not MathJax output) and still hold TeX delimiters.
_RAW_TEX_JS = r"""
() => {
  const skip = 'pre, code, script, style, textarea, kbd, samp, .highlight, mjx-container, '
             + 'mjx-assistive-mml, .MathJax, [hidden]';
  const marks = ['$$', '\\(', '\\)', '\\[', '\\]', '\\begin{'];
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (!el.checkVisibility()) continue;
    const t = n.textContent;
    if (marks.some(m => t.includes(m))) found.push(t.trim().slice(0, 120));
  }
  return found;
}
"""

_UNTYPESET_MATH_JS = r"""
() => Array.from(document.querySelectorAll('span.math, div.math'))
  .filter(el => !el.querySelector('mjx-container'))
  .map(el => (el.id ? '#' + el.id + ': ' : '') + el.textContent.trim().slice(0, 120))
"""

_WIDGETS_JS = r"""
() => {
  const views = Array.from(
    document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  const missing = [];
  for (const s of views) {
    // html-manager inserts <div class="widget-subarea"> before the script and renders into it.
    const sub = s.previousElementSibling;
    const ok = sub && sub.classList.contains('widget-subarea') &&
      sub.querySelector('.jupyter-widgets, [class*="widget-"]') &&
      !sub.querySelector('.jupyter-widgets-error-widget, .widget-error');
    if (!ok) {
      let id = '?';
      try { id = JSON.parse(s.textContent).model_id; } catch (e) {}
      missing.push(id);
    }
  }
  const rendered = document.querySelectorAll('.widget-subarea > .jupyter-widgets').length;
  return {views: views.length, rendered: rendered, missing: missing};
}
"""

_BERTVIZ_JS = r"""
() => Array.from(document.querySelectorAll('div[id^="bertviz-"]')).map(el => {
  const svgs = Array.from(el.querySelectorAll('svg'));
  return {id: el.id, drawn: svgs.some(s => s.querySelector('*') !== null)};
})
"""


def _screenshot_path(page_rel: str) -> Path:
    return SCREENSHOTS / (page_rel[: -len(".html")] + ".png")


def check_page(browser, site: str, page_rel: str) -> list[str]:
    """Open one page offline; return what went wrong (empty: all well)."""
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  service_workers="block")
    page = context.new_page()
    page.set_default_timeout(RENDER_TIMEOUT_MS)  # clicks and waits too: a loaded machine is slow, not broken

    def route(r):
        host = urlsplit(r.request.url).hostname
        if host == "127.0.0.1":
            r.continue_()
        else:
            problems.append(f"blocked non-local request: {r.request.url}")
            r.abort("blockedbyclient")

    page.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and problems.append(
        f"console error: {m.text} ({(m.location or {}).get('url', '')})"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: urlsplit(r.url).hostname == "127.0.0.1" and problems.append(
        f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and problems.append(
        f"HTTP {r.status}: {r.url}"))

    try:
        page.goto(site + page_rel, wait_until="load", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_load_state("networkidle", timeout=RENDER_TIMEOUT_MS)

        # Math: wait for MathJax's startup typesetting, then every math element must be typeset.
        has_math = page.evaluate("() => document.querySelector('span.math, div.math') !== null")
        mathjax = page.evaluate(
            "() => !!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)")
        if mathjax:
            page.wait_for_function(
                "() => MathJax.startup.promise.then(() => true)", timeout=RENDER_TIMEOUT_MS)
        elif has_math:
            problems.append("page has math but MathJax did not load")
        for m in page.evaluate(_UNTYPESET_MATH_JS):
            problems.append(f"math not typeset by MathJax: {m}")

        # Widgets: html-manager renders after the window's load event; give it time.
        views = page.evaluate(
            "() => document.querySelectorAll("
            "'script[type=\"application/vnd.jupyter.widget-view+json\"]').length")
        if views:
            try:
                page.wait_for_function(
                    "n => document.querySelectorAll('.widget-subarea > .jupyter-widgets').length"
                    " >= n", arg=views, timeout=RENDER_TIMEOUT_MS)
            except Exception:  # reported below, with the model ids
                pass
        w = page.evaluate(_WIDGETS_JS)
        if w["missing"] or w["rendered"] < w["views"]:
            problems.append(f"widget views not rendered: {w['rendered']} of {w['views']} "
                            f"(models {', '.join(w['missing']) or '-'})")

        # bertviz: each container must have drawn an svg.
        if page.evaluate("() => document.querySelector('div[id^=\"bertviz-\"]') !== null"):
            try:
                page.wait_for_function(
                    "() => Array.from(document.querySelectorAll('div[id^=\"bertviz-\"]'))"
                    ".every(el => Array.from(el.querySelectorAll('svg'))"
                    ".some(s => s.querySelector('*')))", timeout=RENDER_TIMEOUT_MS)
            except Exception:
                pass
            for b in page.evaluate(_BERTVIZ_JS):
                if not b["drawn"]:
                    problems.append(f"bertviz view #{b['id']} drew no svg")

        page.evaluate("() => document.fonts.ready.then(() => true)")
        page.wait_for_load_state("networkidle", timeout=RENDER_TIMEOUT_MS)
        for t in page.evaluate(_RAW_TEX_JS):
            problems.append(f"raw TeX left visible: {t!r}")
        for cut in page.evaluate(_CUT_AT_EDGE_JS):
            problems.append(f"cut at the column's edge: {cut}")

        shot = _screenshot_path(page_rel)
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
    except Exception as e:  # a timeout or a crash is a failure of this page, with the rest
        problems.append(f"{type(e).__name__}: {e}")
    finally:
        context.close()
    return problems


# --------------------------------------------------------------------------------------------
# the tests


@pytest.mark.parametrize("page_rel", PAGES or [pytest.param(None, id="no-built-book")])
def test_page_works_offline(browser, site, page_rel):
    if page_rel is None:
        _missing("no built book", f"no HTML pages under {HTML}")
    problems = check_page(browser, site, page_rel)
    assert not problems, f"{page_rel}:\n  " + "\n  ".join(problems)


def test_every_chapter_was_checked():
    """The pages checked include every file of _toc.yml (a chapter missing from the build, or
    skipped by the page filter, would otherwise pass unnoticed)."""
    if not PAGES:
        _missing("no built book", f"no HTML pages under {HTML}")
    toc = (REPO / "_toc.yml").read_text(encoding="utf-8")
    files = [line.split(":", 1)[1].strip() for line in toc.splitlines()
             if line.strip().startswith(("file:", "- file:", "root:"))]
    assert files, "no files found in _toc.yml"
    missing = [f for f in files if f"{Path(f).with_suffix('').as_posix()}.html" not in PAGES]
    assert not missing, f"chapters in _toc.yml with no checked page: {missing}"


def test_no_static_folder_at_project_root():
    """Jupyter Book adds every .js and .css under a `_static` at the project root to EVERY page
    (and then also scans html_static_path, i.e. book/_static/vendor): that would load MathJax,
    require.js, d3, jQuery and the widget manager everywhere. Static files live in book/_static."""
    assert not (REPO / "_static").exists(), (
        "a _static/ folder at the project root makes Jupyter Book inject every .js/.css in it "
        "and in book/_static into every page; put static files in book/_static instead")


def test_bertviz_selftest_offline(browser, site):
    """bertviz's real output, rewritten to the vendored libraries (BERTVIZ_CDN_TO_VENDOR), draws
    its svg with no network: proves the vendored d3/jQuery/require.js serve bertviz 1.4.1."""
    if not (HTML / "_static" / "vendor" / "d3").is_dir():
        pytest.fail("the built site has no _static/vendor/d3: is html_static_path set?")
    try:
        from bertviz import head_view
    except ImportError:
        _missing("bertviz is not installed")
    import torch

    tokens = ["[CLS]", "the", "river", "bank", "[SEP]"]
    g = torch.Generator().manual_seed(0)
    attn = tuple(torch.softmax(torch.randn(1, 2, 5, 5, generator=g), -1) for _ in range(2))
    html = head_view(attn, tokens, html_action="return").data
    for cdn in BERTVIZ_CDN_TO_VENDOR:
        assert cdn in html, f"bertviz's output no longer contains {cdn}: update the rewrite"
    html = offline_html(html)
    doc = f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>"
    _Handler.extra[SELFTEST_BERTVIZ] = doc.encode()
    try:
        problems = check_page(browser, site, SELFTEST_BERTVIZ)
    finally:
        _Handler.extra.pop(SELFTEST_BERTVIZ, None)
        shot = _screenshot_path(SELFTEST_BERTVIZ)
        if shot.exists():
            shot.unlink()
    assert not problems, "bertviz self-test:\n  " + "\n  ".join(problems)


def test_vendored_files_are_where_config_points():
    """_config.yml's offline keys point at files that exist in book/_static (and so in the
    built site's _static)."""
    cfg = (REPO / "_config.yml").read_text(encoding="utf-8")
    static = REPO / "book" / "_static"
    for rel in ("vendor/mathjax/tex-mml-chtml.js", "vendor/requirejs/require.js",
                "vendor/html-manager/embed-amd.js", "vendor/d3/d3.min.js",
                "vendor/jquery/jquery.min.js"):
        assert (static / rel).is_file(), f"book/_static/{rel} missing (bash tools/vendor_js.sh)"
    for rel in ("vendor/mathjax/tex-mml-chtml.js", "vendor/requirejs/require.js",
                "vendor/html-manager/embed-amd.js"):
        assert rel in cfg, f"_config.yml no longer refers to {rel}"
