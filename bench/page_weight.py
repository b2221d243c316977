"""What each rendered page makes a reader's browser download, against the 5 MB page budget.

    .venv/bin/python bench/page_weight.py            # every page of the built book (_build/html)

Each page the browser check opens is opened in headless Chromium from the browser check's own
local server, with its flags (``tests/browser/test_rendered_pages.py``), and the bytes of
every response it loads before the network goes quiet are summed: HTML, scripts, styles, fonts,
figures, explorer data. Sizes are uncompressed (the local server does not compress), so a
server that gzips sends less. What a page fetches only when the reader asks (the typed
sentence's model, ``_static/lazy/``) is not counted. Exit status 1 if a page is over the budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from test_rendered_pages import CHROMIUM, CHROMIUM_ARGS, HTML, PAGES, serve  # noqa: E402

BUDGET = 5_000_000


def main() -> int:
    from playwright.sync_api import sync_playwright

    over = 0
    print(f"{'page':44s} {'loads':>8s} {'largest':>36s}")
    with sync_playwright() as pw, serve(HTML) as base:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for page_rel in PAGES:
            sizes: dict[str, int] = {}
            page = browser.new_page()
            page.on("requestfinished", lambda request: sizes.__setitem__(request.url,
                                                                          request.sizes()["responseBodySize"]))
            page.goto(base + page_rel, wait_until="networkidle")
            page.close()
            total = sum(sizes.values())
            largest = max(sizes, key=sizes.get)
            over += total > BUDGET
            flag = "  OVER 5 MB" if total > BUDGET else ""
            print(f"{page_rel:44s} {total / 1e6:6.2f} MB  "
                  f"{largest.rsplit('/', 1)[-1][:24]:>24s} {sizes[largest] / 1e6:5.2f} MB{flag}")
        browser.close()
    print(f"\n{len(PAGES)} pages, {over} over the 5 MB budget")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
