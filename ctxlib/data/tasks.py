"""The book's three fine-tuning tasks (notes §5.2), generated from the corpus and shipped as files.

All three come from ``ctxlib.data.corpus``, whose grammar knows every word's class, so the labels are
exact by construction:

* **topic classification**: which of the 20 topics a sentence comes from ("river_walk",
  "bank_visit", ...). Many sentences name their topic's words; pronoun-only body sentences
  and closings ("she smiled .") are hard, so no model reaches 100%.
* **NER** in BIO tags with four types. ``PER``: a first name; ``LOC``: a town or river;
  ``ORG``: a team ("York Wanderers", a town name followed by a team name, so whether "York" is
  a place or part of a club depends on its right neighbour); ``DATE``: a weekday or month.
* **extractive QA** (SQuAD v2.0 style): the first two sentences of a document as the context,
  one question asking for an entity of one type ("which team is mentioned ?"), every mention
  of that type an accepted answer (character spans), and about a third of the questions asking
  for a type the context lacks: unanswerable.

Train examples come from the corpus's train documents, test examples from its ``novel`` ones:
documents written only from templates that training never used, so a test score measures
generalisation to new sentence frames, not recall of seen ones.
``write_task_files`` writes the standard formats (``label\\tsentence`` TSV, CoNLL BIO columns,
SQuAD v2.0 JSON) into ``ctxlib/data/task_files``; ``tests/test_tasks.py`` checks that the shipped
files are what this module generates, so the files and the code cannot drift apart. Chapter 5
reads the files with ``ctxlib.data.task_formats``, as it would read a real data set.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from ctxlib._checks import check_choice, check_positive_int, check_probability
from ctxlib.data.corpus import Corpus, TaggedSentence
from ctxlib.data.task_formats import (Answer, LabelledText, QAExample, TaggedTokens, entity_spans, read_conll,
                                      read_labelled_tsv, read_squad, write_conll, write_labelled_tsv, write_squad)

ENTITY_TYPES = ("PER", "LOC", "ORG", "DATE")
# Lexicon word classes whose words are entities, and their type; "team_name" only ever follows
# a town ("[W:town] [W:team_name]"), and the two together are one ORG.
_ENTITY_CLASSES = {"names_f": "PER", "names_m": "PER", "town": "LOC", "river_name": "LOC",
                   "day": "DATE", "month": "DATE", "team_name": "ORG"}
QUESTIONS = {"PER": "who is mentioned ?", "LOC": "which place is mentioned ?",
             "ORG": "which team is mentioned ?", "DATE": "which day or month is mentioned ?"}
# Sizes of the shipped files: small enough to fine-tune on within a chapter's budget.
SIZES = {"topic": (512, 200), "ner": (512, 200), "qa": (512, 200)}
_FILES = {"topic": ("topic_train.tsv", "topic_test.tsv"), "ner": ("ner_train.conll", "ner_test.conll"),
          "qa": ("qa_train.json", "qa_test.json")}
_CONTEXT_SENTENCES = 2


@functools.cache
def _entity_type_of_word() -> dict[str, str]:
    lexicon = json.loads(resources.files("ctxlib").joinpath("data", "corpus_lexicon.json").read_text(encoding="utf-8"))
    types: dict[str, str] = {}
    for word_class, kind in _ENTITY_CLASSES.items():
        for word in lexicon["words"][word_class]["words"]:
            if types.setdefault(word, kind) != kind:
                raise ValueError(f"corpus lexicon: {word!r} is both {types[word]} and {kind}; entity types must be unique")
    return types


def entity_tags(sentence: TaggedSentence) -> tuple[str, ...]:
    """BIO entity tags of a generated sentence, from its PROPN tokens and the lexicon classes."""
    types = _entity_type_of_word()
    tags: list[str] = []
    for i, (token, pos) in enumerate(zip(sentence.tokens, sentence.pos)):
        if pos != "PROPN":
            tags.append("O")
            continue
        if token not in types:
            raise ValueError(f"corpus sentence {' '.join(sentence.tokens)!r}: proper noun {token!r} has no entity type")
        kind = types[token]
        if kind == "ORG":  # the team's town, tagged LOC a moment ago, opens the ORG
            if i == 0 or tags[-1] != "B-LOC":
                raise ValueError(f"corpus sentence {' '.join(sentence.tokens)!r}: team name {token!r} without its town")
            tags[-1] = "B-ORG"
            tags.append("I-ORG")
        else:
            tags.append(f"B-{kind}")
    return tuple(tags)


def topic_sentences(corpus: Corpus, split: str, n: int, seed: int = 0) -> list[LabelledText]:
    """``n`` sentences of ``split`` drawn without replacement, each labelled with its topic."""
    check_positive_int("n", n)
    sentences = corpus.split(split)
    if n > len(sentences):
        raise ValueError(f"n={n} is more than the {len(sentences)} sentences of the {split} split")
    picked = random.Random(seed).sample(range(len(sentences)), n)
    return [LabelledText(" ".join(sentences[i].tokens), sentences[i].topic) for i in sorted(picked)]


def ner_sentences(corpus: Corpus, split: str, n: int, seed: int = 0) -> list[TaggedTokens]:
    """``n`` sentences of ``split`` that hold at least one entity, with their BIO tags."""
    check_positive_int("n", n)
    tagged = [(s.tokens, tags) for s in corpus.split(split) for tags in [entity_tags(s)] if set(tags) != {"O"}]
    if n > len(tagged):
        raise ValueError(f"n={n} is more than the {len(tagged)} sentences with entities in the {split} split")
    picked = random.Random(seed).sample(range(len(tagged)), n)
    return [TaggedTokens(*tagged[i]) for i in sorted(picked)]


def _context(document: Sequence[TaggedSentence]) -> tuple[str, dict[str, list[Answer]]]:
    """The context text and the mentions of each entity type in it, as character spans."""
    words: list[str] = []
    tags: list[str] = []
    for sentence in document[:_CONTEXT_SENTENCES]:
        words += sentence.tokens
        tags += entity_tags(sentence)
    starts = [0]
    for word in words[:-1]:
        starts.append(starts[-1] + len(word) + 1)
    mentions: dict[str, list[Answer]] = {}
    for kind, first, last in sorted(entity_spans(tags), key=lambda span: span[1]):
        mentions.setdefault(kind, []).append(Answer(" ".join(words[first:last + 1]), starts[first]))
    return " ".join(words), mentions


def qa_examples(corpus: Corpus, split: str, n: int, seed: int = 0, unanswerable: float = 1 / 3) -> list[QAExample]:
    """``n`` questions, one per document of ``split``: with probability ``unanswerable`` about an
    entity type the context lacks (no answer), else about a type it has (all its mentions)."""
    check_positive_int("n", n)
    check_probability("unanswerable", unanswerable)
    documents = corpus.documents(split)
    if n > len(documents):
        raise ValueError(f"n={n} is more than the {len(documents)} documents of the {split} split")
    rng = random.Random(seed)
    examples = []
    for index in sorted(rng.sample(range(len(documents)), n)):
        context, mentions = _context(documents[index])
        absent = [kind for kind in ENTITY_TYPES if kind not in mentions]
        if absent and (not mentions or rng.random() < unanswerable):
            kind, answers = rng.choice(absent), ()
        else:
            kind = rng.choice(sorted(mentions, key=ENTITY_TYPES.index))
            answers = tuple(mentions[kind])
        examples.append(QAExample(f"{split}-{index}-{kind}", context, QUESTIONS[kind], answers))
    return examples


_GENERATORS = {"topic": topic_sentences, "ner": ner_sentences, "qa": qa_examples}
_WRITERS = {"topic": write_labelled_tsv, "ner": write_conll, "qa": write_squad}
_READERS = {"topic": read_labelled_tsv, "ner": read_conll, "qa": read_squad}


def generate_task(task: str, corpus: Corpus) -> tuple[list, list]:
    """``(train, test)`` examples of ``task`` ("topic", "ner" or "qa") at the shipped sizes."""
    check_choice("task", task, tuple(_GENERATORS))
    train_size, test_size = SIZES[task]
    generate = _GENERATORS[task]
    return generate(corpus, "train", train_size, seed=1), generate(corpus, "novel", test_size, seed=2)


def task_dir() -> Path:
    """Where the shipped task files are: ``ctxlib/data/task_files``."""
    return Path(str(resources.files("ctxlib").joinpath("data", "task_files")))


def write_task_files(corpus: Corpus, directory: str | Path | None = None) -> list[Path]:
    """Write every task's train and test file (into ``task_dir()`` by default); returns the paths."""
    directory = Path(directory) if directory is not None else task_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for task, names in _FILES.items():
        for examples, name in zip(generate_task(task, corpus), names):
            _WRITERS[task](directory / name, examples)
            paths.append(directory / name)
    return paths


def load_task(task: str, directory: str | Path | None = None) -> tuple[list, list]:
    """``(train, test)`` of ``task`` read from its files with the standard-format readers; point
    ``directory`` at files of the same names and formats to use other data."""
    check_choice("task", task, tuple(_FILES))
    directory = Path(directory) if directory is not None else task_dir()
    train_name, test_name = _FILES[task]
    return _READERS[task](directory / train_name), _READERS[task](directory / test_name)
