"""The baselines every score in the book stands beside.

A probe's 78% means nothing alone: if giving each word its most frequent tag scores 88%, the probe
has learned less than a lookup table. These are the floors the pages compare against:

- ``majority_accuracy``: always the most frequent label of the training set (chance, for a task
  whose classes are balanced);
- ``lookup_accuracy``: each key's most frequent training label, the overall majority for a key
  never seen. With the word as the key it is the static word-identity baseline (the most
  frequent tag of a word, the best any model that sees only the word can do on words it has
  seen); with the lemma as the key and senses as labels it is the most-frequent-sense baseline;
- ``NgramLanguageModel``: a unigram or an interpolated bigram language model on the same
  vocabulary and the same held-out tokens as the biLM it is a baseline for.

A third kind, the same encoder at random initialisation, needs no code here: a page builds the
model untrained and runs the same probe on it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

from ctxlib._checks import check_choice
from ctxlib.data.vocabulary import Vocabulary

# Absolute discounting (Ney et al. 1994): the usual value for bigrams, close to the optimum
# n1 / (n1 + 2 n2) estimated from the counts of counts.
BIGRAM_DISCOUNT = 0.75


def _same_length(name: str, first: Sequence, second: Sequence) -> None:
    if len(first) != len(second):
        raise ValueError(f"{name}: the keys and the labels must have one entry each, got {len(first)} and "
                         f"{len(second)}")


def majority_accuracy(train_labels: Sequence[Hashable], test_labels: Sequence[Hashable]) -> float:
    """Accuracy on ``test_labels`` of always answering the most frequent of ``train_labels``
    (ties: the label seen first)."""
    if len(train_labels) == 0 or len(test_labels) == 0:
        raise ValueError(f"train_labels and test_labels must be non-empty, got {len(train_labels)} and "
                         f"{len(test_labels)} labels")
    majority = Counter(train_labels).most_common(1)[0][0]
    return sum(label == majority for label in test_labels) / len(test_labels)


def lookup_accuracy(train_keys: Sequence[Hashable], train_labels: Sequence[Hashable],
                    test_keys: Sequence[Hashable], test_labels: Sequence[Hashable]) -> float:
    """Accuracy of answering, for each test key, its most frequent label in training (ties: the
    label seen first), and the overall majority label for a key training never showed."""
    _same_length("train", train_keys, train_labels)
    _same_length("test", test_keys, test_labels)
    if len(train_labels) == 0 or len(test_labels) == 0:
        raise ValueError(f"the training and test sets must be non-empty, got {len(train_labels)} and "
                         f"{len(test_labels)} items")
    by_key: dict[Hashable, Counter] = {}
    for key, label in zip(train_keys, train_labels):
        by_key.setdefault(key, Counter())[label] += 1
    majority = Counter(train_labels).most_common(1)[0][0]
    guesses = (by_key[key].most_common(1)[0][0] if key in by_key else majority for key in test_keys)
    return sum(guess == label for guess, label in zip(guesses, test_labels)) / len(test_labels)


class NgramLanguageModel:
    """A unigram (``order=1``) or bigram (``order=2``) language model counted on ``train``, over
    ``vocab`` (a word outside it is ``<unk>``), predicting every word and the end of each sentence,
    as the biLM's forward direction does (``<S> w_1 … w_T </S>``).

    The unigram model is add-one smoothed over the vocabulary (so ``<unk>`` and unseen words keep
    some mass); the bigram model interpolates absolute discounting with it:
    ``P(w | v) = max(c(v, w) − d, 0) / c(v) + d · N(v) / c(v) · P(w)``, where ``N(v)`` is the number of
    distinct words seen after ``v``; for a ``v`` never seen it is the unigram model.
    """

    def __init__(self, train: Sequence[Sequence[str]], vocab: Vocabulary, order: int = 1) -> None:
        self.order = check_choice("order", order, (1, 2))
        if len(train) == 0:
            raise ValueError("train must hold at least one sentence, got none")
        self.vocab = vocab
        # <pad> and <S> are never predicted; every other entry of the vocabulary can be.
        self.outcomes = len(vocab) - 2
        self.unigrams: Counter = Counter()
        self.bigrams: Counter = Counter()
        for sentence in train:
            sequence = self.ids(sentence)
            self.unigrams.update(sequence[1:])
            self.bigrams.update(zip(sequence, sequence[1:]))
        self.total = sum(self.unigrams.values())
        self.history: Counter = Counter()
        self.followers: Counter = Counter()
        for (previous, _), count in self.bigrams.items():
            self.history[previous] += count
            self.followers[previous] += 1

    def ids(self, sentence: Sequence[str]) -> list[int]:
        return [self.vocab.bos_id, *(self.vocab.id(token) for token in sentence), self.vocab.eos_id]

    def probability(self, previous: int, word: int) -> float:
        """``P(word | previous)`` by vocabulary id (the unigram model ignores ``previous``)."""
        unigram = (self.unigrams[word] + 1) / (self.total + self.outcomes)
        if self.order == 1 or self.history[previous] == 0:
            return unigram
        seen = max(self.bigrams[previous, word] - BIGRAM_DISCOUNT, 0.0) / self.history[previous]
        return seen + BIGRAM_DISCOUNT * self.followers[previous] / self.history[previous] * unigram

    def perplexity(self, test: Sequence[Sequence[str]]) -> float:
        """``exp`` of the mean negative log-likelihood per predicted token of ``test``."""
        if len(test) == 0:
            raise ValueError("test must hold at least one sentence, got none")
        log_likelihood, tokens = 0.0, 0
        for sentence in test:
            sequence = self.ids(sentence)
            for previous, word in zip(sequence, sequence[1:]):
                log_likelihood += math.log(self.probability(previous, word))
                tokens += 1
        return math.exp(-log_likelihood / tokens)
