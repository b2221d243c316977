"""The vectors a model gives one word occurrence, layer by layer.

For an occurrence (a sentence and the character span of the word in it) BERT offers a stack of
representations: the static row of its word-embedding table, which is the same in every
sentence (notes §1.1: v_w^(c1) = v_w^(c2)), the embedding layer's output (eq 3.2: token +
position + segment), and one vector per encoder layer. A word split into several WordPieces
is represented by the mean of its pieces, the usual choice when probing (Tenney et al. 2019
use a span pooling of the same kind).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from ctxlib._checks import check_token_lists
from ctxlib._modes import evaluating
from ctxlib.models.bert import BertModel
from ctxlib.models.elmo import batch_to_ids


class Span(Protocol):
    """A word occurrence: ``text[start:end]`` is the word."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class OccurrenceVectors:
    """``vectors[i, n]`` is occurrence n's vector at layer ``layer_names[i]``: ``[L+2, N, H]``.

    Layer "static" is the word-embedding row, "layer 0" the embedding output, "layer j" the
    output of encoder block j.
    """

    layer_names: tuple[str, ...]
    vectors: torch.Tensor

    def layer(self, name: str) -> torch.Tensor:
        if name not in self.layer_names:
            raise ValueError(f"name must be one of {list(self.layer_names)}, got {name!r}")
        return self.vectors[self.layer_names.index(name)]


def layer_names(model: BertModel) -> tuple[str, ...]:
    return ("static", *(f"layer {j}" for j in range(model.config.num_hidden_layers + 1)))


def piece_mask(offsets: torch.Tensor, span: Span) -> torch.Tensor:
    """Which tokens of one encoded sentence overlap the span (special tokens have offset (0, 0))."""
    start, end = offsets[:, 0], offsets[:, 1]
    pieces = (start < span.end) & (end > span.start) & (end > start)
    if not bool(pieces.any()):
        raise ValueError(f"span [{span.start}, {span.end}) of {span.text!r} covers no token")
    return pieces


def _pooled(model: BertModel, batches: Iterator[tuple[dict, list[list[torch.Tensor]]]]) -> OccurrenceVectors:
    """Encode each batch once; for every row, pool the pieces each of its masks selects into
    ``[L+2, H]`` (static rows and hidden states, averaged); stack all into ``[L+2, N, H]``."""
    table = model.embeddings.word_embeddings.weight
    pooled: list[torch.Tensor] = []
    with evaluating(model):
        for enc, masks_per_row in batches:
            hidden = torch.stack(model(**enc, output_hidden_states=True).hidden_states)  # [L+1, B, T, H]
            for row, masks in enumerate(masks_per_row):
                ids = enc["input_ids"][row]
                pooled += [torch.cat([table[ids[m]].mean(0)[None], hidden[:, row][:, m].mean(1)]) for m in masks]
    return OccurrenceVectors(layer_names(model), torch.stack(pooled, dim=1))


@torch.no_grad()
def occurrence_vectors(model: BertModel, tokenizer, spans: Sequence[Span], batch_size: int = 64) -> OccurrenceVectors:
    """Every layer's vector for each span, as ``OccurrenceVectors`` (eval mode, no gradients)."""
    if len(spans) == 0:
        raise ValueError("spans is empty: give at least one word occurrence")

    def batches():
        for first in range(0, len(spans), batch_size):
            chunk = spans[first:first + batch_size]
            enc = tokenizer([s.text for s in chunk], padding=True, return_offsets_mapping=True, return_tensors="pt")
            offsets = enc.pop("offset_mapping")
            yield enc, [[piece_mask(offsets[row], span)] for row, span in enumerate(chunk)]

    return _pooled(model, batches())


@torch.no_grad()
def bert_word_vectors(model: BertModel, tokenizer, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> OccurrenceVectors:
    """Every word of pre-tokenised ``sentences``, in reading order: ``[L+2, N_words, H]``
    (static row, embedding output, each encoder layer), WordPieces pooled by their mean. The
    static row is eq 1.1's ``v_w``: the word's rows of the embedding table, the same in every
    context."""
    check_token_lists("sentences", sentences)

    def batches():
        for first in range(0, len(sentences), batch_size):
            chunk = [list(s) for s in sentences[first:first + batch_size]]
            enc = tokenizer(chunk, is_split_into_words=True, padding=True, return_tensors="pt")
            word_of = [torch.tensor([-1 if w is None else w for w in enc.word_ids(row)]) for row in range(len(chunk))]
            yield enc, [[word_of[row] == w for w in range(len(words))] for row, words in enumerate(chunk)]

    return _pooled(model, batches())


@torch.no_grad()
def elmo_word_vectors(elmo, sentences: Sequence[Sequence[str]], batch_size: int = 128) -> OccurrenceVectors:
    """Every word of ``sentences`` in ELMo's L+1 layers, in reading order: ``[L+1, N_words, 2·proj]``
    ("layer 0" is the char-CNN token layer)."""
    check_token_lists("sentences", sentences)
    per_batch = []
    with evaluating(elmo):
        for first in range(0, len(sentences), batch_size):
            out = elmo(batch_to_ids(sentences[first:first + batch_size]))
            per_batch.append(torch.stack(out.layers)[:, out.mask])  # [L+1, words in batch, H]
    names = tuple(f"layer {j}" for j in range(len(per_batch[0])))
    return OccurrenceVectors(names, torch.cat(per_batch, dim=1))


# ELMo reads words: a text is split into words and punctuation marks, as the book's corpus is.
_WORD_OR_MARK = re.compile(r"\w+|[^\w\s]")


@torch.no_grad()
def elmo_occurrence_vectors(elmo, spans: Sequence[Span], batch_size: int = 128) -> OccurrenceVectors:
    """ELMo's L+1 layers for each span, ``[L+1, N, 2·proj]``: each text split into words and
    punctuation marks, encoded whole, and the word the span covers picked out. The span must be
    exactly one such word."""
    if len(spans) == 0:
        raise ValueError("spans is empty: give at least one word occurrence")
    sentences, picked, offset = [], [], 0
    for span in spans:
        words = list(_WORD_OR_MARK.finditer(span.text))
        at = [i for i, m in enumerate(words) if (m.start(), m.end()) == (span.start, span.end)]
        if not at:
            raise ValueError(f"span [{span.start}, {span.end}) of {span.text!r} is not one word of "
                             f"{[m.group() for m in words]}")
        sentences.append([m.group() for m in words])
        picked.append(offset + at[0])
        offset += len(words)
    vectors = elmo_word_vectors(elmo, sentences, batch_size)
    return OccurrenceVectors(vectors.layer_names, vectors.vectors[:, picked])
