"""Execute the book's chapters two at a time, one thread each, into the build's notebook cache.

    python tools/execute_chapters.py [--jobs 2] [--build _build]

A chapter already in the cache executed on the code it runs now is kept (``executed_as_now``:
its code cells, and the ctxlib modules, data and torch those cells read, by the digest the
records use), so that after an edit to one page's prose nothing executes, and after an edit to
one page's code or to a ctxlib module only the pages that run it do.

``tools/book.sh`` runs this before ``jupyter-book build``, which then finds every chapter already
executed in its jupyter-cache (``_config.yml``: ``execute_notebooks: cache``) and only renders it.
Why: the book's models are small, so a second thread speeds one kernel's training up by only
about 1.2×, while a second kernel on the other core runs at full speed. On 2 cores, 300 steps of
the mini-BERT took 11.1 s in one kernel with 2 threads, and 13.8 s and 14.3 s in two kernels of
one thread each running at once: twice the work in 1.3 times the time. Two kernels of two
threads each fight over the cores (47.5 s each), hence one thread per kernel.

The chapters that train models other chapters load start first (``FIRST``); a chapter that
loads one of them (``LOADS``) starts once it is done, and among the chapters ready to run the
longest starts first (``SECONDS``). A chapter that asks for a model another is still training
waits for it (the lock in ``ctxlib.training.cache``) and then loads it, instead of training it
again. Simulated with one run's chapter times, this order ends the execution 17 s sooner than
reading order, which had ELECTRA's chapter wait 13 s on the mini-BERT; in the one cold build
measured with it (2026-12-05) the execution took 572 s against 573 s before, the chapters
themselves running a few seconds slower that time: the order's gain is within that noise.

Each kernel is forked from a server that has already imported torch, transformers,
scikit-learn, pyplot and ctxlib (``tools/forked_kernels.py``; ``--fresh-kernels`` starts each the
usual way): a fresh kernel spent 1 s starting and 2–5 s on those imports, and the whole book
with every model cached executed in 164 s with fresh kernels against 123 s forked. A chapter's
seconds here therefore leave out its imports; the 90 s budget, which includes them, is measured
on a fresh kernel by ``bench/chapter_memory.py``. Each chapter is read with MyST-NB's own reader
and executed with its engine (jupyter-cache's ``single_nb_execution``) under ``_config.yml``'s
``execute`` settings, so the build matches it in the cache. Before the shortest chapters, a core
exports the browser's ONNX model into the cache (11 s), which the Sphinx build would otherwise
export alone after the chapters. A chapter that fails here is left out
of the cache: the build executes it again and reports its error there.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from forked_kernels import forked_kernels  # noqa: E402
from records import page_digest  # noqa: E402
from toc import notebook_pages  # noqa: E402

# The chapters whose trained models other chapters load: the mini-BERT (03), ELMo (02). They
# start first; a chapter that loads a model another chapter trains (``LOADS``) starts only once
# that chapter is done, while another chapter is ready to run instead: it would otherwise hold a
# core waiting on the model's lock.
FIRST = ("book/03_bert.md", "book/02_elmo.md")
LOADS = {
    "book/02b_elmo_layers.md": ("book/02_elmo.md",),
    "book/02c_elmo_downstream.md": ("book/02_elmo.md",),
    "book/03b_bert_vs_elmo.md": ("book/02_elmo.md", "book/03_bert.md", "book/02d_elmo_limits.md"),  # and 2.6's recall models
    "book/04_attention.md": ("book/03_bert.md",),
    "book/05b_finetuning_choices.md": ("book/05_finetuning.md",),  # Chapter 5's topic run
    "book/06_training_problems.md": ("book/03_bert.md",),
    "book/06a_nsp.md": ("book/03_bert.md",),
    "book/06b_dynamic_masking.md": ("book/03_bert.md",),
    "book/06c_convergence.md": ("book/05_finetuning.md",),
    "book/06d_finetuning_hyperparameters.md": ("book/05_finetuning.md",),
    "book/07b_electra.md": ("book/03_bert.md",),
    "book/07c_bert_to_gpt.md": ("book/03_bert.md",),
    "book/09_summary.md": ("book/03_bert.md", "book/05_finetuning.md", "book/06_training_problems.md",
                           "book/06b_dynamic_masking.md", "book/07b_electra.md"),
}
# Among the chapters ready to run, the longest first, so that the last to finish is a short one
# and neither core idles at the end. Seconds beside another chapter on one thread, from the build
# report of 2026-12-05, rounded (2.6 from its recall runs doubling to 300 steps on 2026-12-07); only
# the order matters (a chapter not listed counts 0).
SECONDS = {"book/05_finetuning.md": 105, "book/07b_electra.md": 100, "book/04_attention.md": 85,
           "book/06b_dynamic_masking.md": 75, "book/06_training_problems.md": 75, "book/06a_nsp.md": 75,
           "book/06c_convergence.md": 75, "book/05b_finetuning_choices.md": 75,
           "book/06d_finetuning_hyperparameters.md": 65, "book/02c_elmo_downstream.md": 50,
           "book/02d_elmo_limits.md": 110, "book/06e_memory.md": 35, "book/01_polysemy.md": 30,
           "book/02b_elmo_layers.md": 25, "book/03b_bert_vs_elmo.md": 20, "book/09_summary.md": 20,
           "book/07c_bert_to_gpt.md": 10, "book/07_bert_family.md": 8}
# The browser model's export (``_export_browser_model``) on one thread: it starts before any
# shorter chapter, so that the last to finish are short chapters, not the export.
EXPORT_SECONDS = 11
# Where a cached notebook keeps the digest of what it was executed on (``executed_as_now``).
DIGEST_KEY = "ctxbook_digest"
# One BLAS/OpenMP thread per kernel: two kernels share the two cores.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


@functools.cache
def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def read_page(page: Path) -> tuple[nbformat.NotebookNode, dict]:
    """The notebook MyST-NB makes of ``page`` in the build, and how it read it."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    parse = _config().get("parse", {})
    markdown = MdParserConfig(**{key.removeprefix("myst_"): value for key, value in parse.items()
                                 if key.startswith("myst_")})
    text = page.read_text(encoding="utf-8")
    reader = create_nb_reader(str(page), markdown, NbParserConfig(), text)
    if reader is None:
        raise ValueError(f"{page}: MyST-NB does not read it as a notebook")
    return reader.read(text), reader.read_fmt


