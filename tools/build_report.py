"""The book's build report: each chapter's execution time against the budgets.

Reads what myst-nb recorded while executing the notebooks (the Sphinx environment of the last
build) and prints one line per chapter, then the whole build's wall time if given. Budgets, from
DEVELOPERS.md: a chapter executes in at most 90 s on 2 cores, the whole book cold in 10 min.

    python tools/build_report.py [--build _build] [--total-seconds N [--cold]] [--json FILE]

A chapter the build kept from an earlier one (``tools/book.sh`` without ``--cold``) shows the
time it took when it was executed; only a ``--cold`` build's total is the budget's "whole book cold".
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from pathlib import Path

from ctxlib.training.precision import this_machine

from run_chapter import CHAPTER_BUDGET_S  # the same budget a chapter run alone is held to

BOOK_BUDGET_S = 600.0


def execution_times(build: Path) -> dict[str, dict]:
    with open(build / ".doctrees" / "environment.pickle", "rb") as file:
        env = pickle.load(file)
    return {doc: data["exec_data"] for doc, data in sorted(getattr(env, "nb_metadata", {}).items())
            if data.get("exec_data")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=Path("_build"))
    parser.add_argument("--total-seconds", type=float)
    parser.add_argument("--cold", action="store_true",
                        help="the build started from an empty _build: its total is held to the 10-minute budget")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args()
    times = execution_times(args.build)
    # tools/book.sh executes the chapters two at a time with one thread each, in kernels forked
    # with their imports done (tools/execute_chapters.py): a chapter's time here is its time
    # beside another chapter, without the 2-5 s of imports a fresh kernel spends.
    print(f"== build report ({os.cpu_count()} CPU cores; chapters executed two at a time, one thread each, "
          "in kernels forked with torch and ctxlib already imported)")
    # The machine's speed beside its times, so that a reader can compare a build on another machine.
    print(f"  {this_machine()}")
    over = []
    for doc, data in times.items():
        runtime = float(data["runtime"])
        flag = "ok" if runtime <= CHAPTER_BUDGET_S else "OVER BUDGET"
        over += [doc] if runtime > CHAPTER_BUDGET_S else []
        print(f"  {doc:28s} {runtime:6.1f} s  ({runtime / CHAPTER_BUDGET_S:4.0%} of {CHAPTER_BUDGET_S:.0f} s)  "
              f"{'succeeded' if data['succeeded'] else 'FAILED'}  {flag}")
    if args.total_seconds is not None and args.cold:
        print(f"  whole build, cold: {args.total_seconds:.0f} s ({args.total_seconds / BOOK_BUDGET_S:.0%} of "
              f"{BOOK_BUDGET_S:.0f} s)")
    elif args.total_seconds is not None:
        print(f"  this build, keeping what an earlier one executed: {args.total_seconds:.0f} s (the 10-minute budget "
              "is for a cold build: tools/book.sh --cold)")
    if args.json:
        args.json.write_text(json.dumps({"chapters": {d: float(t["runtime"]) for d, t in times.items()},
                                         "total_seconds": args.total_seconds,
                                         "cold": args.cold}, indent=2))
    if over:
        print(f"!! over {CHAPTER_BUDGET_S:.0f} s beside another chapter: {over}; the budget is for a chapter alone on "
              "2 cores, which bench/chapter_memory.py measures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
