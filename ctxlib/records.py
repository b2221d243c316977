"""The book's records: measurements too slow for the build, kept with what produced them.

Two benches write a record the pages read: ``bench/robustness.py`` re-runs every page that makes
a claim at further seeds (``robustness.json``: each claim's scores and gaps per seed), and
``bench/exercise_record.py`` runs the experiments behind the exercises' solutions
(``exercises.json``: the figures each solution quotes). A record is only true of the code it
measured, so every entry stores two keys beside its numbers:

- ``digest``: what produced it, the page's code cells or the exercise's bench file, with the
  ctxlib code they import and the data ctxlib ships (``tools/records.py`` computes it, as the
  experiment cache does for trained models). ``tools/records.py --check``, the build's first
  step and a test, fails naming every entry whose digest no longer matches, and the benches'
  ``--stale`` reruns exactly those.
- ``machine``: what decides the bits a run produces on a CPU (``machine()``: torch's version,
  the processor, the kernels torch dispatches to, the thread count). On a machine where all of
  these are the record's, a page's seed-0 run reproduces the record's seed-0 run exactly, and
  ``check_against_record`` fails when it does not. Elsewhere the same seed trains through other rounding,
  a difference of the size of a change of seed, so there the page prints its own values beside
  the recorded range and says the exact check does not apply.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources

import torch

from ctxlib._checks import check_choice
from ctxlib.training.precision import processor_name

ROBUSTNESS = "robustness.json"
EXERCISES = "exercises.json"
RECORDS = (ROBUSTNESS, EXERCISES)
# Equal up to the last bits a JSON round trip keeps: the same run on the same machine gives the
# same float, written with repr's 17 significant digits.
_SAME = 1e-12


def machine() -> dict[str, str]:
    """What decides the bits a CPU run produces: torch's version, the processor's model, the
    instruction set torch's kernels use, and the number of threads (a sum split over two
    threads rounds differently from one)."""
    return {"torch": str(torch.__version__), "processor": processor_name(),
            "kernels": torch.backends.cpu.get_cpu_capability(), "threads": str(torch.get_num_threads())}


@cache
def read_record(name: str) -> dict:
    """The record ``name`` (one of ``RECORDS``) as its bench last wrote it; empty before its first run."""
    check_choice("name", name, RECORDS)
    path = resources.files("ctxlib").joinpath("data", name)
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def check_against_record(entry_name: str, recorded: dict[str, float], measured: dict[str, float],
                         recorded_on: dict[str, str]) -> str | None:
    """Compare what a page measured at one seed with what the record holds for the same entry
    and seed (the book's build: seed 0).

    On the record's machine (``recorded_on == machine()``) they must be equal: a difference
    means the record was measured on other code or data than the page runs, and an
    ``AssertionError`` names the entry and the command that remeasures it. Elsewhere, returns
    the sentence to print beside the values: the exact check does not apply."""
    if recorded_on != machine():
        differs = sorted(key for key in recorded_on if recorded_on.get(key) != machine().get(key))
        return (f"recorded where {' and '.join(differs)} differed from this machine's: the same seed is not "
                "expected to give the same bits here")
    different = {key: (recorded[key], value) for key, value in measured.items()
                 if not math.isclose(value, recorded[key], rel_tol=_SAME, abs_tol=_SAME)}
    if different:
        shown = "; ".join(f"{key} {value!r} here, {old!r} in the record" for key, (old, value) in different.items())
        raise AssertionError(f"record entry {entry_name!r}: this run differs from the record's run at the same seed "
                             f"on the record's own machine ({shown}): the record was measured on other code or data; "
                             "remeasure it with `python bench/robustness.py --stale --write`")
    return None


def exercise_figures(page: str) -> dict[str, float | int | str]:
    """The figures ``page``'s exercise solutions quote, as ``bench/exercise_record.py`` measured
    them, named ``ex<number>.<figure>`` for MyST-NB's ``glue`` (``{glue:text}`ex4.top:.1f```).
    Empty before the bench has run the page's exercises; the build then stops at its first step
    (``tools/records.py --check``), before any solution could quote a missing figure."""
    if not isinstance(page, str) or not page or "/" in page or page.endswith(".md"):
        raise ValueError(f"page must be a page's file name without its folder or suffix, got {page!r}")
    return {f"ex{entry['number']}.{figure}": value
            for entry in read_record(EXERCISES).get("exercises", {}).values() if entry["page"] == page
            for figure, value in entry["figures"].items()}
