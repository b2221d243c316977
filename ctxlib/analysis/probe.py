"""How well a layer's vectors separate labelled groups (word senses, parts of speech, ...).

Two scores, both computed on cosine distance by default, the geometry contextual vectors are
compared in (``metric="euclidean"`` also counts the vectors' lengths; chapter 1's exercise 4):

* the silhouette (Rousseeuw 1987): for each point, ``(b - a) / max(a, b)`` with ``a`` its mean
  distance to its own group and ``b`` to the nearest other group, averaged; 1 is perfectly
  separated, 0 is overlapping;
* leave-one-out 1-nearest-neighbour accuracy: how often a point's nearest other point carries
  its label. Peters et al. (2018, §5.3) compare a test occurrence with sense *centroids* from
  training data instead, not with single occurrences: that protocol is ``ctxlib.analysis.wsd``.

Both accept ``[N, H]`` arrays and ``[L, N, H]`` stacks of layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial.distance import cdist
from sklearn.metrics import pairwise_distances, silhouette_score

from ctxlib._checks import check_choice

# Distances closer than this count as ties; identical vectors give exactly equal distances
# (ctxlib.analysis.wsd breaks ties between sense centroids with the same tolerance).
TIE_TOLERANCE = 1e-9
METRICS = ("cosine", "euclidean")


def _as_array(vectors: np.ndarray | torch.Tensor, labels: Sequence[object], ndim: int) -> tuple[np.ndarray, np.ndarray]:
    array = vectors.detach().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
    if array.ndim != ndim:
        raise ValueError(f"vectors must have {ndim} dimensions, got shape {array.shape}")
    labels = np.asarray(labels)
    if labels.shape != (array.shape[-2],):
        raise ValueError(f"labels must have one entry per vector ({array.shape[-2]}), got {labels.shape}")
    if len(np.unique(labels)) < 2:
        raise ValueError(f"labels must contain at least two groups, got {np.unique(labels).tolist()}")
    return array.astype(np.float64), labels


def silhouette(vectors: np.ndarray | torch.Tensor, labels: Sequence[object], metric: str = "cosine") -> float:
    """Mean silhouette on ``metric`` distance (cosine, or euclidean); 0 where all vectors coincide
    (nothing is separated)."""
    check_choice("metric", metric, METRICS)
    array, labels = _as_array(vectors, labels, 2)
    return float(silhouette_score(array, labels, metric=metric))


def _distances(array: np.ndarray, metric: str) -> np.ndarray:
    """All pairwise distances, exact enough that identical vectors tie. sklearn's euclidean
    distance is sqrt(|x|^2 + |y|^2 - 2 x.y): for identical float32 vectors of 50 dimensions the
    sum leaves ~1e-14 and its root ~1e-7, far above TIE_TOLERANCE. scipy's cdist takes the root
    of the summed squared differences, which is exactly 0 for identical vectors."""
    if metric == "euclidean":
        as_float64 = array.astype(np.float64)
        return cdist(as_float64, as_float64, metric="euclidean")
    return pairwise_distances(array, metric=metric)  # 1 - cos: no root, identical vectors agree to 1e-16


def loo_1nn_accuracy(vectors: np.ndarray | torch.Tensor, labels: Sequence[object], metric: str = "cosine") -> float:
    """Leave-one-out 1-NN accuracy on ``metric`` distance (cosine, or euclidean), ties broken
    uniformly at random.

    The tie rule is computed exactly rather than sampled: a point whose k nearest neighbours are
    tied scores the fraction of them that share its label. So identical vectors (a static
    embedding) score the chance level instead of whatever the sort order happens to favour.
    """
    check_choice("metric", metric, METRICS)
    array, labels = _as_array(vectors, labels, 2)
    distances = _distances(array, metric)
    np.fill_diagonal(distances, np.inf)
    nearest = distances <= distances.min(axis=1, keepdims=True) + TIE_TOLERANCE
    same = labels[:, None] == labels[None, :]
    return float(np.mean((nearest & same).sum(axis=1) / nearest.sum(axis=1)))


@dataclass(frozen=True)
class Separation:
    """Per-layer scores, in the order of ``layer_names``."""

    layer_names: tuple[str, ...]
    silhouette: tuple[float, ...]
    nn_accuracy: tuple[float, ...]
    chance: float

    def best_layer(self) -> str:
        return self.layer_names[int(np.argmax(self.nn_accuracy))]


def loo_chance(labels: Sequence[object]) -> float:
    """The leave-one-out 1-NN accuracy of identical vectors, ``sum_k n_k (n_k - 1) / (N (N - 1))``
    for groups of sizes ``n_k``: the expected agreement with a random other point."""
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    total = int(counts.sum())
    if total < 2:
        raise ValueError(f"labels must hold at least two entries, got {total}")
    return float(np.sum(counts * (counts - 1)) / (total * (total - 1)))


def separation_by_layer(
    layers: np.ndarray | torch.Tensor, labels: Sequence[object], layer_names: Sequence[str], metric: str = "cosine"
) -> Separation:
    """Both scores for every layer of an ``[L, N, H]`` stack, on ``metric`` distance, plus the
    1-NN chance level."""
    array, labels_array = _as_array(layers, labels, 3)
    if len(layer_names) != array.shape[0]:
        raise ValueError(f"layer_names must name each of the {array.shape[0]} layers, got {len(layer_names)}")
    return Separation(
        layer_names=tuple(layer_names),
        silhouette=tuple(silhouette(layer, labels_array, metric) for layer in array),
        nn_accuracy=tuple(loo_1nn_accuracy(layer, labels_array, metric) for layer in array),
        chance=loo_chance(labels_array),
    )


def linear_probe_accuracy(train_x: np.ndarray | torch.Tensor, train_y: Sequence[object],
                          test_x: np.ndarray | torch.Tensor, test_y: Sequence[object], alpha: float = 1.0) -> float:
    """Held-out accuracy of a linear classifier trained on frozen vectors: how much of a
    property a layer holds *linearly* (Tenney et al. 2019). The classifier is ridge-regularised
    least squares on standardised features, one-vs-rest: a closed-form solve, so probing every
    layer of a model takes seconds, and no iterative optimiser can stop short of convergence."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, train_labels = _as_array(train_x, train_y, 2)
    test, test_labels = _as_array(test_x, test_y, 2)
    probe = make_pipeline(StandardScaler(), RidgeClassifier(alpha=alpha))
    probe.fit(train, train_labels)
    return float(probe.score(test, test_labels))


def nn_accuracy(train_x: np.ndarray | torch.Tensor, train_y: Sequence[object],
                test_x: np.ndarray | torch.Tensor, test_y: Sequence[object]) -> float:
    """Held-out 1-nearest-neighbour accuracy on cosine distance: each test vector takes the
    label of its nearest training vector: no trained parameters at all. (Peters et al. 2018,
    §5.3, take the nearest sense *centroid* instead: ``ctxlib.analysis.wsd``.)"""
    train, train_labels = _as_array(train_x, train_y, 2)
    test, test_labels = _as_array(test_x, test_y, 2)
    nearest = pairwise_distances(test, train, metric="cosine").argmin(axis=1)
    return float(np.mean(train_labels[nearest] == test_labels))
