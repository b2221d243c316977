"""Pretraining the book's ELMo: batches, perplexity and the cached training run."""

from __future__ import annotations

import random
from dataclasses import asdict

import pytest
import torch

from ctxlib.data.corpus import Corpus, TaggedSentence
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.models.elmo import BiLM, ElmoConfig, batch_to_ids
from ctxlib.studies.elmo_pretraining import BOOK_ELMO, book_elmo, lm_batches, perplexity
from ctxlib.training.loop import TrainConfig

SMALL = ElmoConfig(char_embedding_dim=4, filters=((1, 8), (2, 8), (3, 8)), n_highway=1, projection_dim=16,
                   cell_size=32, cell_clip=None, proj_clip=None)


def toy_corpus(n: int = 300) -> Corpus:
    """A corpus with an easy pattern: 'the <animal> <verb>s .' over and over."""
    rng = random.Random(0)
    animals, verbs = ["dog", "cat", "bird", "fish"], ["runs", "sleeps", "eats"]
    def sentence(i: int) -> TaggedSentence:
        tokens = ("the", rng.choice(animals), rng.choice(verbs), ".")
        return TaggedSentence(tokens, ("DET", "NOUN", "VERB", "PUNCT"), (None,) * 4, i // 3, "animals")
    return Corpus(tuple(sentence(i) for i in range(n)), tuple(sentence(i) for i in range(30)))


def test_batches_are_reproducible():
    sentences = [s.tokens for s in toy_corpus().train]
    vocab = Vocabulary(t for s in sentences for t in s)
    a, b = lm_batches(sentences, vocab, 8, seed=3), lm_batches(sentences, vocab, 8, seed=3)
    for _ in range(3):
        (chars_a, words_a), (chars_b, words_b) = next(a), next(b)
        assert torch.equal(chars_a, chars_b) and torch.equal(words_a, words_b)


def test_untrained_perplexity_is_near_the_vocabulary_size():
    # With small random weights every word is about equally likely: perplexity ≈ |V|.
    torch.manual_seed(0)
    sentences = [s.tokens for s in toy_corpus().heldout]
    vocab = Vocabulary([f"w{i}" for i in range(500)] + [t for s in sentences for t in s])
    bilm = BiLM(ElmoConfig(**{**asdict(SMALL), "vocab_size": len(vocab)}))
    for value in perplexity(bilm, sentences, vocab).values():
        assert 0.8 * len(vocab) < value < 1.25 * len(vocab)


def test_book_elmo_learns_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus = toy_corpus()
    training = TrainConfig(steps=60, lr=1e-2, eval_every=30, progress=False)
    elmo, history, vocab = book_elmo(corpus, training, SMALL)
    first = history.evaluations["heldout forward perplexity"]
    assert [step for step, _ in first] == [30, 60]
    # The pattern has 4 animals and 3 verbs: a model that learned it is far below |V| = 14.
    assert first[-1][1] < 4.0 < len(vocab)
    again, history_again, _ = book_elmo(corpus, training, SMALL)
    assert history_again.evaluations == history.evaluations
    assert all(torch.equal(a, b) for a, b in zip(elmo.state_dict().values(), again.state_dict().values()))
    assert len(list(tmp_path.glob("book-elmo-*.pt"))) == 1


def test_the_book_elmo_trains_on_the_fused_kernel_which_computes_the_exact_cell():
    # Clipping is off in BOOK_ELMO so that training takes torch's fused LSTM; without clipping it
    # must compute what bilm-tf's cell computes step by step.
    torch.manual_seed(0)
    bilm = BiLM(BOOK_ELMO).eval()
    assert not any(layer.clipped for layer in (*bilm.forward_layers, *bilm.backward_layers))
    ids = batch_to_ids([["the", "bank", "flooded", "."], ["a", "bank"]])
    with torch.no_grad():
        fused, exact = bilm(ids).layers, bilm(ids, exact=True).layers
    for a, b in zip(fused, exact):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="activation must be one of"):
        ElmoConfig(activation="swish")


def test_probe_tasks_cut_pos_and_sense_words_out_of_one_encoding():
    from ctxlib.analysis.layer_probes import probe_tasks
    from ctxlib.analysis.occurrences import OccurrenceVectors

    rng = random.Random(1)
    def sentence(i: int) -> TaggedSentence:
        sense = rng.choice(["bank/river", "bank/finance"])
        return TaggedSentence(("the", "bank", "."), ("DET", "NOUN", "PUNCT"), (None, sense, None), i, "t")
    corpus = Corpus(tuple(sentence(i) for i in range(40)), (), novel=tuple(sentence(i) for i in range(10)))
    encoded = []
    def encode(sentences):
        # One "layer" whose vector is the word's position in the whole batch: traceable.
        n = sum(map(len, sentences))
        encoded.append(n)
        return OccurrenceVectors(("layer 0",), torch.arange(float(n)).view(1, n, 1))
    tasks = probe_tasks(encode, corpus, train_sentences=20, test_sentences=5, max_pos_tokens=30)
    assert encoded == [60, 15]  # each split encoded once
    sense = tasks["word sense"]
    assert sense.train_layers.shape == (1, 20, 1) and set(sense.train_labels) <= {"bank/river", "bank/finance"}
    assert sense.train_layers[0, :, 0].remainder(3).eq(1).all()  # the middle word of each sentence
    assert tasks["part of speech"].train_layers.shape == (1, 30, 1) and len(tasks["part of speech"].test_labels) == 15


def test_training_is_repeatable(tmp_path, monkeypatch):
    corpus = toy_corpus()
    training = TrainConfig(steps=15, lr=1e-2, progress=False)
    states = []
    for run in ("a", "b"):
        monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path / run))  # no cache hit: train twice
        elmo, _, _ = book_elmo(corpus, training, SMALL)
        states.append(elmo.state_dict())
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
