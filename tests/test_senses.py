"""The polysemy data set is what Chapter 1's separation scores assume it is."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from ctxlib.data.senses import SenseSentence, find_occurrence, load_sense_sentences, sense_words, senses

REQUIRED_WORDS = ("bank", "run", "bat", "spring", "plant", "light")
MIN_PER_SENSE = 12
MAX_TOKENS = 40


def whole_word(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def tokenizer():
    from ctxlib.models.pretrained import minilm_tokenizer

    return minilm_tokenizer()


def test_required_words_come_first_in_book_order():
    assert sense_words()[: len(REQUIRED_WORDS)] == REQUIRED_WORDS


def test_no_word_is_listed_twice():
    assert len(set(sense_words())) == len(sense_words())


@pytest.mark.parametrize("word", sense_words())
def test_every_word_has_two_or_more_glossed_senses(word):
    glosses = senses(word)
    assert len(glosses) >= 2
    for sense, gloss in glosses.items():
        assert re.fullmatch(r"[a-z]+", sense), sense
        assert gloss.strip(), f"{word}/{sense} has an empty gloss"


@pytest.mark.parametrize("word", sense_words())
def test_every_sense_has_enough_sentences_and_no_stray_labels(word):
    counts = Counter(s.sense for s in load_sense_sentences(word))
    assert set(counts) == set(senses(word))
    assert min(counts.values()) >= MIN_PER_SENSE, counts


@pytest.mark.parametrize("word", sense_words())
def test_target_occurs_exactly_once_in_base_form(word):
    for s in load_sense_sentences(word):
        assert s.word == word
        assert len(whole_word(word).findall(s.text)) == 1, s.text
        assert s.text[s.start : s.end].lower() == word, s.text


def test_no_sentence_is_repeated():
    texts = [s.text for s in load_sense_sentences()]
    assert len(texts) == len(set(texts))


def test_all_words_is_the_concatenation_of_each_word():
    everything = load_sense_sentences()
    assert everything == [s for w in sense_words() for s in load_sense_sentences(w)]
    assert all(isinstance(s, SenseSentence) for s in everything)


@pytest.mark.parametrize("word", sense_words())
def test_target_is_one_wordpiece_at_its_offsets(tokenizer, word):
    for s in load_sense_sentences(word):
        encoding = tokenizer(s.text, return_offsets_mapping=True)
        assert len(encoding["input_ids"]) < MAX_TOKENS, s.text
        # Every token overlapping the target's characters; exactly one means no sub-word split.
        covering = [(a, b) for a, b in encoding["offset_mapping"] if a < s.end and b > s.start]
        assert covering == [(s.start, s.end)], (s.text, tokenizer.tokenize(s.text))


def test_returned_glosses_are_a_copy():
    senses("bank").clear()
    assert senses("bank")


def test_unknown_word_names_argument_value_and_allowed_words():
    with pytest.raises(ValueError, match=r"word must be one of \[.*'bank'.*\], got 'banks'"):
        load_sense_sentences("banks")
    with pytest.raises(ValueError, match="'mouse'"):
        senses("mouse")


@pytest.mark.parametrize("bad", [3, b"bank", ["bank"]])
def test_non_str_word_is_a_type_error(bad):
    with pytest.raises(TypeError, match="word must be a str"):
        load_sense_sentences(bad)
    with pytest.raises(TypeError, match="word must be a str"):
        senses(bad)


def test_find_occurrence_locates_one_whole_word():
    occ = find_occurrence("Bankers met by the Bank of the river.", "bank", "river")
    assert (occ.start, occ.end, occ.sense) == (19, 23, "river")
    with pytest.raises(ValueError, match=r"word='bank' must occur exactly once .*found 0"):
        find_occurrence("The banker left.", "bank")
    with pytest.raises(ValueError, match=r"found 2"):
        find_occurrence("A bank by the bank.", "bank")
    with pytest.raises(TypeError, match=r"text must be a str"):
        find_occurrence(None, "bank")
