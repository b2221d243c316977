"""ctxlib.viz.style: the size text shows at on the page, and the check that flags small text."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ctxlib.viz.style import COLUMN_PX, DPI, MIN_TEXT_PX, SmallTextWarning, shown_px, small_texts, use_book_style  # noqa: E402


def test_shown_px_scales_only_figures_wider_than_the_column():
    assert shown_px(9, 5) == pytest.approx(12.0)  # 480 px wide: shown at its size, 9 pt = 12 px at 96 dpi
    wide = 10.0  # 960 px, drawn 690 px wide
    assert shown_px(9, wide) == pytest.approx(12.0 * COLUMN_PX / (wide * DPI))
    assert shown_px(10, wide) > MIN_TEXT_PX > shown_px(9, wide)


def test_the_book_style_passes_its_own_widest_figure_and_flags_small_text():
    with matplotlib.rc_context():  # the style set here is undone afterwards
        _widest_figure_passes_and_small_text_warns()


def _widest_figure_passes_and_small_text_warns():
    use_book_style()
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.plot([0, 1], label="a line")
    ax.set_title("title")
    ax.legend()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallTextWarning)
        fig.canvas.draw()  # default sizes: nothing below 9 px at the widest figure
    ax.annotate("tiny", (0.5, 0.5), fontsize=7)
    assert [text for text, _ in small_texts(fig)] == ["tiny"]
    fresh, ax = plt.subplots(figsize=(10, 3))
    ax.annotate("tiny", (0.5, 0.5), fontsize=7)
    with pytest.warns(SmallTextWarning, match=r"'tiny' at 6\.[0-9] px"):
        fresh.canvas.draw()
    plt.close("all")
