"""The book's figure style, one definition for every page, and the check that keeps figure text
readable where the page shows it.

A rendered page draws a figure at most ``COLUMN_PX`` wide (the text column of the book's theme at
a 1280-pixel window): a figure made wider is scaled down to fit, and its text with it. Text of
``size`` points in a figure ``width`` inches wide therefore shows at

    size / 72 * DPI * min(1, COLUMN_PX / (width * DPI))   pixels,

so a 10-inch figure needs 9.4-point text to show 9 pixels, while a 6-inch one (576 pixels, not
scaled) shows 6.75-point text at 9. ``use_book_style`` sets the fonts large enough for the widest
figure the book draws, and installs a check on every figure pyplot makes: when it is drawn, any
visible text smaller than ``MIN_TEXT_PX`` on the page raises a ``SmallTextWarning`` naming it. The
book's build turns a warning in a cell into a failed build, so a page cannot ship unreadable text.
"""

from __future__ import annotations

import warnings

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.text import Text

DPI = 96
COLUMN_PX = 690  # measured in Chromium: the article column of the theme at a 1280 px window
MIN_TEXT_PX = 9.0
# 10 points: 9.6 px in a 10-inch figure, the widest the book draws. Tick labels, legends and
# annotations are sized relative to it ("medium" by matplotlib's defaults).
BOOK_STYLE = {
    "figure.dpi": DPI,
    "font.size": 10,
    "figure.hooks": ["ctxlib.viz.style:check_text_on_draw"],
}


class SmallTextWarning(UserWarning):
    """Figure text that would show smaller than ``MIN_TEXT_PX`` in the page's column."""


def shown_px(size_points: float, width_inches: float) -> float:
    """The height in page pixels of ``size_points`` text in a figure ``width_inches`` wide."""
    scale = min(1.0, COLUMN_PX / (width_inches * DPI))
    return size_points / 72 * DPI * scale


def small_texts(figure: Figure) -> list[tuple[str, float]]:
    """Each visible, non-empty text of ``figure`` that shows below ``MIN_TEXT_PX``, with its size in
    page pixels."""
    width = figure.get_figwidth()
    found = []
    for text in figure.findobj(Text):
        if text.get_visible() and text.get_text().strip() and text.get_figure() is not None:
            px = shown_px(text.get_fontsize(), width)
            if px < MIN_TEXT_PX:
                found.append((text.get_text()[:40], px))
    return found


def check_text_on_draw(figure: Figure) -> None:
    """A ``figure.hooks`` entry: warn, once per figure, when a drawn figure has text too small."""
    def on_draw(event) -> None:
        if getattr(figure, "_ctx_small_text_reported", False):  # a widget redraws: say it once
            return
        small = small_texts(figure)
        if small:
            figure._ctx_small_text_reported = True
            listed = ", ".join(f"{text!r} at {px:.1f} px" for text, px in small[:5])
            warnings.warn(f"{len(small)} text(s) of a {figure.get_figwidth():g}-inch figure would show below "
                          f"{MIN_TEXT_PX:g} px in the page's {COLUMN_PX} px column: {listed}",
                          SmallTextWarning, stacklevel=2)

    figure.canvas.mpl_connect("draw_event", on_draw)


def use_book_style() -> None:
    """Set the book's figure style (every page's setup cell calls it) and the text-size check."""
    mpl.rcParams.update(BOOK_STYLE)
