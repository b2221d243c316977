"""Sense separation layer by layer: the analysis behind Chapter 1's polysemy explorer.

For each ambiguous word of a sense source, the book's own sentences (``ctxlib.data.senses``) or
WordNet's example sentences (``ctxlib.data.wordnet``, words such as "bank.n"), it gathers every
occurrence's vectors at every layer (``ctxlib.analysis.occurrences``) and scores how well the
layers separate the senses (``ctxlib.analysis.probe``); ``ctxlib.viz.figures`` draws the picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import numpy as np

from ctxlib._checks import check_choice
from ctxlib.analysis.occurrences import OccurrenceVectors, occurrence_vectors
from ctxlib.analysis.probe import Separation, separation_by_layer
from ctxlib.analysis.projection import PROJECTIONS, PcaAxes, pca_axes, project_2d
from ctxlib.data import senses as sense_data
from ctxlib.data.senses import SenseSentence
from ctxlib.models.bert import BertModel


class SenseSource(Protocol):
    """Where sense-labelled sentences come from. The modules ``ctxlib.data.senses`` (the book's
    sentences) and ``ctxlib.data.wordnet`` (WordNet 3.0's examples) both provide it."""

    def sense_words(self) -> tuple[str, ...]: ...

    def senses(self, word: str) -> dict[str, str]: ...

    def load_sense_sentences(self, word: str | None = None) -> list[SenseSentence]: ...


@dataclass(frozen=True)
class WordSenses:
    """One word's occurrences: their vectors at every layer, their sense labels, the scores."""

    word: str
    glosses: dict[str, str]
    labels: tuple[str, ...]
    texts: tuple[str, ...]
    occurrences: OccurrenceVectors
    separation: Separation


class PolysemyStudy:
    """All sense words of ``source`` (or the chosen ``words``) encoded by one model; projections
    are computed once and kept."""

    def __init__(self, model: BertModel, tokenizer, words: Sequence[str] | None = None,
                 source: SenseSource = sense_data) -> None:
        self.words = tuple(words) if words is not None else source.sense_words()
        spans = [s for word in self.words for s in source.load_sense_sentences(word)]
        # One pass over all sentences: batching across words is what makes this fast.
        vectors = occurrence_vectors(model, tokenizer, spans)
        self.layer_names = vectors.layer_names
        self.by_word: dict[str, WordSenses] = {}
        for word in self.words:
            chosen = [i for i, s in enumerate(spans) if s.word == word]
            occ = OccurrenceVectors(vectors.layer_names, vectors.vectors[:, chosen])
            labels = tuple(spans[i].sense for i in chosen)
            self.by_word[word] = WordSenses(
                word=word, glosses=source.senses(word), labels=labels,
                texts=tuple(spans[i].text for i in chosen), occurrences=occ,
                separation=separation_by_layer(occ.vectors, labels, occ.layer_names),
            )
        # Projections are computed on first request and kept: the explorer redraws without recomputing.
        self.projection = cache(self._project)
        # The PCA planes too: a typed sentence is placed on them (ctxlib.analysis.typed_sentence).
        self.pca_axes = cache(self._pca_axes)

    def _pca_axes(self, word: str, layer: str) -> PcaAxes:
        return pca_axes(self.by_word[word].occurrences.layer(layer))

    def _project(self, word: str, layer: str, method: str) -> np.ndarray:
        vectors = self.by_word[word].occurrences.layer(layer)
        # project_2d's PCA is pca_axes(vectors).project(vectors): reuse the kept plane.
        return self.pca_axes(word, layer).project(vectors) if method == "PCA" else project_2d(vectors, method)

    def precompute_projections(self) -> None:
        """Fill the projection cache for every word, layer and method."""
        for word in self.words:
            for layer in self.layer_names:
                for method in PROJECTIONS:
                    self.projection(word, layer, method)

    def check(self, word: str, layer: str | None, method: str) -> str:
        """Check a view's settings; the layer to show (None: the top layer)."""
        layer = self.layer_names[-1] if layer is None else layer
        check_choice("word", word, self.words)
        check_choice("layer", layer, self.layer_names)
        check_choice("method", method, PROJECTIONS)
        return layer


def checked_study(study: object) -> PolysemyStudy:
    """``study`` itself, once it is known to be a ``PolysemyStudy`` (what the explorer and its
    figure draw from)."""
    if not isinstance(study, PolysemyStudy):
        raise TypeError(f"study must be a PolysemyStudy (ctxlib.analysis.polysemy), got {type(study).__name__}")
    return study
