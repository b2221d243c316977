"""Readers and writers for the standard fine-tuning formats (notes §5.2), so a chapter can point at a real set.

* **Labelled sentences, TSV** (GLUE's SST-2 layout): a ``sentence\tlabel`` header, then one
  sentence and its label per line.

* **CoNLL-style BIO columns** (CoNLL-2003 NER): one token per line, the tag in the last column,
  a blank line between sentences, ``-DOCSTART-`` lines ignored. Tags are checked as BIO:
  ``I-X`` may only continue a ``B-X`` or ``I-X`` (an ``I-X`` after ``O`` is an error, not a
  silent new entity).
* **SQuAD v1.1 / v2.0 JSON**: contexts, questions and answers as character spans; every answer
  is checked against its context, and v2.0's unanswerable questions have no answers.

``entity_spans`` and ``entity_f1`` score NER at the entity level, as the CoNLL evaluation does:
an entity counts only if its type and both boundaries are right.

Files are read as UTF-8 (a byte-order mark is accepted; other bytes are an error naming the
file). Each writer checks every example before it opens anything, refuses what its own reader
would reject or read back differently, and writes atomically: a failed write leaves the old file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxlib._files import as_path, read_text, write_text_atomically


@dataclass(frozen=True)
class TaggedTokens:
    tokens: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class LabelledText:
    text: str
    label: str


def _one_line(text: object) -> bool:
    """A non-empty str that reads back as the same single line (``str.splitlines`` also splits
    on \\r, \\x0b, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029)."""
    return isinstance(text, str) and text != "" and text.splitlines() == [text]


def _check_some(name: str, items: object, kind: str) -> None:
    """``items`` is a non-empty sequence (not a str): each reader refuses a file with nothing in it."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise TypeError(f"{name} must be a sequence of {kind}, got {type(items).__name__}")
    if len(items) == 0:
        raise ValueError(f"{name} is empty: a file with no {kind} would not read back (its reader refuses it)")


def read_labelled_tsv(path: str | Path) -> list[LabelledText]:
    """Sentences and labels of a ``sentence\tlabel`` TSV file with that header."""
    lines = read_text(as_path("path", path)).splitlines()
    if not lines or lines[0].split("\t") != ["sentence", "label"]:
        raise ValueError(f"{path}: the first line must be the header 'sentence<TAB>label', got {lines[:1]}")
    if len(lines) == 1:
        raise ValueError(f"{path}: holds the header and no example; a labelled file needs at least one")
    examples = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise ValueError(f"{path}: line {number} must be a sentence and a label separated by one tab, got {line!r}")
        examples.append(LabelledText(*fields))
    return examples


def write_labelled_tsv(path: str | Path, examples: Sequence[LabelledText]) -> None:
    """Write ``examples`` in the layout ``read_labelled_tsv`` reads."""
    path = as_path("path", path)
    _check_some("examples", examples, "LabelledText")
    for number, example in enumerate(examples):
        if not isinstance(example, LabelledText):
            raise TypeError(f"examples[{number}] must be a LabelledText, got {type(example).__name__}")
        for name in ("text", "label"):
            value = getattr(example, name)
            if not _one_line(value) or "\t" in value:
                raise ValueError(f"examples[{number}].{name} must be a non-empty str on one line without a tab "
                                 f"(the TSV's separators), got {value!r}")
    write_text_atomically(path, "sentence\tlabel\n" + "".join(f"{e.text}\t{e.label}\n" for e in examples))


def _is_bio_tag(tag: object) -> bool:
    """Whether ``tag`` is O, B-TYPE or I-TYPE (whatever precedes it)."""
    return isinstance(tag, str) and (tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2))


def check_bio(tags: Sequence[str], where: str = "tags") -> None:
    """Raise on a tag that is not O, B-X or I-X, or an I-X that does not continue an X entity."""
    previous = "O"
    for i, tag in enumerate(tags):
        if not _is_bio_tag(tag):
            raise ValueError(f"{where}: tag {i} is {tag!r}; BIO tags are O, B-TYPE or I-TYPE")
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            raise ValueError(f"{where}: tag {i} is {tag!r} after {previous!r}; an I- tag must continue an "
                             f"entity of its type (B-{tag[2:]} or I-{tag[2:]})")
        previous = tag


