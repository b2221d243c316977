"""ctxlib.claims: the comparison rule, the bench's record mode, and the record against the book."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxlib import claims
from ctxlib.claims import Spread, book_seed, claim, recorded_spreads

BOOK = Path(__file__).resolve().parents[1] / "book"
# claim("name", ... in a page's code: the names the book asserts or shows.
CLAIM_NAME = re.compile(r"""\bclaim\(\s*(?:f?)(["'])(.+?)\1""")


def test_gap_and_margin_by_hand(monkeypatch):
    monkeypatch.delenv(claims.RECORD_ENV, raising=False)
    result = claim("higher", 0.9, ">", 0.6, margin=0.2)
    assert result.gap == pytest.approx(0.3) and result.holds
    result = claim("lower", 10.0, "<", 12.5, margin=2.0)
    assert result.gap == pytest.approx(2.5) and result.holds
    with pytest.raises(AssertionError, match=r"higher by more: 0.9 > 0.6 by more than 0.4 does not hold"):
        claim("higher by more", 0.9, ">", 0.6, margin=0.4)
    # Equal to the margin is not more than the margin.
    with pytest.raises(AssertionError):
        claim("exactly the margin", 1.5, ">", 1.0, margin=0.5)
    shown = claim("within the noise", 0.50, ">", 0.51, asserted=False)
    assert not shown.holds and not shown.asserted


@pytest.mark.parametrize("gaps, verdict", [
    ((0.02, 0.15, 0.09, 0.04), "held at every seed, but its smallest gap (0.02) is within its spread over them (0.13)"),
    ((0.5, 0.6, 0.55, 0.52), "held at every seed, by more than its spread over them (0.1): claimable"),
    ((0.02, -0.01, 0.05, 0.0), "held at 2 of 4 seeds"),
    ((-39.0, -77.9, -50.0, -41.0), "reversed at every seed, by more than its spread over them (38.9): the opposite holds"),
    ((-0.1, -0.3, -0.2, -0.15), "reversed at every seed, but by less than its spread over them (0.2): the opposite holds"),
    ((0.0, 0.0, -0.1, 0.0), "held at 0 of 4 seeds"),
])
def test_a_shown_claim_says_which_of_three_it_is(gaps, verdict, monkeypatch, capsys):
    spread = Spread((0, 1, 2, 3), (0.0,) * 4, (0.0,) * 4, gaps, 0.0)
    assert spread.verdict == verdict
    monkeypatch.delenv(claims.RECORD_ENV, raising=False)
    monkeypatch.setattr(claims, "recorded_spreads", lambda: {"a shown comparison": spread})
    claim("a shown comparison", 0.5, ">", 0.4, asserted=False)
    assert capsys.readouterr().out.startswith(f"shown, {verdict}: a shown comparison: 0.5 > 0.4;")


def test_under_the_bench_claims_are_recorded_not_raised(monkeypatch, tmp_path, capsys):
    record = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.RECORD_ENV, str(record))
    monkeypatch.setenv(claims.SEED_ENV, "3")
    claim("fails here", 0.1, ">", 0.2)
    claim("holds here", 0.3, "<", 0.5, margin=0.1)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(line["name"], line["seed"], line["left"], line["right"]) for line in lines] == [
        ("fails here", 3, 0.1, 0.2), ("holds here", 3, 0.3, 0.5)]
    assert "FAILS: fails here" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, error, message", [
    ({"relation": ">="}, ValueError, r"relation must be one of \['>', '<'\], got '>='"),
    ({"left": float("nan")}, ValueError, "left must be finite, got nan"),
    ({"right": "0.5"}, TypeError, "right must be a number, got str '0.5'"),
    ({"margin": -0.1}, ValueError, "margin must be ≥ 0, got -0.1"),
    ({"name": " "}, ValueError, "name must be a non-empty string"),
])
def test_bad_claims_are_named(kwargs, error, message):
    arguments = {"name": "a claim", "left": 1.0, "relation": ">", "right": 0.0, **kwargs}
    with pytest.raises(error, match=message):
        claim(**arguments)


