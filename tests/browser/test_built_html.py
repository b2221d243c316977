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
