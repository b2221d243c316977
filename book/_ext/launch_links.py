"""Launch links that open the page: the Colab button, the notebooks it opens, the {repo} role.

Everything here derives from two settings of ``_config.yml``, ``repository.url`` and
``repository.branch`` (a fork changes those and reruns ``tools/notebooks.py``).

* **Binder** needs nothing from this module: sphinx-book-theme links
  ``<binderhub>/v2/gh/<org>/<repo>/<branch>?urlpath=lab/tree/<path_to_book>/<page>.md``,
  and with ``repository.path_to_book: ""`` (the book's root is the repository's root, and the
  toc's page names already start with ``book/``) that is the chapter itself, which Binder's
  JupyterLab opens as a notebook through jupytext (``binder/postBuild``).
* **Colab** opens only ``.ipynb`` files from GitHub, and the theme would link the ``.md``.
  ``notebooks/<chapter>.ipynb`` is each chapter as a notebook (jupytext), with a first cell that
  fetches the book and installs ctxlib where it is missing; ``tools/notebooks.py`` writes them,
  ``tests/test_notebooks.py`` fails when one is stale, and this extension points the theme's
  Colab button at it.
* ``{repo}`path``` (or ``{repo}`text <path>```) links a file or folder of the repository on its
  hosting site, so prose never spells the repository's address.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jupytext
import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
NOTEBOOKS = Path("notebooks")
# Binder and Colab readers get torch's CPU build (neither needs CUDA, and the CPU wheel is a
# tenth of the size); this is the PyTorch project's index for it.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SETUP_CELL = '''\
# Colab, or any Python without ctxlib: fetch the book (some chapters read files beside them) and
# install ctxlib, with torch 2.13.0's CPU build, once (a few minutes). Elsewhere it does nothing.
# Generated from {source} by tools/notebooks.py: edit that file, not this notebook.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("ctxlib") is None:
    if not os.path.isdir("ctxbook"):
        subprocess.run(["git", "clone", "--quiet", "--depth=1", "--branch={branch}",
                        "{repository}", "ctxbook"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    "--extra-index-url={torch_index}", "./ctxbook"], check=True)
if os.path.isdir("ctxbook/book"):
    os.chdir("ctxbook/book")'''


def notebook_path(source: str | Path) -> Path:
    """The notebook Colab opens for a chapter, relative to the repository root
    (``book/01_polysemy.md`` -> ``notebooks/01_polysemy.ipynb``)."""
    return NOTEBOOKS / (Path(source).stem + ".ipynb")


def colab_notebook(source: Path, root: Path, repository: str, branch: str) -> str:
    """The chapter ``root/source`` as the text of an ``.ipynb``: jupytext's reading of it, the
    setup cell first, cell ids numbered (jupytext draws random ones) so the text is a function of
    the chapter alone."""
    notebook = jupytext.read(root / source)
    notebook.metadata.pop("jupytext", None)
    setup = SETUP_CELL.format(source=Path(source).as_posix(), branch=branch, repository=repository,
                              torch_index=TORCH_CPU_INDEX)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(setup, metadata={"tags": ["colab-setup"]}))
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index:03d}"
    return nbformat.writes(notebook) + "\n"


def _github_parts(repository: str) -> tuple[str, str]:
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?", repository)
    if match is None:
        raise ValueError(f"repository.url must be https://github.com/<org>/<repo> (Colab opens GitHub "
                         f"only), got {repository!r}")
    return match[1], match[2]


def _point_colab_at_notebook(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                             doctree: object) -> None:
    options = app.config.html_theme_options
    colab = options.get("launch_buttons", {}).get("colab_url", "").rstrip("/")
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group["buttons"]:
            if button.get("text") != "Colab":
                continue
            source = Path(app.env.doc2path(pagename)).relative_to(app.srcdir)
            notebook = notebook_path(source)
            if not (Path(app.srcdir) / notebook).is_file():
                LOGGER.warning(f"{pagename}: {notebook} does not exist, so its Colab link would be broken; "
                               f"run `python tools/notebooks.py`", location=pagename)
            org, repo = _github_parts(options["repository_url"])
            branch = options.get("repository_branch", "main")
            button["url"] = f"{colab}/github/{org}/{repo}/blob/{branch}/{notebook.as_posix()}"


def _repo_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{repo}`ctxlib``` or ``{repo}`the library <ctxlib>```: a link to that path of the
    repository, on the configured branch (a folder as ``tree/``, a file as ``blob/``)."""
    match = re.fullmatch(r"(.*?)\s*<([^<>]+)>", text, flags=re.S)
    title, path = (match[1], match[2]) if match else (text, text)
    env = inliner.document.settings.env
    options_ = env.config.html_theme_options
    target = Path(env.srcdir) / path
    messages = []
    if not target.exists():
        messages.append(inliner.reporter.warning(f"{{repo}} link to {path!r}: no such path in the repository",
                                                 line=lineno))
    kind = "tree" if target.is_dir() else "blob"
    url = f"{options_['repository_url'].rstrip('/')}/{kind}/{options_.get('repository_branch', 'main')}/{path}"
    return [nodes.reference(rawtext, title, refuri=url)], messages


def _record_repository(app: Sphinx, config: Any) -> None:
    # Pages that use {repo} bake the address into their doctree; a config value that changes with
    # it makes Sphinx re-read every page when a fork edits repository.url or branch.
    options = config.html_theme_options
    config.launch_links_repository = f"{options.get('repository_url', '')}@{options.get('repository_branch', '')}"


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_config_value("launch_links_repository", "", "env")
    app.connect("config-inited", _record_repository)
    # After sphinx-book-theme's add_launch_buttons (priority 501) has built the buttons, before the
    # template draws them.
    app.connect("html-page-context", _point_colab_at_notebook, priority=600)
    app.add_role("repo", _repo_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
