"""What a BERT costs to hold and to train (notes §6.3): parameter counts and bytes from a
configuration, and one training step's peak memory and time, measured.

``parameter_count`` builds the model on PyTorch's ``meta`` device, which records shapes and
allocates nothing, so BERT-large is counted as fast as the mini-BERT. ``step_cost`` runs a few
forward + backward steps in a fresh Python process, so that the peak resident memory it reports
belongs to that configuration alone and not to whatever the caller ran before;
the weights and their gradients are allocated before the first step and the peak mark is reset
there (Linux's ``VmHWM``), so what the steps add on top of that baseline is the activations the
backward pass needs.

    python -m ctxlib.analysis.memory --config '{"hidden_size": 384, "num_attention_heads": 12}' --batch 16 [--bf16]

(``--config``: ``BertConfig`` fields as JSON; also ``--length``, ``--steps``, ``--checkpointing``.)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import torch

from ctxlib._checks import check_positive_int
from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.training.loop import device_type, seeded

BYTES_PER_VALUE = {"fp32": 4, "fp16": 2, "bf16": 2}
# What AdamW keeps per parameter in fp32: the weight, its gradient and two moment estimates.
ADAMW_VALUES_PER_PARAMETER = 4


def parameter_count(config: BertConfig, pooler: bool = True) -> int:
    """Parameters of a ``BertModel`` built from ``config`` (the pooler's too unless
    ``pooler=False``), counted on the meta device: nothing is allocated."""
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
    with torch.device("meta"):
        model = BertModel(config, pooler=pooler)
    return sum(p.numel() for p in model.parameters())


@dataclass(frozen=True)
class StepCost:
    """One training step of a ``BertModel``: median seconds, peak memory above the weights and
    gradients (MiB: the activations kept for the backward pass, and the allocator's slack), and
    the step's floating-point operations (``training_flops``), which, unlike its seconds, do
    not depend on the machine or on what else it is running."""

    step_seconds: float
    activation_mib: float
    step_flops: int


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def _reset_peak() -> None:
    """Restart Linux's peak-RSS mark (VmHWM) from the present, so that transients before the
    measurement (importing torch, building the model) cannot stand in for its peak."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def _peak_mib() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024  # kB


def _measure_here(config: BertConfig, checkpointing: bool, bf16: bool, batch: int, length: int, steps: int) -> StepCost:
    with seeded(0):
        model = BertModel(config).train()
    model.gradient_checkpointing = checkpointing
    for parameter in model.parameters():
        # Written, not just allocated: zero pages from calloc would become resident only when
        # the first backward pass writes them, and count as activations.
        parameter.grad = torch.empty_like(parameter).fill_(0.0)
    # Random ids: a step's cost does not depend on which tokens it reads.
    ids = torch.randint(config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(0))
    baseline = _resident_mib()
    _reset_peak()

    def step() -> torch.Tensor:
        with torch.autocast(device_type(model), dtype=torch.bfloat16, enabled=bf16):
            return model(ids).last_hidden_state.float().pow(2).mean()

    times = []
    for index in range(steps + 1):  # the first step (page faults, allocator warm-up) is not timed
        start = time.perf_counter()
        step().backward()
        if index:
            times.append(time.perf_counter() - start)
    peak = _peak_mib()
    # Counted after the peak is read: the counter's dispatch mode changes what a step keeps alive.
    return StepCost(statistics.median(times), peak - baseline, training_flops(step))


def step_cost(config: BertConfig, *, batch: int, length: int, checkpointing: bool = False, bf16: bool = False,
              steps: int = 3) -> StepCost:
    """Measure forward + backward of a ``BertModel(config)`` on ``batch`` sequences of ``length``
    random tokens, in a fresh process: the median time of ``steps`` steps after one untimed
    step, the peak memory the steps added, and one step's operations (``StepCost``)."""
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
    for name, value in (("batch", batch), ("length", length), ("steps", steps)):
        check_positive_int(name, value)
    if length > config.max_position_embeddings:
        raise ValueError(f"length={length} exceeds the config's max_position_embeddings={config.max_position_embeddings}")
    command = [sys.executable, "-m", "ctxlib.analysis.memory", "--config", json.dumps(asdict(config)), "--batch", str(batch),
               "--length", str(length), "--steps", str(steps)]
    command += ["--checkpointing"] * checkpointing + ["--bf16"] * bf16
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"the measuring process failed:\n{result.stderr[-2000:]}")
    return StepCost(**json.loads(result.stdout.strip().splitlines()[-1]))


def training_flops(step: Callable[[], torch.Tensor]) -> int:
    """Floating-point operations of one training step: ``step()`` returns a loss, whose forward
    and backward passes are counted (matrix products, by ``torch.utils.flop_counter``). This is
    how Clark et al. (2020) compare pretraining compute."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step().backward()
    return counter.get_total_flops()


def _positive(text: str) -> int:
    """An argparse type: a positive int, or a usage error naming what was given."""
    try:
        return check_positive_int("the value", int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ctxlib.analysis.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="{}", help="BertConfig fields as JSON (default: BERT-base)")
    parser.add_argument("--batch", type=_positive, default=8)
    parser.add_argument("--length", type=_positive, default=128)
    parser.add_argument("--steps", type=_positive, default=3)
    parser.add_argument("--checkpointing", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args(argv)
    try:
        given = json.loads(args.config)
        if not isinstance(given, dict):
            raise TypeError(f"a JSON object of BertConfig fields, got a {type(given).__name__}")
        names = {field.name for field in fields(BertConfig)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise ValueError(f"unknown BertConfig fields {unknown}; the fields are {sorted(names)}")
        config = BertConfig(**given)
    except (json.JSONDecodeError, TypeError, ValueError) as error:
        parser.error(f"argument --config: {error}")
    if args.length > config.max_position_embeddings:
        parser.error(f"argument --length: {args.length} exceeds the config's max_position_embeddings="
                     f"{config.max_position_embeddings}")
    cost = _measure_here(config, args.checkpointing, args.bf16, args.batch, args.length, args.steps)
    print(json.dumps(asdict(cost)))


if __name__ == "__main__":
    main()