def test_seed_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(claims.SEED_ENV, raising=False)
    assert book_seed() == 0
    monkeypatch.setenv(claims.SEED_ENV, "2")
    assert book_seed() == 2
    monkeypatch.setenv(claims.SEED_ENV, "-1")
    with pytest.raises(ValueError, match=r"\$CTXBOOK_SEED must be a non-negative integer, got '-1'"):
        book_seed()


def test_spread_noise_is_the_range_of_the_gap():
    # Scores that move together (one model, two conditions) leave the gap steady: the noise is
    # the gap's range, 0.04, not the scores' 0.2.
    spread = Spread(seeds=(0, 1, 2), left=(0.8, 0.6, 0.7), right=(0.5, 0.32, 0.38), gaps=(0.3, 0.28, 0.32),
                    margin=0.29)
    assert spread.noise == pytest.approx(0.04) and spread.held == 2


def book_claims() -> dict[str, re.Pattern]:
    """Each claim name a page writes, as a pattern: an f-string's fields ("{task}") match any text,
    so a claim made in a loop covers the names it records, one per pass."""
    names: dict[str, str] = {}
    for page in sorted(BOOK.glob("*.md")):
        for _, name in CLAIM_NAME.findall(page.read_text(encoding="utf-8")):
            assert name not in names, f"claim {name!r} is made on {names[name]} and {page.name}: names must be unique"
            names[name] = page.name
    return {name: re.compile("".join(".+" if part.startswith("{") else re.escape(part)
                                     for part in re.split(r"(\{[^}]*\})", name))) for name in names}


def test_every_claim_in_the_book_held_at_every_seed_by_more_than_the_noise():
    """The record bench/robustness.py wrote covers every claim the pages make and nothing else,
    each asserted one held at every seed, and its margin is at least the noise (rerun the bench
    after changing a claim)."""
    spreads = recorded_spreads()
    patterns = book_claims()
    matched = {name: [recorded for recorded in spreads if pattern.fullmatch(recorded)]
               for name, pattern in patterns.items()}
    missing = sorted(name for name, found in matched.items() if not found)
    assert not missing, f"claims never run by bench/robustness.py --write: {missing}"
    stale = sorted(set(spreads) - {recorded for found in matched.values() for recorded in found})
    assert not stale, f"the record holds claims no page makes any more (rerun the bench): {stale}"
    record = json.loads((Path(claims.__file__).parent / "data" / "robustness.json").read_text())
    assert len(record["seeds"]) >= 4
    for name in spreads:
        entry, spread = record["claims"][name], spreads[name]
        assert sorted(spread.seeds) == sorted(record["seeds"]), name
        if entry["asserted"]:
            assert spread.held == len(spread.seeds), f"{name}: held at {spread.held} of {len(spread.seeds)} seeds"
            assert spread.margin >= spread.noise, f"{name}: margin {spread.margin} below the noise {spread.noise}"
        else:  # a comparison that earned a claim is claimed, not shown as if it had not
            assert min(spread.gaps) <= spread.noise, (
                f"{name}: held at every seed by more than its spread ({min(spread.gaps):.3g} > {spread.noise:.3g}): "
                "assert it, with a margin between the two")


def test_no_page_cell_ends_on_a_bare_claim_whose_value_the_page_would_render():
    """A cell whose last statement is ``claim(...)`` without ``;`` shows the Claim's repr as an
    output; in a figure cell MyST-NB then gives it the figure's caption and name a second time,
    and the warnings-as-errors build stops on the duplicate target."""
    import ast

    import jupytext

    offenders = []
    for page in sorted((Path(__file__).resolve().parents[1] / "book").glob("*.md")):
        notebook = jupytext.read(page, fmt="md:myst")
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # IPython magics: not Python, and not a claim
                continue
            last = tree.body[-1] if tree.body else None
            if (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                    and getattr(last.value.func, "id", None) == "claim" and not cell.source.rstrip().endswith(";")):
                offenders.append(f"{page.name}, cell {index}")
    assert offenders == [], f"end these cells' last claim(...) with ';': {offenders}"
