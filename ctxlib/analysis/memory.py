"""What a BERT costs to hold and to train (notes §6.3): parameter counts and bytes from a
configuration, and one training step's activation memory, operations and time, measured.

``parameter_count`` builds the model on PyTorch's ``meta`` device, which records shapes and
allocates nothing, so BERT-large is counted as fast as the mini-BERT. ``step_cost`` runs
forward + backward steps and reports the most bytes that the step's own tensors held at one
moment (``LiveTensorBytes``): the activations the backward pass needs, the gradients being
computed, the temporaries. The weights and their gradients exist before the step and are not
counted. The count is of tensors, not of the process's resident memory, so it is the same on
every run and every machine; what the allocator keeps on top of it is not counted.

    python -m ctxlib.analysis.memory --config '{"hidden_size": 384, "num_attention_heads": 12}' --batch 16 [--bf16]

(``--config``: ``BertConfig`` fields as JSON; also ``--length``, ``--steps``, ``--checkpointing``.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ctxlib._checks import check_bool, check_positive_int
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
    """One training step of a ``BertModel``: median seconds, the most MiB the step's tensors
    held at once beyond the weights and their gradients (``LiveTensorBytes``: the activations
    kept for the backward pass, and what the backward pass computes from them), and the step's
    floating-point operations (``training_flops``). The memory and the operations do not
    depend on the machine or on what else it is running; the seconds do."""

    step_seconds: float
    activation_mib: float
    step_flops: int


class LiveTensorBytes(TorchDispatchMode):
    """While active, the bytes of every tensor storage that an operation creates, held until the
    storage is freed; ``peak`` is the most held at once. A storage an operation only reads or
    writes in place (a weight, a gradient accumulated into) is not counted, nor is a view of
    one: what is counted is what the block inside the ``with`` allocated.

    Counted at the operator level (``TorchDispatchMode``), the operations are the ones that run
    without it: a CPU training step's attention takes the same math path (``bmm``, softmax)
    either way. Allocator slack, which ``malloc`` keeps and the process's resident size shows,
    is not counted, which is what makes the figure repeat exactly. A storage is counted at the
    size it has when first seen: one resized later (``resize_``) would be miscounted; a
    training step resizes none."""

    def __init__(self) -> None:
        super().__init__()
        self._held: dict[int, weakref.finalize] = {}
        self.live = 0
        self.peak = 0

    def _freed(self, key: int, nbytes: int) -> None:
        del self._held[key]
        self.live -= nbytes

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: tuple[type, ...], args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        """Run ``func``, then hold every storage among its outputs that none of its inputs has."""
        out = func(*args, **(kwargs or {}))
        read = {id(t.untyped_storage()) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for tensor in tree_leaves(out):
            if not isinstance(tensor, torch.Tensor):
                continue
            # A storage's Python object lives as long as the storage (PyTorch keeps it), so its id
            # names the storage and a finaliser on it runs when the memory is released.
            storage = tensor.untyped_storage()
            key = id(storage)
            if key not in read and key not in self._held:
                self._held[key] = weakref.finalize(storage, self._freed, key, storage.nbytes())
                self.live += storage.nbytes()
        self.peak = max(self.peak, self.live)
        return out


def step_cost(config: BertConfig, *, batch: int, length: int, checkpointing: bool = False, bf16: bool = False,
              steps: int = 3) -> StepCost:
    """Measure forward + backward of a ``BertModel(config)`` on ``batch`` sequences of ``length``
    random tokens: the median time of ``steps`` steps after one untimed step, the most memory
    a step's tensors hold at once, and one step's operations (``StepCost``)."""
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
    for name, value in (("batch", batch), ("length", length), ("steps", steps)):
        check_positive_int(name, value)
    check_bool("checkpointing", checkpointing)
    check_bool("bf16", bf16)
    if length > config.max_position_embeddings:
        raise ValueError(f"length={length} exceeds the config's max_position_embeddings={config.max_position_embeddings}")
    # Seeded throughout: the dropout masks are the same at every call, and the caller's own
    # random stream is left as it was.
    with seeded(0):
        model = BertModel(config).train()
        model.gradient_checkpointing = checkpointing
        for parameter in model.parameters():
            parameter.grad = torch.zeros_like(parameter)  # held before the step, as in training
        # Random ids: a step's cost does not depend on which tokens it reads.
        ids = torch.randint(config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(0))

        def step() -> torch.Tensor:
            with torch.autocast(device_type(model), dtype=torch.bfloat16, enabled=bf16):
                return model(ids).last_hidden_state.float().pow(2).mean()

        times = []
        for index in range(steps + 1):  # the first step (page faults, allocator warm-up) is not timed
            start = time.perf_counter()
            step().backward()
            if index:
                times.append(time.perf_counter() - start)
        # Counted on steps of their own: each counter's dispatch slows the step down.
        with LiveTensorBytes() as memory:
            step().backward()
        return StepCost(statistics.median(times), memory.peak / 2**20, training_flops(step))


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


def _least_step_bytes(config: BertConfig, parameters: int, batch: int, length: int) -> int:
    """A lower bound on the bytes a training step holds: the fp32 weights and their gradients,
    the ids, and each layer's ``[batch, length, hidden]`` output that the backward pass keeps (at
    bf16's 2 bytes). A size above the machine's memory is refused before anything is allocated."""
    per_layer = batch * length * config.hidden_size * 2
    return 8 * parameters + 8 * batch * length + per_layer * (config.num_hidden_layers + 1)


def _physical_memory() -> int | None:
    """This machine's memory in bytes, or None where the platform does not say (Windows)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


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
        # A tensor's sizes are 64-bit: a larger one would fail deep inside torch.
        too_large = sorted(name for name, value in given.items() if isinstance(value, int) and value >= 2 ** 63)
        if too_large:
            raise ValueError(f"{too_large} exceed the largest tensor size, 2**63 - 1")
        config = BertConfig(**given)
    except RecursionError:
        parser.error("argument --config: the JSON is nested too deeply; give a flat object of BertConfig fields")
    except (json.JSONDecodeError, TypeError, ValueError) as error:
        parser.error(f"argument --config: {error}")
    if args.length > config.max_position_embeddings:
        parser.error(f"argument --length: {args.length} exceeds the config's max_position_embeddings="
                     f"{config.max_position_embeddings}")
    try:
        parameters = parameter_count(config)
    except (RuntimeError, TypeError, OverflowError) as error:  # on the meta device only an impossible size fails
        parser.error(f"argument --config: a table of this config is larger than a tensor can be ({error})")
    needed, available = _least_step_bytes(config, parameters, args.batch, args.length), _physical_memory()
    if available is not None and needed > available:
        parser.error(f"arguments --config, --batch and --length: a training step of this size needs at least "
                     f"{needed / 2**30:,.1f} GiB (the weights, their gradients and each layer's output), this "
                     f"machine has {available / 2**30:,.1f} GiB")
    try:
        cost = step_cost(config, batch=args.batch, length=args.length, steps=args.steps,
                         checkpointing=args.checkpointing, bf16=args.bf16)
    except RuntimeError as error:
        # What the bound above cannot see (attention's [batch, heads, length, length] scores, on
        # some paths) can still not fit: torch reports a failed CPU allocation as a RuntimeError, a
        # failed GPU one as OutOfMemoryError. Any other error is a bug and keeps its traceback.
        if not (isinstance(error, torch.OutOfMemoryError) or "can't allocate memory" in str(error)):
            raise
        parser.error(f"arguments --config, --batch and --length: a training step of this size does not fit in "
                     f"memory ({str(error).splitlines()[0][:200]})")
    print(json.dumps(asdict(cost)))


if __name__ == "__main__":
    main()
