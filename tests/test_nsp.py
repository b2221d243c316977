"""NSP pairs: the 50/50 split, random B from another document, truncation, segment ids."""

from __future__ import annotations

import math
import random

import pytest

from ctxlib.objectives.nsp import (NEXT, RANDOM, SentencePair, contrast_pairs, encode_pairs, sentence_pairs,
                                   truncate_pair)

CLS, SEP, PAD = 101, 102, 0


def documents(count: int = 300, seed: int = 0) -> list[list[tuple[int, ...]]]:
    """Sentence ids encode (document, position), so a pair's provenance can be read back."""
    rng = random.Random(seed)
    return [[(1000 + d, 10 + s, *range(200, 200 + rng.randint(1, 6))) for s in range(rng.randint(2, 8))]
            for d in range(count)]


def test_half_the_pairs_are_true_successors_and_the_rest_come_from_other_documents():
    docs = documents()
    pairs = sentence_pairs(docs, seed=1)
    assert len(pairs) == sum(len(d) - 1 for d in docs)
    n, nexts = len(pairs), sum(p.is_next for p in pairs)
    assert abs(nexts - n / 2) <= 4 * math.sqrt(n / 4)
    for pair in pairs:
        if pair.is_next:
            assert pair.b[0] == pair.a[0] and pair.b[1] == pair.a[1] + 1
        else:
            assert pair.b[0] != pair.a[0]
    assert pairs == sentence_pairs(docs, seed=1) and pairs != sentence_pairs(docs, seed=2)


def test_truncation_cuts_the_longer_segment_and_keeps_order():
    rng = random.Random(0)
    a, b = truncate_pair(list(range(10)), list(range(100, 103)), 8, rng)
    assert len(a) + len(b) == 8 and b == [100, 101, 102]  # only the longer side lost tokens
    assert a == sorted(a) and set(a) <= set(range(10)) and a == list(range(a[0], a[0] + len(a)))
    fronts = sum(truncate_pair(list(range(10)), [1], 6, random.Random(s))[0][0] > 0 for s in range(200))
    assert 50 < fronts < 200  # tokens come off the front in some pairs, not only the back
    assert truncate_pair([1, 2], [3], 2, rng) in (([1], [3]), ([2], [3]))


def test_encoded_batch_has_the_bert_layout():
    pairs = [SentencePair((5, 6, 7), (8,), True), SentencePair((5,), (9, 9), False)]
    batch = encode_pairs(pairs, cls_id=CLS, sep_id=SEP, pad_id=PAD, max_length=16)
    assert batch["input_ids"].tolist() == [[CLS, 5, 6, 7, SEP, 8, SEP], [CLS, 5, SEP, 9, 9, SEP, PAD]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1, 0]]
    assert batch["attention_mask"].tolist() == [[1] * 7, [1] * 6 + [0]]
    assert batch["special_tokens_mask"].tolist() == [[1, 0, 0, 0, 1, 0, 1], [1, 0, 1, 0, 0, 1, 1]]
    assert batch["next_sentence_label"].tolist() == [NEXT, RANDOM]


def test_long_pairs_respect_the_length_limit():
    pairs = sentence_pairs(documents(50), seed=0)
    long_pairs = [SentencePair(p.a * 20, p.b * 20, p.is_next) for p in pairs]
    batch = encode_pairs(long_pairs, cls_id=CLS, sep_id=SEP, pad_id=PAD, max_length=32)
    assert batch["input_ids"].shape[1] == 32
    assert ((batch["input_ids"] == SEP).sum(1) == 2).all() and (batch["input_ids"][:, 0] == CLS).all()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="at least 2 non-empty documents .* got 1"):
        sentence_pairs([[(1,), (2,)]])
    with pytest.raises(ValueError, match="max_length must be at least 5 .* got 4"):
        encode_pairs([SentencePair((1,), (2,), True)], cls_id=CLS, sep_id=SEP, pad_id=PAD, max_length=4)
    with pytest.raises(ValueError, match="next_probability must lie in"):
        sentence_pairs(documents(3), next_probability=1.5)
    with pytest.raises(ValueError, match="pairs is empty"):
        encode_pairs([], cls_id=CLS, sep_id=SEP, pad_id=PAD)


def test_contrast_pairs_draw_b_from_where_their_kind_says():
    docs = documents(count=60)
    topics = [f"topic{d % 4}" for d in range(len(docs))]
    # A sentence's first id names its document, its second its position there.
    for kind in ("next", "other topic", "same topic", "same document"):
        pairs = contrast_pairs(docs, topics, kind, seed=2)
        assert pairs and all(p.is_next == (kind == "next") for p in pairs)
        for pair in pairs:
            doc_a, doc_b = pair.a[0] - 1000, pair.b[0] - 1000
            if kind == "next":
                assert doc_a == doc_b and pair.b[1] == pair.a[1] + 1
            elif kind == "same document":
                assert doc_a == doc_b and pair.b[1] not in (pair.a[1], pair.a[1] + 1)
            elif kind == "same topic":
                assert doc_a != doc_b and topics[doc_a] == topics[doc_b]
            else:
                assert topics[doc_a] != topics[doc_b]
    # Every A with a successor appears once per kind, except where "same document" has no third sentence.
    assert len(contrast_pairs(docs, topics, "next")) == sum(len(d) - 1 for d in docs)
    assert len(contrast_pairs(docs, topics, "same document")) == sum(len(d) - 1 for d in docs if len(d) > 2)


def test_contrast_pairs_reject_bad_input():
    docs = documents(count=4)
    with pytest.raises(ValueError, match=r"kind must be one of \['next', 'other topic', 'same topic', 'same document'\], got 'random'"):
        contrast_pairs(docs, ["a"] * 4, "random")
    with pytest.raises(ValueError, match="topics must name one topic per document: 4 documents, got 3 topics"):
        contrast_pairs(docs, ["a"] * 3, "next")
    with pytest.raises(ValueError, match="needs two documents on one topic"):
        contrast_pairs(docs, ["a", "b", "c", "d"], "same topic")
    with pytest.raises(ValueError, match="needs documents on two topics"):
        contrast_pairs(docs, ["a"] * 4, "other topic")
