"""Models trained from scratch start as their reference code starts them.

BERT's family against transformers' ``_init_weights`` itself (same config, every tensor of the same
name compared in distribution); ELMo's biLM against the initialisers bilm-tf's ``training.py``
names (its figures are quoted in ``ctxlib/models/elmo.py``). A sample's standard deviation is
within 6 of its own standard errors (σ / √(2n)) of the reference's, and its mean within 6 σ / √n of
zero: a wrong scale (PyTorch's default N(0, 1) embedding, Kaiming-uniform linear layers) is off by
hundreds of standard errors.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ctxlib.models.bert import BertConfig, BertForPreTraining
from ctxlib.models.elmo import FORGET_BIAS, HIGHWAY_GATE_BIAS, BiLM, ElmoConfig, ProjectedLSTM
from ctxlib.studies.extrapolation import SCHEMES, PositionalLM
from ctxlib.studies.long_range import RecallModel

SMALL_BERT = dict(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=64)


def assert_normal(name: str, values: torch.Tensor, std: float) -> None:
    """``values`` look like a sample of N(0, std²)."""
    n = values.numel()
    assert abs(float(values.mean())) < 6 * std / math.sqrt(n), f"{name}: mean {float(values.mean()):.3g}"
    assert abs(float(values.std()) - std) < 6 * std / math.sqrt(2 * n), \
        f"{name}: std {float(values.std()):.4g}, the reference's {std:.4g}"


def assert_uniform(name: str, values: torch.Tensor, bound: float) -> None:
    """``values`` look like a sample of U(−bound, bound): inside it, and spread as it is (std bound/√3)."""
    assert float(values.abs().max()) <= bound, f"{name}: |max| {float(values.abs().max()):.4g} > {bound:.4g}"
    assert_normal(name, values, bound / math.sqrt(3))  # the mean and std bounds hold for any distribution


def test_bert_starts_as_transformers_starts_it():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    ours = BertForPreTraining(BertConfig(**SMALL_BERT)).state_dict()
    theirs = transformers.BertForPreTraining(transformers.BertConfig(**SMALL_BERT)).state_dict()
    compared = 0
    for key, reference in theirs.items():
        if key not in ours or not reference.is_floating_point():
            continue
        value = ours[key]
        assert value.shape == reference.shape, key
        if torch.all(reference == reference.flatten()[0]):  # a constant start: zero biases, LayerNorm 1/0
            assert torch.equal(value, reference), key
        else:
            body = value[1:] if key.endswith("word_embeddings.weight") else value  # row 0 is padding, zero in both
            assert_normal(key, body.flatten(), float(reference.std()))
        compared += 1
    # every tensor of the encoder and both heads, position table included
    assert compared >= 30 and "bert.embeddings.position_embeddings.weight" in ours


@pytest.mark.parametrize("scheme", SCHEMES)
def test_positional_lms_start_as_bert(scheme):
    torch.manual_seed(0)
    model = PositionalLM(scheme, vocab_size=300, max_length=128)
    tables = {name: module.weight for name, module in model.named_modules() if isinstance(module, (nn.Linear, nn.Embedding))}
    assert ("positions" in tables) == (scheme == "learned")
    for name, weight in tables.items():
        assert_normal(name, weight.detach().flatten(), 0.02)
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and module.bias is not None:
            assert torch.count_nonzero(module.bias) == 0, name


def test_bilm_starts_as_bilm_tf_starts_it():
    torch.manual_seed(0)
    config = ElmoConfig(filters=((1, 16), (2, 32), (3, 64)), n_highway=2, projection_dim=64, cell_size=256, n_layers=2,
                        vocab_size=800)
    bilm = BiLM(config)
    cnn = bilm.token_layer
    table = cnn.char_embedding.weight.detach()
    assert torch.count_nonzero(table[0]) == 0  # the padding row
    assert_uniform("char_embed", table[1:].flatten(), 1.0)
    for i, conv in enumerate(cnn.convolutions):  # ReLU: U(±0.05)
        assert_uniform(f"W_cnn_{i}", conv.weight.detach().flatten(), 0.05)
        assert torch.count_nonzero(conv.bias) == 0
    n_filters = config.n_filters
    for k in range(config.n_highway):
        assert_normal(f"W_carry {k}", cnn.highway.gate[k].weight.detach().flatten(), n_filters ** -0.5)
        assert_normal(f"W_transform {k}", cnn.highway.transform[k].weight.detach().flatten(), n_filters ** -0.5)
        assert torch.all(cnn.highway.gate[k].bias == HIGHWAY_GATE_BIAS)
        assert torch.count_nonzero(cnn.highway.transform[k].bias) == 0
    assert_normal("W_proj", cnn.projection.weight.detach().flatten(), n_filters ** -0.5)
    assert_normal("softmax W", bilm.softmax.weight.detach().flatten(), config.projection_dim ** -0.5)
    assert torch.count_nonzero(bilm.softmax.bias) == 0
    for layer in (*bilm.forward_layers, *bilm.backward_layers):
        assert_lstm_as_tensorflow(layer)


def test_highway_starts_by_passing_its_input_through():
    """The −2 gate bias: at the start a highway layer moves its input by about σ(−2) of the way."""
    torch.manual_seed(0)
    config = ElmoConfig(filters=((1, 16), (2, 48)), n_highway=1, projection_dim=32, cell_size=64, n_layers=1)
    highway = BiLM(config).token_layer.highway
    x = torch.randn(2000, config.n_filters)
    with torch.no_grad():
        gate = torch.sigmoid(highway.gate[0](x))
    assert abs(float(gate.mean()) - torch.sigmoid(torch.tensor(HIGHWAY_GATE_BIAS)).item()) < 0.05


def assert_lstm_as_tensorflow(layer: ProjectedLSTM) -> None:
    """TensorFlow's LSTMCell in bilm-tf: Glorot-uniform kernels, zero biases, forget bias 1."""
    lstm = layer.lstm
    cell, proj, inputs = lstm.hidden_size, lstm.proj_size, lstm.input_size
    kernel = torch.cat([lstm.weight_ih_l0, lstm.weight_hh_l0], dim=1).detach()  # TF's one [x; h] kernel
    assert_uniform("LSTM kernel", kernel.flatten(), math.sqrt(6 / (inputs + proj + 4 * cell)))
    assert_uniform("LSTM projection", lstm.weight_hr_l0.detach().flatten(), math.sqrt(6 / (cell + proj)))
    bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach()
    expected = torch.zeros(4 * cell)
    expected[cell:2 * cell] = FORGET_BIAS  # PyTorch's (i, f, g, o)
    assert torch.equal(bias, expected)


