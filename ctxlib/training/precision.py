"""bfloat16 on this processor: how fast its matrix products are, and what it does to a gradient (notes §6.2, §6.4).

bf16 autocast runs the matrix products in bfloat16 (8 exponent bits, as fp32; 8 bits of
precision) while the weights stay in fp32. It saves time only on a processor with bf16 matrix
instructions (AVX-512 BF16 or AMX on x86). Without them PyTorch computes a bf16 product by a
slow path: on an AVX2-only server measured here, 1.3 GFLOPS against 160 in fp32, so a
fine-tuning run that takes seconds in fp32 takes many minutes. The book therefore trains in fp32,
which also gives the same numbers on every processor, and the pages that show bf16 measure the
processor first (``matmul_speed``) and measure bf16's effect on one batch (``bf16_gap``), which is
affordable everywhere.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ctxlib._checks import check_positive_int, check_positive_real
from ctxlib._threads import one_thread

# A processor with bf16 units runs bf16 products at least as fast as fp32 (about 2x); one without
# them runs them ~100x slower. Half of fp32's speed sits far from both.
NATIVE_BF16_SPEEDUP = 0.5


def matmul_gflops(dtype: torch.dtype, size: int = 256, seconds: float = 0.05) -> float:
    """Billions of floating-point operations per second of ``size`` × ``size`` matrix products
    in ``dtype`` on this CPU, on torch's current threads, timed for about ``seconds`` after one
    warm-up product."""
    if dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"dtype must be torch.float32 or torch.bfloat16, got {dtype!r}")
    check_positive_int("size", size)
    check_positive_real("seconds", seconds)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator).to(dtype) for _ in range(2))
    a @ b
    products, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or products < 3:
        a @ b
        products += 1
    return 2 * size**3 * products / elapsed / 1e9


@dataclass(frozen=True)
class MatmulSpeed:
    """The median speed of ``size`` × ``size`` matrix products on one thread, in GFLOPS."""

    size: int
    fp32_gflops: float
    bf16_gflops: float

    @property
    def bf16_speedup(self) -> float:
        """bf16's speed as a multiple of fp32's; about 2 with bf16 units, about 0.01 without."""
        return self.bf16_gflops / self.fp32_gflops

    @property
    def bf16_units(self) -> bool:
        """Whether this processor computes bf16 products natively (``NATIVE_BF16_SPEEDUP``)."""
        return self.bf16_speedup >= NATIVE_BF16_SPEEDUP


def matmul_speed(size: int = 256, seconds: float = 0.02, repeats: int = 5) -> MatmulSpeed:
    """Measure fp32 and bf16 matrix products on this CPU: ``repeats`` timings of each, taken in
    turn, each about ``seconds`` long, on one thread; the median of each.

    One thread, in turn, and the median make the ratio a property of the processor rather than
    of the moment: on a busy two-core machine torch's two threads wait for each other, and an
    fp32 product measured there once ran at a fraction of its speed, so that an AVX2 processor
    (bf16 at 0.01× fp32 when measured alone) read 0.79×."""
    check_positive_int("repeats", repeats)
    timings: dict[torch.dtype, list[float]] = {torch.float32: [], torch.bfloat16: []}
    with one_thread():
        for _ in range(repeats):
            for dtype, values in timings.items():
                values.append(matmul_gflops(dtype, size, seconds))
    fp32, bf16 = (statistics.median(values) for values in timings.values())
    return MatmulSpeed(size, fp32, bf16)


@dataclass(frozen=True)
class PrecisionGap:
    """One batch's loss in fp32 and under bf16 autocast, and the cosine between the two gradients."""

    loss_fp32: float
    loss_bf16: float
    gradient_cosine: float


def _loss_and_gradient(model: nn.Module, loss: Callable[[nn.Module, Any], torch.Tensor], batch: Any,
                       bf16: bool) -> tuple[float, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        value = loss(model, batch)
    if not isinstance(value, torch.Tensor) or value.numel() != 1 or not value.requires_grad:
        raise ValueError("loss(model, batch) must return a one-element tensor computed from the model's parameters, "
                         f"got {type(value).__name__} {value!r:.80}")
    value.backward()
    gradient = torch.cat([p.grad.reshape(-1).double() for p in model.parameters() if p.grad is not None])
    model.zero_grad(set_to_none=True)
    return float(value.detach()), gradient


def bf16_gap(model: nn.Module, loss: Callable[[nn.Module, Any], torch.Tensor], batch: Any) -> PrecisionGap:
    """What bf16 autocast changes in one training step (§6.2): ``loss(model, batch)`` and its
    gradient computed in fp32 and again under bf16 autocast, with dropout off (``model`` is put
    in eval mode and left there) so that precision is the only difference."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    model.eval()
    loss_fp32, gradient_fp32 = _loss_and_gradient(model, loss, batch, bf16=False)
    loss_bf16, gradient_bf16 = _loss_and_gradient(model, loss, batch, bf16=True)
    if not (math.isfinite(loss_fp32) and math.isfinite(loss_bf16)):
        raise ValueError(f"the loss must be finite, got {loss_fp32} in fp32 and {loss_bf16} under bf16 autocast")
    cosine = torch.nn.functional.cosine_similarity(gradient_fp32, gradient_bf16, dim=0)
    return PrecisionGap(loss_fp32, loss_bf16, float(cosine))
