"""A sentence the reader types, placed among the polysemy explorer's occurrences (Chapter 1).

The reader writes a sentence with one of the explorer's words. Its occurrence gets a vector at
every layer exactly as the data's occurrences did (``ctxlib.analysis.occurrences``: the mean of
the word's WordPieces), lands on the same PCA plane (``PolysemyStudy.pca_axes``),
and is named by its nearest sense: the sense whose centroid, the mean of that sense's
occurrence vectors in the full H-dimensional space, has the largest cosine with it (the
nearest-centroid rule; the explorer's 1-NN score uses single occurrences instead).

``place_sentence`` is ctxlib's answer. In the rendered book the same computation runs in the
browser (``book/_static/typed_sentence.js``, MiniLM exported by ``ctxlib.models.onnx_export``)
on the axes and centroids that ``typed_sentence_data`` writes; the browser test compares the two.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from ctxlib.analysis.occurrences import occurrence_vectors
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.data.senses import SenseSentence, find_occurrence
from ctxlib.models.bert import BertModel

# The page's test sentences: (text, word, the sense a reader would name). None of them is in
# the explorer's data. Each is placed at the explorer's default layer (EXAMPLE_LAYER) by ctxlib
# and by the browser, and both must name this sense.
EXAMPLE_SENTENCES: tuple[tuple[str, str, str], ...] = (
    ("I opened a savings account at the bank downtown.", "bank", "finance"),
    ("We sat on the grassy bank and watched the river flow past.", "bank", "river"),
    ("A bat flew out of the cave as the sun went down.", "bat", "animal"),
    ("He gripped the bat and hit the ball over the fence.", "bat", "sports"),
    ("The new car plant will employ two thousand workers.", "plant", "factory"),
    ("Water the plant on the windowsill once a week.", "plant", "organism"),
    ("The seal slid off the rock into the cold sea.", "seal", "animal"),
    ("Tulips and daffodils bloom in spring after the long winter.", "spring", "season"),
)
EXAMPLE_LAYER = "layer 6"
# Cosines closer than this are a tie: the float rounding of equal centroids, far below the
# differences between senses (and below what int8 weights change).
TIE = 1e-6


def surface_form(word: str) -> str:
    """How a sentence spells the explorer word ``word``: a WordNet key such as "bank.n" (lemma
    and part of speech, ``ctxlib.data.wordnet``) is written "bank"; a corpus word as it is."""
    return re.sub(r"\.[nvasr]$", "", word)


def find_typed_word(text: str, words: Sequence[str], prefer: str | None = None) -> SenseSentence:
    """The occurrence of an explorer word in ``text`` (whole word, any case, spelt as
    ``surface_form`` gives): ``prefer`` if it occurs, else the word that occurs first. None of the
    words, or the chosen one twice, is an error that says what to type."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} {text!r}")
    found = sorted((match.start(), word) for word in words
                   for match in re.finditer(rf"\b{re.escape(surface_form(word))}\b", text, re.IGNORECASE))
    if not found:
        raise ValueError(f"text={text!r} uses none of the explorer's words {list(words)}: "
                         "write a sentence with one of them (as a whole word)")
    present = [word for _, word in found]
    word = prefer if prefer in present else present[0]
    return replace(find_occurrence(text, surface_form(word)), word=word)


def sense_centroids(study: PolysemyStudy, word: str, layer: str) -> tuple[tuple[str, ...], np.ndarray]:
    """The senses of ``word`` (in the data's order) and the mean of each sense's occurrence
    vectors at ``layer``: ``[S, H]``."""
    entry = study.by_word[word]
    vectors = entry.occurrences.layer(layer).double().numpy()
    labels = np.asarray(entry.labels)
    senses = tuple(entry.glosses)
    return senses, np.stack([vectors[labels == sense].mean(axis=0) for sense in senses])


def cosines(vector: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return centroids @ vector / (np.linalg.norm(centroids, axis=1) * np.linalg.norm(vector))


def nearest_sense(senses: Sequence[str], similarity: np.ndarray) -> str | None:
    """The sense of the largest cosine; None when the two largest tie (within ``TIE``): at the
    static row every centroid is the word's one vector, and no sense is nearer than another."""
    order = np.argsort(-similarity, kind="stable")
    if len(order) > 1 and similarity[order[0]] - similarity[order[1]] < TIE:
        return None
    return senses[order[0]]


@dataclass(frozen=True)
class Placement:
    """A typed sentence at every layer (``layer_names`` order): its occurrence vector
    ``vectors`` [L+2, H], its PCA point ``points`` [L+2, 2], the cosine to each sense's centroid
    ``similarity`` [L+2, S] and the nearest sense (None at a tie)."""

    occurrence: SenseSentence
    layer_names: tuple[str, ...]
    senses: tuple[str, ...]
    vectors: np.ndarray
    points: np.ndarray
    similarity: np.ndarray
    nearest: tuple[str | None, ...]

    def at(self, layer: str) -> tuple[np.ndarray, str | None]:
        """The PCA point and the nearest sense at ``layer``."""
        index = self.layer_names.index(layer)
        return self.points[index], self.nearest[index]


def place_sentence(model: BertModel, tokenizer, study: PolysemyStudy, text: str,
                   prefer: str | None = None) -> Placement:
    """Encode ``text``, pool its explorer word's pieces and place it at every layer of ``study``
    (``find_typed_word`` picks the word; ``study`` must be encoded by ``model``)."""
    occurrence = find_typed_word(text, study.words, prefer)
    word = occurrence.word
    vectors = occurrence_vectors(model, tokenizer, [occurrence]).vectors[:, 0].double().numpy()
    points, similarity, nearest = [], [], []
    senses: tuple[str, ...] = ()
    for name, vector in zip(study.layer_names, vectors):
        points.append(study.pca_axes(word, name).project(vector[None])[0])
        senses, centroids = sense_centroids(study, word, name)
        similarity.append(cosines(vector, centroids))
        nearest.append(nearest_sense(senses, similarity[-1]))
    return Placement(occurrence, tuple(study.layer_names), senses, vectors, np.stack(points),
                     np.stack(similarity), tuple(nearest))


def _base64_float32(array: np.ndarray | torch.Tensor) -> str:
    """Little-endian float32, row-major, base64: what the page's JavaScript reads as a Float32Array."""
    array = array.numpy() if isinstance(array, torch.Tensor) else array
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def typed_sentence_data(study: PolysemyStudy) -> dict:
    """What the browser needs to place a typed sentence as ``place_sentence`` does, JSON-able:
    per word and layer the PCA plane (``mean`` [H], ``components`` [2, H]) and the sense
    centroids [S, H] (``senses`` gives their order), each base64 float32."""
    words = {}
    for word in study.words:
        layers = {}
        for name in study.layer_names:
            axes = study.pca_axes(word, name)
            senses, centroids = sense_centroids(study, word, name)
            layers[name] = {"mean": _base64_float32(axes.mean), "components": _base64_float32(axes.components),
                            "centroids": _base64_float32(centroids)}
        words[word] = {"senses": list(senses), "layers": layers}
    dim = study.by_word[study.words[0]].occurrences.vectors.shape[-1]
    return {"dim": int(dim), "layers": list(study.layer_names), "words": words}
