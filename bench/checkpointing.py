"""Gradient checkpointing on a BERT-base shaped encoder: peak memory saved, time it costs.

Each mode runs in its own process, so the peak resident memory (``ru_maxrss``) belongs to it
alone. The weights and their gradients are allocated before the first step, so what the steps
add on top of that baseline is the activations the backward pass needs: all 12 blocks' without
checkpointing, one block's (plus each block's input) with it. Prints both modes and the ratios.

    python bench/checkpointing.py [--batch 8] [--length 128] [--steps 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch

from ctxlib.bert import BertConfig, BertModel


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def run_mode(checkpointing: bool, batch: int, length: int, steps: int) -> dict[str, float]:
    torch.manual_seed(0)
    model = BertModel(BertConfig()).train()
    model.gradient_checkpointing = checkpointing
    for parameter in model.parameters():
        parameter.grad = torch.zeros_like(parameter)
    ids = torch.randint(1000, 30000, (batch, length))
    baseline = resident_mib()
    times = []
    for step in range(steps + 1):  # the first step (page faults, allocator warm-up) is not timed
        start = time.perf_counter()
        model(ids).last_hidden_state.pow(2).mean().backward()
        if step:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"step_s": statistics.median(times), "activation_mib": peak - baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--mode", choices=["plain", "checkpoint"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run_mode(args.mode == "checkpoint", args.batch, args.length, args.steps)))
        return
    results = {}
    for mode in ("plain", "checkpoint"):
        out = subprocess.run([sys.executable, __file__, "--mode", mode, "--batch", str(args.batch),
                              "--length", str(args.length), "--steps", str(args.steps)],
                             check=True, capture_output=True, text=True).stdout
        results[mode] = json.loads(out.strip().splitlines()[-1])
    print(f"BERT-base encoder (110M), batch {args.batch} × {args.length} tokens, fwd + bwd, median of {args.steps} steps")
    for mode, r in results.items():
        print(f"  {mode:10s} step {r['step_s']:6.2f} s   peak memory above weights + grads {r['activation_mib']:7.0f} MiB")
    plain, checkpoint = results["plain"], results["checkpoint"]
    print(f"  activation memory, checkpoint / plain: {checkpoint['activation_mib'] / plain['activation_mib']:.2f}")
    print(f"  step time, checkpoint / plain:         {checkpoint['step_s'] / plain['step_s']:.2f}")


if __name__ == "__main__":
    main()
