"""The experiment cache: train once, then load.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ctxlib.training.loop import History


def cache_dir() -> Path:
    """Where the models the book trains are kept: ``$CTXBOOK_CACHE``, else ``~/.cache/ctxbook``."""
    return Path(os.environ.get("CTXBOOK_CACHE", Path.home() / ".cache" / "ctxbook"))


def cached_training(
    name: str,
    key: dict[str, Any],
    build: Callable[[], nn.Module],
    train: Callable[[nn.Module], History],
) -> tuple[nn.Module, History]:
    """``build()`` a model and ``train`` it, or load what an earlier run with the same ``key``
    trained. ``key`` holds everything the result depends on (sizes, steps, seed, data
    version); it names the checkpoint, so changing any of it trains afresh."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    path = cache_dir() / f"{name}-{digest}.pt"
    model = build()
    if path.is_file():
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(saved["state_dict"])
        return model.eval(), History.from_dict(json.loads(saved["history"]))
    history = train(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so an interrupted run never leaves a half checkpoint behind.
    partial = path.with_suffix(".partial")
    torch.save({"state_dict": model.state_dict(), "history": json.dumps(history.to_dict()), "key": json.dumps(key, default=str)}, partial)
    partial.replace(path)
    return model.eval(), history

