"""The book's measured claims: each comparison a page asserts, its margin, and its spread over seeds.

A page states a finding about trained models or noisy scores ("the 80/10/10 model names the
visible token far more often than the [MASK]-only one") with ``claim``: the comparison is checked
against an explicit margin, printed beside its numbers and, once ``bench/robustness.py`` has
re-executed the book under further seeds, beside the range the gap took over all of them.

A finding that may not hold at another seed is not a finding. The rule the book keeps, checked by
``tests/test_claims.py`` against the bench's record (``ctxlib/data/robustness.json``, whose
entries are keyed on the code that measured them: ``ctxlib.records``):

- every asserted claim held at every seed the bench ran, by its margin;
- its margin is at least the noise: how far the gap itself moved between seeds (its range,
  max − min). That is the spread of the comparison, paired or not: two scores of one model that
  move together between seeds (NSP rejection rates of one classifier) are not noisier for it,
  and two models trained apart carry both runs' variation in their gap;
- a comparison smaller than that is shown with ``asserted=False``, and says which of three it is
  (``Spread.verdict``): held at every seed but by less than its spread, held at some seeds, or
  reversed at every seed.

Seeds: a page reads ``book_seed()`` (``$CTXBOOK_SEED``, 0 in the book) and passes it to everything
it trains or samples, so the bench can re-run the page at seeds 1, 2, 3 unchanged. Under the bench,
``$CTXBOOK_CLAIMS`` names a JSON-lines file each claim is appended to, and a failing claim is
recorded instead of raised, so one page run measures all of its claims. Outside the bench, a
claim made at a seed the record holds is checked against it (``ctxlib.records.check_against_record``):
on the record's machine the page must reproduce the record's values exactly, or the range
printed beside them would describe other code.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from functools import cache
from numbers import Real

from ctxlib._checks import check_choice
from ctxlib.records import ROBUSTNESS, check_against_record, machine, read_record

SEED_ENV = "CTXBOOK_SEED"
RECORD_ENV = "CTXBOOK_CLAIMS"
_RELATIONS = (">", "<")


def book_seed() -> int:
    """The seed a page trains and samples with: ``$CTXBOOK_SEED``, or 0 (the book's own)."""
    text = os.environ.get(SEED_ENV, "0")
    if not text.isdigit():
        raise ValueError(f"${SEED_ENV} must be a non-negative integer, got {text!r}")
    return int(text)


@dataclass(frozen=True)
class Claim:
    """``left relation right`` by more than ``margin``: the gap is ``left − right`` for ">" and
    ``right − left`` for "<", and the claim holds when the gap exceeds the margin."""

    name: str
    left: float
    relation: str
    right: float
    margin: float
    asserted: bool
    seed: int

    @property
    def gap(self) -> float:
        return self.left - self.right if self.relation == ">" else self.right - self.left

    @property
    def holds(self) -> bool:
        return self.gap > self.margin


@dataclass(frozen=True)
class Spread:
    """What the bench measured for one claim: the compared scores and the gap at each seed."""

    seeds: tuple[int, ...]
    left: tuple[float, ...]
    right: tuple[float, ...]
    gaps: tuple[float, ...]
    margin: float

    @classmethod
    def of(cls, entry: dict) -> Spread:
        """The spread of one claim's entry in the bench's record (``robustness.json``)."""
        return cls(tuple(entry["seeds"]), tuple(entry["left"]), tuple(entry["right"]), tuple(entry["gaps"]),
                   entry["margin"])

    @property
    def noise(self) -> float:
        """The range of the gap over the seeds, how far the comparison moved from seed to seed."""
        return max(self.gaps) - min(self.gaps)

    @property
    def held(self) -> int:
        """At how many seeds the gap exceeded the margin."""
        return sum(gap > self.margin for gap in self.gaps)

    @property
    def verdict(self) -> str:
        """What the seeds say of a comparison the book shows but does not claim, in one of three
        ways: it went the stated way at every seed, but by less than its seed-to-seed spread (so
        the margin a claim needs is not earned); it went that way at some seeds only (a tie counts
        as not held); or it went the other way at every seed, when the opposite of the stated
        comparison is what the seeds show, by more than its spread or not. (A comparison that held
        at every seed by more than its spread is claimable: ``tests/test_claims.py`` requires the
        page to assert it, so no page shows that fourth verdict.)"""
        ahead = sum(gap > 0 for gap in self.gaps)
        behind = sum(gap < 0 for gap in self.gaps)
        if ahead == len(self.gaps):
            smallest = min(self.gaps)
            if smallest > self.noise:
                return f"held at every seed, by more than its spread over them ({self.noise:.3g}): claimable"
            return (f"held at every seed, but its smallest gap ({smallest:.3g}) is within its spread over "
                    f"them ({self.noise:.3g})")
        if behind == len(self.gaps):
            by = "by more than" if -max(self.gaps) > self.noise else "but by less than"
            return f"reversed at every seed, {by} its spread over them ({self.noise:.3g}): the opposite holds"
        return f"held at {ahead} of {len(self.gaps)} seeds"


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


@cache
def recorded_spreads() -> dict[str, Spread]:
    """The spreads ``bench/robustness.py`` last wrote, by claim name (empty before its first run)."""
    return {name: Spread.of(entry) for name, entry in read_record(ROBUSTNESS).get("claims", {}).items()}


def _against_record(claim: Claim) -> str | None:
    """Check a claim made outside the bench at a seed the record holds against the record's
    values at that seed (``check_against_record``); a sentence to print when the check does not apply here."""
    entry = read_record(ROBUSTNESS).get("claims", {}).get(claim.name)
    if entry is None or claim.seed not in entry["seeds"] or os.environ.get(RECORD_ENV):
        return None
    at = entry["seeds"].index(claim.seed)
    return check_against_record(claim.name, {"left": entry["left"][at], "right": entry["right"][at]},
                       {"left": claim.left, "right": claim.right}, entry.get("machine", {}))


def _describe(claim: Claim) -> str:
    words = f"{claim.left:.4g} {claim.relation} {claim.right:.4g}"
    if claim.margin:
        words += f" by more than {claim.margin:.3g}"
    spread = recorded_spreads().get(claim.name)
    if spread is None:
        over = "not yet measured over seeds"
    else:
        seeds = f"{min(spread.seeds)}–{max(spread.seeds)}"
        over = (f"gap {min(spread.gaps):.3g} to {max(spread.gaps):.3g} over seeds {seeds} "
                f"(noise {spread.noise:.3g}), held at {spread.held} of {len(spread.seeds)}")
        note = _against_record(claim)
        if note is not None:
            over += f" ({note})"
    if not claim.asserted:
        verdict = "not yet measured over seeds" if spread is None else spread.verdict
        return f"shown, {verdict}: {claim.name}: {words}; {over}"
    mark = "holds" if claim.holds else "FAILS"
    return f"{mark}: {claim.name}: {words} (gap {claim.gap:.3g}); {over}"


def claim(name: str, left: float, relation: str, right: float, *, margin: float = 0.0,
          asserted: bool = True) -> Claim:
    """Check that ``left`` is ``relation`` (">" or "<") ``right`` by more than ``margin``, print it
    with its spread over seeds, and record it for the bench. ``asserted=False`` shows a comparison
    the book does not claim (its gap is within the noise). Raises ``AssertionError`` when an
    asserted claim fails, except under the bench, which records the failure instead."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    check_choice("relation", relation, _RELATIONS)
    margin = _number("margin", margin)
    if margin < 0:
        raise ValueError(f"margin must be ≥ 0, got {margin}")
    result = Claim(name, _number("left", left), relation, _number("right", right), margin, bool(asserted), book_seed())
    print(_describe(result))
    record = os.environ.get(RECORD_ENV)
    if record:
        with open(record, "a", encoding="utf-8") as file:
            # With what decides its bits (ctxlib.records.machine): the record's exact check is
            # made only where they are the same.
            file.write(json.dumps({**asdict(result), "machine": machine()}) + "\n")
    elif result.asserted and not result.holds:
        raise AssertionError(f"{name}: {left} {relation} {right} by more than {margin} does not hold "
                             f"(gap {result.gap:.4g})")
    return result
