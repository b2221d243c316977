"""Reading and writing Hugging Face model directories (``config.json`` + weights).

ctxlib's modules use Hugging Face's parameter names, so a checkpoint's state dict loads as it
is; this module only knows the file layout: which weight file to read, and how to write one
that ``transformers`` reads back. A directory holds one model: writing into one that holds
another replaces all of that model's weight files, as ``transformers``' ``save_pretrained`` does.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ctxlib._files import as_path, atomic_path, read_text

CONFIG_NAME = "config.json"
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")
# transformers' sharded checkpoints: an index naming each tensor's shard, and the shards.
INDEX_NAMES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
SHARD_NAME = re.compile(r"model-\d{5}-of-\d{5}\.safetensors|pytorch_model-\d{5}-of-\d{5}\.bin")


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


def weight_files(directory: Path) -> list[Path]:
    """Every weight file of the model in ``directory``: ``WEIGHT_NAMES``, shard indexes and shards
    (the indexes first, so that a removal stopped half-way never leaves an index without its shards)."""
    found = [file for file in directory.iterdir()
             if file.is_file() and (file.name in WEIGHT_NAMES + INDEX_NAMES or SHARD_NAME.fullmatch(file.name))]
    return sorted(found, key=lambda file: (file.name not in INDEX_NAMES, file.name))


def weights_file(path: str | Path) -> Path:
    """The weight file ``read_state_dict`` reads: the first of ``WEIGHT_NAMES`` present."""
    directory = _directory(path)
    for name in WEIGHT_NAMES:
        if (directory / name).is_file():
            return directory / name
    for name in INDEX_NAMES:
        if (directory / name).is_file():
            raise FileNotFoundError(f"path={str(directory)!r} holds a sharded checkpoint ({name}), which ctxlib "
                                    f"does not read: it reads one of {list(WEIGHT_NAMES)}; save the model again "
                                    "with transformers' save_pretrained(path, max_shard_size=...) above its size")
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
    """Write ``config.json`` and ``model.safetensors``; tied tensors must already be dropped.

    Both files are written in full before either replaces its old version (``atomic_path``), and
    only then are the weight files of a model saved there before removed (``pytorch_model.bin``,
    shards and their indexes): left beside the new weights, they would be read as this model's, or
    mixed with it. A write that fails changes nothing."""
    directory = as_path("path", path)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {key: value.detach().contiguous() for key, value in state_dict.items()}
    weights = directory / WEIGHT_NAMES[0]
    with atomic_path(directory / CONFIG_NAME) as config_temporary, atomic_path(weights) as weights_temporary:
        save_file(tensors, weights_temporary, metadata={"format": "pt"})
        config_temporary.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for stale in weight_files(directory):
        if stale != weights:
            stale.unlink(missing_ok=True)
    return directory
