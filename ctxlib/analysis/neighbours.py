"""Nearest neighbours by cosine similarity, for looking inside an embedding table."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ctxlib._checks import check_finite, check_positive_int


@torch.no_grad()
def nearest(table: torch.Tensor, names: Sequence[str], queries: torch.Tensor, k: int = 5,
            exclude_self: Sequence[str] | None = None) -> list[list[tuple[str, float]]]:
    """For each query vector, the ``k`` rows of ``table`` with the highest cosine similarity,
    as ``(name, similarity)``; ``exclude_self[i]`` is left out of query i's list (a word is
    always its own nearest neighbour)."""
    if table.dim() != 2 or queries.dim() != 2 or table.size(1) != queries.size(1):
        raise ValueError(f"table [V, H] and queries [N, H] must share H, got {tuple(table.shape)} and {tuple(queries.shape)}")
    if len(names) != table.size(0):
        raise ValueError(f"names must name each of the {table.size(0)} rows, got {len(names)}")
    check_positive_int("k", k)
    if k > table.size(0):
        raise ValueError(f"k={k} is more than the table's {table.size(0)} rows")
    check_finite("table", table)
    check_finite("queries", queries)  # a NaN similarity would sort anywhere
    # A zero vector has no direction: its cosine with anything is undefined (normalize would
    # make it 0 for every row, and the "nearest" would be the table's first rows).
    for name, tensor in (("queries", queries), ("table", table)):
        zero = (tensor == 0).all(dim=1).nonzero().flatten().tolist()
        if zero:
            raise ValueError(f"{name} row(s) {zero[:5]}{' ...' if len(zero) > 5 else ''} are zero vectors, whose "
                             "cosine similarity is undefined; give non-zero vectors")
    similarity = F.normalize(queries, dim=-1) @ F.normalize(table, dim=-1).T
    results = []
    for i, row in enumerate(similarity):
        order = row.argsort(descending=True).tolist()
        skip = exclude_self[i] if exclude_self is not None else None
        chosen = [j for j in order if names[j] != skip][:k]
        results.append([(names[j], float(row[j])) for j in chosen])
    return results
