"""Execute the book's chapters two at a time, one thread each, into the build's notebook cache.

    python tools/execute_chapters.py [--jobs 2] [--build _build]

``tools/book.sh`` runs this before ``jupyter-book build``, which then finds every chapter already
executed in its jupyter-cache (``_config.yml``: ``execute_notebooks: cache``) and only renders it.
Why: the book's models are small, so a second thread speeds one kernel's training up by only
about 1.2×, while a second kernel on the other core runs at full speed. On 2 cores, 300 steps of
the mini-BERT took 11.1 s in one kernel with 2 threads, and 13.8 s and 14.3 s in two kernels of
one thread each running at once: twice the work in 1.3 times the time. Two kernels of two
threads each fight over the cores (47.5 s each), hence one thread per kernel.

The chapters that train models other chapters load start first (``FIRST``); a chapter that asks
for a model another is still training waits for it (the lock in ``ctxlib.training.cache``) and
then loads it, instead of training it again. Each chapter is read with MyST-NB's own reader and
executed with its engine (jupyter-cache's ``single_nb_execution``) under ``_config.yml``'s
``execute`` settings, so the build matches it in the cache. A chapter that fails here is left out
of the cache: the build executes it again and reports its error there.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from toc import notebook_pages  # noqa: E402

# The chapters whose trained models other chapters load, longest first: the mini-BERT (03, loaded
# by 03b, 04, 06, 06a, 06b, 07b, 07c, 09), ELECTRA (07b, loaded by 09), ELMo (02, loaded by 02b,
# 02c, 03b). Starting them first keeps the other kernel from waiting on their lock.
FIRST = ("book/03_bert.md", "book/02_elmo.md", "book/07b_electra.md")
# One BLAS/OpenMP thread per kernel: two kernels share the two cores.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


@functools.cache
def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _read(page: Path) -> tuple[nbformat.NotebookNode, dict]:
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


def _execute(page: Path, timeout: int, allow_errors: bool) -> tuple[Path, str | None, dict, float, str | None]:
    """Execute ``page`` in a fresh kernel, as the build would: the notebook as JSON (None if it
    failed), how MyST-NB read it, the seconds, the error."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ.update(ONE_THREAD)  # the kernel inherits this process's environment
    notebook, read_fmt = _read(ROOT / page)
    result = single_nb_execution(notebook, cwd=str((ROOT / page).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    if result.err is not None:
        return page, None, read_fmt, result.time, result.exc_string or repr(result.err)
    return page, nbformat.writes(notebook), read_fmt, result.time, None


def schedule(pages: list[Path]) -> list[Path]:
    """``pages`` with ``FIRST`` moved to the front, the rest in reading order."""
    first = [Path(name) for name in FIRST if Path(name) in pages]
    return first + [page for page in pages if page not in first]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="kernels at once (default 2)")
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    settings = _config()["execute"]
    if settings.get("execute_notebooks") != "cache":
        parser.error("_config.yml's execute_notebooks must be 'cache' for the build to read what this executes")
    cache = get_cache(str(args.build / ".jupyter_cache"))
    pages = schedule(notebook_pages())
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_execute, page, settings["timeout"], settings["allow_errors"]) for page in pages]
        for future in as_completed(futures):
            page, text, read_fmt, seconds, error = future.result()
            if error is not None:
                failed.append(page)
                print(f"!! {page}: failed after {seconds:.1f} s; the build runs it again and reports the error\n{error}")
                continue
            # The cache records the uri and read format MyST-NB itself would (its cache client).
            cache.add_nb_to_project(str(ROOT / page), read_data=read_fmt)
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(text, 4), str(ROOT / page),
                                                      data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"{page}: executed in {seconds:.1f} s ({time.perf_counter() - start:.0f} s since the start)",
                  flush=True)
    print(f"== {len(pages) - len(failed)} of {len(pages)} chapters executed, {args.jobs} at a time, one thread each, "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
