"""Task heads on a BERT encoder (notes §5.2): sequence classification, token tagging, span QA.

Each model is ``bert`` (a ``BertModel``) plus a small head, with Hugging Face's attribute names
(``classifier``, ``qa_outputs``), so ``from_pretrained`` loads a pretrained encoder under a fresh
head, and ``save_pretrained`` writes what ``transformers``' ``BertFor...`` classes load.

* ``BertForSequenceClassification``: eq 3.6, a linear layer on the pooled ``[CLS]`` vector;
* ``BertForTokenClassification``: a tag per token, by a softmax or by a linear-chain CRF
  (``ctxlib.layers.crf``) over the labelled tokens;
* ``BertForQuestionAnswering``: start and end logits for every token; ``best_span`` picks the
  best answer span of at most ``max_answer_length`` tokens in the context, or no answer when
  the ``[CLS]`` "null span" scores higher (SQuAD 2.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import (as_bool_mask, check_bool, check_finite, check_index_tensor, check_positive_int,
                            check_same_shape, check_values_below)
from ctxlib.layers.crf import LinearChainCRF
from ctxlib.models.bert import BertConfig, BertModel, BertPreTrainedModel
from ctxlib.objectives.masking import IGNORE_INDEX


@dataclass
class HeadOutput:
    """``logits`` ``[B, num_labels]`` (per sequence) or ``[B, T, num_labels]`` (per token), and
    the loss when labels were given."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None


@dataclass
class QuestionAnsweringOutput:
    """``start_logits`` and ``end_logits`` ``[B, T]``: how likely each token is to start or end
    the answer; the loss when the answer positions were given."""

    start_logits: torch.Tensor
    end_logits: torch.Tensor
    loss: torch.Tensor | None = None


def _check_labels_per_sequence(labels: torch.Tensor, input_ids: torch.Tensor, name: str = "labels") -> None:
    if labels.dim() != 1 or labels.shape[0] != input_ids.shape[0]:
        raise ValueError(f"{name} must have shape [B] = ({input_ids.shape[0]},), one entry per sequence, "
                         f"got {tuple(labels.shape)}")


class _BertWithHead(BertPreTrainedModel):
    base_prefix = "bert."

    def __init__(self, config: BertConfig, num_labels: int) -> None:
        super().__init__()
        self.config = config
        self.num_labels = check_positive_int("num_labels", num_labels)
        self.bert = BertModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def hf_config(self) -> dict[str, Any]:
        return {"num_labels": self.num_labels}

    @classmethod
    def options_from_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        # transformers writes id2label (num_labels is derived from it); ctxlib writes num_labels.
        if "num_labels" in config:
            return {"num_labels": config["num_labels"]}
        return {"num_labels": len(config["id2label"])} if isinstance(config.get("id2label"), dict) else {}

    def _linear_head(self, out_features: int) -> nn.Linear:
        """A fresh ``hidden_size → out_features`` layer with BERT's initialisation."""
        head = nn.Linear(self.config.hidden_size, out_features)
        head.apply(self._init_module)
        return head


