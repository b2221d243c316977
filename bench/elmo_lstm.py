"""ELMo's LSTM layers: the fused ``torch.nn.LSTM(proj_size=...)`` path vs the exact step loop.

The exact loop is what clipping needs (bilm-tf clips cell and projection at 3); the fused path
is what runs when clipping is off. Same weights, same batch, runs interleaved. Prints tokens
per second for inference (forward) and training (forward + backward) through the two-layer
forward and backward stacks, and the ratio fused/exact; then the whole biLM forward, where
the shared char-CNN token layer dilutes the difference.

    python bench/elmo_lstm.py [--batch 32] [--length 40] [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from ctxlib.models.elmo import BiLM, ElmoConfig, batch_to_ids


def median_time(fn: Callable[[], object], repeats: int) -> float:
    values = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        values.append(time.perf_counter() - start)
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    # The size of the biLM Chapter 2 trains: 2 layers, cell 512, projection 128, no clipping.
    config = ElmoConfig(filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 128)), projection_dim=128,
                        cell_size=512, cell_clip=None, proj_clip=None)
    bilm = BiLM(config)
    lengths = torch.randint(args.length // 2, args.length + 1, (args.batch,))
    sentences = [[f"w{(row * 7 + t) % 50}" for t in range(int(n))] for row, n in enumerate(lengths)]
    chars = batch_to_ids(sentences)
    tokens = int(lengths.sum())
    x = torch.randn(args.batch, args.length + 2, config.projection_dim)
    steps = lengths + 2
    layers = [*bilm.forward_layers, *bilm.backward_layers]

    def stacks(exact: bool, train: bool) -> Callable[[], None]:
        def run() -> None:
            with torch.set_grad_enabled(train):
                outputs = [layer(x, steps, exact=exact)[0] for layer in layers]
                if train:
                    sum(out.sum() for out in outputs).backward()
        return run

    print(f"batch {args.batch} x up to {args.length} tokens ({tokens} tokens), {torch.get_num_threads()} threads, "
          f"median of {args.repeats}")
    for train in (False, True):
        fused = stacks(False, train)
        exact = stacks(True, train)
        fused(), exact()  # warm-up
        t_fused, t_exact = median_time(fused, args.repeats), median_time(exact, args.repeats)
        label = "training (fwd+bwd)" if train else "inference (fwd)  "
        print(f"  LSTM stacks, {label}: fused {tokens / t_fused:8.0f} tok/s, exact {tokens / t_exact:8.0f} tok/s, "
              f"ratio fused/exact = {t_exact / t_fused:.2f}")
    with torch.inference_mode():
        t_fused = median_time(lambda: bilm(chars, exact=False), args.repeats)
        t_exact = median_time(lambda: bilm(chars, exact=True), args.repeats)
    print(f"  whole biLM forward (char-CNN included): fused {tokens / t_fused:8.0f} tok/s, "
          f"exact {tokens / t_exact:8.0f} tok/s, ratio fused/exact = {t_exact / t_fused:.2f}")


if __name__ == "__main__":
    main()
