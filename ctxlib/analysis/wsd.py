"""Word-sense disambiguation with sense centroids: the protocol of Peters et al. (2018, §5.3).

Peters et al. measure how much sense a layer holds with no trained parameters:

1. **Sense centroids.** Encode every occurrence of the training data; the representation of a
   sense (of a lemma) is the average of its training occurrences' vectors.
2. **1-NN at test.** A test occurrence of a lemma takes the sense whose centroid is nearest by
   cosine, among that lemma's senses seen in training.
3. **First-sense fallback.** A lemma with no training occurrence takes WordNet's first sense.
4. **First-sense baseline.** Every test occurrence takes its lemma's first sense (65.9 F1 in
   their Table 5, against 67.4 and 69.0 for the biLM's layers 1 and 2).

Ties between centroids (a static embedding gives every occurrence of a word form one vector, so
the senses seen only in that form have equal centroids) are broken uniformly at random and scored exactly, as
``ctxlib.analysis.probe`` scores leave-one-out ties: an occurrence whose k nearest senses tie
counts 1/k if its sense is among them. The leave-one-out variant, each occurrence against every
other single occurrence of its lemma, is ``probe.loo_1nn_accuracy`` per lemma.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ctxlib._checks import check_probability
from ctxlib.analysis.occurrences import OccurrenceVectors
from ctxlib.analysis.probe import TIE_TOLERANCE, loo_1nn_accuracy, loo_chance
from ctxlib.data import wordnet
from ctxlib.data.senses import SenseSentence


@dataclass(frozen=True)
class Prediction:
    """The senses tied nearest for one test occurrence (one sense unless the centroids tie)."""

    senses: tuple[str, ...]
    fallback: bool

    def score(self, gold: str) -> float:
        """Expected accuracy under a uniformly random choice among the tied senses."""
        return self.senses.count(gold) / len(self.senses)


def split_by_sense(lemmas: Sequence[str], senses: Sequence[str], test_fraction: float, seed: int) -> np.ndarray:
    """A fixed train/test split by sentence, stratified by sense: each (lemma, sense) group's
    occurrences are shuffled with ``seed`` and the first ``floor(n · test_fraction)`` of them are
    test. A sense with n = 2 and ``test_fraction = 0.5`` gives one to each side; a sense with a
    single occurrence stays in training. Returns a boolean mask, True for test.

    Stratifying means every test occurrence's sense has training occurrences. Peters et al.'s
    test sets were not drawn from their training corpus, so some of their test senses and lemmas
    were unseen (hence the fallback); with WordNet's one to three examples a sense, an
    unstratified split would leave most senses on one side only."""
    check_probability("test_fraction", test_fraction)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if len(lemmas) != len(senses):
        raise ValueError(f"lemmas and senses must have one entry per occurrence, got {len(lemmas)} and {len(senses)}")
    groups: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(lemmas, senses)):
        groups.setdefault(key, []).append(i)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(lemmas), dtype=bool)
    for members in groups.values():  # in order of first appearance: the split is a function of the data
        chosen = rng.permutation(members)[: int(len(members) * test_fraction)]
        test[chosen] = True
    return test


def _array(name: str, vectors: np.ndarray | torch.Tensor, count: int) -> np.ndarray:
    array = vectors.detach().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
    if array.ndim != 2 or array.shape[0] != count:
        raise ValueError(f"{name} must be [{count}, H] (one row per occurrence), got shape {array.shape}")
    return array.astype(np.float64)


def sense_centroids(vectors: np.ndarray | torch.Tensor, lemmas: Sequence[str],
                    senses: Sequence[str]) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """lemma -> (its senses seen here, in order of first appearance; their centroids ``[S, H]``):
    each centroid the mean of the sense's occurrence vectors (step 1)."""
    if len(lemmas) != len(senses):
        raise ValueError(f"lemmas and senses must have one entry per occurrence, got {len(lemmas)} and {len(senses)}")
    array = _array("vectors", vectors, len(lemmas))
    members: dict[str, dict[str, list[int]]] = {}
    for i, (lemma, sense) in enumerate(zip(lemmas, senses)):
        members.setdefault(lemma, {}).setdefault(sense, []).append(i)
    return {lemma: (tuple(by_sense), np.stack([array[rows].mean(axis=0) for rows in by_sense.values()]))
            for lemma, by_sense in members.items()}


