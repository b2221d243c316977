"""ctxlib's WordPiece rule splits words exactly as the fast tokenizers do."""

from __future__ import annotations

import pytest

from ctxlib.data import senses
from ctxlib.data.wordpiece import wordpiece_split


def words_of(tokenizer, text: str) -> list[str]:
    """The tokenizer's own normalisation and pre-tokenisation: the words WordPiece splits."""
    backend = tokenizer.backend_tokenizer
    return [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text))]


def test_split_equals_minilm_tokenizer_on_every_word_of_the_sense_sentences(minilm_pair):
    _, tokenizer = minilm_pair
    vocabulary = tokenizer.get_vocab()
    texts = [s.text for word in senses.sense_words() for s in senses.load_sense_sentences(word)]
    texts += ["unbelievably tokenization bannk naïve ELECTRA's 🙂 x" + "a" * 120]
    checked = 0
    for text in texts:
        for word in words_of(tokenizer, text):
            assert wordpiece_split(word, vocabulary) == tokenizer.tokenize(word), word
            checked += 1
    assert checked > 3000


def test_greedy_longest_match_and_unknown_words():
    vocabulary = {"un", "unb", "##e", "##lie", "##liev", "##able", "a", "##b"}
    # Greedy: "unb" is taken first although "un" + "##b..." would also start a split.
    assert wordpiece_split("unbe", vocabulary) == ["unb", "##e"]
    assert wordpiece_split("ab", vocabulary) == ["a", "##b"]
    # One uncovered stretch makes the whole word unknown, not just that stretch.
    assert wordpiece_split("abz", vocabulary) == ["[UNK]"]
    assert wordpiece_split("a" * 101, vocabulary | {"##a"}) == ["[UNK]"]
    assert wordpiece_split("a" * 100, vocabulary | {"##a"}) == ["a"] + ["##a"] * 99


def test_bad_input_is_a_clear_error():
    for word in ("", "two words", 3):
        with pytest.raises(ValueError, match="word must be one non-empty word"):
            wordpiece_split(word, {"a"})
