"""The browser check's shared fixtures (the local server, the browser), and a skipped browser
check made impossible to miss in a quiet (-q) run.

The fixtures live here, not in a test module: a session fixture imported into a second module
would be a second fixture, and a second Playwright instance in the same thread fails.
"""

import os

import pytest
from test_rendered_pages import CHROMIUM, CHROMIUM_ARGS, HTML, _missing, serve

SKIP_BANNER = "!!! BROWSER CHECK SKIPPED"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = set()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if SKIP_BANNER in text:
            reasons.add(text.removeprefix("Skipped: "))
    if reasons:
        terminalreporter.write_sep("!", "THE BROWSER CHECK OF THE RENDERED BOOK DID NOT RUN", red=True)
        for reason in sorted(reasons):
            terminalreporter.write_line(reason, red=True, bold=True)
        terminalreporter.write_sep("!", "under CI=true this is a failure", red=True)


@pytest.fixture(scope="session")
def site():
    """Serve the built site on 127.0.0.1 at a free port; yields the base URL."""
    if not HTML.is_dir():
        _missing("no built book", f"at {HTML} (build it: jupyter-book build . -W -n --keep-going)")
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="session")
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _missing("chromium not found", f"at {CHROMIUM} (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright python package is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