def _unit_rows(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)  # a zero vector stays zero: cosine 0 to everything


def nearest_sense(centroids: Mapping[str, tuple[tuple[str, ...], np.ndarray]], vectors: np.ndarray | torch.Tensor,
                  lemmas: Sequence[str], first_sense: Mapping[str, str]) -> list[Prediction]:
    """Steps 2 and 3: each occurrence's nearest (cosine) centroid among its lemma's senses, ties
    kept; a lemma without centroids falls back to ``first_sense[lemma]``."""
    array = _array("vectors", vectors, len(lemmas))
    missing = sorted(set(lemmas) - set(first_sense))
    if missing:
        raise ValueError(f"first_sense must give every test lemma's first sense; missing {missing[:5]}")
    predictions: list[Prediction | None] = [None] * len(lemmas)
    for lemma in dict.fromkeys(lemmas):
        rows = [i for i, other in enumerate(lemmas) if other == lemma]
        if lemma not in centroids:
            for i in rows:
                predictions[i] = Prediction((first_sense[lemma],), fallback=True)
            continue
        names, matrix = centroids[lemma]
        # Cosine distance in one product per lemma (sklearn's per-call checks cost more than the maths here).
        distances = 1.0 - _unit_rows(array[rows]) @ _unit_rows(matrix).T
        tied = distances <= distances.min(axis=1, keepdims=True) + TIE_TOLERANCE
        for i, row_tied in zip(rows, tied):
            predictions[i] = Prediction(tuple(n for n, t in zip(names, row_tied) if t), fallback=False)
    return predictions


def centroid_scores(train_vectors: np.ndarray | torch.Tensor, train_lemmas: Sequence[str], train_senses: Sequence[str],
                    test_vectors: np.ndarray | torch.Tensor, test_lemmas: Sequence[str], test_senses: Sequence[str],
                    first_sense: Mapping[str, str]) -> np.ndarray:
    """Steps 1-3 on a given split: per test occurrence, 1 if the nearest centroid (or the
    fallback) is its sense, 0 if not, 1/k if its sense is among k tied centroids."""
    if len(test_lemmas) != len(test_senses):
        raise ValueError(f"test_lemmas and test_senses must have one entry per occurrence, got "
                         f"{len(test_lemmas)} and {len(test_senses)}")
    centroids = sense_centroids(train_vectors, train_lemmas, train_senses)
    predictions = nearest_sense(centroids, test_vectors, test_lemmas, first_sense)
    return np.array([p.score(g) for p, g in zip(predictions, test_senses)])


@dataclass(frozen=True)
class WSDResult:
    """Per layer (in the order of ``layer_names``): centroid 1-NN accuracy on the test split, its
    gain over the first-sense baseline with the gain's standard error (paired over the same test
    occurrences), and leave-one-out 1-NN accuracy over all occurrences. ``chance`` is the
    accuracy of a uniform pick among each test lemma's senses seen in training."""

    layer_names: tuple[str, ...]
    centroid_accuracy: tuple[float, ...]
    gain_standard_error: tuple[float, ...]
    loo_accuracy: tuple[float, ...]
    first_sense_accuracy: float
    chance: float
    loo_chance: float
    n_test: int
    n_train: int
    n_lemmas: int
    n_fallback: int
    test_fraction: float
    seed: int

    def gain(self, layer: str) -> tuple[float, float]:
        """(centroid accuracy − first-sense accuracy, its standard error) at ``layer``."""
        i = self.layer_names.index(layer)
        return self.centroid_accuracy[i] - self.first_sense_accuracy, self.gain_standard_error[i]

    def best_layer(self) -> str:
        return self.layer_names[int(np.argmax(self.centroid_accuracy))]


