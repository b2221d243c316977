"""Interpolated Kneser–Ney: a hand-computed probability, a distribution at every history, the count of tokens."""

from __future__ import annotations

import math

import pytest

from ctxlib.analysis.kneser_ney import KneserNeyLanguageModel
from ctxlib.data.vocabulary import Vocabulary

TRAIN = [["a", "b"], ["a", "c"]]
VOCAB = Vocabulary(["a", "b", "c"])


def test_a_bigram_probability_worked_by_hand():
    """<S> a b </S>, <S> a c </S>. Bigram counts of counts: n1 = 4, n2 = 1, so D₂ = 4/6. Continuation
    counts: a 1, b 1, c 1, </S> 2 (after b and after c), total 5, n1 = 3, n2 = 1, so D₁ = 3/5; 5
    outcomes (<unk>, </S>, a, b, c). P₁(b) = (1 − 3/5)/5 + (3/5)·(4/5)·(1/5) = 0.176;
    P₂(b | a) = (1 − 2/3)/2 + (2/3)·(2/2)·0.176 = 0.284."""
    model = KneserNeyLanguageModel(TRAIN, VOCAB, order=2)
    assert model.discount == pytest.approx([3 / 5, 2 / 3])
    assert model.probability((VOCAB.id("a"),), VOCAB.id("b")) == pytest.approx(0.284)
    assert model.probability((VOCAB.id("b"),), VOCAB.id("b")) == pytest.approx(2 / 3 * 1 * 0.176)  # b: one follower
    # an unseen history: the continuation unigram, all of it
    assert model.probability((VOCAB.id("<unk>"),), VOCAB.id("b")) == pytest.approx(0.176)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_every_history_gives_a_distribution_over_the_outcomes(order):
    train = [s.split() for s in ["the bank of the river", "the bank lends money", "a river bank", "money money"]]
    vocab = Vocabulary(["the", "bank", "of", "river", "lends", "money"])  # "a" is <unk>
    model = KneserNeyLanguageModel(train, vocab, order)
    outcomes = [i for i in range(len(vocab)) if i not in (0, vocab.bos_id)]
    ids = [vocab.bos_id, vocab.id("the"), vocab.id("bank"), vocab.id("<unk>"), vocab.id("lends")]
    histories = {tuple(ids[i:i + order - 1]) for i in range(len(ids) - order + 2)} | {(vocab.id("of"),) * (order - 1)}
    for history in histories:
        assert math.fsum(model.probability(history, w) for w in outcomes) == pytest.approx(1.0, abs=1e-12), history


def test_perplexity_counts_every_word_and_the_end():
    model = KneserNeyLanguageModel(TRAIN, VOCAB, order=2)
    sentence = ["a", "b"]
    ids = model.ids(sentence)
    expected = math.exp(-sum(math.log(model.probability((p,), w)) for p, w in zip(ids, ids[1:])) / 3)
    assert model.perplexity([sentence]) == pytest.approx(expected)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"order must be one of \[1, 2, 3\], got 4"):
        KneserNeyLanguageModel(TRAIN, VOCAB, order=4)
    with pytest.raises(ValueError, match=r"train must hold at least one sentence"):
        KneserNeyLanguageModel([], VOCAB)
    with pytest.raises(TypeError, match=r"a sentence must be a sequence of tokens, not one str"):
        KneserNeyLanguageModel(TRAIN, VOCAB).perplexity(["a b"])
