"""Where a static vector sits between its word's senses: the centroids and the neighbours' senses."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from ctxlib.analysis.static_senses import static_senses
from ctxlib.data.glove import load_glove
from ctxlib.data.senses import load_sense_sentences, senses


def test_the_lean_is_the_cosine_with_each_senses_context_centroid():
    glove = load_glove()
    view = static_senses(glove.vectors, glove.words, "bank", k=10)
    for sense in senses("bank"):  # the centroid recomputed by hand: context words, minus bank and the top 100
        words = [w for s in load_sense_sentences("bank") if s.sense == sense
                 for w in re.findall(r"[a-z]+(?:'[a-z]+)?", s.text.lower()) if w != "bank"]
        rows = [glove.index[w] for w in words if w in glove.index and glove.index[w] >= 100]
        expected = F.cosine_similarity(glove["bank"], glove.vectors[rows].mean(0), dim=0)
        assert view.lean[sense] == pytest.approx(float(expected), abs=1e-6)
    assert len(view.neighbours) == 10 and "bank" not in [n for n, _, _ in view.neighbours]
    assert sum(view.share(sense) for sense in senses("bank")) == pytest.approx(1.0)
    similarities = [s for _, s, _ in view.neighbours]
    assert similarities == sorted(similarities, reverse=True)


def test_a_vector_placed_on_one_senses_centroid_leans_to_it_entirely():
    """Move the word's row onto a sense's centroid: its cosine with that centroid becomes 1."""
    glove = load_glove()
    table = glove.vectors.clone()
    first = static_senses(table, glove.words, "seal")
    for sense in senses("seal"):
        words = [w for s in load_sense_sentences("seal") if s.sense == sense
                 for w in re.findall(r"[a-z]+(?:'[a-z]+)?", s.text.lower()) if w != "seal"]
        rows = [glove.index[w] for w in words if w in glove.index and glove.index[w] >= 100]
        table[glove.index["seal"]] = table[rows].mean(0)
        moved = static_senses(table, glove.words, "seal")
        assert moved.lean[sense] == pytest.approx(1.0, abs=1e-5) and moved.dominant == sense
    assert first.lean != moved.lean


def test_bad_input_is_named():
    glove = load_glove()
    with pytest.raises(ValueError, match=r"word 'qwertyuiop' has no row in the table"):
        static_senses(glove.vectors, glove.words, "qwertyuiop")
    with pytest.raises(ValueError, match=r"word must be one of .*got 'carrot'"):
        static_senses(glove.vectors, glove.words, "carrot")
    with pytest.raises(TypeError, match=r"k must be an int"):
        static_senses(glove.vectors, glove.words, "bank", k=2.5)
    assert torch.isfinite(glove.vectors).all()
