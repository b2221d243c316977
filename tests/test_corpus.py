"""The generated pretraining corpus has the properties Chapters 2-6 rely on."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from ctxlib.data.corpus import Corpus, generate_corpus, load_corpus

UPOS = {"NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "NUM", "PROPN", "PUNCT"}
SENSES = {
    "bank": {"river", "finance"},
    "run": {"move", "manage"},
    "bat": {"animal", "sports"},
    "spring": {"season", "coil", "water"},
    "plant": {"organism", "factory"},
    "light": {"illumination", "weight"},
    "bark": {"tree", "dog"},
    "match": {"game", "fire", "correspond"},
    "pitch": {"field", "tone", "throw"},
    "seal": {"animal", "close"},
}
ALL_SENSES = {f"{word}/{sense}" for word, senses in SENSES.items() for sense in senses}
FORMS = {
    "bank": {"bank", "banks"},
    "run": {"run", "runs", "ran", "running"},
    "bat": {"bat", "bats", "batted", "batting"},
    "spring": {"spring", "springs"},
    "plant": {"plant", "plants", "planted", "planting"},
    "light": {"light", "lights", "lit", "lighting"},
    "bark": {"bark", "barks", "barked", "barking"},
    "match": {"match", "matches", "matched", "matching"},
    "pitch": {"pitch", "pitches", "pitched", "pitching"},
    "seal": {"seal", "seals", "sealed", "sealing"},
}
ALL_FORMS = set().union(*FORMS.values())
MULTI_POS_WORDS = ("run", "light", "plant", "match")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus()


def sense_counts(sentences) -> Counter:
    return Counter(sense for sentence in sentences for sense in sentence.senses if sense is not None)


def test_same_seed_gives_the_same_corpus_and_another_seed_a_different_one():
    first = generate_corpus(num_documents=60, seed=3)
    assert generate_corpus(num_documents=60, seed=3) == first
    assert generate_corpus(num_documents=60, seed=4) != first


def test_load_corpus_is_the_default_corpus_built_once(corpus):
    assert load_corpus() is corpus
    assert generate_corpus() == corpus


def test_heldout_is_whole_documents_disjoint_from_train(corpus):
    train, heldout = corpus.documents("train"), corpus.documents("heldout")
    assert len(train) + len(heldout) == 4000
    assert len(heldout) == 400
    # Document indices count from 0 within each split, one index per document.
    for documents in (train, heldout):
        assert [d[0].document for d in documents] == list(range(len(documents)))
    train_texts = {tuple(s.tokens for s in d) for d in train}
    assert not any(tuple(s.tokens for s in d) in train_texts for d in heldout)


def test_every_token_has_a_upos_tag_and_a_sense_slot(corpus):
    for sentence in corpus.train + corpus.heldout:
        assert len(sentence.tokens) == len(sentence.pos) == len(sentence.senses)
        assert set(sentence.pos) <= UPOS
        assert all(isinstance(token, str) and token and " " not in token for token in sentence.tokens)


def test_senses_label_exactly_the_forms_of_the_ambiguous_words(corpus):
    labelled = defaultdict(set)
    for sentence in corpus.train:
        for token, sense in zip(sentence.tokens, sentence.senses):
            if sense is None:
                # An ambiguous word's form is never left unlabelled.
                assert token not in ALL_FORMS, (token, sentence.tokens)
            else:
                labelled[sense.split("/")[0]].add(token)
    assert set(sense_counts(corpus.train)) == ALL_SENSES
    for word, tokens in labelled.items():
        assert tokens <= FORMS[word], (word, tokens - FORMS[word])
    # The sense is on inflected forms too, not only on the base form.
    assert {"banks", "ran", "running", "lit", "barked", "matches", "sealed"} <= set().union(*labelled.values())


def test_every_sense_is_frequent_in_both_splits(corpus):
    train, heldout = sense_counts(corpus.train), sense_counts(corpus.heldout)
    for sense in ALL_SENSES:
        assert train[sense] >= 200, (sense, train[sense])
        assert heldout[sense] >= 20, (sense, heldout[sense])


@pytest.mark.parametrize("word", MULTI_POS_WORDS)
def test_ambiguous_word_occurs_in_several_parts_of_speech(corpus, word):
    tags = {
        tag
        for sentence in corpus.train
        for tag, sense in zip(sentence.pos, sentence.senses)
        if sense is not None and sense.startswith(word + "/")
    }
    assert len(tags) >= 2, tags


def test_no_single_left_neighbour_gives_a_sense_away(corpus):
    left: dict[str, Counter] = defaultdict(Counter)
    for sentence in corpus.train:
        for i, sense in enumerate(sentence.senses):
            if sense is not None:
                left[sense][sentence.tokens[i - 1] if i else "<s>"] += 1
    for sense, neighbours in left.items():
        word, count = neighbours.most_common(1)[0]
        assert count / sum(neighbours.values()) < 0.5, (sense, word, count)


def test_documents_have_3_to_8_sentences_on_one_topic(corpus):
    topics = Counter()
    for split in ("train", "heldout"):
        for document in corpus.documents(split):
            assert 3 <= len(document) <= 8
            assert len({s.topic for s in document}) == 1
            topics[document[0].topic] += 1
    assert len(topics) >= 15
    # Topics are dealt in rounds, so each has about the same number of documents.
    assert max(topics.values()) - min(topics.values()) <= 1


def test_sentence_lengths(corpus):
    lengths = [len(s.tokens) for s in corpus.train + corpus.heldout]
    assert min(lengths) >= 5
    assert max(lengths) <= 40
    assert sum(n > 25 for n in lengths) / len(lengths) < 0.05
    assert all(s.tokens[-1] in {".", "!", "?"} for s in corpus.train)


def test_lowercase_except_proper_names(corpus):
    for sentence in corpus.train:
        for token, tag in zip(sentence.tokens, sentence.pos):
            if tag == "PROPN":
                assert token[0].isupper(), token
            else:
                assert token == token.lower() or token == "I", (token, tag)


def test_corpus_size_and_vocabulary(corpus):
    assert 20_000 <= len(corpus.train) + len(corpus.heldout) <= 40_000
    vocabulary = corpus.vocabulary()
    assert 1_500 <= len(vocabulary) <= 4_000
    assert len(set(vocabulary)) == len(vocabulary)
    counts = Counter(t for s in corpus.train for t in s.tokens)
    keys = [(-counts[t], t) for t in vocabulary]
    assert keys == sorted(keys)
    assert len(corpus.vocabulary(min_count=5)) < len(vocabulary)
    assert all(counts[t] >= 5 for t in corpus.vocabulary(min_count=5))
    # Some morphology for a character model to find.
    assert {"running", "planted", "walked", "slowly", "banks"} <= set(vocabulary)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"num_documents": 0}, ValueError, "num_documents"),
        ({"num_documents": 2.5}, TypeError, "num_documents"),
        ({"num_documents": True}, TypeError, "num_documents"),
        ({"heldout_fraction": 1.0}, ValueError, "heldout_fraction"),
        ({"heldout_fraction": -0.1}, ValueError, "heldout_fraction"),
        ({"heldout_fraction": "0.1"}, TypeError, "heldout_fraction"),
        ({"num_documents": 1, "heldout_fraction": 0.9}, ValueError, "heldout_fraction"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"seed": None}, TypeError, "seed"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs, error, name):
    with pytest.raises(error, match=name):
        generate_corpus(**kwargs)


def test_bad_split_and_min_count_are_rejected_by_name(corpus):
    with pytest.raises(ValueError, match="split"):
        corpus.documents("test")
    with pytest.raises(ValueError, match="min_count"):
        corpus.vocabulary(min_count=0)
    with pytest.raises(TypeError, match="min_count"):
        corpus.vocabulary(min_count="2")