def wsd_by_layer(occurrences: OccurrenceVectors, sentences: Sequence[SenseSentence], first_sense: Mapping[str, str],
                 test_fraction: float = 0.5, seed: int = 0) -> WSDResult:
    """Peters et al.'s protocol and the leave-one-out variant at every layer of ``occurrences``,
    whose column n is ``sentences[n]`` (``word`` the lemma, ``sense`` its label)."""
    if occurrences.vectors.shape[1] != len(sentences):
        raise ValueError(f"occurrences hold {occurrences.vectors.shape[1]} occurrences but sentences has {len(sentences)}")
    lemmas = [s.word for s in sentences]
    senses = [s.sense for s in sentences]
    missing = sorted(set(lemmas) - set(first_sense))
    if missing:
        raise ValueError(f"first_sense must give every lemma's first sense; missing {missing[:5]}")
    test = split_by_sense(lemmas, senses, test_fraction, seed)
    if test.sum() < 2:
        raise ValueError(f"test_fraction={test_fraction} leaves {int(test.sum())} test occurrences; a standard "
                         "error needs at least 2 (raise test_fraction or give senses more occurrences)")
    train_rows, test_rows = np.flatnonzero(~test), np.flatnonzero(test)
    train_lemmas, train_senses = [lemmas[i] for i in train_rows], [senses[i] for i in train_rows]
    test_lemmas, gold = [lemmas[i] for i in test_rows], [senses[i] for i in test_rows]
    first = np.array([float(first_sense[lemma] == sense) for lemma, sense in zip(test_lemmas, gold)])

    accuracy, standard_error = [], []
    for layer in occurrences.vectors.detach().cpu().numpy():
        scores = centroid_scores(layer[train_rows], train_lemmas, train_senses, layer[test_rows], test_lemmas, gold,
                                 first_sense)
        accuracy.append(float(scores.mean()))
        standard_error.append(float(np.std(scores - first, ddof=1) / np.sqrt(len(scores))))
    # A uniform pick among the senses seen in training; the first sense where none was seen.
    seen: dict[str, set[str]] = {}
    for lemma, sense in zip(train_lemmas, train_senses):
        seen.setdefault(lemma, set()).add(sense)
    chance = [float(g in seen[lemma]) / len(seen[lemma]) if lemma in seen else float(first_sense[lemma] == g)
              for lemma, g in zip(test_lemmas, gold)]
    fallback = sum(lemma not in seen for lemma in test_lemmas)

    # Leave-one-out over every occurrence of each lemma, pooled by occurrence count.
    layers = occurrences.vectors.detach().cpu().numpy()
    loo, chance_sum, total = np.zeros(len(layers)), 0.0, 0
    for lemma in dict.fromkeys(lemmas):
        rows = [i for i, other in enumerate(lemmas) if other == lemma]
        if len({senses[i] for i in rows}) < 2:
            raise ValueError(f"lemma {lemma!r} has occurrences of one sense only; leave-one-out needs two or more")
        labels = [senses[i] for i in rows]
        loo += len(rows) * np.array([loo_1nn_accuracy(layer[rows], labels) for layer in layers])
        chance_sum += len(rows) * loo_chance(labels)
        total += len(rows)

    return WSDResult(
        layer_names=tuple(occurrences.layer_names), centroid_accuracy=tuple(accuracy),
        gain_standard_error=tuple(standard_error), loo_accuracy=tuple(float(a) for a in loo / total),
        first_sense_accuracy=float(first.mean()), chance=float(np.mean(chance)), loo_chance=chance_sum / total,
        n_test=len(test_rows), n_train=len(train_rows), n_lemmas=len(set(lemmas)), n_fallback=fallback,
        test_fraction=float(test_fraction), seed=seed,
    )


def wordnet_wsd(encode: Callable[[Sequence[SenseSentence]], OccurrenceVectors], test_fraction: float = 0.5,
                seed: int = 0) -> WSDResult:
    """The protocol on WordNet 3.0's example sentences (``ctxlib.data.wordnet``) at every layer
    ``encode`` gives: ``lambda spans: occurrence_vectors(model, tokenizer, spans)`` for a BERT,
    ``lambda spans: elmo_occurrence_vectors(elmo, spans)`` for an ELMo."""
    sentences = wordnet.load_sense_sentences()
    vectors = encode(sentences)
    first = {lemma: wordnet.first_sense(lemma) for lemma in wordnet.sense_words()}
    return wsd_by_layer(vectors, sentences, first, test_fraction, seed)