def execute_page(page: Path, timeout: int, allow_errors: bool,
                 env: dict[str, str] | None = None) -> tuple[Path, str | None, dict, float, str | None]:
    """Execute ``page`` in a new kernel of one thread, as the build does, with ``env`` added to
    its environment: the notebook as JSON (None if it failed), how MyST-NB read it, the
    seconds, the error. ``bench/robustness.py`` runs the pages at other seeds through it."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ.update({**ONE_THREAD, **(env or {})})  # the kernel inherits this process's environment
    notebook, read_fmt = read_page(ROOT / page)
    result = single_nb_execution(notebook, cwd=str((ROOT / page).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    if result.err is not None:
        return page, None, read_fmt, result.time, result.exc_string or repr(result.err)
    return page, nbformat.writes(notebook), read_fmt, result.time, None


def _export_browser_model() -> str:
    """The MiniLM ONNX file the built site's typed-sentence explorer loads
    (``book/_ext/browser_model.py``), exported into the cache now, on one thread, so that the
    Sphinx build that follows copies it instead of spending 10 s on it alone."""
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from browser_model import cached_model

    start = time.perf_counter()
    path = cached_model()
    return f"{path.relative_to(path.parents[1])}: ready in {time.perf_counter() - start:.1f} s"


def executed_as_now(cache, page: Path) -> bool:
    """Whether the build's cache holds ``page`` executed on the code it runs now: jupyter-cache
    matches its code cells, and the digest stored beside them (``tools/records.py``: the ctxlib
    modules those cells import, the data files they name, torch's version) is today's. A page
    whose own cells are unchanged is executed again after an edit to the ctxlib code it calls."""
    notebook, _ = read_page(ROOT / page)
    try:
        record = cache.match_cache_notebook(notebook)
    except KeyError:
        return False
    return record.data.get(DIGEST_KEY) == page_digest(ROOT / page)


def next_page(waiting: list[Path], done: set[Path]) -> Path:
    """The chapter to start now: ``FIRST`` in its order, then the longest (``SECONDS``) of those
    whose ``LOADS`` are all ``done``; where none is ready, the first waiting in that order
    (it waits on the lock for its model)."""
    first = [page for page in map(Path, FIRST) if page in waiting]
    if first:
        return first[0]
    by_length = sorted(waiting, key=lambda page: -SECONDS.get(str(page), 0))  # stable: reading order breaks ties
    ready = [page for page in by_length if all(Path(name) in done for name in LOADS.get(str(page), ()))]
    return (ready or by_length)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="kernels at once (default 2)")
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    parser.add_argument("--fresh-kernels", action="store_true",
                        help="start each kernel afresh instead of forking it from tools/forked_kernels.py's server")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    settings = _config()["execute"]
    if settings.get("execute_notebooks") != "cache":
        parser.error("_config.yml's execute_notebooks must be 'cache' for the build to read what this executes")
    cache = get_cache(str(args.build / ".jupyter_cache"))
    pages = notebook_pages()
    current = [page for page in pages if executed_as_now(cache, page)]
    if current:
        print(f"== {len(current)} of {len(pages)} chapters already executed on the code and data they read now: kept")
    waiting, done, running = [page for page in pages if page not in current], set(current), set()
    # What the build needs besides the chapters: started on the first core the chapters leave idle.
    extras, extra_futures = [_export_browser_model], set()
    start, failed = time.perf_counter(), []
    kernels = (contextlib.nullcontext() if args.fresh_kernels or not waiting
               else forked_kernels({**os.environ, **ONE_THREAD}))
    with kernels, ProcessPoolExecutor(max_workers=args.jobs) as pool:
        while waiting or running or extras:
            while (waiting or extras) and len(running) < args.jobs:
                if not (extras and all(SECONDS.get(str(page), 0) <= EXPORT_SECONDS for page in waiting)):
                    page = next_page(waiting, done)
                    waiting.remove(page)
                    running.add(pool.submit(execute_page, page, settings["timeout"], settings["allow_errors"]))
                else:
                    future = pool.submit(extras.pop())
                    extra_futures.add(future)
                    running.add(future)
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                if future in extra_futures:
                    print(f"{future.result()} ({time.perf_counter() - start:.0f} s since the start)", flush=True)
                    continue
                page, text, read_fmt, seconds, error = future.result()
                done.add(page)
                if error is not None:
                    failed.append(page)
                    print(f"!! {page}: failed after {seconds:.1f} s; the build runs it again and reports the error\n{error}")
                    continue
                # The cache records the uri and read format MyST-NB itself would (its cache client).
                cache.add_nb_to_project(str(ROOT / page), read_data=read_fmt)
                cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(text, 4), str(ROOT / page),
                                                          data={"execution_seconds": seconds,
                                                                DIGEST_KEY: page_digest(ROOT / page)}),
                                            check_validity=False, overwrite=True)
                # Sphinx rereads a page only when its file changed: this one's output did.
                os.utime(ROOT / page)
                print(f"{page}: executed in {seconds:.1f} s ({time.perf_counter() - start:.0f} s since the start)",
                      flush=True)
    executed = len(pages) - len(current)
    print(f"== {executed - len(failed)} of {executed} chapters executed, {args.jobs} at a time, one thread each, "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
