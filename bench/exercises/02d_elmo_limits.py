"""The runs behind the exercises of 02d_elmo_limits.md whose solutions quote a measurement.

    python bench/exercise_record.py 02d_elmo_limits
"""

from __future__ import annotations

import math

from ctxlib.studies.long_range import recall_accuracy

from _common import and_list, exercise

TEST_SEQUENCES = 512  # recall_accuracy's held-out sequences


@exercise(1)
def recall_longer() -> dict:
    """The BiLSTM's recall accuracy after 1,000 training steps at distances 16, 32 and 64.

    Each accuracy (the page gives the 300-step ones), how many lie more than two standard errors
    of chance (on the 512 test sequences) above it, and at which distances."""
    distances = (16, 32, 64)
    accuracy = {d: recall_accuracy("BiLSTM", d, steps=1000) for d in distances}
    two_se = 2 * math.sqrt(0.25 / TEST_SEQUENCES)
    learned = [d for d in distances if accuracy[d] > 0.5 + two_se]
    return {**{f"accuracy_{d}": a for d, a in accuracy.items()}, "above_chance": len(learned),
            "above_chance_at": and_list([str(d) for d in learned]) or "none"}


@exercise(3)
def forget_gate_start() -> dict:
    """The page's 300-step recall at distances 8, 16 and 32 from two starts of the BiLSTM's forget
    gates: bilm-tf's bias of 1 (the page's) and PyTorch's ``nn.LSTM`` default of 0."""
    distances = (8, 16, 32)
    return {f"bias{bias}_{d}": recall_accuracy("BiLSTM", d, forget_bias=float(bias))
            for bias in (0, 1) for d in distances}
