"""A caller's model comes back in the mode it was given.

A function that reads a model's outputs needs dropout off (eval mode), but the model is the
caller's: one in the middle of training must not come back switched to eval, where it would
go on training without dropout. ``evaluating`` switches every submodule to eval for the block
and then gives each back its own mode (a model can mix them: a frozen encoder kept in eval
under a head in training).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def evaluating(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """``model`` in eval mode inside the block; each of its modules' modes as before after it."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for module, training in modes:
            module.training = training
