"""Next-sentence-prediction data (notes §3.3–3.4): ``[CLS] A [SEP] B [SEP]`` with segment ids.

For each sentence A that has a successor in its document, B is that successor half of the time
(``is_next``) and otherwise a sentence from another document (Devlin et al. 2019, §3.1, Task
#2). Pairs are cut to the length limit as BERT's data pipeline cut them: one token at a time
from the longer side, from its front or its back at random, so that neither segment is always
the one that loses its ending.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ctxlib._checks import check_choice, check_positive_int, check_probability

NEXT, RANDOM = 0, 1  # next_sentence_label values, as in BERT and transformers: 0 means "B follows A"
_SPECIALS_IN_A_PAIR = 3  # [CLS], [SEP], [SEP]


@dataclass(frozen=True)
class SentencePair:
    """Segment A and segment B (token ids, no specials) and whether B follows A in its document."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    is_next: bool


def check_documents(documents: object) -> None:
    """``documents`` is a sequence of documents, each a sequence of sentences of int token ids:
    a str anywhere in it would be taken apart character by character."""
    if isinstance(documents, str) or not isinstance(documents, Sequence):
        raise TypeError(f"documents must be a list of documents (lists of token-id lists), got {type(documents).__name__}")
    for d, document in enumerate(documents):
        if isinstance(document, str) or not isinstance(document, Sequence):
            raise TypeError(f"documents[{d}] must be a list of sentences (token-id lists), got {type(document).__name__}")
        for s, sentence in enumerate(document):
            if isinstance(sentence, str) or not isinstance(sentence, Sequence) or not all(
                    isinstance(t, int) and not isinstance(t, bool) for t in sentence):
                raise TypeError(f"documents[{d}][{s}] must be a list of int token ids, got {sentence!r:.60}")


def sentence_pairs(documents: Sequence[Sequence[Sequence[int]]], seed: int = 0,
                   next_probability: float = 0.5) -> list[SentencePair]:
    """One pair per sentence that has a successor; B is the successor with ``next_probability``,
    else a random sentence of a different document."""
    check_probability("next_probability", next_probability)
    check_documents(documents)
    documents = [list(map(tuple, d)) for d in documents if len(d) > 0]
    if len(documents) < 2:
        raise ValueError(f"documents must hold at least 2 non-empty documents (a random B comes from another "
                         f"document), got {len(documents)}")
    rng = random.Random(seed)
    pairs = []
    for index, document in enumerate(documents):
        for a, successor in zip(document, document[1:]):
            if rng.random() < next_probability:
                pairs.append(SentencePair(a, successor, True))
            else:
                other = rng.randrange(len(documents) - 1)
                other += other >= index  # any document but this one, uniformly
                pairs.append(SentencePair(a, rng.choice(documents[other]), False))
    return pairs


NEGATIVE_KINDS = ("other topic", "same topic", "same document")


