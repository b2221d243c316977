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
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

CHAPTER_BUDGET_S = 90.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", type=Path)
    parser.add_argument("--out", type=Path, default=Path("_build/chapters"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds allowed per cell")
    args = parser.parse_args()
    if not args.chapter.is_file():
        parser.error(f"chapter {str(args.chapter)!r} does not exist")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    notebook = jupytext.read(args.chapter)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=args.timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(args.chapter.parent)}}).execute()
    elapsed = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / (args.chapter.stem + ".ipynb")
    nbformat.write(notebook, target)
    print(f"{args.chapter}: executed in {elapsed:.1f} s ({elapsed / CHAPTER_BUDGET_S:.0%} of the "
          f"{CHAPTER_BUDGET_S:.0f} s budget); notebook written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
