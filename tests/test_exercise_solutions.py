"""The exercise solutions quote their figures from the exercise record, never by hand.

Each page whose solutions quote a measurement has its runs in ``bench/exercises/<page>.py``
(one ``@exercise(N)`` function per exercise); ``bench/exercise_record.py --write`` stores what they
return in ``ctxlib/data/exercises.json``; the page glues it (``ctxlib.records.exercise_figures``)
and the solution quotes ``{glue:text}`ex4.top:.1%```. Checked here: every quoted figure is in
the record, every recorded figure is quoted, every run has its entry, and no decimal number or
percentage in a solution's prose is typed by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ctxlib.records import EXERCISES, exercise_figures, read_record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import exercise_record  # noqa: E402  (bench/exercise_record.py)

GLUE = re.compile(r"\{glue:text\}`([^`:]+)(?::[^`]*)?`")
# What a solution may hold that is not prose: code blocks and spans, math, glue roles.
NOT_PROSE = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$\n]+\$|\{glue:text\}`[^`]*`", re.S)
# A figure typed by hand: a decimal number or a percentage, unless it is a reference to a
# section, equation, table or page ("§2.5", "Eq 2.4", "pages 2.4 and 2.5", "3.7's table").
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*%|(?<![\w.])\d+\.\d+(?![\d.])")
REFERENCE = re.compile(r"(?:§|\b(?:[Ee]qs?\.?|[Ee]quations?|[Ss]ections?|[Pp]ages?|Tables?|[Cc]hapters?|Figs?\.?|Figures?))"
                       r"\s*(?:[\d.]+\s*(?:,|and|or|to|–|-)\s*)*$")


# Numbers in a solution that are not measured: a setting the exercise chose, a threshold it
# defines, a figure quoted from a paper. Each is listed with why, so that adding one is a
# visible decision, not a gap in the check.
NOT_MEASURED = {
    "02b_elmo_layers": {"0.02": "the learning rate of the explorer's run, a setting"},
    "02d_elmo_limits": {"50%": "chance on a two-way choice, a definition"},
    "06c_convergence": {"25%": "the bar a run must clear to count as learning, which the solution sets",
                        "10%": "the warmup share, a setting", "1.0": "the clipping threshold, a setting"},
    "07b_electra": {"15%": "the share of positions masked, a setting",
                    "82.4": "Clark et al.'s Table 5", "82.2": "Clark et al.'s Table 5", "85.0": "Clark et al.'s Table 5"},
}


def typed_figures(prose: str) -> list[str]:
    """The decimal numbers and percentages in ``prose`` that are not references."""
    return [match.group(0) for match in NUMBER.finditer(prose)
            if not REFERENCE.search(prose[max(0, match.start() - 40):match.start()])
            and not re.match(r"['’]s\b", prose[match.end():])]


def solutions(page: Path) -> str:
    """The text of the page's Solutions admonition."""
    text = page.read_text(encoding="utf-8")
    start = text.find("{admonition} Solutions")
    return "" if start < 0 else text[start:]


def pages_with_runs() -> list[Path]:
    return [ROOT / "book" / f"{file.stem}.md" for file in sorted((ROOT / "bench" / "exercises").glob("[0-9]*.py"))]


@pytest.mark.parametrize("page", pages_with_runs(), ids=lambda page: page.stem)
def test_every_quoted_figure_is_recorded_and_every_recorded_figure_is_quoted(page):
    quoted = set(GLUE.findall(solutions(page)))
    recorded = set(exercise_figures(page.stem))
    assert quoted, f"{page.name} has runs in bench/exercises/ but its solutions quote none of them"
    assert quoted <= recorded, f"{page.name} quotes figures the record lacks: {sorted(quoted - recorded)}"
    assert recorded <= quoted, f"{page.name}'s record holds figures no solution quotes: {sorted(recorded - quoted)}"
    assert f'exercise_figures("{page.stem}")' in page.read_text(encoding="utf-8"), f"{page.name} glues nothing"


def test_every_run_has_its_entry_and_every_entry_its_run():
    runs = set(exercise_record.runs())
    entries = set(read_record(EXERCISES)["exercises"])
    assert runs == entries, (f"runs without an entry (run bench/exercise_record.py --write): {sorted(runs - entries)}; "
                             f"entries without a run: {sorted(entries - runs)}")


@pytest.mark.parametrize("page", sorted((ROOT / "book").glob("*.md")), ids=lambda page: page.stem)
def test_no_solution_types_a_figure_by_hand(page):
    prose = NOT_PROSE.sub(" ", solutions(page))
    typed = [figure for figure in typed_figures(prose) if figure.replace(" ", "") not in NOT_MEASURED.get(page.stem, {})]
    assert not typed, f"{page.name}'s solutions type figures by hand (glue them from the record): {typed}"


def test_the_check_finds_a_typed_figure():
    prose = NOT_PROSE.sub(" ", "scored {glue:text}`ex1.a:.1%` and 41.5% at seed 0, with $0.5$ and `1.5`; see "
                               "§2.5, Eq 2.4, pages 2.4 and 2.5 and 3.7's table; 0.73 of the time")
    assert typed_figures(prose) == ["41.5%", "0.73"]


def test_a_run_must_return_figures_a_solution_can_quote():
    with pytest.raises(ValueError, match=r"figure name 'Top layer' must be lower-case"):
        exercise_record.check_figures("x:1", {"Top layer": 0.5})
    with pytest.raises(TypeError, match=r"figure 'curve' must be a number or a text, got list"):
        exercise_record.check_figures("x:1", {"curve": [0.1, 0.2]})
    with pytest.raises(ValueError, match=r"figure 'loss' is nan"):
        exercise_record.check_figures("x:1", {"loss": float("nan")})
    assert exercise_record.check_figures("x:1", {"top": 0.5, "steps": 3, "word": "bank"})
