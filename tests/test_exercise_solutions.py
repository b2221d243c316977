"""The solutions that quote a measurement name the bench entry that made it, and it exists.

bench/exercise_solutions.py registers one function per measured exercise, named by its page
and number (``05-1`` is book/05_*.md's exercise 1). A solution cites it in backticks. A cited
name with no function is a figure nobody can reproduce; a function no page cites is dead code.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = r"\d{2}[a-z]?-\d+"


def registered() -> set[str]:
    source = (ROOT / "bench" / "exercise_solutions.py").read_text(encoding="utf-8")
    return set(re.findall(rf'@exercise\("({NAME})"\)', source))


def cited() -> dict[str, set[str]]:
    """Bench names cited in each page's solutions, by page prefix ("05", "07b")."""
    out: dict[str, set[str]] = {}
    for page in sorted((ROOT / "book").glob("[0-9]*.md")):
        text = page.read_text(encoding="utf-8")
        solutions = text[text.find(":class: dropdown"):] if ":class: dropdown" in text else ""
        names = set(re.findall(rf"`(?:python bench/exercise_solutions\.py )?({NAME})`", solutions))
        if names:
            out[page.name.split("_")[0]] = names
    return out


def test_every_cited_measurement_has_its_bench_entry():
    entries = registered()
    for prefix, names in cited().items():
        assert names <= entries, f"book/{prefix}_*.md cites {sorted(names - entries)}, which the bench lacks"


def test_every_bench_entry_is_cited_by_its_own_page():
    # A page may cite another page's entry too (6.1 reuses chapter 3's masking arms).
    pages = cited()
    orphans = {name for name in registered() if name not in pages.get(name.split("-")[0], set())}
    assert orphans == set(), f"bench entries their page's solutions never cite: {sorted(orphans)}"
