"""bfloat16 on this processor: whether it has bf16 units, how fast its matrix products are, and
what bf16 does to a gradient (notes §6.2, §6.4).

bf16 autocast runs the matrix products in bfloat16 (8 exponent bits, as fp32; 8 bits of
precision) while the weights stay in fp32. It saves time only on a processor with bf16 matrix
instructions (AVX-512 BF16 or AMX on x86). Without them PyTorch computes a bf16 product by a
slow path: on an AVX2-only server measured here, 1.3 GFLOPS against 160 in fp32, so a
fine-tuning run that takes seconds in fp32 takes many minutes. The book therefore trains in fp32,
which also gives the same numbers on every processor, and the pages that show bf16 ask the
processor what it has (``has_bf16_units``: its reported instruction sets, never a race between
two timings, which a busy machine decides), print its speed (``matmul_speed``) as a measurement
of this machine, and measure bf16's effect on one batch (``bf16_gap``), which is affordable
everywhere. Every page that prints a time prints ``this_machine()`` beside it.
"""

from __future__ import annotations

import functools
import math
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ctxlib._checks import check_positive_int, check_positive_real
from ctxlib._modes import evaluating
from ctxlib._threads import one_thread


@functools.cache  # what the processor reports does not change while the process runs
def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@functools.cache
def has_bf16_units() -> bool:
    """Whether this processor reports bf16 matrix instructions: on x86, AVX-512 BF16 or AMX tiles
    (PyTorch's own CPU capability checks); elsewhere the ``bf16`` feature in ``/proc/cpuinfo``
    (Arm's BF16 extension). Read from the processor, never timed: a race between two timings is
    decided by whatever else the machine is doing, and once read a busy AVX2 processor as having them."""
    if platform.machine() in ("x86_64", "AMD64", "i386", "i686"):
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return any(line.split(":")[0].strip() in ("flags", "Features") and "bf16" in line.split(":", 1)[-1].split()
               for line in _cpuinfo().splitlines())


def processor_name() -> str:
    """The processor's model name as the system reports it (``/proc/cpuinfo``), or its architecture."""
    for line in _cpuinfo().splitlines():
        if line.split(":")[0].strip() == "model name":
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


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
    """The median speed of ``size`` × ``size`` matrix products on one thread, in GFLOPS, measured
    on this machine at this moment (other work on the cores lowers it), and whether the processor
    reports bf16 units (``has_bf16_units``), which no load changes."""

    size: int
    fp32_gflops: float
    bf16_gflops: float

    @property
    def bf16_speedup(self) -> float:
        """bf16's speed as a multiple of fp32's; about 2 with bf16 units, about 0.01 without."""
        return self.bf16_gflops / self.fp32_gflops

    @property
    def bf16_units(self) -> bool:
        """Whether the processor reports bf16 units (``has_bf16_units``), whatever the timings say."""
        return has_bf16_units()


# matmul_speed's measurement, and this_machine's: five one-thread timings of ~0.02 s at 256 × 256.
SPEED_SIZE, SPEED_SECONDS, SPEED_REPEATS = 256, 0.02, 5


def matmul_speed(size: int = SPEED_SIZE, seconds: float = SPEED_SECONDS, repeats: int = SPEED_REPEATS) -> MatmulSpeed:
    """Measure fp32 and bf16 matrix products on this CPU: ``repeats`` timings of each, taken in
    turn, each about ``seconds`` long, on one thread; the median of each.

    One thread, in turn, and the median make the ratio a property of the processor rather than
    of the moment: on a busy two-core machine torch's two threads wait for each other, and an
    fp32 product measured there once ran at a fraction of its speed, so that an AVX2 processor
    (bf16 at 0.01× fp32 when measured alone) read 0.79×."""
    return MatmulSpeed(size, *_median_gflops((torch.float32, torch.bfloat16), size, seconds, repeats))


def _median_gflops(dtypes: tuple[torch.dtype, ...], size: int, seconds: float, repeats: int) -> list[float]:
    """The median of ``repeats`` one-thread timings of each of ``dtypes``, taken in turn."""
    check_positive_int("repeats", repeats)
    timings: dict[torch.dtype, list[float]] = {dtype: [] for dtype in dtypes}
    with one_thread():
        for _ in range(repeats):
            for dtype, values in timings.items():
                values.append(matmul_gflops(dtype, size, seconds))
    return [statistics.median(values) for values in timings.values()]


def this_machine(speed: MatmulSpeed | None = None) -> str:
    """The line a page prints beside any time it shows: the time is this machine's, whose
    one-thread fp32 speed (``speed``'s, else measured now as ``matmul_speed`` does, fp32 only:
    without bf16 units a bf16 timing costs half a second) lets a reader scale it to their own.
    Seconds are never compared with figures recorded on another machine."""
    if speed is None:
        size, fp32 = SPEED_SIZE, _median_gflops((torch.float32,), SPEED_SIZE, SPEED_SECONDS, SPEED_REPEATS)[0]
    else:
        size, fp32 = speed.size, speed.fp32_gflops
    return (f"times measured on this machine ({processor_name()}, "
            f"{torch.get_num_threads()} torch thread(s)): one-thread fp32 {size} × {size} "
            f"matrix products at {fp32:.0f} GFLOPS")


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
    gradient computed in fp32 and again under bf16 autocast, with dropout off (``model`` in eval
    mode for the two, then back in its own) so that precision is the only difference."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    with evaluating(model):
        loss_fp32, gradient_fp32 = _loss_and_gradient(model, loss, batch, bf16=False)
        loss_bf16, gradient_bf16 = _loss_and_gradient(model, loss, batch, bf16=True)
    if not (math.isfinite(loss_fp32) and math.isfinite(loss_bf16)):
        raise ValueError(f"the loss must be finite, got {loss_fp32} in fp32 and {loss_bf16} under bf16 autocast")
    cosine = torch.nn.functional.cosine_similarity(gradient_fp32, gradient_bf16, dim=0)
    return PrecisionGap(loss_fp32, loss_bf16, float(cosine))
