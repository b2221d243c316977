"""Device-agnostic models: every tensor a forward pass creates lives on its input's device.

No accelerator is needed to check this. Inside ``with torch.device("meta")`` every tensor made
without an explicit device (``torch.arange(T)``, ``torch.tensor(ids)``, ``torch.ones(...)``)
lands on the meta device, so a forward pass on CPU inputs that creates one fails ("Tensor on
device meta is not on the expected device cpu") or returns a meta tensor: the same code on a
GPU would have mixed CPU and GPU tensors.
"""

from __future__ import annotations

import pytest
import torch

from ctxlib.layers.crf import LinearChainCRF
from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel
from ctxlib.models.electra import Electra
from ctxlib.models.elmo import BiLM, Elmo, ElmoConfig, batch_to_ids
from ctxlib.models.heads import (BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                                 best_span)
from ctxlib.objectives.masking import IGNORE_INDEX, mask_tokens
from ctxlib.studies.extrapolation import SCHEMES, PositionalLM

CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
IDS = torch.tensor([[2, 7, 9, 11, 3, 0], [2, 5, 3, 0, 0, 0]])
MASK = (IDS != 0).long()


def on_cpu(*tensors: torch.Tensor) -> bool:
    return all(t.device.type == "cpu" for t in tensors)


def run_where_undeviced_tensors_go_astray(step):
    with torch.device("meta"):
        return step()


def test_the_check_catches_a_tensor_made_without_a_device():
    with pytest.raises(RuntimeError, match="meta"):
        run_where_undeviced_tensors_go_astray(lambda: IDS + torch.arange(6))


@pytest.mark.parametrize("config", [CONFIG, BertConfig(**{**CONFIG.__dict__, "position_embedding_type": "rotary"})],
                         ids=["absolute", "rotary"])
def test_bert_and_its_pretraining_heads(config):
    torch.manual_seed(0)
    model, pretraining = BertModel(config).eval(), BertForPreTraining(config).eval()
    labels = torch.full_like(IDS, IGNORE_INDEX)
    labels[0, 2], labels[1, 1] = 9, 5
    out = run_where_undeviced_tensors_go_astray(
        lambda: model(IDS, attention_mask=MASK, causal=True, output_attentions=True))
    assert on_cpu(out.last_hidden_state, *out.attentions)
    nsp = torch.tensor([0, 1])  # the test's own tensors are made outside the check
    out = run_where_undeviced_tensors_go_astray(
        lambda: pretraining(IDS, attention_mask=MASK, labels=labels, next_sentence_label=nsp, masked_only=True))
    assert on_cpu(out.loss, out.prediction_logits)


def test_task_heads_crf_and_span_selection():
    torch.manual_seed(0)
    labels = torch.where(MASK.bool(), 1, IGNORE_INDEX)
    for crf in (False, True):
        tagger = BertForTokenClassification(CONFIG, num_labels=3, crf=crf).eval()
        out = run_where_undeviced_tensors_go_astray(lambda: tagger(IDS, attention_mask=MASK, labels=labels))
        assert on_cpu(out.loss, out.logits)
        tags = run_where_undeviced_tensors_go_astray(lambda: tagger.decode(out.logits, MASK))
        assert [len(t) for t in tags] == [5, 3]
    classifier = BertForSequenceClassification(CONFIG, num_labels=3).eval()
    classes, starts, ends = torch.tensor([0, 2]), torch.tensor([1, 0]), torch.tensor([2, 0])
    out = run_where_undeviced_tensors_go_astray(lambda: classifier(IDS, attention_mask=MASK, labels=classes))
    assert on_cpu(out.loss)
    qa = BertForQuestionAnswering(CONFIG).eval()
    out = run_where_undeviced_tensors_go_astray(
        lambda: qa(IDS, attention_mask=MASK, start_positions=starts, end_positions=ends))
    spans = run_where_undeviced_tensors_go_astray(lambda: best_span(out.start_logits, out.end_logits, MASK, 3))
    assert on_cpu(out.loss) and len(spans) == 2


def test_crf_without_a_mask():
    crf = LinearChainCRF(4)
    emissions, tags = torch.randn(2, 5, 4), torch.randint(0, 4, (2, 5))
    assert on_cpu(run_where_undeviced_tensors_go_astray(lambda: crf.nll(emissions, tags)))
    assert len(run_where_undeviced_tensors_go_astray(lambda: crf.viterbi(emissions))) == 2


def test_electra():
    torch.manual_seed(0)
    model = Electra(CONFIG)
    labels = torch.full_like(IDS, IGNORE_INDEX)
    labels[0, 2], labels[1, 1] = 9, 5
    sampler = torch.Generator().manual_seed(0)
    out = run_where_undeviced_tensors_go_astray(
        lambda: model(IDS, labels=labels, attention_mask=MASK, generator=sampler))
    assert on_cpu(out.loss, out.corrupted_ids)


def test_elmo_and_its_language_model_loss():
    torch.manual_seed(0)
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4), (2, 4)), projection_dim=6, cell_size=8, vocab_size=9)
    chars = batch_to_ids([["the", "bank"], ["a", "river", "bank"]])
    words = torch.tensor([[4, 5, IGNORE_INDEX], [6, 7, 5]])
    elmo = Elmo(config)
    out = run_where_undeviced_tensors_go_astray(lambda: elmo(chars))
    assert on_cpu(*out.layers, out.mask)
    bilm = BiLM(config)
    losses = run_where_undeviced_tensors_go_astray(lambda: bilm.lm_loss(chars, words, bos_id=1, eos_id=2))
    assert on_cpu(*losses)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_position_schemes(scheme):
    torch.manual_seed(0)
    model = PositionalLM(scheme, vocab_size=30, max_length=8, hidden=16, heads=2, intermediate=32).eval()
    ids = torch.randint(0, 30, (2, 8))
    assert on_cpu(run_where_undeviced_tensors_go_astray(lambda: model(ids)))


def test_masking_draws_where_its_generator_lives():
    ids = torch.randint(5, 100, (4, 16))
    words = torch.arange(16).repeat(4, 1) // 2
    for word_ids in (None, words):
        masked, labels = run_where_undeviced_tensors_go_astray(
            lambda: mask_tokens(ids, vocab_size=100, mask_token_id=4, word_ids=word_ids, mlm_probability=0.5,
                                generator=torch.Generator().manual_seed(0)))
        again, _ = mask_tokens(ids, vocab_size=100, mask_token_id=4, word_ids=word_ids, mlm_probability=0.5,
                               generator=torch.Generator().manual_seed(0))
        assert on_cpu(masked, labels) and torch.equal(masked, again)