class BertForSequenceClassification(_BertWithHead):
    """Eq 3.6: ``softmax(W_o · pooler(H_0))``, the pooled ``[CLS]`` vector through dropout and a
    linear layer; the loss is the cross-entropy of class ids ``labels`` ``[B]``. With
    ``num_labels=1`` the head is a regression, as in ``transformers``: one score per sequence and
    a mean squared error against float ``labels`` (a one-class softmax would always give loss 0)."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__(config, num_labels)
        self.classifier = self._linear_head(num_labels)

    def forward(self, input_ids: torch.Tensor, *, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> HeadOutput:
        pooled = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).pooler_output
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            if not isinstance(labels, torch.Tensor):
                raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
            _check_labels_per_sequence(labels, input_ids)
            if self.num_labels == 1:
                if not labels.is_floating_point():
                    raise TypeError(f"labels must be floats for a regression head (num_labels=1), got {labels.dtype}")
                if not bool(labels.isfinite().all()):
                    raise ValueError("labels must be finite for a regression head (num_labels=1)")
                loss = F.mse_loss(logits.squeeze(-1), labels.to(logits.dtype))
            else:
                check_index_tensor("labels", labels, ndim=1)
                check_values_below("labels", labels, self.num_labels, "num_labels")
                loss = F.cross_entropy(logits, labels)
        return HeadOutput(logits, loss)


class BertForTokenClassification(_BertWithHead):
    """A tag per token: a linear layer on every ``H_t^{(L)}``, then a per-token softmax, or with
    ``crf=True`` a linear-chain CRF over the labelled tokens (those whose label is not ``IGNORE_INDEX``,
    usually each word's first WordPiece), taken in order."""

    def __init__(self, config: BertConfig, num_labels: int = 2, crf: bool = False) -> None:
        super().__init__(config, num_labels)
        if num_labels < 2:
            raise ValueError(f"num_labels must be at least 2 for a tagger (one tag per token would always be right, "
                             f"with loss 0), got {num_labels}")
        self.classifier = self._linear_head(num_labels)
        self.crf = LinearChainCRF(num_labels) if check_bool("crf", crf) else None

    def hf_config(self) -> dict[str, Any]:
        return {**super().hf_config(), **({"crf": True} if self.crf is not None else {})}

    @classmethod
    def options_from_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {**super().options_from_config(config), **({"crf": True} if config.get("crf") is True else {})}

    def forward(self, input_ids: torch.Tensor, *, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> HeadOutput:
        if labels is not None:
            self._check_labels(labels, input_ids, attention_mask)
        hidden = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        logits = self.classifier(self.dropout(hidden))
        loss = None
        if labels is not None:
            if self.crf is None:
                loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
            else:
                emissions, tags, mask = compact_labelled(logits, labels)
                loss = self.crf.nll(emissions, tags, mask)
        return HeadOutput(logits, loss)

    def _check_labels(self, labels: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> None:
        """Labels a tag per token (or ``IGNORE_INDEX``), and none on padding, which the model never
        reads: a tag there would train the head on a position attention left out."""
        check_index_tensor("labels", labels, ndim=2)
        check_same_shape("labels", labels, "input_ids", input_ids)
        tagged = labels[labels != IGNORE_INDEX]
        if tagged.numel() == 0:
            raise ValueError(f"labels tag no token (all are {IGNORE_INDEX}): the loss, a mean over tagged tokens, "
                             "is undefined; give at least one tag")
        if int(tagged.min()) < 0 or int(tagged.max()) >= self.num_labels:
            raise ValueError(f"labels must be {IGNORE_INDEX} or lie in [0, num_labels={self.num_labels}), got "
                             f"values in [{int(tagged.min())}, {int(tagged.max())}]")
        if attention_mask is not None:
            padding = ~as_bool_mask("attention_mask", attention_mask, input_ids.shape) & (labels != IGNORE_INDEX)
            if bool(padding.any()):
                row, position = (int(i) for i in padding.nonzero()[0])
                raise ValueError(f"labels tag padding (attention_mask 0) at {int(padding.sum())} position(s), the "
                                 f"first at row {row}, position {position}; label padding {IGNORE_INDEX}")

    @torch.no_grad()
    def decode(self, logits: torch.Tensor, where: torch.Tensor) -> list[list[int]]:
        """The predicted tags at the positions ``where`` ``[B, T]`` marks (e.g. first pieces of
        words; a bool or 0/1 mask): Viterbi with the CRF, the argmax of each position without it."""
        if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[-1] != self.num_labels:
            raise ValueError(f"logits must be a tensor [B, T, num_labels={self.num_labels}], "
                             f"got {tuple(getattr(logits, 'shape', ())) or type(logits).__name__}")
        where = as_bool_mask("where", where, logits.shape[:2])
        if self.crf is None:
            return [row[mask].argmax(-1).tolist() for row, mask in zip(logits, where)]
        emissions, _, mask = compact_labelled(logits, torch.where(where, 0, IGNORE_INDEX))
        return self.crf.viterbi(emissions, mask)


def compact_labelled(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Move each row's labelled positions to the front, in order: the emissions, tags and mask
    (a prefix of ones) of the tag sequence a CRF scores."""
    where = labels != IGNORE_INDEX
    if not where.any(1).all():
        raise ValueError("labels must tag at least one token in every sequence for the CRF")
    counts = where.sum(1)
    width = int(counts.max())
    order = torch.argsort((~where).int(), dim=1, stable=True)[:, :width]   # labelled positions first
    emissions = logits.gather(1, order[..., None].expand(-1, -1, logits.shape[-1]))
    tags = labels.gather(1, order)
    mask = torch.arange(width, device=labels.device)[None, :] < counts[:, None]
    return emissions, torch.where(mask, tags, 0), mask


class BertForQuestionAnswering(_BertWithHead):
    """Start and end logits for every token (``qa_outputs``); the loss is the mean of the start
    and end cross-entropies, with position 0 (``[CLS]``) as the answer of an unanswerable question."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        if num_labels != 2:
            raise ValueError(f"num_labels must be 2 for question answering (start and end), got {num_labels}")
        super().__init__(config, num_labels)
        self.qa_outputs = self._linear_head(2)

    def forward(self, input_ids: torch.Tensor, *, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, start_positions: torch.Tensor | None = None,
                end_positions: torch.Tensor | None = None) -> QuestionAnsweringOutput:
        hidden = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        start, end = self.qa_outputs(hidden).unbind(-1)
        loss = None
        if (start_positions is None) != (end_positions is None):
            raise ValueError("give both start_positions and end_positions, or neither")
        if start_positions is not None:
            for name, positions in (("start_positions", start_positions), ("end_positions", end_positions)):
                check_index_tensor(name, positions, ndim=1)
                _check_labels_per_sequence(positions, input_ids, name)
                check_values_below(name, positions, input_ids.shape[1], "the sequence length")
            if (end_positions < start_positions).any():
                raise ValueError("end_positions must not come before start_positions")
            loss = (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2
        return QuestionAnsweringOutput(start, end, loss)


@dataclass(frozen=True)
class Span:
    """An answer: token positions ``start``..``end`` (inclusive) and its score; ``None`` spans
    (``start is None``) mean "no answer"."""

    start: int | None
    end: int | None
    score: float


def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor,
              max_answer_length: int = 30, allow_no_answer: bool = False) -> list[Span]:
    """Per sequence, the context span ``i ≤ j < i + max_answer_length`` maximising
    ``start[i] + end[j]``; with ``allow_no_answer``, no answer when the null score
    ``start[0] + end[0]`` (at ``[CLS]``) is higher."""
    check_positive_int("max_answer_length", max_answer_length)
    check_bool("allow_no_answer", allow_no_answer)
    check_finite("start_logits", start_logits)
    check_finite("end_logits", end_logits)
    if start_logits.shape != end_logits.shape or start_logits.dim() != 2:
        raise ValueError(f"start_logits and end_logits must both be [B, T], got {tuple(start_logits.shape)} "
                         f"and {tuple(end_logits.shape)}")
    context_mask = as_bool_mask("context_mask", context_mask, start_logits.shape)
    length = start_logits.shape[1]
    positions = torch.arange(length, device=start_logits.device)
    i, j = positions[:, None], positions[None, :]
    allowed = (j >= i) & (j - i < max_answer_length)
    spans = []
    for start, end, context in zip(start_logits, end_logits, context_mask):
        if not context.any():
            raise ValueError("context_mask marks no context token in a sequence")
        scores = start[:, None] + end[None, :]
        scores = scores.masked_fill(~(allowed & context[:, None] & context[None, :]), float("-inf"))
        flat = int(scores.argmax())
        best = Span(flat // length, flat % length, float(scores.flatten()[flat]))
        null = float(start[0] + end[0])
        spans.append(Span(None, None, null) if allow_no_answer and null > best.score else best)
    return spans
