"""Task heads: parity with transformers' BertFor... models, CRF tagging, span selection, errors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from ctxlib.models.bert import BertConfig
from ctxlib.models.heads import (BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                                 QuestionAnsweringOutput, best_span, compact_labelled)
from ctxlib.models.pretrained import minilm_path
from ctxlib.objectives.masking import IGNORE_INDEX

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
        mine, reference = ours(ids, attention_mask=mask), theirs(input_ids=ids, attention_mask=mask)
    if cls is BertForQuestionAnswering:
        pairs = [(mine.start_logits, reference.start_logits), (mine.end_logits, reference.end_logits)]
    else:
        pairs = [(mine.logits, reference.logits)]
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
    out = model(ids, attention_mask=mask, labels=torch.tensor([0, 2]))
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, torch.tensor([0, 2])))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, num_labels\) = \[0, 3\), got 3"):
        model(ids, attention_mask=mask, labels=torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"labels must have shape \[B\] = \(2,\), one entry per sequence, got \(3,\)"):
        model(ids, attention_mask=mask, labels=torch.tensor([0, 1, 1]))
    with pytest.raises(TypeError, match="labels must hold integers"):
        model(ids, attention_mask=mask, labels=torch.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="takes 2 positional arguments"):  # keyword-only after input_ids
        model(ids, mask)


def test_one_label_is_a_regression_as_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    ours = BertForSequenceClassification(CONFIG, num_labels=1).eval()
    ours.save_pretrained(tmp_path)
    theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    ids, mask = batch()
    scores = torch.tensor([0.5, -2.0])
    with torch.no_grad():
        mine, reference = ours(ids, attention_mask=mask, labels=scores), theirs(ids, attention_mask=mask, labels=scores)
    # Before: a one-class cross-entropy, log softmax of a single logit, which is 0 whatever the model says.
    assert float(mine.loss) > 0.1
    torch.testing.assert_close(mine.loss, reference.loss, atol=1e-5, rtol=1e-4)
    with pytest.raises(TypeError, match="labels must be floats for a regression head"):
        ours(ids, labels=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="labels must be finite"):
        ours(ids, labels=torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match="num_labels must be at least 2 for a tagger"):
        BertForTokenClassification(CONFIG, num_labels=1)


def test_from_pretrained_reads_the_heads_options_from_config_json(tmp_path):
    torch.manual_seed(0)
    saved = BertForSequenceClassification(CONFIG, num_labels=3).eval()
    saved.save_pretrained(tmp_path / "three")
    loaded = BertForSequenceClassification.from_pretrained(tmp_path / "three")  # before: 2 labels, a size mismatch
    ids, mask = batch()
    assert loaded.num_labels == 3
    torch.testing.assert_close(loaded(ids, attention_mask=mask).logits, saved(ids, attention_mask=mask).logits)
    with pytest.raises(ValueError, match=r"classifier.bias has shape \(3,\), but config.json \(and any head option "
                                         r"given\) makes it \(5,\) .* 2 weight\(s\) disagree"):
        BertForSequenceClassification.from_pretrained(tmp_path / "three", num_labels=5)
    tagger = BertForTokenClassification(CONFIG, num_labels=4, crf=True)
    tagger.save_pretrained(tmp_path / "crf")
    again = BertForTokenClassification.from_pretrained(tmp_path / "crf")
    assert again.num_labels == 4 and again.crf is not None
    torch.testing.assert_close(again.crf.transitions, tagger.crf.transitions)


def test_from_pretrained_names_the_damaged_file(tmp_path):
    BertForSequenceClassification(CONFIG, num_labels=3).save_pretrained(tmp_path)
    weights, config = tmp_path / "model.safetensors", tmp_path / "config.json"
    good_weights, good_config = weights.read_bytes(), config.read_text()
    weights.write_bytes(good_weights[:200])
    with pytest.raises(ValueError, match=r"model.safetensors: cannot be read as a .safetensors checkpoint"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    weights.write_bytes(good_weights)
    config.write_text(good_config[:-20])
    with pytest.raises(ValueError, match=r"config.json: not valid JSON"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    config.write_bytes(b"\xff\xfe" + good_config.encode("utf-16-le"))
    with pytest.raises(ValueError, match=r"config.json: not UTF-8 text"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    config.write_text(good_config.replace('"hidden_size": 16', '"hidden_size": 32'))
    with pytest.raises(ValueError, match=r"model.safetensors: .* has shape .* but config.json .* do not belong together"):
        BertForSequenceClassification.from_pretrained(tmp_path)  # before: RuntimeError size mismatch
    config.write_text(good_config.replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": -1'))
    with pytest.raises(ValueError, match=r"config.json: layer_norm_eps must be > 0, got -1"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    config.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config.json: a config must be a JSON object"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        BertForSequenceClassification.from_pretrained(tmp_path / "config.json")
    with pytest.raises(TypeError, match="path must be a str or pathlib.Path, got int"):
        BertForSequenceClassification.from_pretrained(3)


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
    out = softmax(ids, attention_mask=mask, labels=labels)
    tagged = labels != IGNORE_INDEX
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits[tagged], labels[tagged]))
    torch.manual_seed(0)
    crf = BertForTokenClassification(CONFIG, num_labels=3, crf=True)
    out = crf(ids, attention_mask=mask, labels=labels)
    emissions, tags, tag_mask = compact_labelled(out.logits, labels)
    torch.testing.assert_close(out.loss, crf.crf.nll(emissions, tags, tag_mask))
    decoded = crf.decode(out.logits, tagged)
    assert [len(p) for p in decoded] == [5, 3]
    assert softmax.decode(out.logits, tagged)[1] == out.logits[1, 1:4].argmax(-1).tolist()
    with pytest.raises(ValueError, match=r"labels must be -100 or lie in \[0, num_labels=3\)"):
        crf(ids, attention_mask=mask, labels=torch.where(labels == 2, 7, labels))
    for model in (softmax, crf):  # before: the softmax head's loss was NaN, the CRF's a message about the CRF
        with pytest.raises(ValueError, match=r"labels tag no token \(all are -100\)"):
            model(ids, attention_mask=mask, labels=torch.full_like(labels, IGNORE_INDEX))


def test_decode_takes_a_long_mask_as_a_mask():
    # Before: row[long_mask] gathered rows 0 and 1 of each sequence (T of them) instead of masking.
    torch.manual_seed(0)
    logits = torch.randn(2, 7, 3)
    where = torch.tensor([[0, 1, 1, 0, 1, 0, 0], [0, 0, 1, 1, 0, 0, 0]])
    for crf in (False, True):
        model = BertForTokenClassification(CONFIG, num_labels=3, crf=crf)
        expected = model.decode(logits, where.bool())
        assert [len(tags) for tags in expected] == [3, 2]
        assert model.decode(logits, where) == expected
        with pytest.raises(ValueError, match=r"where must hold only 0 and 1, got values in \[0, 2\]"):
            model.decode(logits, where * 2)
        with pytest.raises(ValueError, match=r"where must have shape \(2, 7\), got \(2, 6\)"):
            model.decode(logits, where[:, :6])
        with pytest.raises(TypeError, match="where must be a bool or 0/1 integer mask, got dtype torch.float32"):
            model.decode(logits, where.float())
        with pytest.raises(ValueError, match=r"logits must be a tensor \[B, T, num_labels=3\], got \(2, 7, 4\)"):
            model.decode(torch.randn(2, 7, 4), where)


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
        best_span(start, end, torch.zeros(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="max_answer_length must be a positive int"):
        best_span(start, end, context, max_answer_length=0)
    with pytest.raises(ValueError, match=r"start_logits holds 1 NaN or infinite value\(s\)"):
        best_span(start.masked_fill(torch.arange(6) == 3, float("nan")), end, context)
    with pytest.raises(TypeError, match="context_mask must be a bool or 0/1 integer mask, got dtype torch.float32"):
        best_span(start, end, context.float())
    with pytest.raises(ValueError, match=r"context_mask must hold only 0 and 1"):
        best_span(start, end, context * 3)
    with pytest.raises(TypeError, match="allow_no_answer must be a bool"):
        best_span(start, end, context, allow_no_answer="no")


def test_question_answering_loss_and_errors():
    torch.manual_seed(0)
    model = BertForQuestionAnswering(CONFIG)
    ids, mask = batch()
    out = model(ids, attention_mask=mask, start_positions=torch.tensor([2, 0]), end_positions=torch.tensor([3, 0]))
    assert isinstance(out, QuestionAnsweringOutput) and out.start_logits.shape == out.end_logits.shape == (2, 7)
    expected = (F.cross_entropy(out.start_logits, torch.tensor([2, 0]))
                + F.cross_entropy(out.end_logits, torch.tensor([3, 0]))) / 2
    torch.testing.assert_close(out.loss, expected)
    with pytest.raises(ValueError, match="end_positions must not come before start_positions"):
        model(ids, attention_mask=mask, start_positions=torch.tensor([3, 0]), end_positions=torch.tensor([2, 0]))
    with pytest.raises(ValueError, match="give both start_positions and end_positions"):
        model(ids, attention_mask=mask, start_positions=torch.tensor([3, 0]))
    with pytest.raises(ValueError, match=r"start_positions must have shape \[B\] = \(2,\)"):
        model(ids, start_positions=torch.tensor([3]), end_positions=torch.tensor([3]))
    with pytest.raises(ValueError, match="num_labels must be 2 for question answering"):
        BertForQuestionAnswering(CONFIG, num_labels=3)
