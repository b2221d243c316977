"""Anisotropy: how much the vectors of unrelated words already point the same way.

Ethayarajh (2019) found that the contextual vectors of BERT, ELMo and GPT-2 occupy a narrow cone:
two occurrences of *different* words, drawn at random, have a cosine similarity far above the 0
that isotropic vectors would have, and more so in higher layers. That average is the baseline
every cosine between contextual vectors has to be read against (a similarity of 0.6 says little
at a layer where random pairs score 0.5). This module measures it the way his §4 does: sample
pairs of word occurrences at random, keep the pairs of different words, and average their cosine
similarity at every layer, the same pairs at every layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ctxlib._checks import check_positive_int


@dataclass(frozen=True)
class Anisotropy:
    """Per layer, the mean cosine similarity of the sampled pairs and its standard error
    (the standard deviation of the pairs' cosines over √pairs)."""

    layer_names: tuple[str, ...]
    mean: torch.Tensor
    standard_error: torch.Tensor
    pairs: int


def random_pair_cosine(vectors: torch.Tensor, words: Sequence[str], layer_names: Sequence[str],
                       pairs: int = 2000, seed: int = 0) -> Anisotropy:
    """The average cosine between occurrences of different words, per layer.

    ``vectors`` is ``[L, N, H]`` (a layer stack of N word occurrences, as ``OccurrenceVectors``
    holds it) and ``words[n]`` the word of occurrence n. ``pairs`` pairs (i, j) are drawn
    uniformly among the pairs with ``words[i] != words[j]``, by rejection, from a generator
    seeded with ``seed``, and the same pairs serve every layer.
    """
    if vectors.dim() != 3:
        raise ValueError(f"vectors must be [layers, occurrences, hidden], got shape {tuple(vectors.shape)}")
    if len(words) != vectors.shape[1]:
        raise ValueError(f"words must have one entry per occurrence ({vectors.shape[1]}), got {len(words)}")
    if len(layer_names) != vectors.shape[0]:
        raise ValueError(f"layer_names must have one entry per layer ({vectors.shape[0]}), got {len(layer_names)}")
    check_positive_int("pairs", pairs)
    ids = {word: k for k, word in enumerate(dict.fromkeys(words))}
    if len(ids) < 2:
        raise ValueError(f"words must hold at least two different words, got {sorted(ids)}")
    word_id = torch.tensor([ids[w] for w in words])
    generator = torch.Generator().manual_seed(seed)
    first, second = torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    while len(first) < pairs:  # rejection: keep only pairs of two different words
        i = torch.randint(len(words), (2 * pairs,), generator=generator)
        j = torch.randint(len(words), (2 * pairs,), generator=generator)
        keep = word_id[i] != word_id[j]
        first, second = torch.cat([first, i[keep]])[:pairs], torch.cat([second, j[keep]])[:pairs]
    cosines = torch.nn.functional.cosine_similarity(vectors[:, first].double(), vectors[:, second].double(), dim=-1)
    return Anisotropy(tuple(layer_names), cosines.mean(1), cosines.std(1) / pairs ** 0.5, pairs)
