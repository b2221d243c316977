"""ctxlib's BertModel vs transformers.BertModel on the same MiniLM weights, CPU forward pass.

Batch 8 × 128 tokens, no gradients, runs interleaved (ctxlib, transformers, ctxlib, ...) so
that machine noise hits both alike; prints each side's median and the ratio ctxlib/transformers
(goal: ≤ 1.0), for a batch without padding and for one whose every other row is a quarter
padding (ctxlib skips the feed-forward network at padding; transformers computes it).
transformers runs with its default attention (SDPA), its fastest on the CPU.

    python bench/bert_forward.py [--repeats 30] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

from ctxlib.models.pretrained import minilm, minilm_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    ours, _ = minilm()
    ref = transformers.BertModel.from_pretrained(minilm_path()).eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, ours.config.vocab_size, (args.batch, args.length), generator=generator)
    full = torch.ones_like(ids)
    padded = full.clone()
    padded[::2, args.length * 3 // 4:] = 0
    models = {"ctxlib": ours, "transformers": ref}
    print(f"batch {args.batch} x {args.length} tokens, {args.threads} threads, {args.repeats} interleaved runs")
    for label, mask in (("no padding", full), ("1/8 of the tokens padding", padded)):
        times: dict[str, list[float]] = {name: [] for name in models}
        with torch.inference_mode():
            for model in models.values():  # warm-up: allocator, thread pool, kernels
                for _ in range(3):
                    model(input_ids=ids, attention_mask=mask)
            for _ in range(args.repeats):
                for name, model in models.items():
                    start = time.perf_counter()
                    model(input_ids=ids, attention_mask=mask)
                    times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"  {label}: " + ", ".join(f"{name} {value * 1e3:.1f} ms" for name, value in medians.items())
              + f"; ratio ctxlib/transformers = {medians['ctxlib'] / medians['transformers']:.3f} (goal <= 1.0)")

if __name__ == "__main__":
    main()
