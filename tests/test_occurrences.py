"""Occurrence vectors are the model's own rows and hidden states at the word's tokens."""

from __future__ import annotations

import pytest
import torch

from ctxlib.analysis.occurrences import occurrence_vectors
from ctxlib.data.senses import find_occurrence


@torch.no_grad()
def test_vectors_are_table_rows_and_hidden_states(minilm_pair):
    model, tokenizer = minilm_pair
    spans = [find_occurrence("The bank was closed.", "bank"),
             find_occurrence("An unbelievably calm river.", "unbelievably")]
    occ = occurrence_vectors(model, tokenizer, spans)
    assert occ.layer_names[:2] == ("static", "layer 0") and len(occ.layer_names) == 8
    for n, span in enumerate(spans):
        enc = tokenizer(span.text, return_tensors="pt", return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping")[0]
        pieces = [i for i, (s, e) in enumerate(offsets.tolist()) if s < span.end and e > span.start and e > s]
        assert (len(pieces) == 1) == (n == 0)  # "unbelievably" is several pieces, pooled by their mean
        hidden = model(**enc, output_hidden_states=True).hidden_states
        table = model.embeddings.word_embeddings.weight
        torch.testing.assert_close(occ.vectors[0, n], table[enc["input_ids"][0, pieces]].mean(0))
        for j, layer in enumerate(hidden):
            torch.testing.assert_close(occ.vectors[j + 1, n], layer[0, pieces].mean(0), atol=1e-5, rtol=1e-5)


def test_bad_input(minilm_pair):
    model, tokenizer = minilm_pair
    with pytest.raises(ValueError, match=r"spans is empty"):
        occurrence_vectors(model, tokenizer, [])
    with pytest.raises(ValueError, match=r"name must be one of"):
        occurrence_vectors(model, tokenizer, [find_occurrence("a bank", "bank")]).layer("layer 9")


@torch.no_grad()
def test_word_vectors_of_pretokenised_sentences_match_span_vectors(minilm_pair):
    from ctxlib.analysis.occurrences import bert_word_vectors

    model, tokenizer = minilm_pair
    words = ["The", "unbelievably", "calm", "bank", "."]
    by_word = bert_word_vectors(model, tokenizer, [words, ["Hi"]])
    assert by_word.vectors.shape == (8, 6, 384)
    by_span = occurrence_vectors(model, tokenizer, [find_occurrence("The unbelievably calm bank .", w) for w in words[1:4]])
    torch.testing.assert_close(by_word.vectors[:, 1:4], by_span.vectors, atol=1e-5, rtol=1e-5)
