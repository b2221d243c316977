"""Sense-labelled sentences for Chapter 1's polysemy explorer.

``ctxlib/data/polysemy.json`` holds, for a handful of ambiguous English words (bank, run, bat,
spring, plant, light, ...), two or three glossed senses and about fifteen hand-written sentences
per sense. Each sentence uses the word exactly once, in its base form, so that a model's vector
for that one occurrence can be labelled with its sense. Chapter 1 embeds the occurrences,
projects them to 2-D and computes separation scores: how much better a contextual model keeps
the senses apart than a static vector, which gives every occurrence the same point.

Every target word is a single WordPiece in the MiniLM vocabulary, so an occurrence maps to one
token position and no sub-word pooling choice colours the scores; ``tests/test_senses.py``
checks this and the other properties of the data.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

_DATA_FILE = "polysemy.json"


@dataclass(frozen=True)
class SenseSentence:
    """One occurrence of ``word`` in ``text``, labelled with ``sense``.

    ``text[start:end]`` is the occurrence itself (its case as written, so a sentence-initial
    "Bank" keeps its capital), ready to be matched against a tokenizer's character offsets.
    """

    word: str
    sense: str
    text: str
    start: int
    end: int


@functools.cache
def _raw() -> dict[str, Any]:
    # Read through importlib.resources so the data is found in an installed wheel as well as in
    # an editable checkout; cached because the explorer asks for it on every widget change.
    text = resources.files("ctxlib").joinpath("data", _DATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def sense_words() -> tuple[str, ...]:
    """The words that have sense-labelled sentences, in the data file's order."""
    return tuple(_raw())


def _check_word(word: object) -> str:
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__} {word!r}")
    allowed = sense_words()
    if word not in allowed:
        raise ValueError(f"word must be one of {list(allowed)}, got {word!r}")
    return word


def senses(word: str) -> dict[str, str]:
    """The senses of ``word``, each mapped to a short gloss."""
    # A copy, so a caller editing the dict cannot corrupt the cached data.
    return dict(_raw()[_check_word(word)]["senses"])


def find_occurrence(text: str, word: str, sense: str = "") -> SenseSentence:
    """The one whole-word, case-insensitive occurrence of ``word`` in ``text`` ("Bank" at a
    sentence start counts, "banker" does not). None, or more than one, is an error: which
    occurrence to label would be a guess."""
    for name, value in (("text", text), ("word", word), ("sense", sense)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    matches = list(re.finditer(rf"\b{re.escape(word)}\b", text, re.IGNORECASE))
    if len(matches) != 1:
        raise ValueError(f"word={word!r} must occur exactly once in text={text!r}, found {len(matches)}")
    return SenseSentence(word, sense, text, matches[0].start(), matches[0].end())


@functools.cache
def _sentences(word: str) -> tuple[SenseSentence, ...]:
    return tuple(find_occurrence(item["text"], word, item["sense"]) for item in _raw()[word]["sentences"])


def load_sense_sentences(word: str | None = None) -> list[SenseSentence]:
    """Every sense-labelled sentence, or only those for ``word``, in the data file's order."""
    words = sense_words() if word is None else (_check_word(word),)
    return [sentence for w in words for sentence in _sentences(w)]
