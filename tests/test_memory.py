"""Parameter counts from a configuration, and measured step costs (notes §6.3)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from ctxlib.analysis.memory import parameter_count, step_cost
from ctxlib.models.bert import BertConfig, BertModel

LARGE = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


@pytest.mark.parametrize("config", [BertConfig(), LARGE], ids=["base", "large"])
def test_parameter_count_matches_transformers(config):
    with torch.device("meta"):
        reference = transformers.BertModel(transformers.BertConfig(**config.to_dict()))
    assert parameter_count(config) == sum(p.numel() for p in reference.parameters())
    pooler = config.hidden_size * (config.hidden_size + 1)
    assert parameter_count(config, pooler=False) == parameter_count(config) - pooler


def test_parameter_count_is_the_published_size():
    # Devlin et al. 2019: BERT-base 110M, BERT-large 340M (rounded).
    assert parameter_count(BertConfig()) == 109_482_240
    assert abs(parameter_count(LARGE) / 340e6 - 1) < 0.02


def _config(layers: int) -> BertConfig:
    return BertConfig(vocab_size=2000, hidden_size=256, num_hidden_layers=layers, num_attention_heads=4,
                      intermediate_size=1024, max_position_embeddings=128)


def _saved_for_backward_mib(config: BertConfig, batch: int, length: int) -> float:
    """Another count of the same thing, by autograd's own hook: the storages a forward pass
    saves for the backward pass, weights left out."""
    model = BertModel(config).train()
    weights = {id(p.untyped_storage()) for p in model.parameters()}
    saved = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if id(storage) not in weights:
            saved[id(storage)] = storage  # held, so that no id is reused
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(torch.randint(config.vocab_size, (batch, length))).last_hidden_state.float().pow(2).mean()
    return sum(storage.nbytes() for storage in saved.values()) / 2**20


def test_without_checkpointing_each_block_adds_exactly_what_it_saves_for_backward():
    # The step's peak comes as the backward pass starts, with every block's saved activations
    # alive: two more blocks add their saved tensors, byte for byte.
    batch, length = 8, 128
    peak = {layers: step_cost(_config(layers), batch=batch, length=length, steps=1).activation_mib for layers in (2, 4)}
    saved = {layers: _saved_for_backward_mib(_config(layers), batch, length) for layers in (2, 4)}
    assert peak[4] - peak[2] == pytest.approx(saved[4] - saved[2], rel=1e-9)
    assert peak[4] - peak[2] > 2 * 20  # ~24 MiB a block at this size: the attention probabilities alone are 2 MiB


def test_with_checkpointing_each_block_adds_only_its_input():
    # A checkpointed block keeps its input (batch × length × hidden fp32 values) and recomputes
    # the rest when the backward pass reaches it.
    batch, length = 8, 128
    peak = {layers: step_cost(_config(layers), batch=batch, length=length, steps=1, checkpointing=True).activation_mib
            for layers in (2, 4)}
    assert peak[4] - peak[2] == pytest.approx(2 * batch * length * 256 * 4 / 2**20, rel=1e-9)


def test_the_memory_count_repeats_exactly():
    first, second = (step_cost(_config(2), batch=4, length=64, steps=1) for _ in range(2))
    assert first.activation_mib == second.activation_mib and first.step_flops == second.step_flops


def test_step_cost_measures_a_model_of_any_vocabulary():
    # Before: the random ids were drawn from [1000, vocab_size), empty for vocab_size <= 1000.
    tiny = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=8)
    cost = step_cost(tiny, batch=2, length=8, steps=1)
    assert 0 < cost.activation_mib < 0.1  # a 1-layer, 16-wide model's activations are kilobytes


def test_checkpointing_costs_exactly_one_more_forward_pass_of_the_blocks():
    # Checkpointing recomputes every block's forward during backward and nothing else, so its
    # step does the plain step's operations plus one training-mode forward of the encoder.
    tiny = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=8)
    plain = step_cost(tiny, batch=2, length=8, steps=1)
    checkpointed = step_cost(tiny, batch=2, length=8, steps=1, checkpointing=True)
    encoder = BertModel(tiny, pooler=False).train()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        encoder(torch.zeros(2, 8, dtype=torch.long))
    assert checkpointed.step_flops - plain.step_flops == counter.get_total_flops() > 0


@pytest.mark.parametrize(("flags", "message"), [
    (["--batch", "0"], "argument --batch: must be a positive int, got '0'"),
    (["--steps", "two"], "argument --steps: must be a positive int, got 'two'"),
    (["--config", "{hidden_size: 8}"], "argument --config: Expecting property name"),
    (["--config", '{"hidden_size": -8}'], "argument --config: hidden_size must be a positive int, got -8"),
    (["--config", '{"hiden_size": 8}'], r"argument --config: unknown BertConfig fields \['hiden_size'\]"),
    (["--config", "[8]"], "argument --config: a JSON object of BertConfig fields, got a list"),
    (["--length", "600"], "argument --length: 600 exceeds the config's max_position_embeddings=512"),
    (["--bacth", "2"], "unrecognized arguments: --bacth 2"),
])
def test_the_command_line_answers_bad_flags_with_a_usage_error(flags, message):
    result = subprocess.run([sys.executable, "-m", "ctxlib.analysis.memory", *flags], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("usage: python -m ctxlib.analysis.memory") and re.search(message, result.stderr)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="config must be a BertConfig, got dict"):
        parameter_count({"hidden_size": 8})
    with pytest.raises(ValueError, match="batch must be a positive int, got 0"):
        step_cost(BertConfig(), batch=0, length=8)
    with pytest.raises(ValueError, match="length=600 exceeds the config's max_position_embeddings=512"):
        step_cost(BertConfig(), batch=1, length=600)
    with pytest.raises(TypeError, match="checkpointing must be a bool"):
        step_cost(BertConfig(), batch=1, length=8, checkpointing="yes")


def test_training_flops_counts_forward_and_backward_matrix_products():
    from ctxlib.analysis.memory import training_flops

    layer = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4, requires_grad=True)
    # forward x @ Wᵀ: 2·5·4·3 = 120; backward: the same for the input's and the weight's gradients
    assert training_flops(lambda: layer(x).sum()) == 3 * 120
    x.requires_grad_(False)
    assert training_flops(lambda: layer(x).sum()) == 2 * 120  # no input gradient to compute
