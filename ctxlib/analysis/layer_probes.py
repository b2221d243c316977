"""What each layer holds: probing tasks on the book's corpus (notes §2.4, Peters et al. 2018 §5.3).

Two tasks with exact labels, since the corpus grammar wrote them:

* **part of speech** (syntax): a linear probe on every word's vector, Universal POS tags;
* **word sense** (semantics): the occurrences of the ten ambiguous words, each labelled with
  its sense; scored by held-out 1-nearest-neighbour accuracy over single training occurrences
  (Peters et al. take the nearest sense centroid instead: ``ctxlib.analysis.wsd.centroid_scores``)
  and by a linear probe.

Probes are trained on sentences of the corpus's training split and scored on its ``novel``
split, written from templates that training never used: a probe that only recognised a
template it had seen would not score there.

The same sentences are encoded by any model (ELMo, BERT), so the layers can be compared side
by side.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ctxlib.analysis.occurrences import OccurrenceVectors
from ctxlib.analysis.probe import linear_probe_accuracy, nn_accuracy
from ctxlib.analysis.wsd import centroid_scores
from ctxlib.data.corpus import Corpus, TaggedSentence, novel_sentences

Encoder = Callable[[Sequence[Sequence[str]]], OccurrenceVectors]


@dataclass(frozen=True)
class TokenTask:
    """Vectors ``[L, N, H]`` of the words a task labels, for a training and a test set, with the
    words themselves (what the static baselines of ``ctxlib.analysis.baselines`` look up)."""

    name: str
    layer_names: tuple[str, ...]
    train_layers: torch.Tensor
    train_labels: tuple[str, ...]
    test_layers: torch.Tensor
    test_labels: tuple[str, ...]
    train_words: tuple[str, ...]
    test_words: tuple[str, ...]


def sample_sentences(sentences: Sequence[TaggedSentence], count: int, seed: int) -> list[TaggedSentence]:
    """``count`` sentences that contain an ambiguous word, chosen reproducibly."""
    with_sense = [s for s in sentences if any(s.senses)]
    return random.Random(seed).sample(with_sense, min(count, len(with_sense)))


def probe_tasks(encode: Encoder, corpus: Corpus, train_sentences: int = 700, test_sentences: int = 250,
                max_pos_tokens: int = 2500, seed: int = 0) -> dict[str, TokenTask]:
    """Encode sampled training sentences and sentences of unseen templates (``corpus.novel``)
    once; cut out the POS and sense tasks."""
    rng = np.random.default_rng(seed)
    splits = {}
    for split, sentences, count in (("train", corpus.train, train_sentences),
                                    ("test", novel_sentences(corpus), test_sentences)):
        chosen = sample_sentences(sentences, count, seed)
        vectors = encode([s.tokens for s in chosen])
        words = [token for s in chosen for token in s.tokens]
        pos = [tag for s in chosen for tag in s.pos]
        senses = [sense for s in chosen for sense in s.senses]
        # POS: a random subset of all words keeps the probe's cost bounded.
        pos_index = np.sort(rng.permutation(len(pos))[:max_pos_tokens])
        sense_index = np.array([i for i, sense in enumerate(senses) if sense is not None])
        splits[split] = {"vectors": vectors, "words": words, "labels": {"part of speech": pos, "word sense": senses},
                         "index": {"part of speech": pos_index, "word sense": sense_index}}
    tasks = {}
    for task in ("part of speech", "word sense"):
        train, test = splits["train"], splits["test"]
        train_index, test_index = train["index"][task], test["index"][task]
        tasks[task] = TokenTask(
            task, train["vectors"].layer_names,
            train["vectors"].vectors[:, train_index], tuple(train["labels"][task][i] for i in train_index),
            test["vectors"].vectors[:, test_index], tuple(test["labels"][task][i] for i in test_index),
            tuple(train["words"][i] for i in train_index), tuple(test["words"][i] for i in test_index),
        )
    return tasks


def probe_scores(tasks: dict[str, TokenTask]) -> dict[str, list[float]]:
    """Per layer: POS linear-probe accuracy; sense accuracy by 1-NN over single training
    occurrences, by Peters et al.'s nearest sense centroid (``ctxlib.analysis.wsd``; a word's
    most frequent training sense is its first sense), and by a linear probe."""
    pos, sense = tasks["part of speech"], tasks["word sense"]
    lemma = lambda label: label.split("/")[0]  # "bank/river" -> "bank"
    train_lemmas, test_lemmas = [lemma(x) for x in sense.train_labels], [lemma(x) for x in sense.test_labels]
    first = {word: Counter(x for x in sense.train_labels if lemma(x) == word).most_common(1)[0][0]
             for word in set(train_lemmas)}
    return {
        "POS, linear probe": [linear_probe_accuracy(a, pos.train_labels, b, pos.test_labels)
                              for a, b in zip(pos.train_layers, pos.test_layers)],
        "sense, 1-NN": [nn_accuracy(a, sense.train_labels, b, sense.test_labels)
                        for a, b in zip(sense.train_layers, sense.test_layers)],
        "sense, nearest centroid": [float(centroid_scores(a, train_lemmas, sense.train_labels, b, test_lemmas,
                                                          sense.test_labels, first).mean())
                                    for a, b in zip(sense.train_layers, sense.test_layers)],
        "sense, linear probe": [linear_probe_accuracy(a, sense.train_labels, b, sense.test_labels)
                                for a, b in zip(sense.train_layers, sense.test_layers)],
    }
