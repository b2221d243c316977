"""Two-dimensional pictures of high-dimensional vectors: PCA and t-SNE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE
from threadpoolctl import threadpool_limits

from ctxlib._checks import check_choice

PROJECTIONS = ("PCA", "t-SNE")
EXACT_TSNE_MAX = 300


@dataclass(frozen=True)
class PcaAxes:
    """The plane PCA draws in: a point is ``(v - mean) @ components.T`` (``mean`` [H],
    ``components`` [2, H], orthonormal rows). A vector that was not fitted (a sentence typed
    later) lands on the same axes as the fitted ones."""

    mean: np.ndarray
    components: np.ndarray

    def project(self, vectors: np.ndarray | torch.Tensor) -> np.ndarray:
        return (_as_float64(vectors) - self.mean) @ self.components.T


def _as_float64(vectors: np.ndarray | torch.Tensor) -> np.ndarray:
    array = vectors.detach().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
    return array.astype(np.float64)


def pca_axes(vectors: np.ndarray | torch.Tensor, seed: int = 0) -> PcaAxes:
    """The first two principal axes of ``[N, H]`` vectors. Identical vectors (a static embedding)
    have no axis: ``components`` is 0 and every vector lands on the origin."""
    array = _as_float64(vectors)
    if np.allclose(array, array[0]):
        return PcaAxes(array[0], np.zeros((2, array.shape[1])))
    pca = PCA(n_components=2, random_state=seed).fit(array)
    return PcaAxes(pca.mean_, pca.components_)


def project_2d(vectors: np.ndarray | torch.Tensor, method: str = "PCA", seed: int = 0) -> np.ndarray:
    """An ``[N, 2]`` picture of ``[N, H]`` vectors: PCA (linear, distances between groups kept;
    ``pca_axes``) or t-SNE (van der Maaten and Hinton 2008; neighbourhoods kept, distances not)."""
    check_choice("method", method, PROJECTIONS)
    array = _as_float64(vectors)
    if np.allclose(array, array[0]):
        return np.zeros((len(array), 2))  # a static embedding: every occurrence is the same point
    # One BLAS thread: on a few dozen points more threads only contend (a t-SNE of 30 points
    # takes 0.05 s on one thread, 0.3 s on two busy cores).
    with threadpool_limits(limits=1):
        if method == "PCA":
            return pca_axes(array, seed).project(array)
        # Cosine t-SNE matches the geometry the separation scores use. Below a few hundred points
        # the exact gradient is both exact and faster than Barnes-Hut's approximation (0.05 s vs
        # 0.13 s for 30 points), which matters when a page computes every word × layer.
        perplexity = min(15.0, (len(array) - 1) / 3)
        return TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="pca", random_state=seed, max_iter=500,
                    method="exact" if len(array) <= EXACT_TSNE_MAX else "barnes_hut").fit_transform(array)

