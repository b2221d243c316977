"""The runs behind the exercises of 04_attention.md whose solutions quote a measurement.

    python bench/exercise_record.py 04_attention
"""

from __future__ import annotations

import dataclasses

from ctxlib.data.corpus import load_corpus
from ctxlib.studies.extrapolation import EXTRAPOLATION_TRAINING, extrapolation_study

from _common import exercise


@exercise(4)
def extrapolation_longer() -> dict:
    """The position schemes trained five times longer (1,500 steps): loss at 32 words, change at 4×.
    Also RoPE's change against the page's 300 steps, and which schemes fit and degrade most."""
    corpus = load_corpus()
    loss, change = {}, {}
    for steps in (300, 1500):
        study = extrapolation_study(corpus, training=dataclasses.replace(EXTRAPOLATION_TRAINING, steps=steps))
        loss[steps] = {scheme: losses[0] for scheme, losses in study.loss.items()}
        change[steps] = {scheme: losses[-1] - losses[0] for scheme, losses in study.loss.items()}
    figures = {}
    for scheme in loss[1500]:
        figures[f"loss_1500_{scheme.lower()}"] = loss[1500][scheme]
        figures[f"change_1500_{scheme.lower()}"] = change[1500][scheme]
    rope = change[1500]["RoPE"] / change[300]["RoPE"]
    ranked = sorted(change[1500], key=change[1500].get)  # least to most degraded at 4×
    figures.update(rope_change_ratio=rope,
                   rope_trend="grows" if change[1500]["RoPE"] > change[300]["RoPE"] else "shrinks",
                   best_fit_1500=min(loss[1500], key=loss[1500].get),
                   most_degraded_1500=f"{ranked[-1]} and {ranked[-2]}", least_degraded_1500=ranked[0])
    return figures
