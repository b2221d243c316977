"""tools/execute_chapters.py: the chapters other chapters depend on start first, a chapter that
loads another's model starts after it, every kernel it starts runs torch with one thread, and a
chapter is kept from an earlier build only while what it runs is unchanged."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from execute_chapters import DIGEST_KEY, FIRST, LOADS, SECONDS, execute_page, executed_as_now, next_page, read_page  # noqa: E402
from records import page_digest  # noqa: E402
from toc import notebook_pages  # noqa: E402

# The calls that load a model a chapter trains, and the chapter that trains it.
TRAINED_IN = {r"book_bert\((?![^)]*name=)": "book/03_bert.md", r"book_elmo\(": "book/02_elmo.md",
              r"book_electra\(": "book/07b_electra.md", r'name="bert-mask-only"': "book/06_training_problems.md",
              r'name="bert-static"': "book/06b_dynamic_masking.md", r"recall_accuracy\(": "book/02d_elmo_limits.md"}


def test_the_schedule_names_only_chapters_of_the_book():
    pages = {str(page) for page in notebook_pages()}
    named = set(FIRST) | set(LOADS) | {name for names in LOADS.values() for name in names} | set(SECONDS)
    assert named <= pages, f"not in the table of contents: {sorted(named - pages)}"


def test_every_chapter_that_loads_a_trained_model_waits_for_the_chapter_that_trains_it():
    for page in notebook_pages():
        # Code cells only: exercises in the prose name calls the page does not run.
        code = "\n".join(re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"),
                                    flags=re.S))
        for call, producer in TRAINED_IN.items():
            if str(page) != producer and re.search(call, code):
                assert producer in LOADS.get(str(page), ()), f"{page} loads {producer}'s model ({call})"


def test_every_chapter_starts_once_and_after_the_chapters_whose_models_it_loads():
    # Two kernels, each chapter taking its SECONDS (FIRST's: their reading-order position, any
    # positive time): no chapter starts before the chapters it loads from have finished.
    pages = notebook_pages()
    waiting, done, free, started, finished = list(pages), set(), [0.0, 0.0], {}, {}
    while waiting:
        kernel = min(range(2), key=free.__getitem__)
        now = free[kernel]
        done = {page for page, end in finished.items() if end <= now}
        page = next_page(waiting, done)
        waiting.remove(page)
        started[page] = now
        finished[page] = free[kernel] = now + SECONDS.get(str(page), 60.0)
    assert sorted(started) == sorted(pages)
    assert [page for page, _ in sorted(started.items(), key=lambda item: item[1])][:len(FIRST)] == list(map(Path, FIRST))
    for page, producers in LOADS.items():
        for producer in producers:
            assert started[Path(page)] >= finished[Path(producer)], f"{page} starts before {producer} ends"


def test_a_chapter_runs_in_a_kernel_with_one_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # as set here, and restored after: execute_page sets 1
    for name in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    page = tmp_path / "threads.md"
    page.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
                    "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
                    "```{code-cell} ipython3\nimport torch\nprint(torch.get_num_threads())\n```\n")
    executed, text, read_fmt, seconds, error = execute_page(page, timeout=300, allow_errors=False)
    assert error is None
    outputs = [cell for cell in nbformat.reads(text, 4).cells if cell.cell_type == "code"][0].outputs
    assert outputs[0]["text"].strip() == "1"


def _cached(tmp_path: Path, page: Path, digest: str):
    """A jupyter-cache holding ``page``'s notebook as execute_chapters.py stores it, with ``digest``."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(tmp_path / "cache"))
    notebook, read_fmt = read_page(page)
    cache.add_nb_to_project(str(page), read_data=read_fmt)
    cache.cache_notebook_bundle(CacheBundleIn(notebook, str(page), data={"execution_seconds": 1.0, DIGEST_KEY: digest}),
                                check_validity=False, overwrite=True)
    return cache


PAGE = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "Some prose.\n\n```{code-cell} ipython3\nfrom ctxlib.analysis.neighbours import nearest\n```\n")


def test_a_page_is_kept_only_while_its_cells_and_the_code_they_call_are_what_was_executed(tmp_path):
    page = tmp_path / "kept.md"
    page.write_text(PAGE)
    cache = _cached(tmp_path, page, page_digest(page))
    assert executed_as_now(cache, page)
    page.write_text(PAGE.replace("Some prose.", "Other prose."))  # prose: no cell changed, kept
    page_digest.cache_clear()
    assert executed_as_now(cache, page)
    page.write_text(PAGE.replace("import nearest", "import nearest, neighbours"))  # a cell changed
    page_digest.cache_clear()
    assert not executed_as_now(cache, page)


def test_a_page_executed_on_other_ctxlib_code_is_executed_again(tmp_path):
    page = tmp_path / "stale.md"
    page.write_text(PAGE)
    assert not executed_as_now(_cached(tmp_path, page, "the digest of an earlier ctxlib"), page)
