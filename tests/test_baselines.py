"""ctxlib.analysis.baselines: by-hand values and the properties that make them baselines."""

from __future__ import annotations

import math

import pytest

from ctxlib.analysis.baselines import NgramLanguageModel, lookup_accuracy, majority_accuracy
from ctxlib.data.vocabulary import Vocabulary


def test_majority_and_lookup_by_hand():
    assert majority_accuracy(["N", "V", "N"], ["N", "N", "V", "D"]) == 0.5
    # "bank" is N twice and V once; "run" only V; "the" unseen falls back to the majority N.
    keys = ["bank", "bank", "bank", "run"]
    labels = ["N", "N", "V", "V"]
    assert lookup_accuracy(keys, labels, ["bank", "run", "the"], ["N", "V", "D"]) == pytest.approx(2 / 3)
    # A key that always has one label is scored perfectly: the lookup is an upper bound on seen keys
    # for any model that sees only the key.
    assert lookup_accuracy(["a", "b"], ["x", "y"], ["b", "a", "a"], ["y", "x", "x"]) == 1.0


@pytest.mark.parametrize("call, message", [
    (lambda: majority_accuracy([], ["a"]), "must be non-empty, got 0 and 1"),
    (lambda: lookup_accuracy(["a"], ["x", "y"], ["a"], ["x"]), "train: the keys and the labels must have one "
                                                               "entry each, got 1 and 2"),
    (lambda: NgramLanguageModel([["a"]], Vocabulary(["a"]), order=3), r"order must be one of \[1, 2\], got 3"),
    (lambda: NgramLanguageModel([], Vocabulary(["a"])), "train must hold at least one sentence"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_ngram_perplexity_by_hand():
    vocab = Vocabulary(["a", "b"])  # outcomes: <unk>, </S>, a, b
    unigram = NgramLanguageModel([["a", "b"]], vocab, order=1)
    # a and </S> each (1 + 1) / (3 + 4)
    assert unigram.perplexity([["a"]]) == pytest.approx(3.5)
    bigram = NgramLanguageModel([["a", "b"]], vocab, order=2)
    p_a = 0.25 + 0.75 * 2 / 7          # c(<S>, a) = 1: discounted, plus the back-off share
    p_end = 0.75 * 2 / 7               # c(a, </S>) = 0: back-off only
    assert bigram.perplexity([["a"]]) == pytest.approx(1 / math.sqrt(p_a * p_end))


@pytest.mark.parametrize("order", [1, 2])
def test_each_distribution_sums_to_one(order):
    vocab = Vocabulary(["the", "cat", "sat", "dog"])
    model = NgramLanguageModel([["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat"]], vocab, order=order)
    predictable = [i for i in range(len(vocab)) if i not in (vocab.index["<pad>"], vocab.bos_id)]
    for previous in range(len(vocab)):
        assert sum(model.probability(previous, word) for word in predictable) == pytest.approx(1.0)


def test_a_bigram_model_beats_a_unigram_one_on_text_with_word_order():
    vocab = Vocabulary(["the", "cat", "sat", "on", "mat"])
    train = [["the", "cat", "sat", "on", "the", "mat"]] * 20
    test = [["the", "cat", "sat", "on", "the", "mat"]]
    assert NgramLanguageModel(train, vocab, 2).perplexity(test) < 0.5 * NgramLanguageModel(train, vocab, 1).perplexity(test)
