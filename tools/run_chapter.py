"""Execute one chapter in a fresh kernel, report its time, keep the executed notebook.

    python tools/run_chapter.py book/01_polysemy.md [--out _build/chapters]

The same engine as the book build (jupytext reads the MyST file, nbclient runs it), without
Sphinx, so a reader can run or time one chapter on its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jupytext
import nbformat
import yaml
from nbclient import NotebookClient

CHAPTER_BUDGET_S = 90.0
ROOT = Path(__file__).resolve().parents[1]
# The book build's limit on one cell (_config.yml), so a chapter run alone has the same.
CELL_TIMEOUT_S = int(yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["execute"]["timeout"])


def execute_chapter(chapter: Path, timeout: int = CELL_TIMEOUT_S,
                    on_kernel_start: Callable[[int], None] | None = None) -> tuple[nbformat.NotebookNode, float]:
    """Execute ``chapter`` in a fresh kernel as the book build does (jupytext reads the MyST file,
    nbclient runs it with the chapter's folder as working directory); return the executed notebook
    and the seconds it took, kernel start included. ``on_kernel_start(pid)`` is called with the
    kernel's process id once it runs, before the first cell (bench/chapter_memory.py watches it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # As the book build runs it: the explorers in their static form (ctxlib.viz.static_view).
    os.environ.setdefault("CTXBOOK_EXPLORERS", "static")
    notebook = jupytext.read(chapter)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(chapter.parent)}})
    if on_kernel_start is not None:
        client.on_notebook_start = lambda notebook: on_kernel_start(client.km.provisioner.pid)
    start = time.perf_counter()
    client.execute()
    return notebook, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", type=Path)
    parser.add_argument("--out", type=Path, default=Path("_build/chapters"))
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S,
                        help=f"seconds allowed per cell (default: _config.yml's, {CELL_TIMEOUT_S})")
    args = parser.parse_args()
    if not args.chapter.is_file():
        parser.error(f"chapter {str(args.chapter)!r} does not exist")
    notebook, elapsed = execute_chapter(args.chapter, args.timeout)
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / (args.chapter.stem + ".ipynb")
    nbformat.write(notebook, target)
    print(f"{args.chapter}: executed in {elapsed:.1f} s ({elapsed / CHAPTER_BUDGET_S:.0%} of the "
          f"{CHAPTER_BUDGET_S:.0f} s budget); notebook written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
