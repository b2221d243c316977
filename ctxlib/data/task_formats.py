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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TaggedTokens:
    tokens: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class LabelledText:
    text: str
    label: str


def read_labelled_tsv(path: str | Path) -> list[LabelledText]:
    """Sentences and labels of a ``sentence\tlabel`` TSV file with that header."""
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    if not lines or lines[0].split("\t") != ["sentence", "label"]:
        raise ValueError(f"{path}: the first line must be the header 'sentence<TAB>label', got {lines[:1]}")
    examples = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise ValueError(f"{path}: line {number} must be a sentence and a label separated by one tab, got {line!r}")
        examples.append(LabelledText(*fields))
    return examples


def write_labelled_tsv(path: str | Path, examples: Sequence[LabelledText]) -> None:
    """Write ``examples`` in the layout ``read_labelled_tsv`` reads."""
    with open(path, "w", encoding="utf-8") as file:
        file.write("sentence\tlabel\n")
        for example in examples:
            if "\t" in example.text or "\n" in example.text:
                raise ValueError(f"a TSV sentence may not hold a tab or newline: {example.text!r}")
            file.write(f"{example.text}\t{example.label}\n")


def check_bio(tags: Sequence[str], where: str = "tags") -> None:
    """Raise on a tag that is not O, B-X or I-X, or an I-X that does not continue an X entity."""
    previous = "O"
    for i, tag in enumerate(tags):
        if tag != "O" and not (tag[:2] in ("B-", "I-") and len(tag) > 2):
            raise ValueError(f"{where}: tag {i} is {tag!r}; BIO tags are O, B-TYPE or I-TYPE")
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            raise ValueError(f"{where}: tag {i} is {tag!r} after {previous!r}; an I- tag must continue an "
                             f"entity of its type (B-{tag[2:]} or I-{tag[2:]})")
        previous = tag


def read_conll(path: str | Path) -> list[TaggedTokens]:
    """Sentences of a CoNLL-style file: token in the first column, BIO tag in the last."""
    sentences, tokens, tags = [], [], []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
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
    return sentences


def write_conll(path: str | Path, sentences: Sequence[TaggedTokens]) -> None:
    """Write ``sentences`` as two CoNLL columns (token, BIO tag), a blank line after each."""
    with open(path, "w", encoding="utf-8") as file:
        for number, sentence in enumerate(sentences):
            check_bio(sentence.tags, f"sentence {number}")
            file.writelines(f"{token} {tag}\n" for token, tag in zip(sentence.tokens, sentence.tags))
            file.write("\n")


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
    """Entity-level precision, recall and F1 over sentences (exact type and boundaries)."""
    if len(gold) != len(predicted):
        raise ValueError(f"gold and predicted must hold the same number of sentences, got {len(gold)} and {len(predicted)}")
    right = found = wanted = 0
    for g, p in zip(gold, predicted):
        if len(g) != len(p):
            raise ValueError(f"a gold sentence has {len(g)} tags and its prediction {len(p)}")
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


def read_squad(path: str | Path) -> list[QAExample]:
    """Every question of a SQuAD v1.1 or v2.0 file, answers checked against their contexts."""
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if "data" not in data:
        raise ValueError(f"{path}: a SQuAD file has a top-level 'data' list; got keys {sorted(data)}")
    examples = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = tuple(Answer(a["text"], a["answer_start"]) for a in qa.get("answers", []))
                impossible = qa.get("is_impossible", False)
                if impossible and answers:
                    raise ValueError(f"{path}: question {qa['id']!r} is marked unanswerable but has answers")
                if not impossible and not answers:
                    raise ValueError(f"{path}: question {qa['id']!r} has no answer and is not marked is_impossible")
                for answer in answers:
                    found = context[answer.start:answer.start + len(answer.text)]
                    if found != answer.text:
                        raise ValueError(f"{path}: question {qa['id']!r}: the context at {answer.start} reads "
                                         f"{found!r}, not the answer {answer.text!r}")
                examples.append(QAExample(qa["id"], context, qa["question"], answers))
    return examples


def write_squad(path: str | Path, examples: Sequence[QAExample], title: str = "ctxbook") -> None:
    """Write ``examples`` as SQuAD v2.0 JSON, one paragraph per context (``is_impossible`` on
    questions without answers)."""
    paragraphs: dict[str, list[dict]] = {}
    for example in examples:
        for answer in example.answers:
            if example.context[answer.start:answer.start + len(answer.text)] != answer.text:
                raise ValueError(f"question {example.id!r}: its answer {answer.text!r} is not at {answer.start} in its context")
        paragraphs.setdefault(example.context, []).append({
            "id": example.id, "question": example.question, "is_impossible": not example.answers,
            "answers": [{"text": a.text, "answer_start": a.start} for a in example.answers]})
    data = {"version": "v2.0", "data": [{"title": title, "paragraphs": [
        {"context": context, "qas": qas} for context, qas in paragraphs.items()]}]}
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=1, ensure_ascii=False)
        file.write("\n")
