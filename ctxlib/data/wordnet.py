"""WordNet 3.0's example sentences, labelled by synset: the book's real-text sense data.

``ctxlib/data/wordnet_examples.json`` is extracted from the WordNet database by
``tools/extract_wordnet.py`` (licence: ``ctxlib/data/WORDNET_LICENSE``). For each chosen lemma, a
word and a part of speech keyed ``"bank.n"`` or ``"run.v"``, it lists every WordNet sense in
WordNet's order (sense 1 is the most frequent in WordNet's sense-tagged corpora, so it is the
*first-sense* baseline's answer), with its gloss and the example sentences that use the lemma,
each with the character span of the word as written ("ran" for run.v).

Two views of the data:

* the whole inventory, ``sense_inventory(lemma)`` and ``first_sense(lemma)``, every sense
  including those with no example;
* the same interface as ``ctxlib.data.senses`` (``sense_words``, ``senses``,
  ``load_sense_sentences``), restricted to the senses with enough examples to be both trained on
  and tested (``min_examples_per_sense`` in the file, 2) and to the lemmas with at least two such
  senses. ``PolysemyStudy`` and the WSD analysis read this view, so "a lemma" and "a sense" mean
  the same thing in both.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ctxlib.data.senses import SenseSentence

DATA_FILE = "wordnet_examples.json"
LICENSE_FILE = "WORDNET_LICENSE"


@dataclass(frozen=True)
class WordNetSense:
    """One WordNet sense of a lemma: ``name`` is lemma.pos.NN with NN its sense number."""

    name: str
    synset: str
    tag_count: int
    gloss: str
    examples: tuple[SenseSentence, ...]


def _validated(raw: dict[str, Any]) -> dict[str, Any]:
    """The file's structure, checked once: every span lies in its text and covers a whole word."""
    where = f"ctxlib/data/{DATA_FILE}"
    for key in ("lemmas", "selection", "counts"):
        if key not in raw:
            raise ValueError(f"{where}: missing top-level key {key!r}; regenerate it with tools/extract_wordnet.py")
    for lemma, entry in raw["lemmas"].items():
        for number, sense in enumerate(entry["senses"], start=1):
            if sense["sense"] != f"{lemma}.{number:02d}":
                raise ValueError(f"{where}: sense {number} of {lemma!r} is named {sense['sense']!r}, "
                                 f"expected {lemma}.{number:02d} (senses must be in WordNet order)")
            for example in sense["examples"]:
                text, start, end = example["text"], example["start"], example["end"]
                inside = 0 <= start < end <= len(text)
                if not inside or not text[start:end].isalpha():
                    raise ValueError(f"{where}: {sense['sense']}: span [{start}, {end}) of {text!r} is not a word")
    return raw


@functools.cache
def _raw() -> dict[str, Any]:
    text = resources.files("ctxlib").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return _validated(json.loads(text))


def licence() -> str:
    """WordNet 3.0's licence, which must travel with the data."""
    return resources.files("ctxlib").joinpath("data", LICENSE_FILE).read_text(encoding="utf-8")


def counts() -> dict[str, Any]:
    """What the extraction kept and dropped: lemmas, senses, sentences, dropped examples by reason."""
    return json.loads(json.dumps(_raw()["counts"]))  # a deep copy: the cached data stays intact


def min_examples_per_sense() -> int:
    return int(_raw()["selection"]["min_examples_per_sense"])


def lemmas() -> tuple[str, ...]:
    """Every lemma in the file, including those with too few examples to test ("bat.n")."""
    return tuple(_raw()["lemmas"])


def _check_lemma(lemma: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(lemma, str):
        raise TypeError(f"lemma must be a str such as 'bank.n', got {type(lemma).__name__} {lemma!r}")
    if lemma not in allowed:
        raise ValueError(f"lemma must be one of {list(allowed)}, got {lemma!r}")
    return lemma


@functools.cache
def sense_inventory(lemma: str) -> tuple[WordNetSense, ...]:
    """All of ``lemma``'s senses in WordNet's order, each with its located examples."""
    entry = _raw()["lemmas"][_check_lemma(lemma, lemmas())]
    return tuple(
        WordNetSense(
            name=s["sense"], synset=s["synset"], tag_count=s["tag_count"], gloss=s["gloss"],
            examples=tuple(SenseSentence(lemma, s["sense"], e["text"], e["start"], e["end"]) for e in s["examples"]),
        )
        for s in entry["senses"]
    )


def first_sense(lemma: str) -> str:
    """WordNet's sense 1 of ``lemma``, whether or not it has examples: the first-sense baseline."""
    return sense_inventory(lemma)[0].name


def _testable(lemma: str) -> tuple[WordNetSense, ...]:
    return tuple(s for s in sense_inventory(lemma) if len(s.examples) >= min_examples_per_sense())


def sense_words() -> tuple[str, ...]:
    """The lemmas with at least two senses that have enough examples to train on and test."""
    return tuple(lemma for lemma in lemmas() if len(_testable(lemma)) >= 2)


def senses(word: str) -> dict[str, str]:
    """The testable senses of ``word`` (a lemma such as 'bank.n'), each mapped to its gloss."""
    return {s.name: s.gloss for s in _testable(_check_lemma(word, sense_words()))}


def load_sense_sentences(word: str | None = None) -> list[SenseSentence]:
    """The example sentences of the testable senses, of ``word`` or of every lemma, in file order."""
    words = sense_words() if word is None else (_check_lemma(word, sense_words()),)
    return [example for w in words for sense in _testable(w) for example in sense.examples]