def read_conll(path: str | Path) -> list[TaggedTokens]:
    """Sentences of a CoNLL-style file: token in the first column, BIO tag in the last."""
    sentences, tokens, tags = [], [], []
    for number, line in enumerate(read_text(as_path("path", path)).splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                check_bio(tags, f"{path}: the sentence ending at line {number - 1}")
                sentences.append(TaggedTokens(tuple(tokens), tuple(tags)))
                tokens, tags = [], []
            continue
        if len(fields) < 2:
            raise ValueError(f"{path}: line {number} has one column, {line.strip()!r}; "
                             "a CoNLL line needs a token and a tag")
        tokens.append(fields[0])
        tags.append(fields[-1])
    if tokens:
        check_bio(tags, f"{path}: the last sentence")
        sentences.append(TaggedTokens(tuple(tokens), tuple(tags)))
    if not sentences:
        raise ValueError(f"{path}: holds no sentence (an empty file, or blank and -DOCSTART- lines only)")
    return sentences


def write_conll(path: str | Path, sentences: Sequence[TaggedTokens]) -> None:
    """Write ``sentences`` as two CoNLL columns (token, BIO tag), a blank line after each."""
    path = as_path("path", path)
    _check_some("sentences", sentences, "TaggedTokens")
    for number, sentence in enumerate(sentences):
        if not isinstance(sentence, TaggedTokens):
            raise TypeError(f"sentences[{number}] must be a TaggedTokens, got {type(sentence).__name__}")
        if not sentence.tokens or len(sentence.tokens) != len(sentence.tags):
            raise ValueError(f"sentences[{number}] must have one tag per token and at least one token, got "
                             f"{len(sentence.tokens)} tokens and {len(sentence.tags)} tags")
        for i, word in enumerate((*sentence.tokens, *sentence.tags)):
            # A column is split on whitespace when read back, and -DOCSTART- ends a document.
            if not isinstance(word, str) or word.split() != [word] or word == "-DOCSTART-":
                kind = "token" if i < len(sentence.tokens) else "tag"
                raise ValueError(f"sentences[{number}]: {kind} {word!r} cannot be a CoNLL column (a non-empty str "
                                 "without whitespace, not -DOCSTART-)")
        check_bio(sentence.tags, f"sentences[{number}]")
    if sentences[0].tokens[0].startswith("\ufeff"):
        # The file would begin with it, and a reader takes a leading U+FEFF for UTF-8's signature.
        raise ValueError(f"sentences[0]: the first token {sentences[0].tokens[0]!r} begins with U+FEFF, which a "
                         "reader drops as the file's byte-order mark; remove it")
    write_text_atomically(path, "".join("".join(f"{token} {tag}\n" for token, tag in zip(s.tokens, s.tags)) + "\n"
                                        for s in sentences))


def entity_spans(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """``(type, first, last)`` of each entity in a BIO tag sequence (``last`` inclusive)."""
    spans, start, kind = set(), None, None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            spans.add((kind, start, i - 1))
            start = kind = None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, kind = i, tag[2:]
    return spans


def entity_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1 over sentences (exact type and boundaries). Tags
    must be O, B-TYPE or I-TYPE; an ill-formed sequence (an I- tag after O) is scored as conlleval
    scores it, the I- tag starting an entity."""
    if len(gold) != len(predicted):
        raise ValueError(f"gold and predicted must hold the same number of sentences, got {len(gold)} and {len(predicted)}")
    right = found = wanted = 0
    for g, p in zip(gold, predicted):
        if len(g) != len(p):
            raise ValueError(f"a gold sentence has {len(g)} tags and its prediction {len(p)}")
        for name, sentence in (("gold", g), ("predicted", p)):
            for tag in sentence:
                if not _is_bio_tag(tag):
                    raise ValueError(f"{name} holds the tag {tag!r}; BIO tags are O, B-TYPE or I-TYPE")
        gold_spans, predicted_spans = entity_spans(g), entity_spans(p)
        right += len(gold_spans & predicted_spans)
        found += len(predicted_spans)
        wanted += len(gold_spans)
    precision = right / found if found else 0.0
    recall = right / wanted if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


@dataclass(frozen=True)
class Answer:
    text: str
    start: int  # character offset in the context


@dataclass(frozen=True)
class QAExample:
    """One question on one context; ``answers`` is empty for an unanswerable (v2.0) question."""

    id: str
    context: str
    question: str
    answers: tuple[Answer, ...]


def _squad_example(qa: Any, context: str, where: str) -> QAExample:
    """One question of a SQuAD file, checked: its fields' types, each answer against the context."""
    if not isinstance(qa, dict):
        raise ValueError(f"{where}: a question must be a JSON object, got {type(qa).__name__}")
    for name in ("id", "question"):
        if not isinstance(qa.get(name), str) or not qa[name]:
            raise ValueError(f"{where}: {name!r} must be a non-empty string, got {qa.get(name)!r}")
    where = f"{where} (question {qa['id']!r})"
    impossible = qa.get("is_impossible", False)
    if not isinstance(impossible, bool):
        raise ValueError(f"{where}: is_impossible must be true or false, got {impossible!r}")
    raw = qa.get("answers", [])
    if not isinstance(raw, list):
        raise ValueError(f"{where}: answers must be a list, got {type(raw).__name__}")
    answers = []
    for answer in raw:
        text, start = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (None, None)
        if not isinstance(text, str) or not text:
            raise ValueError(f"{where}: an answer's text must be a non-empty string, got {text!r}")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise ValueError(f"{where}: answer_start must be a character offset >= 0, got {start!r}")
        found = context[start:start + len(text)]
        if found != text:
            raise ValueError(f"{where}: the context at {start} reads {found!r}, not the answer {text!r}")
        answers.append(Answer(text, start))
    if impossible and answers:
        raise ValueError(f"{where}: it is marked unanswerable but has answers")
    if not impossible and not answers:
        raise ValueError(f"{where}: it has no answer and is not marked is_impossible")
    return QAExample(qa["id"], context, qa["question"], tuple(answers))


def _check_unique_ids(examples: Sequence[QAExample], where: str) -> None:
    seen: set[str] = set()
    for example in examples:
        if example.id in seen:
            raise ValueError(f"{where}: question id {example.id!r} occurs twice; ids must be unique")
        seen.add(example.id)


def read_squad(path: str | Path) -> list[QAExample]:
    """Every question of a SQuAD v1.1 or v2.0 file, answers checked against their contexts."""
    path = as_path("path", path)
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: a SQuAD file has a top-level 'data' list; got "
                         f"{sorted(data) if isinstance(data, dict) else type(data).__name__}")
    examples = []
    for a, article in enumerate(data["data"]):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise ValueError(f"{path}: data[{a}] must be an object with a 'paragraphs' list")
        for p, paragraph in enumerate(paragraphs):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str) \
                    or not isinstance(paragraph.get("qas"), list):
                raise ValueError(f"{where} must be an object with a 'context' string and a 'qas' list")
            examples += [_squad_example(qa, paragraph["context"], where) for qa in paragraph["qas"]]
    _check_unique_ids(examples, str(path))
    return examples


