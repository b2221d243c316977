"""Why eq 4.2 divides by √d_k, measured (notes §4.1).

For a query and a key with independent unit-variance coordinates, ``q · k`` is a sum of d_k
products of variance 1: its variance is d_k. Unscaled, the scores spread further apart as d_k
grows, the softmax puts nearly all its weight on the largest, and its Jacobian
``diag(p) − p pᵀ`` goes to 0: the gradient that reaches the scores vanishes. Dividing by √d_k
keeps the variance at 1 for every d_k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ctxlib._checks import check_positive_int

SCALINGS = ("unscaled", "scaled by √d_k")


def attention_scores(d_k: int, keys: int, samples: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """``[samples, keys]`` scores of random unit-variance queries and keys, both ways."""
    q = torch.randn(samples, 1, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(samples, keys, d_k, generator=generator, dtype=torch.float64)
    raw = (q * k).sum(-1)
    return {"unscaled": raw, "scaled by √d_k": raw / math.sqrt(d_k)}


def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of ``∂softmax(s)/∂s = diag(p) − p pᵀ`` for each row of ``scores``."""
    p = scores.softmax(-1)
    jacobian = torch.diag_embed(p) - p[..., :, None] * p[..., None, :]
    return jacobian.flatten(-2).norm(dim=-1)


@dataclass(frozen=True)
class ScalingStudy:
    """Per d_k and scaling: the variance of the scores, the mean largest softmax weight and the
    mean norm of the softmax's Jacobian (how much gradient reaches the scores)."""

    d_k: tuple[int, ...]
    keys: int
    variance: dict[str, np.ndarray]
    max_weight: dict[str, np.ndarray]
    jacobian_norm: dict[str, np.ndarray]


def scaling_study(d_ks: Sequence[int] = (4, 16, 64, 256, 1024), keys: int = 32, samples: int = 400,
                  seed: int = 0) -> ScalingStudy:
    """Measure the three quantities for each ``d_k``, with ``keys`` keys per query."""
    check_positive_int("keys", keys)
    check_positive_int("samples", samples)
    for d_k in d_ks:
        check_positive_int("d_k", d_k)
    generator = torch.Generator().manual_seed(seed)
    rows = [attention_scores(d_k, keys, samples, generator) for d_k in d_ks]
    measures = {
        "variance": lambda s: float(s.var()),
        "max_weight": lambda s: float(s.softmax(-1).max(-1).values.mean()),
        "jacobian_norm": lambda s: float(softmax_jacobian_norm(s).mean()),
    }
    return ScalingStudy(tuple(d_ks), keys, **{
        name: {scaling: np.array([measure(row[scaling]) for row in rows]) for scaling in SCALINGS}
        for name, measure in measures.items()})
