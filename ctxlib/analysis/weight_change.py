"""How far fine-tuning moved a model from where it started, as one number.

Section 6.2 compares AdamW with Adam + L2 by how far each carries the pretrained encoder in the
same number of steps: ``‖θ − θ₀‖ / ‖θ₀‖`` over the weight matrices the two models share (the
Frobenius norms of all of them stacked together). Biases and LayerNorm gains are left out: they
are few, start near 0 or 1, and would make the ratio depend on a handful of numbers.
"""

from __future__ import annotations

import torch
from torch import nn

_FROZEN = "word_embeddings"  # the fine-tuning recipe freezes them: including them only dilutes the ratio


def relative_change(after: nn.Module, before: nn.Module, *, skip: str = _FROZEN) -> float:
    """``‖θ_after − θ_before‖ / ‖θ_before‖`` over the 2-D weights of ``before`` whose names do not
    contain ``skip`` (the frozen word embeddings by default). ``after`` must hold a tensor of the
    same shape under every such name; a model fine-tuned from ``before`` does."""
    for name, value in (("after", after), ("before", before)):
        if not isinstance(value, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    moved, start = after.state_dict(), before.state_dict()
    names = [n for n, p in start.items() if p.dim() == 2 and skip not in n]
    if not names:
        raise ValueError(f"before has no 2-D weights outside {skip!r} to compare")
    missing = [n for n in names if n not in moved or moved[n].shape != start[n].shape]
    if missing:
        raise ValueError(f"after lacks {len(missing)} of before's weights, or holds them in another shape "
                         f"(first: {missing[0]!r}); is it the same architecture?")
    with torch.no_grad():
        difference = sum((moved[n].float() - start[n].float()).pow(2).sum() for n in names)
        size = sum(start[n].float().pow(2).sum() for n in names)
    if size == 0:
        raise ValueError("before's compared weights are all zero: a change relative to them is undefined")
    return float(difference.sqrt() / size.sqrt())
