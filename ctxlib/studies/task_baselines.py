"""What the fine-tuning tasks score without a neural network (notes §5.1): the floors a lookup sets.

A fine-tuned MiniLM's 98 F1 on NER reads differently once a reader knows that tagging each word
with its most frequent training tag gets most of the way. Each task has the baseline a
practitioner would try first, on the same training sentences the fine-tuned runs see:

- **topic**, ``bag_of_words_accuracy``: multinomial logistic regression on word counts, trained
  to its optimum (L-BFGS on a convex loss), its L2 weight chosen on a development split;
- **NER**, ``tag_lookup``: each word's most frequent tag in training, ``O`` for a word training
  never showed (``unseen_entity_share`` counts the test entities that leaves out);
- **QA**, ``answer_lookup``: for each question, the first span of the context that training
  gave as an answer to the same question, and "no answer" when there is none.

Words are lowercased first: the encoder the baselines stand beside is uncased, so both see the
same information.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import torch

from ctxlib.data.task_formats import LabelledText, QAExample, TaggedTokens, entity_f1, entity_spans
from ctxlib.studies.finetuning import answer_scores

# The L2 weights the bag-of-words model chooses among on the development split (per example,
# on the mean loss): from almost none to one that flattens the weights. Not 0: §5.1's 256
# sentences over 884 word types are separable, and the unpenalised optimum is at infinity.
L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def _words(text: str) -> list[str]:
    return text.lower().split()


def _non_empty(name: str, examples: Sequence) -> None:
    if len(examples) == 0:
        raise ValueError(f"{name} must hold at least one example, got none")


# --------------------------------------------------------------------------------------------
# Topic: bag of words.


def _counts(texts: Sequence[str], index: dict[str, int]) -> torch.Tensor:
    features = torch.zeros(len(texts), len(index), dtype=torch.float64)
    for row, text in enumerate(texts):
        for word in _words(text):
            if word in index:
                features[row, index[word]] += 1
    return features


def _logistic_regression(features: torch.Tensor, targets: torch.Tensor, classes: int, l2: float) -> torch.Tensor:
    """The weights (bias in the last row) minimising mean cross-entropy + l2 * |W|²: convex, so
    L-BFGS from zero reaches the one optimum whatever the seed."""
    inputs = torch.cat([features, torch.ones(len(features), 1, dtype=features.dtype)], dim=1)
    weights = torch.zeros(inputs.shape[1], classes, dtype=features.dtype, requires_grad=True)
    optimiser = torch.optim.LBFGS([weights], max_iter=500, tolerance_grad=1e-9, tolerance_change=1e-12,
                                  line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        value = (torch.nn.functional.cross_entropy(inputs @ weights, targets)
                 + l2 * weights[:-1].pow(2).sum())  # the bias is not penalised
        value.backward()
        return value

    optimiser.step(loss)
    return weights.detach()


def bag_of_words_accuracy(train: Sequence[LabelledText], dev: Sequence[LabelledText],
                          test: Sequence[LabelledText], l2_grid: Sequence[float] = L2_GRID) -> tuple[float, float]:
    """``(test accuracy in %, the L2 weight chosen)``: logistic regression on the counts of the
    training vocabulary's words, fitted on ``train`` at each weight of ``l2_grid``, and the fit
    whose weight scores best on ``dev`` (ties: the larger weight, the simpler model) scored on
    ``test``; ``dev`` only chooses."""
    for name, examples in (("train", train), ("dev", dev), ("test", test)):
        _non_empty(name, examples)
    if len(l2_grid) == 0 or any(not isinstance(l2, (int, float)) or l2 < 0 for l2 in l2_grid):
        raise ValueError(f"l2_grid must hold non-negative numbers, got {list(l2_grid)}")
    labels = sorted({e.label for e in train})
    index = {word: i for i, word in enumerate(sorted({w for e in train for w in _words(e.text)}))}
    label_of = {label: i for i, label in enumerate(labels)}

    def accuracy(weights: torch.Tensor, examples: Sequence[LabelledText]) -> float:
        inputs = torch.cat([_counts([e.text for e in examples], index),
                            torch.ones(len(examples), 1, dtype=torch.float64)], dim=1)
        guesses = (inputs @ weights).argmax(-1).tolist()
        return 100 * sum(labels[g] == e.label for g, e in zip(guesses, examples)) / len(examples)

    features = _counts([e.text for e in train], index)
    targets = torch.tensor([label_of[e.label] for e in train])
    fits = {l2: _logistic_regression(features, targets, len(labels), l2) for l2 in l2_grid}
    # Below some weight the fits separate the training set and score dev alike; of equals, max
    # keeps the first, and the grid is sorted from the largest weight down.
    chosen = max(sorted(fits, reverse=True), key=lambda l2: accuracy(fits[l2], dev))
    return accuracy(fits[chosen], test), chosen


# --------------------------------------------------------------------------------------------
# NER: the most frequent tag of each word.


def tag_lookup(train: Sequence[TaggedTokens]) -> Callable[[Sequence[str]], list[str]]:
    """A tagger giving each word its most frequent tag in ``train`` (ties: the tag seen first),
    ``O`` for a word ``train`` never showed."""
    _non_empty("train", train)
    seen: dict[str, Counter] = defaultdict(Counter)
    for sentence in train:
        for word, tag in zip(sentence.tokens, sentence.tags):
            seen[word.lower()][tag] += 1
    best = {word: tags.most_common(1)[0][0] for word, tags in seen.items()}
    return lambda tokens: [best.get(word.lower(), "O") for word in tokens]


def tag_lookup_f1(train: Sequence[TaggedTokens], test: Sequence[TaggedTokens]) -> float:
    """Entity-level F1 (%) of ``tag_lookup(train)`` on ``test``."""
    _non_empty("test", test)
    tagger = tag_lookup(train)
    return 100 * entity_f1([s.tags for s in test], [tagger(s.tokens) for s in test])["f1"]


def unseen_entity_share(train: Sequence[TaggedTokens], test: Sequence[TaggedTokens]) -> float:
    """The share (%) of ``test``'s entities holding a word that no training sentence holds: those
    a lookup cannot tag whole, and a model must tag from context."""
    _non_empty("test", test)
    vocabulary = {word.lower() for sentence in train for word in sentence.tokens}
    entities = [(sentence, first, last) for sentence in test
                for _, first, last in entity_spans(sentence.tags)]
    if not entities:
        raise ValueError("test holds no entity")
    unseen = sum(any(w.lower() not in vocabulary for w in s.tokens[first:last + 1]) for s, first, last in entities)
    return 100 * unseen / len(entities)


# --------------------------------------------------------------------------------------------
# QA: answers seen in training.


def answer_lookup(train: Sequence[QAExample]) -> Callable[[QAExample], str]:
    """For a question, the earliest span of its context that training answered the same question
    with (the longest, where two start together); "" (no answer) when none occurs."""
    _non_empty("train", train)
    known: dict[str, set[str]] = defaultdict(set)
    for example in train:
        known[example.question.lower()].update(answer.text.lower() for answer in example.answers)

    def answer(example: QAExample) -> str:
        context = example.context.lower()
        found = [(match.start(), -len(text), match.start() + len(text))
                 for text in known.get(example.question.lower(), ())
                 for match in re.finditer(rf"(?<!\w){re.escape(text)}(?!\w)", context)]
        if not found:
            return ""
        start, _, end = min(found)
        return example.context[start:end]

    return answer


def answer_lookup_scores(train: Sequence[QAExample], test: Sequence[QAExample]) -> dict[str, float]:
    """SQuAD v2.0 exact match and F1 (%) of ``answer_lookup(train)`` on ``test``."""
    _non_empty("test", test)
    answer = answer_lookup(train)
    scores = [answer_scores(answer(e), [a.text for a in e.answers]) for e in test]
    return {"exact_match": 100 * sum(s[0] for s in scores) / len(test),
            "f1": 100 * sum(s[1] for s in scores) / len(test)}
