"""Bad input to ctxlib.models.bert gets a clear error naming the argument, the value and the limit."""

from __future__ import annotations

import pytest
import torch

from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel


@pytest.fixture(scope="module")
def model() -> BertModel:
    return BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=12)).eval()


def ids(batch: int = 2, length: int = 5) -> torch.Tensor:
    return torch.randint(1, 50, (batch, length))


def test_sequence_longer_than_position_table_says_no_extrapolation(model):
    with pytest.raises(ValueError, match=r"input_ids.*13.*max_position_embeddings=12.*cannot extrapolate"):
        model(ids(length=13))


def test_id_outside_vocabulary_names_value_and_position(model):
    bad = ids()
    bad[1, 3] = 50
    with pytest.raises(ValueError, match=r"input_ids must lie in \[0, vocab_size\) = \[0, 50\), got 50 at position \(1, 3\)"):
        model(bad)
    bad[1, 3] = -1
    with pytest.raises(ValueError, match=r"got -1 at position \(1, 3\)"):
        model(bad)


@pytest.mark.parametrize("shape", [(0, 5), (2, 0)])
def test_empty_batch(model, shape):
    with pytest.raises(ValueError, match=r"input_ids is an empty batch"):
        model(torch.zeros(shape, dtype=torch.long))


def test_attention_mask_shape_mismatch(model):
    with pytest.raises(ValueError, match=r"attention_mask must have the shape of input_ids \(2, 5\), got \(2, 4\)"):
        model(ids(), attention_mask=torch.ones(2, 4, dtype=torch.long))


def test_attention_mask_values_and_empty_rows(model):
    with pytest.raises(ValueError, match=r"attention_mask must lie in .*got 2"):
        model(ids(), attention_mask=torch.full((2, 5), 2))
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1] = 0
    with pytest.raises(ValueError, match=r"attention_mask row 1 is all zeros"):
        model(ids(), attention_mask=mask)


def test_token_type_ids_outside_type_vocab(model):
    types = torch.zeros(2, 5, dtype=torch.long)
    types[0, 4] = 2
    with pytest.raises(ValueError, match=r"token_type_ids must lie in \[0, type_vocab_size\) = \[0, 2\), got 2 at position \(0, 4\)"):
        model(ids(), token_type_ids=types)
    with pytest.raises(ValueError, match=r"token_type_ids must have the shape of input_ids"):
        model(ids(), token_type_ids=torch.zeros(1, 5, dtype=torch.long))


def test_wrong_types_and_ranks(model):
    with pytest.raises(TypeError, match=r"input_ids must hold integers .*float32"):
        model(torch.zeros(2, 5))
    with pytest.raises(TypeError, match=r"input_ids must be a torch.Tensor .*list"):
        model([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"input_ids must have 2 dimensions, got shape \(5,\) \(add a batch dimension"):
        model(torch.arange(1, 6))


def test_pretraining_label_errors():
    net = BertForPreTraining(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                        num_attention_heads=2, intermediate_size=32))
    with pytest.raises(ValueError, match=r"next_sentence_label must lie in .*got 2"):
        net(ids(), next_sentence_label=torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"next_sentence_label must have one entry per sequence \(2\), got 3"):
        net(ids(), next_sentence_label=torch.tensor([0, 1, 0]))
    with pytest.raises(ValueError, match=r"labels must have the shape of input_ids"):
        net(ids(), labels=torch.zeros(2, 4, dtype=torch.long))
    labels = torch.full((2, 5), -100)
    labels[0, 0] = 77
    with pytest.raises(ValueError, match=r"labels \(at masked positions\) must lie in .*vocab_size.*got 77"):
        net(ids(), labels=labels)


@pytest.mark.parametrize(
    ("fields", "error", "pattern"),
    [
        ({"hidden_size": 100, "num_attention_heads": 12}, ValueError, r"hidden_size=100 is not divisible by num_attention_heads=12"),
        ({"num_hidden_layers": 0}, ValueError, r"num_hidden_layers must be a positive int, got 0"),
        ({"vocab_size": 10.5}, TypeError, r"vocab_size must be an int, got float 10.5"),
        ({"hidden_dropout_prob": 1.0}, ValueError, r"hidden_dropout_prob must lie in \[0, 1\), got 1.0"),
        ({"layer_norm_eps": 0}, ValueError, r"layer_norm_eps must be > 0, got 0"),
        ({"layer_norm_eps": float("nan")}, ValueError, r"layer_norm_eps must be finite, got nan"),
        ({"initializer_range": float("inf")}, ValueError, r"initializer_range must be finite, got inf"),
        ({"initializer_range": "0.02"}, TypeError, r"initializer_range must be a real number, got str '0.02'"),
        ({"hidden_dropout_prob": float("nan")}, ValueError, r"hidden_dropout_prob must lie in \[0, 1\), got nan"),
        ({"attention_probs_dropout_prob": -0.1}, ValueError, r"attention_probs_dropout_prob must lie in \[0, 1\)"),
        ({"hidden_size": -768}, ValueError, r"hidden_size must be a positive int, got -768"),
        ({"num_attention_heads": True}, TypeError, r"num_attention_heads must be an int, got bool True"),
        ({"share_layers": "no"}, TypeError, r"share_layers must be a bool \(True or False\), got str 'no'"),
        ({"pad_token_id": 30522}, ValueError, r"pad_token_id must be an int in \[0, vocab_size=30522\)"),
        ({"hidden_act": "gelu_new"}, ValueError, r"hidden_act must be one of \['gelu'\], got 'gelu_new'"),
        ({"position_embedding_type": "alibi"}, ValueError, r"position_embedding_type must be one of \['absolute', 'rotary'\]"),
    ],
)
def test_config_validation(fields, error, pattern):
    with pytest.raises(error, match=pattern):
        BertConfig(**fields)


def test_config_from_dict_rejects_unsupported_settings():
    with pytest.raises(ValueError, match=r"position_embedding_type must be one of \['absolute', 'rotary'\], got 'relative_key'"):
        BertConfig.from_dict({"position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match=r"model_type must be one of \['bert'\], got 'roberta'"):
        BertConfig.from_dict({"model_type": "roberta"})


def test_from_pretrained_on_a_folder_without_a_model(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"has no config.json"):
        BertModel.from_pretrained(tmp_path)
