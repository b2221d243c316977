"""tools/execute_chapters.py: the chapters other chapters depend on start first, and every
kernel it starts runs torch with one thread."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from execute_chapters import FIRST, _execute, schedule  # noqa: E402
from toc import notebook_pages  # noqa: E402


def test_the_model_training_chapters_start_first_and_every_chapter_runs_once():
    pages = notebook_pages()
    assert {Path(name) for name in FIRST} <= set(pages), "FIRST names a chapter the table of contents does not have"
    order = schedule(pages)
    assert sorted(order) == sorted(pages)
    assert order[:len(FIRST)] == [Path(name) for name in FIRST]


def test_a_chapter_runs_in_a_kernel_with_one_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # as set here, and restored after: _execute sets 1
    for name in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    page = tmp_path / "threads.md"
    page.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
                    "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
                    "```{code-cell} ipython3\nimport torch\nprint(torch.get_num_threads())\n```\n")
    executed, text, read_fmt, seconds, error = _execute(page, timeout=60, allow_errors=False)
    assert error is None and seconds > 0
    outputs = [cell for cell in nbformat.reads(text, 4).cells if cell.cell_type == "code"][0].outputs
    assert outputs[0]["text"].strip() == "1"
