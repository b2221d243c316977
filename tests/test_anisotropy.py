"""The anisotropy baseline: exact on constructed cases, near zero for isotropic vectors, and on
MiniLM above zero in every encoder layer."""

from __future__ import annotations

import pytest
import torch

from ctxlib.analysis.anisotropy import random_pair_cosine
from ctxlib.analysis.occurrences import bert_word_vectors


def test_pairs_are_of_different_words_and_identical_vectors_give_one():
    # Two words; within a word the vectors are equal, across words orthogonal. A pair of the same
    # word would score 1, so a mean of exactly 0 shows that every sampled pair is of two words.
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 3.0])
    vectors = torch.stack([a, a, b, a, b])[None]
    result = random_pair_cosine(vectors, ["x", "x", "y", "x", "y"], ["only"], pairs=500)
    assert result.mean.tolist() == [0.0] and result.pairs == 500
    same = random_pair_cosine(torch.ones(1, 4, 3), ["a", "b", "c", "d"], ["only"], pairs=50)
    assert torch.allclose(same.mean, torch.ones(1, dtype=torch.float64))


def test_isotropic_vectors_average_zero_within_four_standard_errors():
    # Independent Gaussian vectors: the cosine of a pair has mean 0 and σ ≈ 1/√H, so the mean
    # over 4,000 pairs lies within 4 standard errors of 0 (fails with probability < 1e-4).
    torch.manual_seed(0)
    vectors = torch.randn(2, 600, 64)
    vectors[1] += 3.0  # a shared offset: the second layer is strongly anisotropic
    result = random_pair_cosine(vectors, [f"w{k % 300}" for k in range(600)], ["iso", "shifted"], pairs=4000)
    assert abs(float(result.mean[0])) < 4 * float(result.standard_error[0])
    # cos of (x + c, y + c) with |c|² = 64·9 against E|x|² = 64: about 9 / (1 + 9) = 0.9
    assert abs(float(result.mean[1]) - 0.9) < 0.02


def test_same_pairs_at_every_layer_and_a_fixed_seed():
    torch.manual_seed(1)
    vectors = torch.randn(1, 50, 8)
    words = [str(k % 7) for k in range(50)]
    doubled = random_pair_cosine(torch.cat([vectors, 2 * vectors]), words, ["a", "b"], pairs=300, seed=3)
    assert torch.allclose(doubled.mean[0], doubled.mean[1])  # a scaled copy: same pairs, same cosines
    again = random_pair_cosine(vectors, words, ["a"], pairs=300, seed=3)
    assert torch.equal(again.mean, doubled.mean[:1])


def test_bad_input_is_a_clear_error():
    vectors = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match="words must have one entry per occurrence"):
        random_pair_cosine(vectors, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="at least two different words"):
        random_pair_cosine(vectors, ["a"] * 4, ["x", "y"])
    with pytest.raises(ValueError, match="layer_names"):
        random_pair_cosine(vectors, list("abcd"), ["x"])
    with pytest.raises(ValueError, match="vectors must be"):
        random_pair_cosine(torch.randn(4, 3), list("abcd"), ["x"])
    with pytest.raises(ValueError, match="pairs"):
        random_pair_cosine(vectors, list("abcd"), ["x", "y"], pairs=0)


@torch.no_grad()
def test_minilm_encoder_layers_are_anisotropic(minilm_pair):
    model, tokenizer = minilm_pair
    sentences = [s.split() for s in ("the river bank was steep and muddy", "she sold the old car to a friend",
                                      "light rain fell on the quiet town", "we played cards after dinner",
                                      "the bat flew out of the dark cave", "prices rose again in spring")]
    occ = bert_word_vectors(model, tokenizer, sentences)
    words = [w for s in sentences for w in s]
    result = random_pair_cosine(occ.vectors, words, occ.layer_names, pairs=3000)
    encoder, error = result.mean[2:], result.standard_error[2:]
    # Every encoder layer's random pairs are far from orthogonal (Ethayarajh 2019, §4.1): their
    # mean cosine is more than ten standard errors above the 0 of isotropic vectors.
    assert bool((encoder > 10 * error).all()), (encoder, error)
