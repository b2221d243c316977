"""Checks of the built HTML that need no browser: figures and equation numbers.

* Every executed cell that shows a matplotlib figure (``plt.show()``) must carry an image in
  the page: a figure that silently failed to render (a non-inline backend, say) is the kind of
  loss a reader of the static page cannot recover.
* Every ``{eq}`` reference must show the number its equation shows, and equations labelled
  ``eq-N-M`` must show the notes' number (N.M).
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from test_rendered_pages import HTML, PAGES, _missing

CHAPTERS = [page for page in PAGES if page.startswith("book/")]


@pytest.fixture(scope="module", params=CHAPTERS or [None])
def soup(request):
    if request.param is None:
        _missing("no built book", f"at {HTML}")
    return request.param, BeautifulSoup((HTML / request.param).read_text(encoding="utf-8"), "html.parser")


def test_every_shown_figure_is_in_the_page(soup):
    page, tree = soup
    for cell in tree.select("div.cell"):
        source = cell.select_one("div.cell_input")
        if source is not None and "plt.show()" in source.get_text():
            output = cell.select_one("div.cell_output")
            assert output is not None and output.find("img"), (
                f"{page}: a cell calls plt.show() but its output has no image:\n{source.get_text()[:200]}")


def test_equation_numbers_follow_the_notes(soup):
    page, tree = soup
    numbers = {}
    for equation in tree.select("div.math[id^=equation-]"):
        label = equation["id"].removeprefix("equation-")
        shown = equation.select_one("span.eqno").find(string=True).strip()  # without the "#" permalink
        numbers[label] = shown
        match = re.fullmatch(r"eq-(\d+)-(\d+)", label)
        if match:
            assert shown == f"({match[1]}.{match[2]})", f"{page}: {label} is shown as {shown}"
    for link in tree.select('a.reference.internal[href*="#equation-"]'):
        label = link["href"].split("#equation-", 1)[1]
        if label in numbers:
            assert link.get_text(strip=True) == numbers[label], f"{page}: a reference to {label} reads {link.get_text()}"


def test_tables_a_cell_displays_are_rendered_as_tables(soup):
    # A Markdown table that a cell displays is parsed only if myst-nb renders cell Markdown as
    # MyST (nb_render_markdown_format); otherwise the reader sees a paragraph of pipes.
    page, tree = soup
    for output in tree.select("div.cell_output"):
        for paragraph in output.find_all("p"):
            text = paragraph.get_text(" ", strip=True)
            assert not re.match(r"\|.*\|\s*\|?\s*-{3}", text), f"{page}: a displayed table was not rendered: {text[:120]}"



# A tqdm bar's line: "description:  37%|███▋      | 370/1000 [...". Every run's first redraw is at
# 0/N steps, so a page that keeps a run's redraws keeps that one; a run's last state never is.
BAR_LINE = re.compile(r"\d{1,3}%\|[^|\n]*\| *(\d+)/\d+ \[")


def test_training_bars_leave_only_their_final_line(soup):
    """A page keeps each training run's last bar state, not the redraws before it
    (ctxlib.training.progress)."""
    page, tree = soup
    text = "\n".join(output.get_text() for output in tree.select("div.cell_output"))
    started = [m.group(0) for m in BAR_LINE.finditer(text) if m.group(1) == "0"]
    assert not started, f"{page}: {len(started)} runs' redraws kept in the page, e.g. {started[:2]}"


def test_no_cell_output_is_a_raw_repr(soup):
    """A claim prints its own line; the Claim it returns is not echoed after it as a dataclass repr
    (a cell that ends with a claim ends it with ';')."""
    page, tree = soup
    raw = [output.get_text()[:120] for output in tree.select("div.cell_output")
           if re.search(r"\b(Claim|Spread|History|FineTuned)\((name|seeds|steps|setting)=", output.get_text())]
    assert not raw, f"{page}: raw reprs in the page: {raw[:3]}"


def test_every_figure_has_a_caption(soup):
    """Every image a cell draws and every explorer sits in a figure whose caption says what to
    look at (MyST-NB's cell option ``mystnb.figure.caption``)."""
    page, tree = soup
    bare = []
    for output in tree.select("div.cell_output"):
        for shown in output.select("img, div.ctx-explorer"):
            figure = shown.find_parent("figure")
            caption = figure.find("figcaption") if figure is not None else None
            if caption is None or len(caption.get_text(" ", strip=True)) < 20:
                bare.append(shown.get("src") or shown.get("class"))
    assert not bare, f"{page}: figures without a caption: {bare}"


# A claim's printed line (ctxlib.claims._describe): its scores, the page's gap where asserted,
# and the record's range of the gap over the seeds.
CLAIM_LINE = re.compile(r"(?:holds|FAILS|shown, [^:\n]*): (?P<name>[^\n]+?): (?P<left>-?[\d.e+-]+) (?P<rel>[<>]) "
                        r"(?P<right>-?[\d.e+-]+)[^;\n]*?(?: \(gap (?P<gap>-?[\d.e+-]+)\))?; gap (?P<low>-?[\d.e+-]+) "
                        r"to (?P<high>-?[\d.e+-]+) over seeds(?P<rest>[^\n]*)")


def test_every_claim_gap_lies_in_the_range_printed_beside_it(soup):
    """The page's own gap lies within the recorded range of gaps, on the machine that measured
    the record (elsewhere the line says so, and its gap is a new sample that may fall outside)."""
    page, tree = soup
    text = "\n".join(output.get_text() for output in tree.select("div.cell_output"))
    outside = []
    for line in CLAIM_LINE.finditer(text):
        if "recorded where" in line["rest"]:
            continue
        left, right, low, high = (float(line[key]) for key in ("left", "right", "low", "high"))
        gap = float(line["gap"]) if line["gap"] else (left - right if line["rel"] == ">" else right - left)
        # Printed to 3-4 significant figures: allow the rounding of each number.
        slack = 5e-4 * (abs(left) + abs(right)) + 5e-3 * max(abs(low), abs(high), abs(gap))
        if not low - slack <= gap <= high + slack:
            outside.append(f"{line['name']}: gap {gap:.4g} outside {low:.4g} to {high:.4g}")
    assert not outside, f"{page}: claims whose gap is outside the recorded range: {outside}"
