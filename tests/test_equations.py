"""The equation registry: every equation of the book has an implementation that names it and a
test that exists, and the book displays exactly the registry's LaTeX."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from ctxlib.equations import EQUATIONS, NOTES_SHEET, equation

ROOT = Path(__file__).resolve().parents[1]
DISPLAY = re.compile(r"\$\$\n(.*?)\n\$\$ *\(eq-(\d+)-(\d+)\)", re.S)


def book_equations() -> dict[str, str]:
    found: dict[str, str] = {}
    for page in sorted((ROOT / "book").glob("*.md")):
        for match in DISPLAY.finditer(page.read_text(encoding="utf-8")):
            number = f"{match[2]}.{match[3]}"
            assert number not in found, f"equation {number} is displayed twice (again in {page.name})"
            found[number] = match[1]
    return found


def normalised(latex: str) -> str:
    return " ".join(latex.split())


def resolve(dotted: str) -> object:
    """Import ``ctxlib.module.Object[.attribute]``."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            target = getattr(target, name)
        return target
    raise ImportError(dotted)


def test_the_book_and_the_registry_hold_the_same_equations():
    book = book_equations()
    registry = {e.number: e.latex for e in EQUATIONS}
    assert sorted(book) == sorted(registry), "equations only in the book: " \
        f"{sorted(set(book) - set(registry))}; only in the registry: {sorted(set(registry) - set(book))}"
    for number, latex in book.items():
        assert normalised(latex) == normalised(registry[number]), number


@pytest.mark.parametrize("entry", EQUATIONS, ids=lambda e: e.number)
def test_each_implementation_exists_and_names_its_equation(entry):
    assert entry.implemented_by, entry.number
    for dotted in entry.implemented_by:
        docstring = inspect.getdoc(resolve(dotted)) or ""
        # "eq 3.2", "eqs 2.1–2.3" (a range counts for the numbers inside it), "eq 7.2, corrected"
        numbers = set()
        for first, last in re.findall(r"(\d+\.\d+)(?:\s*[–-]\s*(\d+\.\d+))?", docstring):
            numbers.add(first)
            if last and first.split(".")[0] == last.split(".")[0]:
                chapter, start, stop = first.split(".")[0], int(first.split(".")[1]), int(last.split(".")[1])
                numbers |= {f"{chapter}.{k}" for k in range(start, stop + 1)}
        assert entry.number in numbers, f"{dotted}'s docstring does not name eq {entry.number}"


@pytest.mark.parametrize("entry", EQUATIONS, ids=lambda e: e.number)
def test_each_named_test_exists(entry):
    assert entry.tested_by, entry.number
    for node in entry.tested_by:
        path, name = node.split("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in names, f"{node} does not exist"


def test_the_notes_formula_sheet_maps_to_registered_equations():
    numbers = {e.number for e in EQUATIONS}
    assert set(NOTES_SHEET.values()) <= numbers
    assert equation("8.7") is equation("4.2")
    with pytest.raises(ValueError, match="number must be one of"):
        equation("9.9")
