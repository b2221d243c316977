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


def test_checkpointing_makes_activation_memory_almost_independent_of_depth():
    # Without checkpointing every block keeps its activations for the backward pass; with it,
    # a block keeps only its input, and one block's activations exist at a time. So eight more
    # blocks cost far more memory without checkpointing than with it.
    def activations(layers: int, checkpointing: bool) -> float:
        config = BertConfig(vocab_size=2000, hidden_size=256, num_hidden_layers=layers, num_attention_heads=4,
                            intermediate_size=1024, max_position_embeddings=128)
        return step_cost(config, batch=8, length=128, steps=1, checkpointing=checkpointing).activation_mib

    plain = activations(10, False) - activations(2, False)
    checkpointed = activations(10, True) - activations(2, True)
    assert plain > 150  # ~35 MiB a block at this size
    assert checkpointed < plain / 4


def test_step_cost_measures_a_model_of_any_vocabulary():
    # Before: the random ids were drawn from [1000, vocab_size), empty for vocab_size <= 1000.
    tiny = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=8)
    cost = step_cost(tiny, batch=2, length=8, steps=1)
    assert cost.activation_mib < 200  # a 1-layer, 16-wide model's activations are kilobytes, plus slack


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


def test_training_flops_counts_forward_and_backward_matrix_products():
    from ctxlib.analysis.memory import training_flops

    layer = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4, requires_grad=True)
    # forward x @ Wᵀ: 2·5·4·3 = 120; backward: the same for the input's and the weight's gradients
    assert training_flops(lambda: layer(x).sum()) == 3 * 120
    x.requires_grad_(False)
    assert training_flops(lambda: layer(x).sum()) == 2 * 120  # no input gradient to compute
