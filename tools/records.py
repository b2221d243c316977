"""What each entry of the book's records was measured on, and which entries no longer match.

    python tools/records.py --check      # the build's first step: fails naming every stale entry

The records (``ctxlib.records``): ``robustness.json``, written by ``bench/robustness.py`` from
the pages that make claims, and ``exercises.json``, written by ``bench/exercise_record.py`` from
the experiments in ``bench/exercises/<page>.py``. Each entry stores the ``digest`` of what
produced it, computed here:

- a page: its code cells as MyST-NB reads them (``tools/execute_chapters.py``);
- an exercise: its bench file and the bench files it imports (``bench/exercises/_common.py``, ...);

each with the ctxlib modules that code imports, transitively (``ctxlib.training.cache.text_digest``,
the experiment cache's digest: syntax trees, so comments and docstrings do not count), the data
files those modules name (``named_data``: a new data file for one chapter stales only the pages
whose code reads it), and torch's version. An entry is
stale when that digest changed, when the page or file it came from is gone, and a page or file
that should have entries but has none is missing; ``--check`` lists them all and exits 1,
and the benches' ``--stale`` reruns exactly those.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from ctxlib.records import EXERCISES, RECORDS, ROBUSTNESS, read_record  # noqa: E402
from ctxlib.training.cache import fingerprint, imported_modules, text_digest  # noqa: E402

BOOK = ROOT / "book"
DATA = ROOT / "ctxlib" / "data"
EXERCISE_DIR = ROOT / "bench" / "exercises"
BENCH = ROOT / "bench"


def data_files() -> list[Path]:
    """Every file ctxlib ships as data but the records (which hold digests)."""
    return sorted(path for path in DATA.rglob("*") if path.is_file() and path.suffix != ".py"
                  and path.name not in RECORDS and "__pycache__" not in path.parts)


@functools.cache
def _named_strings(module: str) -> frozenset[str]:
    """The string constants in ``module``'s source: where a module names the data it reads."""
    origin = importlib.util.find_spec(module).origin
    tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    return frozenset(node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                     and isinstance(node.value, str))


def named_data(modules: list[str]) -> list[Path]:
    """The data files that ``modules`` name: by file name, or by the folder they sit in under
    ``ctxlib/data`` (``task_files``). ``tests/test_records.py`` checks that every data file is
    named by some module, so none is read without being digested."""
    names = frozenset().union(*(_named_strings(module) for module in modules))
    return [path for path in data_files() if path.name in names or path.relative_to(DATA).parts[0] in names]


@functools.cache
def data_digest(modules: tuple[str, ...]) -> str:
    """The data files ``modules`` name, by path and bytes."""
    return fingerprint({str(path.relative_to(DATA)): path.read_bytes() for path in named_data(list(modules))})


def code_digest(sources: list[str]) -> str:
    """The digest of code given as text, with what it imports from ctxlib, the data those modules
    read and torch's version."""
    modules = tuple(imported_modules(sources))
    return fingerprint({"code": text_digest(sources), "data": data_digest(modules), "torch": str(torch.__version__)})


def page_cells(page: Path) -> list[str]:
    """The code cells of ``page`` as the build executes them."""
    from execute_chapters import read_page

    notebook, _ = read_page(page)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@functools.cache
def page_digest(page: Path) -> str:
    """The digest of what a page's claims were measured on (see the module docstring)."""
    return code_digest(page_cells(page))


def _local_imports(file: Path) -> list[Path]:
    """``file`` and the bench files it imports (``from _common import ...``), transitively."""
    found, pending = [], [file]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.append(current)
        for node in ast.walk(ast.parse(current.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                for folder in (current.parent, BENCH):
                    candidate = folder / f"{name.split('.')[0]}.py"
                    if candidate.is_file():
                        pending.append(candidate)
                        break
    return sorted(found)


@functools.cache
def exercise_digest(file: Path) -> str:
    """The digest of what an exercise file's runs were measured on (see the module docstring)."""
    return code_digest([path.read_text(encoding="utf-8") for path in _local_imports(file)])


def claim_pages() -> list[Path]:
    """The pages in reading order (``_toc.yml``) whose code makes a claim."""
    from toc import notebook_pages

    return [ROOT / page for page in notebook_pages() if "claim(" in (ROOT / page).read_text(encoding="utf-8")]


def exercise_files() -> list[Path]:
    """``bench/exercises/<page>.py``, one per page whose solutions quote a measurement."""
    return sorted(path for path in EXERCISE_DIR.glob("*.py") if not path.name.startswith("_"))


def exercise_numbers(file: Path) -> list[int]:
    """The exercise numbers ``file`` marks (``@exercise(4)``), read from its source without running it."""
    numbers = []
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "exercise"
                        and decorator.args and isinstance(decorator.args[0], ast.Constant)):
                    numbers.append(decorator.args[0].value)
    return sorted(numbers)


def _stale(entries: dict[str, dict], sources: dict[str, Path], digest: Callable[[Path], str],
           gone: str) -> dict[str, list[str]]:
    """Per source stem, why its entries must be remeasured: entries whose source is ``gone`` or
    whose digest is not the source's now."""
    stale: dict[str, list[str]] = {}
    for name, entry in entries.items():
        source = sources.get(entry["page"])
        if source is None:
            stale.setdefault(entry["page"], []).append(f"{name!r}: {gone}")
        elif entry.get("digest") != digest(source):
            stale.setdefault(entry["page"], []).append(f"{name!r}: measured on other code or data than "
                                                       f"{source.relative_to(ROOT)} runs now")
    return stale


def stale_robustness(record: dict | None = None) -> dict[str, list[str]]:
    """Per page stem, why its robustness entries must be remeasured (empty: none)."""
    entries = (read_record(ROBUSTNESS) if record is None else record).get("claims", {})
    pages = {page.stem: page for page in claim_pages()}
    stale = _stale(entries, pages, page_digest, "its page makes no claim any more")
    for stem in sorted(set(pages) - {entry["page"] for entry in entries.values()}):
        stale.setdefault(stem, []).append("its claims were never measured over seeds")
    return stale


def stale_exercises(record: dict | None = None) -> dict[str, list[str]]:
    """Per exercise file stem (a page's), why its entries must be remeasured (empty: none)."""
    entries = (read_record(EXERCISES) if record is None else record).get("exercises", {})
    files = {file.stem: file for file in exercise_files()}
    stale = _stale(entries, files, exercise_digest, "its bench file is gone")
    for stem, file in files.items():
        for number in exercise_numbers(file):
            if f"{stem}:{number}" not in entries:
                stale.setdefault(stem, []).append(f"'{stem}:{number}': never measured")
    return stale


def report() -> list[str]:
    """One line per stale entry of either record, with the command that remeasures it."""
    lines = []
    for title, stale, command in (("robustness.json", stale_robustness(), "bench/robustness.py --stale --write"),
                                  ("exercises.json", stale_exercises(), "bench/exercise_record.py --stale --write")):
        for stem, reasons in stale.items():
            lines += [f"{title}: {stem}: {reason}  (remeasure: python {command})" for reason in reasons]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when any entry is stale")
    args = parser.parse_args()
    lines = report()
    for line in lines:
        print(line)
    print(f"== records: {len(lines)} stale entries" if lines else "== records: every entry measured on the code it describes")
    return 1 if lines and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
