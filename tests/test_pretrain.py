"""The pretraining recipe on Brown and its checkpoint: a short run, written, read back and re-scored."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from ctxlib.models.allennlp_format import read_allennlp
from ctxlib.models.elmo import ElmoConfig
from ctxlib.studies.brown_pretraining import brown_sentences, brown_vocabulary, pretrain_brown_elmo
from ctxlib.studies.elmo_pretraining import perplexity
from ctxlib.training.loop import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import pretrain  # noqa: E402

TINY = ElmoConfig(filters=((1, 8), (2, 8)), n_highway=1, projection_dim=16, cell_size=32, n_layers=1,
                  cell_clip=None, proj_clip=None)


def test_the_vocabulary_is_the_most_frequent_train_words():
    vocabulary = brown_vocabulary(20)
    assert vocabulary.tokens[4:10] == ["the", ",", ".", "of", "and", "to"]  # Brown's commonest forms
    assert len(vocabulary) == 24


def test_a_checkpoint_reads_back_and_scores_as_its_card_says(tmp_path):
    torch.manual_seed(0)
    run = pretrain_brown_elmo(TrainConfig(steps=3, lr=1e-2, eval_every=3, progress=False, seed=0), TINY,
                              vocab_size=50, batch_size=8)
    directory = pretrain.write_checkpoint(run, tmp_path / "elmo")
    card = json.loads((directory / pretrain.CARD_FILE).read_text())
    assert card["steps"] == 3 and card["softmax_vocabulary"] == 54 and card["batch_size"] == 8
    assert [step for step, _ in card["curve"]["dev forward perplexity"]] == [3]
    elmo, vocabulary = read_allennlp(directory)
    assert vocabulary == run.vocabulary.tokens
    rescored = perplexity(elmo.bilm, brown_sentences("test"), run.vocabulary)
    for direction in ("forward", "backward"):
        assert rescored[direction] == pytest.approx(card["test_perplexity"][direction], rel=1e-5)
    assert "Test perplexity" in (directory / pretrain.CARD_TEXT).read_text()
    baselines = card["kneser_ney_test_perplexity"]
    assert baselines["unigram"] > baselines["bigram"] > 1  # 50 words: the bigram model already helps
    assert not (tmp_path / "elmo.partial").exists()
