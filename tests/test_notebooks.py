"""notebooks/: the notebooks the Colab buttons open are the chapters as they are now, and their
first cell installs the book where ctxlib is missing and does nothing where it is present."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "book" / "_ext")]

from notebooks import stale, write  # noqa: E402
from toc import notebook_pages, toc_pages  # noqa: E402

REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]


def test_every_chapter_has_its_notebook_and_it_is_current():
    assert stale(ROOT) == [], "run `python tools/notebooks.py` and commit notebooks/"


def test_stale_notebooks_are_caught(tmp_path: Path):
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for page in toc_pages(ROOT):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    assert len(write(tmp_path)) == len(notebook_pages(ROOT))
    chapter = notebook_pages(ROOT)[1]
    notebook = tmp_path / "notebooks" / (chapter.stem + ".ipynb")
    assert stale(tmp_path) == [] and write(tmp_path) == []
    (tmp_path / chapter).write_text((tmp_path / chapter).read_text() + "\nOne more sentence.\n")
    (tmp_path / "notebooks" / "removed_chapter.ipynb").write_text("{}")
    assert stale(tmp_path) == [f"notebooks/{chapter.stem}.ipynb is stale", "notebooks/removed_chapter.ipynb has no chapter"]
    notebook.unlink()
    assert stale(tmp_path)[0] == f"notebooks/{chapter.stem}.ipynb is missing"


def _setup_cell() -> str:
    cells = json.loads((ROOT / "notebooks" / (notebook_pages(ROOT)[1].stem + ".ipynb")).read_text())["cells"]
    assert cells[0]["metadata"]["tags"] == ["colab-setup"]
    return "".join(cells[0]["source"])


def test_the_setup_cell_does_nothing_where_ctxlib_is_installed(tmp_path: Path, monkeypatch):
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: ran.append(args))
    monkeypatch.chdir(tmp_path)
    assert importlib.util.find_spec("ctxlib") is not None
    exec(_setup_cell(), {})
    assert ran == [] and Path.cwd() == tmp_path


def test_the_setup_cell_installs_the_configured_repository_where_ctxlib_is_missing(tmp_path: Path, monkeypatch):
    commands = []

    def run(command, check):
        commands.append(command)
        if command[0] == "git":  # what a clone leaves behind
            (tmp_path / command[-1] / "book").mkdir(parents=True)

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ctxlib" else find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    exec(_setup_cell(), {})
    clone, install = commands
    assert clone[:2] == ["git", "clone"] and f"--branch={REPOSITORY['branch']}" in clone
    assert clone[-2:] == [REPOSITORY["url"], "ctxbook"]
    assert install[:4] == [sys.executable, "-m", "pip", "install"] and install[-1] == "./ctxbook"
    assert "--extra-index-url=https://download.pytorch.org/whl/cpu" in install
    # The chapters read files beside them (the fixtures of chapter 2, the pages of chapter 9).
    assert Path.cwd() == tmp_path / "ctxbook" / "book"


@pytest.mark.parametrize("page", notebook_pages(ROOT), ids=lambda page: page.stem)
def test_the_notebook_is_valid_nbformat(page: Path):
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.read(ROOT / "notebooks" / (page.stem + ".ipynb"), as_version=4))
