"""Run the experiments behind the exercises' solutions and record the figures they quote.

    python bench/exercise_record.py --list
    python bench/exercise_record.py 05_finetuning:3 06a_nsp     # run these, print their figures
    python bench/exercise_record.py --stale --write             # remeasure what tools/records.py reports
    python bench/exercise_record.py --write                     # every exercise (tens of minutes on 2 cores)

Each page whose solutions quote a measurement has its runs in ``bench/exercises/<page>.py``: one
function per exercise, marked ``@exercise(number)``, that runs the experiment with ctxlib
(training through the cache, as the chapters do) and returns the figures the solution quotes,
by name. Too slow for the build, they run here, two at a time on one thread each (as the build
runs its kernels, so a run that repeats a page's equals the page's); ``--write`` stores each in
``ctxlib/data/exercises.json`` as it finishes (a failure later keeps what finished), with the
digest of the code it ran and the machine (``tools/records.py``, ``ctxlib.records``). The page
glues the figures (``ctxlib.records.exercise_figures``) and its solution quotes them with
``{glue:text}`ex4.top:.1f```: no figure in a solution is typed by hand, and the build fails on
an entry measured on other code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_DIR = ROOT / "bench" / "exercises"
for folder in (EXERCISE_DIR, ROOT / "bench", ROOT / "tools"):
    sys.path.insert(0, str(folder))

from ctxlib._files import atomic_path  # noqa: E402
from ctxlib.records import EXERCISES, machine, read_record  # noqa: E402

from records import exercise_digest, exercise_files  # noqa: E402

RECORD = ROOT / "ctxlib" / "data" / EXERCISES
FIGURE = re.compile(r"[a-z][a-z0-9_]*")


def runs() -> dict[str, tuple[Path, int, Callable[[], dict]]]:
    """Every exercise run, as ``<page>:<number>``: its file, number and function."""
    found = {}
    for file in exercise_files():
        module = importlib.import_module(file.stem)
        for function in vars(module).values():
            number = getattr(function, "exercise_number", None)
            if number is not None and function.__module__ == module.__name__:
                found[f"{file.stem}:{number}"] = (file, number, function)
    return dict(sorted(found.items(), key=lambda item: (item[0].split(":")[0], item[1][1])))


def check_figures(name: str, figures: object) -> dict[str, float | int | str]:
    """What a run returned, if it is what a solution can quote: names that glue accepts, each a
    finite number or a short text."""
    if not isinstance(figures, dict) or not figures:
        raise TypeError(f"{name} must return a non-empty dict of figures, got {type(figures).__name__}")
    for key, value in figures.items():
        if not isinstance(key, str) or not FIGURE.fullmatch(key):
            raise ValueError(f"{name}: figure name {key!r} must be lower-case letters, digits and '_'")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(f"{name}: figure {key!r} must be a number or a text, got {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name}: figure {key!r} is {value}")
    return figures


def run_one(name: str) -> tuple[str, dict, dict, float]:
    """Run exercise ``name`` in this worker, on one thread."""
    import torch

    torch.set_num_threads(1)
    file, number, function = runs()[name]
    start = time.perf_counter()
    returned = function()
    if isinstance(returned, dict):  # numpy and torch scalars as the Python numbers JSON holds
        returned = {key: value.item() if hasattr(value, "item") else value for key, value in returned.items()}
    return name, check_figures(name, returned), machine(), time.perf_counter() - start


def update_record(entries: dict[str, dict | None]) -> None:
    """Store ``entries`` in the record (None: remove that entry), atomically, keeping every other."""
    record = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {"exercises": {}}
    for name, entry in entries.items():
        if entry is None:
            record["exercises"].pop(name, None)
        else:
            record["exercises"][name] = entry
    record["exercises"] = dict(sorted(record["exercises"].items()))
    with atomic_path(RECORD) as partial:
        partial.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="pages or <page>:<number> to run (default: all)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--stale", action="store_true", help="only the entries tools/records.py reports")
    parser.add_argument("--write", action="store_true", help=f"store each run in {RECORD.relative_to(ROOT)}")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once, one thread each (default 2)")
    args = parser.parse_args()
    available = runs()
    if args.list:
        for name, (_, _, function) in available.items():
            print(f"{name:36s} {function.__doc__.splitlines()[0]}")
        return 0
    wanted = [name for name in available
              if not args.names or name in args.names or name.split(":")[0] in args.names]
    unknown = sorted(set(args.names) - set(available) - {name.split(":")[0] for name in available})
    if unknown:
        parser.error(f"unknown exercises or pages {unknown}; --list shows them")
    if args.stale:  # never measured, or measured on other code than its file and ctxlib hold now
        entries = read_record(EXERCISES).get("exercises", {})
        wanted = [name for name in wanted
                  if name not in entries or entries[name]["digest"] != exercise_digest(available[name][0])]
    if not wanted:
        print("nothing to run")
        return 0
    os.environ.setdefault("CTXBOOK_CACHE", str(ROOT / "_build" / "cache"))  # the build's trained models
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ctxlib.training.precision import this_machine

    print(this_machine())  # beside any time an exercise reports: they are this machine's, not the book's
    failed, start = [], time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_one, name): name for name in wanted}
        for future in as_completed(futures):
            name = futures[future]
            try:
                _, figures, ran_on, seconds = future.result()
            except Exception as error:  # noqa: BLE001  (reported, and the other runs go on)
                failed.append(name)
                print(f"!! {name} failed: {type(error).__name__}: {error}", flush=True)
                continue
            print(f"== {name} ({seconds:.0f} s, {time.perf_counter() - start:.0f} s since the start)\n"
                  f"{json.dumps(figures, indent=1, ensure_ascii=False)}", flush=True)
            if args.write:
                page, number = name.split(":")
                update_record({name: {"page": page, "number": int(number), "digest": exercise_digest(available[name][0]),
                                   "machine": ran_on, "seconds": round(seconds, 1), "figures": figures}})
    if args.write:
        # Entries of exercises that no longer exist go: the record holds what the bench can rerun.
        gone = sorted(set(read_record(EXERCISES).get("exercises", {})) - set(available))
        if gone:
            update_record(dict.fromkeys(gone))
            print(f"removed the entries of exercises that are gone: {gone}")
    print(f"{len(wanted) - len(failed)} of {len(wanted)} runs done" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
