"""Where a static vector sits between its word's senses (notes §1.1, eq 1.1).

A static table gives *bank* one vector, trained on every occurrence; eq 1.1's cost is that this
vector must serve all senses. To see which ones it serves, each sense is given a place in the
same space: the **context centroid** of the sense, the mean vector of the words around it in the
book's sense-labelled sentences (``ctxlib.data.senses``), leaving out the word itself and the
``common`` most frequent words of the table (function words, which every context shares). Then

* ``lean``: the word's cosine with each sense's centroid, and
* each of its ``k`` nearest neighbours in the table, assigned to the sense whose centroid it is
  closer to, so that a list of neighbours reads as "mostly the finance sense" (``nearer`` assigns
  any vectors, so that the same share can be read for words that are not neighbours: a null).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ctxlib._checks import check_nonnegative_int, check_positive_int
from ctxlib.analysis.neighbours import nearest
from ctxlib.data.senses import load_sense_sentences, senses

__all__ = ["StaticSenses", "static_senses"]

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class StaticSenses:
    """One word's static vector against its senses' context centroids (module docstring)."""

    word: str
    lean: dict[str, float]                    # sense → cosine(word's vector, the sense's centroid)
    neighbours: list[tuple[str, float, str]]  # (neighbour, cosine with the word, the sense it is closer to)
    centroids: dict[str, torch.Tensor]        # sense → its context centroid

    def nearer(self, vectors: torch.Tensor) -> list[str]:
        """For each row of ``vectors``, the sense whose centroid it is closer to (by cosine)."""
        names = list(self.centroids)
        centre = F.normalize(torch.stack([self.centroids[n] for n in names]), dim=-1)
        return [names[int(i)] for i in (F.normalize(vectors, dim=-1) @ centre.T).argmax(-1)]

    @property
    def dominant(self) -> str:
        """The sense the word's own vector is closer to."""
        return max(self.lean, key=self.lean.get)

    def share(self, sense: str) -> float:
        """The fraction of the neighbours closer to ``sense``."""
        return sum(s == sense for _, _, s in self.neighbours) / len(self.neighbours)


def static_senses(table: torch.Tensor, words: Sequence[str], word: str, k: int = 10,
                  common: int = 100, candidates: int | None = None) -> StaticSenses:
    """``word``'s row of ``table`` (rows named by ``words``, most frequent first, as GloVe's file
    is ordered) against the context centroids of its senses; neighbours among the first
    ``candidates`` rows (all by default) that are words, not punctuation or numbers."""
    check_positive_int("k", k)
    check_nonnegative_int("common", common)
    index = {name: i for i, name in enumerate(words)}
    if word not in index:
        raise ValueError(f"word {word!r} has no row in the table")
    centroids = {}
    for sense in senses(word):
        context = [token for s in load_sense_sentences(word) if s.sense == sense
                   for token in _WORD.findall(s.text.lower()) if token != word]
        rows = [index[token] for token in context if token in index and index[token] >= common]
        if not rows:
            raise ValueError(f"sense {sense!r} of {word!r} has no context word in the table")
        centroids[sense] = table[rows].mean(dim=0)
    names = list(centroids)
    centre = torch.stack([centroids[name] for name in names])
    vector = table[index[word]]
    lean = dict(zip(names, F.cosine_similarity(vector[None], centre).tolist()))
    pool = len(words) if candidates is None else min(candidates, len(words))
    keep = [i for i in range(pool) if _WORD.fullmatch(words[i])]
    found = nearest(table[keep], [words[i] for i in keep], vector[None], k=k, exclude_self=[word])[0]
    view = StaticSenses(word, lean, [], centroids)
    senses_of = view.nearer(table[[index[name] for name, _ in found]])
    view.neighbours.extend((name, similarity, sense) for (name, similarity), sense in zip(found, senses_of))
    return view
