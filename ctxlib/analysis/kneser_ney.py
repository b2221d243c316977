"""Interpolated Kneser–Ney n-gram language models (Kneser & Ney 1995; Chen & Goodman 1999, §3):
the count-based baseline a neural language model's perplexity stands beside.

For the highest order, with history ``h`` (the previous n − 1 words) and ``h'`` its last n − 2,

    P(w | h) = max(c(h, w) − D, 0) / c(h)  +  D · N₁₊(h •) / c(h) · P_lower(w | h'),

and every lower order replaces the count ``c`` by the **continuation count** N₁₊(• h' w), the
number of distinct words seen before ``h' w``: a word that follows many contexts (*Francisco*
follows one) is a good guess for an unseen one. The lowest order interpolates with the uniform
distribution over the outcomes, so a word never seen (``<unk>`` included) keeps some mass. A
history never seen hands all its mass to the lower order. Each order's discount is Ney et al.'s
estimate ``D = n₁ / (n₁ + 2 n₂)`` from the counts of counts of that order.

Sentences are scored as the biLM's forward direction scores them: ``<S>`` (repeated to fill the
first history), every word (outside the vocabulary: ``<unk>``), then ``</S>``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

from ctxlib._checks import check_choice
from ctxlib.data.vocabulary import Vocabulary

__all__ = ["KneserNeyLanguageModel"]


class KneserNeyLanguageModel:
    """An interpolated Kneser–Ney model of ``order`` 1, 2 or 3 counted on ``train`` over ``vocab``."""

    def __init__(self, train: Sequence[Sequence[str]], vocab: Vocabulary, order: int = 3) -> None:
        self.order = check_choice("order", order, (1, 2, 3))
        if len(train) == 0:
            raise ValueError("train must hold at least one sentence, got none")
        self.vocab = vocab
        self.outcomes = len(vocab) - 2  # <pad> and <S> are never predicted
        top: Counter = Counter()  # n-gram counts of the highest order
        for sentence in train:
            sequence = self.ids(sentence)
            top.update(tuple(sequence[i - order + 1:i + 1]) for i in range(order - 1, len(sequence)))
        # counts[k]: the counts used at order k + 1 (raw at the top, continuation counts below).
        self.counts: list[Counter] = [Counter() for _ in range(order)]
        self.counts[-1] = top
        for k in range(order - 1, 0, -1):
            for gram in self.counts[k]:
                self.counts[k - 1][gram[1:]] += 1
        self.discount, self.context, self.followers = [], [], []
        for counts in self.counts:
            n1 = sum(1 for c in counts.values() if c == 1)
            n2 = sum(1 for c in counts.values() if c == 2)
            self.discount.append(n1 / (n1 + 2 * n2) if n1 + n2 else 0.5)
            context, followers = Counter(), Counter()
            for gram, count in counts.items():
                context[gram[:-1]] += count
                followers[gram[:-1]] += 1
            self.context.append(context)
            self.followers.append(followers)

    def ids(self, sentence: Sequence[str]) -> list[int]:
        if isinstance(sentence, str):
            raise TypeError(f"a sentence must be a sequence of tokens, not one str, got {sentence!r}")
        return [self.vocab.bos_id] * (self.order - 1) + [self.vocab.id(t) for t in sentence] + [self.vocab.eos_id]

    def probability(self, history: tuple[int, ...], word: int) -> float:
        """``P(word | history)``, ``history`` the previous ``order − 1`` ids."""
        probability = 1.0 / self.outcomes
        for k in range(self.order):  # from the unigram up to the full history
            context = history[len(history) - k:] if k else ()
            total = self.context[k][context]
            if total == 0:
                continue  # an unseen history: the lower order's estimate stands
            d = self.discount[k]
            probability = (max(self.counts[k][(*context, word)] - d, 0.0) / total
                           + d * self.followers[k][context] / total * probability)
        return probability

    def perplexity(self, test: Sequence[Sequence[str]]) -> float:
        """``exp`` of the mean negative log-likelihood per predicted token (every word and ``</S>``)."""
        if len(test) == 0:
            raise ValueError("test must hold at least one sentence, got none")
        log_likelihood, tokens = 0.0, 0
        cache: dict = defaultdict(dict)
        for sentence in test:
            sequence = self.ids(sentence)
            for i in range(self.order - 1, len(sequence)):
                history, word = tuple(sequence[i - self.order + 1:i]), sequence[i]
                if word not in cache[history]:
                    cache[history][word] = self.probability(history, word)
                log_likelihood += math.log(cache[history][word])
                tokens += 1
        return math.exp(-log_likelihood / tokens)
