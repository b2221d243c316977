"""Two-dimensional pictures of high-dimensional vectors: PCA and t-SNE.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE

from ctxlib._checks import check_choice

PROJECTIONS = ("PCA", "t-SNE")


def project_2d(vectors: np.ndarray | torch.Tensor, method: str = "PCA", seed: int = 0) -> np.ndarray:
    """An ``[N, 2]`` picture of ``[N, H]`` vectors: PCA (linear, distances between groups kept)
    or t-SNE (van der Maaten and Hinton 2008; neighbourhoods kept, distances not)."""
    check_choice("method", method, PROJECTIONS)
    array = vectors.detach().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
    array = array.astype(np.float64)
    if np.allclose(array, array[0]):
        return np.zeros((len(array), 2))  # a static embedding: every occurrence is the same point
    if method == "PCA":
        return PCA(n_components=2, random_state=seed).fit_transform(array)
    # Cosine t-SNE matches the geometry the separation scores use.
    perplexity = min(15.0, (len(array) - 1) / 3)
    return TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="pca",
                random_state=seed, max_iter=500).fit_transform(array)