def write_squad(path: str | Path, examples: Sequence[QAExample], title: str = "ctxbook") -> None:
    """Write ``examples`` as SQuAD v2.0 JSON, one paragraph per context (``is_impossible`` on
    questions without answers)."""
    path = as_path("path", path)
    paragraphs: dict[str, list[dict]] = {}
    for number, example in enumerate(examples):
        if not isinstance(example, QAExample):
            raise TypeError(f"examples[{number}] must be a QAExample, got {type(example).__name__}")
        if not isinstance(example.context, str):
            raise ValueError(f"examples[{number}]: context must be a string, got {type(example.context).__name__}")
        if not all(isinstance(a, Answer) for a in example.answers):
            raise TypeError(f"examples[{number}]: answers must be Answer objects")
        qa = {"id": example.id, "question": example.question, "is_impossible": not example.answers,
              "answers": [{"text": a.text, "answer_start": a.start} for a in example.answers]}
        _squad_example(qa, example.context, f"examples[{number}]")  # what read_squad would reject
        paragraphs.setdefault(example.context, []).append(qa)
    _check_unique_ids(examples, "examples")
    data = {"version": "v2.0", "data": [{"title": title, "paragraphs": [
        {"context": context, "qas": qas} for context, qas in paragraphs.items()]}]}
    write_text_atomically(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
