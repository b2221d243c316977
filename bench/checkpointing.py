"""Gradient checkpointing (and bf16) on a BERT-base shaped encoder: peak memory saved, time it costs.

Each mode is measured by ``ctxlib.analysis.memory.step_cost``: the most memory the step's tensors
hold at once beyond the weights and gradients, counted tensor by tensor (the same on every run),
which is the activations the backward pass needs: all 12 blocks' without checkpointing, each
block's input plus one block's inside with it. Prints each mode and the ratios to the plain fp32
step. bf16 is measured only on a processor with bf16 matrix units (``has_bf16_units``): without
them the bf16 products are emulated, far slower than fp32 (``bench/precision.py`` measures by how much).

    python bench/checkpointing.py [--batch 8] [--length 128] [--steps 3]
"""

from __future__ import annotations

import argparse

from ctxlib.analysis.memory import parameter_count, step_cost
from ctxlib.models.bert import BertConfig
from ctxlib.training.precision import has_bf16_units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    config = BertConfig()
    modes = {"plain fp32": {}, "checkpoint fp32": {"checkpointing": True}}
    if has_bf16_units():  # read from the processor: no timing needed
        modes["plain bf16"] = {"bf16": True}
    results = {mode: step_cost(config, batch=args.batch, length=args.length, steps=args.steps, **options)
               for mode, options in modes.items()}
    print(f"BERT-base encoder ({parameter_count(config) / 1e6:.1f}M), batch {args.batch} × {args.length} tokens, "
          f"fwd + bwd, median of {args.steps} steps")
    for mode, r in results.items():
        print(f"  {mode:16s} step {r.step_seconds:6.2f} s   peak tensor memory above weights + grads {r.activation_mib:7.0f} MiB")
    plain = results["plain fp32"]
    for mode, r in list(results.items())[1:]:
        print(f"  {mode} / plain fp32: activation memory {r.activation_mib / plain.activation_mib:.2f}, "
              f"step time {r.step_seconds / plain.step_seconds:.2f}, operations {r.step_flops / plain.step_flops:.2f}")


if __name__ == "__main__":
    main()
