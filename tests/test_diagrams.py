"""The diagrams: the learning path follows the book's table of contents, and the drawn labels say
what the models compute."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from ctxlib.viz.diagrams import (  # noqa: E402
    BOOK_PATH,
    SHORT_PATH,
    Page,
    chapter_dependencies,
    draw_bert_input,
    draw_elmo,
    draw_electra,
    draw_encoder_block,
    draw_learning_path,
)

ROOT = Path(__file__).resolve().parents[1]


def toc_chapters() -> list[str]:
    """The files of the "Chapters" part of _toc.yml, in reading order, without book/ and .md."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    part = next(p for p in toc["parts"] if p["caption"] == "Chapters")
    files = []
    for chapter in part["chapters"]:
        files.append(chapter["file"])
        files += [section["file"] for section in chapter.get("sections", [])]
    return [f.removeprefix("book/") for f in files]


def texts(fig: plt.Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_learning_path_lists_the_book_s_pages_in_reading_order():
    assert [page.file for page in BOOK_PATH] == toc_chapters()


def test_every_page_needs_only_pages_before_it_and_the_short_path_is_on_the_path():
    seen: set[str] = set()
    for page in BOOK_PATH:
        assert set(page.needs) <= seen, f"{page.number} needs {set(page.needs) - seen}, which come later or not at all"
        seen.add(page.number)
    assert set(SHORT_PATH) <= seen


def test_chapter_dependencies_drop_the_edges_implied_by_others():
    pages = [Page("1", "a", "a"), Page("2", "b", "b", ("1",)), Page("3.1", "c", "c", ("2", "1")),
             Page("3.2", "d", "d", ("3.1",)), Page("4", "e", "e")]
    assert chapter_dependencies(pages) == {"1": set(), "2": {"1"}, "3": {"2"}, "4": set()}
    with pytest.raises(ValueError, match="unknown"):
        chapter_dependencies([Page("1", "a", "a", ("7",))])


def test_learning_path_draws_every_chapter_and_rejects_an_unknown_page():
    fig = draw_learning_path()
    drawn = " ".join(texts(fig))
    for chapter in {page.chapter for page in BOOK_PATH}:
        assert f"{chapter}. " in drawn
    plt.close(fig)
    with pytest.raises(ValueError, match="short_path"):
        draw_learning_path(short_path=("1", "10"))


def test_electra_diagram_labels_a_sample_equal_to_the_original_as_original():
    fig = draw_electra(original=("a", "b", "c"), masked=(0, 2), sampled=("a", "x"))
    labels = texts(fig)
    verdicts = [t for t in labels if t in {"original", "replaced"}]
    assert verdicts == ["original", "original", "replaced"]
    plt.close(fig)
    with pytest.raises(ValueError, match="sampled"):
        draw_electra(original=("a", "b"), masked=(0,), sampled=("x", "y"))
    with pytest.raises(ValueError, match="masked"):
        draw_electra(original=("a", "b"), masked=(5,), sampled=("x",))


def test_bert_input_draws_one_column_per_token_with_its_segment():
    fig = draw_bert_input(["[CLS]", "a", "[SEP]", "b", "[SEP]"], [0, 0, 0, 1, 1])
    labels = texts(fig)
    assert sum("seg},A" in t for t in labels) == 3 and sum("seg},B" in t for t in labels) == 2
    assert sum("pos}," in t for t in labels) == 5
    plt.close(fig)
    with pytest.raises(ValueError, match="segments"):
        draw_bert_input(["a", "b"], [0])
    with pytest.raises(ValueError, match="segments"):
        draw_bert_input(["a", "b"], [0, 2])


def test_elmo_and_encoder_diagrams_show_their_shapes():
    fig = draw_elmo(("x", "y"), layers=3)
    labels = texts(fig)
    # one forward and one backward cell per word and layer, one shared char CNN and softmax per word
    assert sum("overset" in t for t in labels) == 2 * 2 * 3
    assert sum(t.startswith("char CNN") for t in labels) == 2
    plt.close(fig)
    fig = draw_encoder_block(d_model=64, d_ff=256, heads=4, layers=2)
    drawn = " ".join(texts(fig))
    assert "Linear(64 → 256)" in drawn and "h$ = 4" in drawn and "× 2 blocks" in drawn
    plt.close(fig)
    with pytest.raises(ValueError, match="layers"):
        draw_elmo(("x",), layers=0)


def test_the_equation_map_places_every_registered_equation_once_per_role():
    from ctxlib.equations import EQUATIONS
    from ctxlib.viz.diagrams import EQUATION_MAP, draw_equation_map

    placed = {n for _, chain in EQUATION_MAP for _, numbers in chain for n in numbers}
    assert placed == {e.number for e in EQUATIONS}
    fig = draw_equation_map()
    assert sum(("eq " in t or "eqs " in t) for t in texts(fig)) == sum(bool(numbers) for _, chain in EQUATION_MAP for _, numbers in chain)
    plt.close(fig)


def test_timeline_orders_the_history_and_draws_every_model():
    from ctxlib.viz.diagrams import MILESTONES, draw_timeline

    when = {m.name: m.when for m in MILESTONES}
    # The order the book's history depends on: ULMFiT and GPT-1 before BERT, GPT-1 before BERT.
    assert when["ULMFiT"] < when["ELMo"] < when["GPT-1"] < when["BERT"] < when["GPT-2"]
    fig = draw_timeline()
    assert {t for t in texts(fig)} >= {m.name for m in MILESTONES}
    plt.close(fig)
    with pytest.raises(ValueError, match="milestones"):
        draw_timeline(())
