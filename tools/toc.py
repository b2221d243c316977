"""The book's pages in reading order, read from ``_toc.yml``.

    python tools/toc.py [--notebooks]     # one path a line, relative to the repository root

``--notebooks`` keeps the pages that are notebooks (a MyST front matter with a ``kernelspec``):
the ones the build executes and that carry launch buttons. binder/postBuild, tools/notebooks.py
and bench/chapter_memory.py all take their list of chapters from here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _files(entry: dict) -> list[str]:
    found = [entry["file"]] if "file" in entry else []
    for key in ("parts", "chapters", "sections"):
        for child in entry.get(key, []):
            found += _files(child)
    return found


def toc_pages(root: Path = ROOT) -> list[Path]:
    """Every page of the table of contents, in reading order, as a path relative to ``root``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    pages = []
    for name in [toc["root"], *_files(toc)]:
        matches = [Path(name + suffix) for suffix in (".md", ".ipynb") if (root / (name + suffix)).is_file()]
        if not matches:
            raise FileNotFoundError(f"_toc.yml names {name!r}, but neither {name}.md nor {name}.ipynb exists")
        pages.append(matches[0])
    return pages


def is_notebook(page: Path, root: Path = ROOT) -> bool:
    """Whether a page is a notebook: an ``.ipynb``, or MyST markdown whose front matter names a
    kernel (jupytext's header)."""
    if page.suffix == ".ipynb":
        return True
    text = (root / page).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return False
    front = yaml.safe_load(text[4:text.find("\n---", 4)]) or {}
    return "kernelspec" in front


def notebook_pages(root: Path = ROOT) -> list[Path]:
    """The pages of the table of contents that are notebooks, in reading order."""
    return [page for page in toc_pages(root) if is_notebook(page, root)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", action="store_true", help="only the pages that are notebooks")
    args = parser.parse_args()
    for page in notebook_pages() if args.notebooks else toc_pages():
        print(page.as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main())