def test_the_forget_bias_sits_on_the_forget_gate():
    """With zero weights the cell keeps σ(1) of its memory per step and writes nothing new
    (input gate σ(0) times tanh(0)): the bias moved the forget gate and no other."""
    torch.manual_seed(0)
    layer = ProjectedLSTM(4, 8, 4)
    with torch.no_grad():
        for weight in (layer.lstm.weight_ih_l0, layer.lstm.weight_hh_l0):
            weight.zero_()
    c0 = torch.ones(1, 8)
    _, (_, c1) = layer(torch.zeros(1, 1, 4), torch.tensor([1]), state=(torch.zeros(1, 4), c0), exact=True)
    torch.testing.assert_close(c1, torch.sigmoid(torch.tensor(FORGET_BIAS)) * c0)


def test_recall_models_start_as_their_references():
    torch.manual_seed(0)
    lstm = RecallModel("BiLSTM", max_length=16)
    for layer in (lstm.forward_lstm, lstm.backward_lstm):
        assert_lstm_as_tensorflow(layer)
    vocab, dim = lstm.embed.weight.shape
    assert_uniform("word table", lstm.embed.weight.detach().flatten(), math.sqrt(6 / (vocab + dim)))
    attention = RecallModel("self-attention", max_length=16)
    assert_normal("read-out", attention.readout.weight.detach().flatten(), 0.02)
    assert_normal("positions", attention.encoder.embeddings.position_embeddings.weight.detach().flatten(), 0.02)
