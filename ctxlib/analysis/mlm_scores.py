"""What a pretrained BERT predicts: held-out MLM and NSP scores, fill-in-the-blank, and the
MLM head's output on unmasked text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import check_positive_int
from ctxlib._modes import evaluating
from ctxlib.models.bert import BertForPreTraining
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.objectives.nsp import SentencePair, encode_pairs
from ctxlib.training.pretraining_data import PretrainingBatch


@dataclass(frozen=True)
class PretrainingScores:
    """Held-out MLM accuracy (top-1 on the masked positions) and NSP accuracy, with the losses."""

    mlm_accuracy: float
    nsp_accuracy: float
    mlm_loss: float
    nsp_loss: float


@torch.no_grad()
def pretraining_scores(model: BertForPreTraining, batches: Sequence[PretrainingBatch],
                       causal: bool = False) -> PretrainingScores:
    """Held-out scores of ``model`` on ``batches``; ``causal=True`` runs it with a left-to-right
    attention mask (which BERT never trained with)."""
    right = total = nsp_right = nsp_total = 0
    mlm_loss = nsp_loss = 0.0
    with evaluating(model):
        for batch in batches:
            out = model(**batch, masked_only=True, causal=causal)
            masked = batch["labels"] != IGNORE_INDEX
            right += int((out.prediction_logits.argmax(-1) == batch["labels"][masked]).sum())
            total += int(masked.sum())
            nsp_right += int((out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]).sum())
            nsp_total += len(batch["next_sentence_label"])
            mlm_loss += float(out.mlm_loss) * int(masked.sum())
            nsp_loss += float(out.nsp_loss) * len(batch["next_sentence_label"])
    return PretrainingScores(right / total, nsp_right / nsp_total, mlm_loss / total, nsp_loss / nsp_total)


@torch.no_grad()
def fill_mask(model: BertForPreTraining, tokenizer: BertTokenizerFast, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """The ``k`` most probable tokens, with their probabilities, at each ``[MASK]`` of ``text``."""
    check_positive_int("k", k)
    if k > model.config.vocab_size:
        raise ValueError(f"k must be at most the vocabulary's {model.config.vocab_size} tokens, got {k}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str holding {tokenizer.mask_token}, got {type(text).__name__}")
    encoded = tokenizer(text, return_tensors="pt")
    where = encoded["input_ids"][0] == tokenizer.mask_token_id
    if not where.any():
        raise ValueError(f"text must contain {tokenizer.mask_token} where a token should be predicted, got {text!r}")
    with evaluating(model):
        logits = model(**encoded).prediction_logits[0, where]
    top = logits.softmax(-1).topk(k)
    return [[(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids)]
            for ps, ids in zip(top.values, top.indices)]


def unmasked_outputs(model: torch.nn.Module, tokenizer: BertTokenizerFast, pairs: Sequence[SentencePair],
                     batch_size: int = 250) -> Iterator[tuple[PretrainingBatch, Any]]:
    """Each batch of ``pairs``, encoded with nothing masked and cut to the model's own position
    limit (``config.max_position_embeddings``), with the model's output on it (no gradients)."""
    check_positive_int("batch_size", batch_size)
    if len(pairs) == 0:
        raise ValueError("pairs is empty: give at least one SentencePair to score")
    with evaluating(model):  # the caller's mode comes back when the batches are done (or abandoned)
        for first in range(0, len(pairs), batch_size):
            batch = encode_pairs(pairs[first:first + batch_size], cls_id=tokenizer.cls_token_id,
                                 sep_id=tokenizer.sep_token_id, pad_id=tokenizer.pad_token_id,
                                 max_length=model.config.max_position_embeddings)
            with torch.no_grad():
                yield batch, model(batch["input_ids"], attention_mask=batch["attention_mask"],
                                   token_type_ids=batch["token_type_ids"])


def unmasked_token_accuracy(model: BertForPreTraining, tokenizer: BertTokenizerFast, pairs: Sequence[SentencePair],
                            batch_size: int = 250) -> float:
    """Top-1 accuracy of the MLM head at every token of *unmasked* pairs ([CLS] and [SEP]
    excluded): whether the model's output at a token it can see still says what the token is,
    the situation of every token in fine-tuning."""
    right = total = 0
    for batch, out in unmasked_outputs(model, tokenizer, pairs, batch_size):
        real = batch["special_tokens_mask"] == 0
        right += int((out.prediction_logits.argmax(-1) == batch["input_ids"])[real].sum())
        total += int(real.sum())
    return right / total


def most_frequent_token_accuracy(batches: Sequence[PretrainingBatch]) -> float:
    """MLM accuracy of always answering the commonest masked token: the floor a model must beat."""
    labels = torch.cat([b["labels"][b["labels"] != IGNORE_INDEX] for b in batches])
    return float(torch.bincount(labels).max()) / len(labels)

