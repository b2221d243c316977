"""What next-sentence prediction learns (notes §6.1): topic matching rather than coherence.

BERT's NotNext segment B is a sentence from a random document (``ctxlib.objectives.nsp``), which in its
corpora, as in the book's, is almost always about another topic. A model can therefore score
well on NSP by asking "are A and B about the same thing?" and never "does B follow A?".
``contrast_accuracy`` tells the two apart by scoring a model on three kinds of negative
(``ctxlib.objectives.nsp.contrast_pairs``): from another topic, from another document on the same topic,
and from A's own document. ``minilm_nsp`` fine-tunes MiniLM on the book's NSP pairs, a model
strong enough to learn the task quickly, so the chapter can ask what it learned.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import check_positive_int
from ctxlib.analysis.mlm_scores import unmasked_outputs
from ctxlib.data.corpus import Corpus
from ctxlib.models.heads import BertForSequenceClassification
from ctxlib.models.pretrained import minilm, minilm_version
from ctxlib.objectives.nsp import NEGATIVE_KINDS, NEXT, SentencePair, contrast_pairs, encode_pairs, sentence_pairs
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit
from ctxlib.training.pretraining_data import document_ids
from ctxlib.training.warm_start import start_from

_TRAINING_LENGTH = 128  # the book's pairs are shorter; MiniLM's limit is 512


def nsp_probabilities(model: torch.nn.Module, tokenizer: BertTokenizerFast, pairs: Sequence[SentencePair],
                      batch_size: int = 250) -> torch.Tensor:
    """P(IsNext | A, B) (eq 3.3) of each pair, nothing masked, from a ``BertForPreTraining``
    (its NSP head) or a two-class ``BertForSequenceClassification`` trained with NSP's labels."""
    out = []
    for _, output in unmasked_outputs(model, tokenizer, pairs, batch_size):
        logits = output.seq_relationship_logits if hasattr(output, "seq_relationship_logits") else output.logits
        out.append(logits.softmax(-1)[:, NEXT])
    return torch.cat(out)


def contrast_accuracy(model: torch.nn.Module, tokenizer: BertTokenizerFast, corpus: Corpus, split: str = "heldout",
                      per_kind: int | None = None, seed: int = 0) -> dict[str, float]:
    """NSP accuracy on true successors ("next") and on each kind of negative of
    ``ctxlib.objectives.nsp.contrast_pairs``, over the documents of ``split`` (at most ``per_kind`` pairs
    of each kind)."""
    documents, topics = document_ids(corpus, split, tokenizer)
    accuracy = {}
    for kind in ("next", *NEGATIVE_KINDS):
        pairs = contrast_pairs(documents, topics, kind, seed=seed)[:per_kind]
        is_next = nsp_probabilities(model, tokenizer, pairs) > 0.5
        accuracy[kind] = float((is_next if kind == "next" else ~is_next).float().mean())
    return accuracy


def topic_matcher_accuracy(corpus: Corpus, tokenizer: BertTokenizerFast, split: str = "heldout",
                           seed: int = 0) -> float:
    """NSP accuracy of a rule that reads only topics: NotNext exactly when A's and B's documents
    have different topics, on BERT's pairs (``ctxlib.objectives.nsp.sentence_pairs``). The corpus's topic
    labels stand in for a perfect topic classifier: this is the score topic matching alone reaches."""
    documents, topics = document_ids(corpus, split, tokenizer)
    where = {tuple(sentence): topics[d] for d, document in enumerate(documents) for sentence in document}
    pairs = sentence_pairs(documents, seed=seed)
    right = sum((where[pair.a] == where[pair.b]) == pair.is_next for pair in pairs)
    return right / len(pairs)


def _batches(pairs: list[SentencePair], tokenizer: BertTokenizerFast, batch_size: int,
             seed: int) -> Iterator[dict[str, torch.Tensor]]:
    rng = random.Random(seed)
    while True:
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for first in range(0, len(order) - batch_size + 1, batch_size):
            yield encode_pairs([pairs[i] for i in order[first:first + batch_size]], cls_id=tokenizer.cls_token_id,
                               sep_id=tokenizer.sep_token_id, pad_id=tokenizer.pad_token_id,
                               max_length=_TRAINING_LENGTH)


def minilm_nsp(corpus: Corpus, steps: int = 100, batch_size: int = 16, lr: float = 1e-4,
               seed: int = 0) -> tuple[BertForSequenceClassification, History, BertTokenizerFast]:
    """MiniLM fine-tuned on NSP (eq 3.4) with the book's training pairs, as a two-class
    sequence classifier on ``[CLS] A [SEP] B [SEP]`` (eq 3.6); cached. The head learns 100×
    faster than the encoder, in fp32, as in Chapter 5's recipe."""
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    encoder, tokenizer = minilm()

    def build() -> BertForSequenceClassification:
        return start_from(BertForSequenceClassification(encoder.config, 2), seed)

    def train(model: BertForSequenceClassification) -> History:
        pairs = sentence_pairs(document_ids(corpus, "train", tokenizer)[0], seed=seed)
        return fit(model, _batches(pairs, tokenizer, batch_size, seed),
                   lambda m, b: m(b["input_ids"], attention_mask=b["attention_mask"],
                                  token_type_ids=b["token_type_ids"], labels=b["next_sentence_label"]).loss,
                   TrainConfig(steps=steps, lr=lr, seed=seed, description="MiniLM on NSP"),
                   lr_scale={"classifier": 100.0})

    key = {"steps": steps, "batch_size": batch_size, "lr": lr, "seed": seed, "minilm": minilm_version(),
           "corpus": corpus}
    model, history = cached_training("minilm-nsp", key, build, train)
    return model, history, tokenizer
