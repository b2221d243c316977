"""bf16 on this processor: the measured speed agrees with what the CPU reports, and the one-step
comparison measures what autocast changes and nothing else."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import torch
from torch import nn

from ctxlib.training.precision import NATIVE_BF16_SPEEDUP, bf16_gap, matmul_gflops, matmul_speed


def test_matmul_speed_is_measured_and_bad_settings_are_named():
    assert matmul_gflops(torch.float32, size=64, seconds=0.01) > 0
    with pytest.raises(ValueError, match=r"dtype must be torch.float32 or torch.bfloat16, got torch.float16"):
        matmul_gflops(torch.float16)
    with pytest.raises(ValueError, match="size"):
        matmul_gflops(torch.float32, size=0)
    with pytest.raises(ValueError, match=r"repeats must be a positive int, got 0"):
        matmul_speed(repeats=0)


def _bf16_units() -> bool:
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the CPU flags checked are x86's")
@pytest.mark.parametrize("busy", [False, True], ids=["quiet", "beside a two-thread process"])
def test_measured_bf16_speed_tells_the_processors_with_bf16_units_apart(busy):
    # Busy: another process runs two-thread products on every core meanwhile, as pytest-xdist's
    # other worker or a second chapter kernel does; the measurement made that way once read an
    # AVX2 processor as having bf16 units.
    burner = subprocess.Popen([sys.executable, "-c", "import torch\ntorch.set_num_threads(2)\n"
                               "a = torch.randn(512, 512)\nwhile True: a @ a"]) if busy else None
    threads = torch.get_num_threads()
    try:
        speed = matmul_speed()
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
    assert speed.bf16_units == _bf16_units(), speed
    assert speed.bf16_speedup == speed.bf16_gflops / speed.fp32_gflops
    assert (speed.bf16_speedup >= NATIVE_BF16_SPEEDUP) == speed.bf16_units
    assert torch.get_num_threads() == threads  # measured on one thread, the caller's count restored


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
    assert not model.training
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
