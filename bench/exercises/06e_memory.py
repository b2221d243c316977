"""The runs behind the exercises of 06e_memory.md whose solutions quote a measurement.

    python bench/exercise_record.py 06e_memory
"""

from __future__ import annotations

import torch

from ctxlib.analysis.memory import step_cost
from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.models.pretrained import minilm

from _common import exercise

MIB = 2 ** 20


@exercise(1)
def albert_count() -> dict:
    """ALBERT-base counted part by part (embeddings, the one shared block, the pooler), on the meta device."""
    with torch.device("meta"):
        model = BertModel(BertConfig(embedding_size=128, share_layers=True))
    millions = {name: sum(p.numel() for p in part.parameters()) / 1e6
                for name, part in (("embeddings", model.embeddings), ("block", model.encoder), ("pooler", model.pooler))}
    return {**{f"{name}_millions": value for name, value in millions.items()}, "total_millions": sum(millions.values())}


@exercise(2)
def activation_memory_by_length() -> dict:
    """step_cost's activation memory for MiniLM's shape, batch 8, at lengths 64, 128 and 256.

    Also the growth per doubling, and the fit memory = aT + bT² through the 128 and 256 points:
    a, b, its prediction at 64, where the two parts are equal and their sizes at 256 and 512."""
    config = minilm()[0].config
    memory = {length: step_cost(config, batch=8, length=length, steps=2).activation_mib for length in (64, 128, 256)}
    # a·128 + b·128² = m128 and a·256 + b·256² = m256, solved for a (MiB per token) and b (MiB per token²)
    b = (memory[256] / 256 - memory[128] / 128) / (256 - 128)
    a = memory[128] / 128 - b * 128
    predicted_64 = a * 64 + b * 64 ** 2
    return {"memory_64": memory[64], "memory_128": memory[128], "memory_256": memory[256],
            "growth_64_128": memory[128] / memory[64], "growth_128_256": memory[256] / memory[128],
            "linear_mib_per_token": a, "quadratic_mib_per_token2": b, "quadratic_bytes_per_token2": b * MIB,
            "fit_64": predicted_64, "fit_error_64": abs(predicted_64 - memory[64]) / memory[64],
            "equal_length": a / b, "linear_256": a * 256, "quadratic_256": b * 256 ** 2,
            "quadratic_over_linear_512": b * 512 / a}
