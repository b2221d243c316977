"""Task heads: parity with transformers' BertFor... models, CRF tagging, span selection, errors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from ctxlib.models.bert import BertConfig
from ctxlib.models.heads import (BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                                 best_span, compact_labelled)
from ctxlib.models.pretrained import minilm_path

CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def batch():
    torch.manual_seed(1)
    ids = torch.randint(1, 50, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
    return ids, mask


@pytest.mark.parametrize("cls, hf_name, kwargs", [
    (BertForSequenceClassification, "BertForSequenceClassification", {"num_labels": 3}),
    (BertForTokenClassification, "BertForTokenClassification", {"num_labels": 5}),
    (BertForQuestionAnswering, "BertForQuestionAnswering", {}),
])
def test_saved_heads_load_in_transformers_with_the_same_outputs(tmp_path, cls, hf_name, kwargs):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    ours = cls(CONFIG, **kwargs).eval()
    ours.save_pretrained(tmp_path)
    theirs = getattr(transformers, hf_name).from_pretrained(tmp_path, attn_implementation="eager").eval()
    ids, mask = batch()
    with torch.no_grad():
        mine, reference = ours(ids, mask).logits, theirs(input_ids=ids, attention_mask=mask)
    if cls is BertForQuestionAnswering:
        pairs = [(mine[0], reference.start_logits), (mine[1], reference.end_logits)]
    else:
        pairs = [(mine, reference.logits)]
    for a, b in pairs:
        if a.shape[:2] == mask.shape:  # per token: padding rows are 0 in ctxlib, compare real tokens
            a, b = a[mask.bool()], b[mask.bool()]
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_pretrained_encoder_loads_under_a_fresh_head():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BertForSequenceClassification.from_pretrained(minilm_path(), num_labels=4)
    assert model.classifier.out_features == 4
    assert any("classifier" in str(w.message) for w in caught)  # the head is new, and says so


def test_sequence_classification_loss_and_errors():
    torch.manual_seed(0)
    model = BertForSequenceClassification(CONFIG, num_labels=3)
    ids, mask = batch()
    out = model(ids, mask, labels=torch.tensor([0, 2]))
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, torch.tensor([0, 2])))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, num_labels\) = \[0, 3\), got 3"):
        model(ids, mask, labels=torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"labels must have one entry per sequence \(2\), got 3"):
        model(ids, mask, labels=torch.tensor([0, 1, 1]))


def test_compact_labelled_moves_tagged_positions_to_the_front():
    logits = torch.arange(2 * 5 * 1, dtype=torch.float).view(2, 5, 1)
    labels = torch.tensor([[-100, 3, -100, 4, -100], [-100, -100, 2, -100, -100]])
    emissions, tags, mask = compact_labelled(logits, labels)
    assert emissions[..., 0].tolist() == [[1.0, 3.0], [7.0, 5.0]] and tags.tolist() == [[3, 4], [2, 0]]
    assert mask.tolist() == [[True, True], [True, False]]


def test_token_classification_softmax_and_crf_losses():
    ids, mask = batch()
    labels = torch.full((2, 7), -100)
    labels[0, 1:6], labels[1, 1:4] = torch.tensor([0, 1, 1, 2, 0]), torch.tensor([2, 0, 1])
    torch.manual_seed(0)
    softmax = BertForTokenClassification(CONFIG, num_labels=3)
    out = softmax(ids, mask, labels=labels)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits[labels != -100], labels[labels != -100]))
    torch.manual_seed(0)
    crf = BertForTokenClassification(CONFIG, num_labels=3, crf=True)
    out = crf(ids, mask, labels=labels)
    emissions, tags, tag_mask = compact_labelled(out.logits, labels)
    torch.testing.assert_close(out.loss, crf.crf.nll(emissions, tags, tag_mask))
    decoded = crf.decode(out.logits, labels != -100)
    assert [len(p) for p in decoded] == [5, 3]
    assert softmax.decode(out.logits, labels != -100)[1] == out.logits[1, 1:4].argmax(-1).tolist()
    with pytest.raises(ValueError, match=r"labels must be -100 or lie in \[0, num_labels=3\)"):
        crf(ids, mask, labels=torch.where(labels == 2, 7, labels))


def test_best_span_respects_context_length_and_no_answer():
    start = torch.tensor([[5.0, 0.0, 3.0, 1.0, 0.0, 9.0]])
    end = torch.tensor([[5.0, 0.0, 0.0, 4.0, 2.0, 0.0]])
    context = torch.tensor([[0, 0, 1, 1, 1, 0]])  # [CLS] question | context | [SEP]
    span = best_span(start, end, context, max_answer_length=5)[0]
    assert (span.start, span.end, span.score) == (2, 3, 7.0)  # not position 5: outside the context
    single = best_span(start, end, context, max_answer_length=1)[0]  # one token: 2..2, 3..3 or 4..4
    assert (single.start, single.end, single.score) == (3, 3, 5.0)
    null = best_span(start, end, context, allow_no_answer=True)[0]
    assert null.start is None and null.score == 10.0  # [CLS] scores 5 + 5 > 7
    with pytest.raises(ValueError, match="context_mask marks no context token"):
        best_span(start, end, torch.zeros(1, 6))
    with pytest.raises(ValueError, match="max_answer_length must be a positive int"):
        best_span(start, end, context, max_answer_length=0)


def test_question_answering_loss_and_errors():
    torch.manual_seed(0)
    model = BertForQuestionAnswering(CONFIG)
    ids, mask = batch()
    out = model(ids, mask, start_positions=torch.tensor([2, 0]), end_positions=torch.tensor([3, 0]))
    start, end = out.logits
    expected = (F.cross_entropy(start, torch.tensor([2, 0])) + F.cross_entropy(end, torch.tensor([3, 0]))) / 2
    torch.testing.assert_close(out.loss, expected)
    with pytest.raises(ValueError, match="end_positions must not come before start_positions"):
        model(ids, mask, start_positions=torch.tensor([3, 0]), end_positions=torch.tensor([2, 0]))
    with pytest.raises(ValueError, match="give both start_positions and end_positions"):
        model(ids, mask, start_positions=torch.tensor([3, 0]))
    with pytest.raises(ValueError, match="num_labels must be 2 for question answering"):
        BertForQuestionAnswering(CONFIG, num_labels=3)