def contrast_pairs(documents: Sequence[Sequence[Sequence[int]]], topics: Sequence[str], kind: str,
                   seed: int = 0) -> list[SentencePair]:
    """Pairs that ask what NSP learned (Chapter 6): for each sentence A with a successor, B is

    * ``"next"``: its successor (``is_next=True``);
    * ``"other topic"``: a sentence of a document on another topic (what BERT's random B
      usually is);
    * ``"same topic"``: a sentence of another document on the *same* topic;
    * ``"same document"``: a sentence of A's own document that is neither A nor its successor.

    A model that only matches topics rejects the first kind of negative and accepts the other two;
    one that models coherence rejects all three. ``topics[i]`` is document ``i``'s topic.
    """
    check_choice("kind", kind, ("next", *NEGATIVE_KINDS))
    if len(topics) != len(documents):
        raise ValueError(f"topics must name one topic per document: {len(documents)} documents, got {len(topics)} topics")
    rng = random.Random(seed)
    by_topic: dict[str, list[int]] = {}
    for index, topic in enumerate(topics):
        by_topic.setdefault(topic, []).append(index)
    if kind == "same topic" and all(len(indices) < 2 for indices in by_topic.values()):
        raise ValueError("kind='same topic' needs two documents on one topic; every topic here has one")
    if kind == "other topic" and len(by_topic) < 2:
        raise ValueError(f"kind='other topic' needs documents on two topics, got only {list(by_topic)}")
    pairs = []
    for index, document in enumerate(documents):
        # The documents B may come from, for the two kinds that draw it from another document.
        if kind == "same topic":
            pool = [j for j in by_topic[topics[index]] if j != index]
        elif kind == "other topic":
            pool = [j for j in range(len(documents)) if topics[j] != topics[index]]
        for i in range(len(document) - 1):
            if kind == "next":
                b = document[i + 1]
            elif kind == "same document":
                others = [j for j in range(len(document)) if j not in (i, i + 1)]
                if not others:
                    continue  # a two-sentence document has no such B
                b = document[rng.choice(others)]
            else:
                if not pool:
                    continue  # the only document on its topic
                b = rng.choice(documents[rng.choice(pool)])
            pairs.append(SentencePair(tuple(document[i]), tuple(b), kind == "next"))
    return pairs


def truncate_pair(a: Sequence[int], b: Sequence[int], max_tokens: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """Shorten ``a`` and ``b`` to at most ``max_tokens`` together, one token at a time from the
    longer one (from its front or back, at random); each keeps at least one token."""
    check_positive_int("max_tokens", max_tokens)
    if max_tokens < 2:
        raise ValueError(f"max_tokens must be at least 2 (one token per segment), got {max_tokens}")
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return a, b


def encode_pairs(pairs: Sequence[SentencePair], *, cls_id: int, sep_id: int, pad_id: int, max_length: int = 128,
                 seed: int = 0) -> dict[str, torch.Tensor]:
    """A padded batch: ``input_ids``, ``token_type_ids`` (0 for [CLS] A [SEP], 1 for B [SEP]),
    ``attention_mask``, ``special_tokens_mask`` and ``next_sentence_label`` (0 next, 1 random)."""
    check_positive_int("max_length", max_length)
    if max_length < _SPECIALS_IN_A_PAIR + 2:
        raise ValueError(f"max_length must be at least 5 ([CLS] A [SEP] B [SEP] with a token each), got {max_length}")
    if len(pairs) == 0:
        raise ValueError("pairs is empty: give at least one SentencePair")
    rng = random.Random(seed)
    rows = []
    for number, pair in enumerate(pairs):
        if not isinstance(pair, SentencePair) or not pair.a or not pair.b:
            raise ValueError(f"pairs[{number}] must be a SentencePair with a token in A and in B, got {pair!r}")
        a, b = truncate_pair(pair.a, pair.b, max_length - _SPECIALS_IN_A_PAIR, rng)
        rows.append(([cls_id, *a, sep_id, *b, sep_id], [0] * (len(a) + 2) + [1] * (len(b) + 1)))
    length = max(len(ids) for ids, _ in rows)
    batch = {name: torch.zeros(len(rows), length, dtype=torch.long)
             for name in ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask")}
    batch["input_ids"].fill_(pad_id)
    batch["special_tokens_mask"].fill_(1)  # padding is special too: never masked
    for row, (ids, segments) in enumerate(rows):
        n = len(ids)
        batch["input_ids"][row, :n] = torch.tensor(ids)
        batch["token_type_ids"][row, :n] = torch.tensor(segments)
        batch["attention_mask"][row, :n] = 1
        special = torch.zeros(n, dtype=torch.long)
        special[[0, segments.index(1) - 1, n - 1]] = 1
        batch["special_tokens_mask"][row, :n] = special
    batch["next_sentence_label"] = torch.tensor([NEXT if p.is_next else RANDOM for p in pairs])
    return batch
