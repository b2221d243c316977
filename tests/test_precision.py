"""bf16 on this processor: its units are read from what the CPU reports (never from a race between
two timings), and the one-step comparison measures what autocast changes and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from ctxlib.training.precision import bf16_gap, has_bf16_units, matmul_gflops, matmul_speed, this_machine


def test_matmul_speed_is_measured_and_bad_settings_are_named():
    assert matmul_gflops(torch.float32, size=64, seconds=0.01) > 0
    with pytest.raises(ValueError, match=r"dtype must be torch.float32 or torch.bfloat16, got torch.float16"):
        matmul_gflops(torch.float16)
    with pytest.raises(ValueError, match="size"):
        matmul_gflops(torch.float32, size=0)
    with pytest.raises(ValueError, match=r"repeats must be a positive int, got 0"):
        matmul_speed(repeats=0)


def _flags() -> set[str]:
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            flags |= set(line.split(":", 1)[1].split())
    return flags


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="reads the flags Linux reports")
def test_bf16_units_are_what_the_processor_reports():
    # Linux names AVX-512 BF16 'avx512_bf16' and AMX 'amx_bf16' (x86), the Arm extension 'bf16':
    # the same answer as PyTorch's own capability checks, with no timing involved.
    assert has_bf16_units() == bool(_flags() & {"avx512_bf16", "amx_bf16", "bf16"})


def test_the_speed_record_carries_the_reported_units_and_its_own_ratio():
    speed = matmul_speed(size=32, seconds=0.001, repeats=1)
    threads = torch.get_num_threads()
    assert speed.bf16_units == has_bf16_units()
    assert speed.bf16_speedup == speed.bf16_gflops / speed.fp32_gflops
    assert torch.get_num_threads() == threads  # measured on one thread, the caller's count restored
    assert f"{speed.fp32_gflops:.0f} GFLOPS" in this_machine(speed)


def _model_and_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.Dropout(0.5), nn.GELU(), nn.Linear(256, 4))
    batch = (torch.randn(32, 64), torch.randint(0, 4, (32,)))
    return model, batch


def _loss(model, batch):
    return nn.functional.cross_entropy(model(batch[0]), batch[1])


def test_the_fp32_side_is_the_plain_computation_without_dropout():
    model, batch = _model_and_batch()
    gap = bf16_gap(model, _loss, batch)
    assert model.training  # given in training mode, it comes back in it
    model.eval()
    assert gap.loss_fp32 == float(_loss(model, batch).detach())  # dropout off: the same number again
    assert all(p.grad is None for p in model.parameters())  # the caller's model is left without gradients


def test_autocast_changes_the_step_by_bf16_rounding_only():
    model, batch = _model_and_batch()
    gap = bf16_gap(model, _loss, batch)
    assert gap.loss_bf16 != gap.loss_fp32  # the products really ran in bf16
    # bf16 keeps 8 significant bits: a relative error of a few 2^-8 in the loss, not more.
    assert abs(gap.loss_bf16 - gap.loss_fp32) < 8 * 2**-8 * abs(gap.loss_fp32)
    assert 0.99 < gap.gradient_cosine <= 1.0 + 1e-6


def test_a_loss_that_reaches_no_parameter_is_named():
    model, batch = _model_and_batch()
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        bf16_gap("model", _loss, batch)
    with pytest.raises(ValueError, match="computed from the model's parameters, got Tensor"):
        bf16_gap(model, lambda m, b: torch.tensor(1.0), batch)
