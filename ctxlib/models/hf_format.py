"""Reading and writing Hugging Face model directories (``config.json`` + weights).

ctxlib's modules use Hugging Face's parameter names, so a checkpoint's state dict loads as it
is; this module only knows the file layout: which weight file to read, and how to write one
that ``transformers`` reads back.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ctxlib._files import as_path, atomic_path, read_text, write_text_atomically

CONFIG_NAME = "config.json"
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")


def _directory(path: str | Path) -> Path:
    directory = as_path("path", path)
    if not directory.is_dir():
        raise FileNotFoundError(f"path={str(directory)!r} is not a directory: give a Hugging Face model directory "
                                f"({CONFIG_NAME} and one of {list(WEIGHT_NAMES)})")
    return directory


def config_file(path: str | Path) -> Path:
    return _directory(path) / CONFIG_NAME


def read_config(path: str | Path) -> dict[str, Any]:
    """``config.json`` as a dict; a missing, non-UTF-8 or non-JSON file is an error naming it."""
    file = config_file(path)
    if not file.is_file():
        raise FileNotFoundError(f"path={str(file.parent)!r} has no {CONFIG_NAME}: not a Hugging Face model directory")
    try:
        config = json.loads(read_text(file))
    except json.JSONDecodeError as error:
        raise ValueError(f"{file}: not valid JSON ({error})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{file}: a config must be a JSON object of settings, got a {type(config).__name__}")
    return config


def weights_file(path: str | Path) -> Path:
    """The weight file ``read_state_dict`` reads: the first of ``WEIGHT_NAMES`` present."""
    directory = _directory(path)
    for name in WEIGHT_NAMES:
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"path={str(directory)!r} holds none of {list(WEIGHT_NAMES)}")


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of ``weights_file(path)``; ``.bin`` is read with ``weights_only``. A file
    that is damaged or not a checkpoint is an error naming it."""
    file = weights_file(path)
    try:
        state = load_file(file) if file.suffix == ".safetensors" else torch.load(file, map_location="cpu",
                                                                                 weights_only=True)
    except (SafetensorError, RuntimeError, EOFError, OSError, pickle.UnpicklingError) as error:
        raise ValueError(f"{file}: cannot be read as a {file.suffix} checkpoint, it is damaged or of another "
                         f"format ({type(error).__name__}: {str(error)[:200]})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{file}: a checkpoint must map names to tensors, got a {type(state).__name__}")
    return state


def write(path: str | Path, config: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> Path:
    """Write ``config.json`` and ``model.safetensors`` (each atomically); tied tensors must
    already be dropped."""
    directory = as_path("path", path)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {key: value.detach().contiguous() for key, value in state_dict.items()}
    with atomic_path(directory / WEIGHT_NAMES[0]) as temporary:
        save_file(tensors, temporary, metadata={"format": "pt"})
    write_text_atomically(directory / CONFIG_NAME, json.dumps(config, indent=2, sort_keys=True) + "\n")
    return directory
