"""Reading and writing Hugging Face model directories (``config.json`` + weights).

ctxlib's modules use Hugging Face's parameter names, so a checkpoint's state dict loads as it
is; this module only knows the file layout: which weight file to read, and how to write one
that ``transformers`` reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

CONFIG_NAME = "config.json"
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")


def _directory(path: str | Path, name: str = "path") -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{name} must be a str or pathlib.Path, got {type(path).__name__}")
    return Path(path)


def read_config(path: str | Path) -> dict[str, Any]:
    directory = _directory(path)
    file = directory / CONFIG_NAME
    if not file.is_file():
        raise FileNotFoundError(f"path={str(directory)!r} has no {CONFIG_NAME}: not a Hugging Face model directory")
    return json.loads(file.read_text())


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The first weight file found, safetensors preferred; ``.bin`` is read with ``weights_only``."""
    directory = _directory(path)
    for name in WEIGHT_NAMES:
        file = directory / name
        if file.is_file():
            if name.endswith(".safetensors"):
                return load_file(file)
            return torch.load(file, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"path={str(directory)!r} holds none of {list(WEIGHT_NAMES)}")


def write(path: str | Path, config: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> Path:
    """Write ``config.json`` and ``model.safetensors``; tied tensors must already be dropped."""
    directory = _directory(path)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_NAME).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tensors = {key: value.detach().contiguous() for key, value in state_dict.items()}
    save_file(tensors, directory / WEIGHT_NAMES[0], metadata={"format": "pt"})
    return directory
