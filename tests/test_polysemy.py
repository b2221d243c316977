"""The polysemy study and its explorer widget on the real MiniLM."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from ctxlib.data import senses  # noqa: E402
from ctxlib.analysis.polysemy import PolysemyStudy  # noqa: E402
from ctxlib.viz.figures import draw_polysemy  # noqa: E402
from ctxlib.viz.widgets import polysemy_explorer  # noqa: E402


@pytest.fixture(scope="module")
def study(minilm_pair):
    return PolysemyStudy(*minilm_pair, words=["bank", "seal"])


def test_static_row_is_at_chance_and_context_separates(study):
    for word in study.words:
        sep = study.by_word[word].separation
        n = len(senses.load_sense_sentences(word))
        assert len(study.by_word[word].labels) == n
        assert sep.nn_accuracy[0] == pytest.approx(sep.chance)
        # A statistical bound, not a snapshot: at 30 occurrences, chance is ~48%; a layer that
        # separates senses must beat it by far more than sampling noise (±9 points).
        assert max(sep.nn_accuracy) > sep.chance + 0.3


def test_explorer_redraws_on_every_control(study):
    box = polysemy_explorer(study, word="bank", layer="layer 6")
    (word_box, method_box), layer_box, image = box.children[0].children, box.children[1], box.children[2]
    seen = {bytes(image.value)}
    for control, value in ((layer_box, "layer 2"), (word_box, "seal"), (method_box, "t-SNE")):
        control.value = value
        assert bytes(image.value) not in seen, f"changing {control.description} did not redraw"
        seen.add(bytes(image.value))
    assert bytes(image.value).startswith(b"\x89PNG")


def test_bad_settings_are_named(study):
    with pytest.raises(ValueError, match=r"word must be one of \['bank', 'seal'\], got 'bat'"):
        draw_polysemy(study, "bat")
    with pytest.raises(ValueError, match=r"layer must be one of .*got 'layer 7'"):
        polysemy_explorer(study, layer="layer 7")
    with pytest.raises(ValueError, match=r"method must be one of \['PCA', 't-SNE'\], got 'umap'"):
        draw_polysemy(study, "bank", method="umap")
