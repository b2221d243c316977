"""Every launch link of the built book opens its own page, from the configured repository.

Read from the built HTML, no browser needed. For each page of ``_toc.yml`` that is a notebook:

* the Binder link is ``<binderhub>/v2/gh/<org>/<repo>/<branch>?urlpath=lab/tree/<path>`` with
  ``<path>`` the page's own source (``book/01_polysemy.md``);
* the Colab link is ``<colab>/github/<org>/<repo>/blob/<branch>/<path>`` with ``<path>`` the
  page's notebook (``notebooks/01_polysemy.ipynb``) generated from that source;
* ``<org>/<repo>`` and ``<branch>`` are ``repository.url`` and ``repository.branch`` of
  ``_config.yml``, and every ``<path>`` is a file git tracks (what the hosting site serves).

Pages that are not notebooks carry no launch links.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup
from test_rendered_pages import HTML, REPO, _missing

sys.path.insert(0, str(REPO / "tools"))
from toc import notebook_pages, toc_pages  # noqa: E402

CONFIG = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
ORG, NAME = urlsplit(CONFIG["repository"]["url"]).path.strip("/").removesuffix(".git").split("/")
BRANCH = CONFIG["repository"].get("branch", "main")
BINDER = CONFIG["launch_buttons"]["binderhub_url"].rstrip("/")
COLAB = CONFIG["launch_buttons"]["colab_url"].rstrip("/")
NOTEBOOKS = {page.as_posix() for page in notebook_pages(REPO)}


def _tracked() -> set[str]:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    return set(listing.stdout.decode().split("\0"))


def _launch_links(page: Path) -> dict[str, str]:
    html = HTML / page.with_suffix(".html")
    if not html.is_file():
        _missing("no built book", f"({html} is missing)")
    tree = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    return {a.get_text(strip=True): a["href"] for a in tree.select(".dropdown-launch-buttons a[href]")}


@pytest.mark.parametrize("page", toc_pages(REPO), ids=lambda page: page.stem)
def test_launch_links_open_the_page_from_this_repository(page: Path):
    links = _launch_links(page)
    if page.as_posix() not in NOTEBOOKS:
        assert links == {}, f"{page} is not a notebook but has launch links {links}"
        return
    assert set(links) == {"Binder", "Colab"}, f"{page}: launch links {links}"
    tracked = _tracked()

    binder = urlsplit(links["Binder"])
    assert f"{binder.scheme}://{binder.netloc}" == BINDER and binder.path == f"/v2/gh/{ORG}/{NAME}/{BRANCH}", links["Binder"]
    (urlpath,) = parse_qs(binder.query)["urlpath"]
    opened = urlpath.removeprefix("lab/tree/")
    assert urlpath.startswith("lab/tree/") and opened == page.as_posix(), f"{page}: Binder opens {urlpath}"
    assert opened in tracked, f"{page}: Binder opens {opened}, which git does not track"

    colab = links["Colab"]
    prefix = f"{COLAB}/github/{ORG}/{NAME}/blob/{BRANCH}/"
    assert colab.startswith(prefix), colab
    notebook = colab.removeprefix(prefix)
    assert notebook.endswith(".ipynb"), f"{page}: Colab opens {notebook}, which is not a notebook"
    assert notebook in tracked, f"{page}: Colab opens {notebook}, which git does not track"
    cells = json.loads((REPO / notebook).read_text(encoding="utf-8"))["cells"]
    assert f"Generated from {page.as_posix()} by" in "".join(cells[0]["source"]), f"{notebook} is not {page}'s notebook"
