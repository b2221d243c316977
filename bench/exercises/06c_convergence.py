"""The runs behind the exercises of 06c_convergence.md whose solutions quote a measurement.

    python bench/exercise_record.py 06c_convergence
"""

from __future__ import annotations

from ctxlib.analysis.weight_change import relative_change
from ctxlib.models.pretrained import minilm
from ctxlib.studies.finetuning import fine_tune
from ctxlib.training.precision import has_bf16_units

from _common import exercise, rate_key, rate_text, recipe, scores

RATES = (3e-4, 5e-4, 7e-4, 1e-3, 2e-3, 3e-3)  # exercise 1's peak learning rates, smallest first
# A run "learns" as the page's check at 1e-4 asks: above chance (20 topics: 5%) by four times chance.
LEARNS = 5 * 100 / 20


@exercise(1)
def learning_rate_boundary() -> dict:
    """Topic accuracy by peak learning rate, with and without warmup, at 32 and 128 steps, seeds 0-2.

    Each run's accuracy, the largest rate that learns at every seed (a text), and how many cells
    the seeds disagree on, with the widest spread over the seeds."""
    figures, mixed, widest = {}, 0, None
    for epochs in (2, 8):
        steps = recipe("topic", epochs=epochs).steps(256)
        for warmup in (0.1, 0.0):
            arm = f"s{steps}_{'warmup' if warmup else 'none'}"
            boundary = f"below {rate_text(RATES[0])}"
            for lr in RATES:
                accuracy = [scores(recipe("topic", lr=lr, epochs=epochs, warmup_fraction=warmup, seed=seed))
                            .metrics["accuracy"] for seed in (0, 1, 2)]
                for seed, value in enumerate(accuracy):
                    figures[f"{arm}_{rate_key(lr)}_seed{seed}"] = value
                learned = [value > LEARNS for value in accuracy]
                if all(learned):
                    boundary = rate_text(lr)
                mixed += any(learned) and not all(learned)
                spread = max(accuracy) - min(accuracy)
                if widest is None or spread > widest[0]:
                    where = f"{rate_text(lr)} {'with' if warmup else 'without'} warmup at {steps} steps"
                    widest = (spread, where, min(accuracy), max(accuracy))
            figures[f"boundary_{arm}"] = boundary
    figures.update(mixed_cells=mixed, widest_cell=widest[1], widest_low=widest[2], widest_high=widest[3])
    return figures


@exercise(2)
def stronger_weight_decay() -> dict:
    """Both optimisers at λ = 0.1 beside 0.01: accuracy, encoder moved from MiniLM, and their change.

    The λ = 0.01 runs are the page's: only what the tenfold λ changed is returned of them."""
    start = minilm()[0]
    figures = {}
    for optimizer in ("adamw", "adam_l2"):
        accuracy, moved = {}, {}
        for decay in (0.01, 0.1):
            run = fine_tune(recipe("topic", optimizer=optimizer, weight_decay=decay))
            accuracy[decay], moved[decay] = run.metrics["accuracy"], relative_change(run.model.bert, start)
        figures.update({f"{optimizer}_accuracy": accuracy[0.1], f"{optimizer}_moved": moved[0.1],
                        f"{optimizer}_accuracy_change": accuracy[0.1] - accuracy[0.01],
                        f"{optimizer}_moved_ratio": moved[0.1] / moved[0.01]})
    return figures


@exercise(3)
def clipping_threshold() -> dict:
    """The lr 1e-3 runs with clipping at 1.0 and at 100, seeds 0-3: steps clipped and accuracy.

    Also the largest gradient norms, and in how many of the eight (seed, warmup) pairs raising the
    threshold to 100 moved the accuracy by more than 5 points, up or down."""
    figures, over_one, largest_one, clipped_100, largest_100, raised, lowered = {}, [], [], 0, None, 0, 0
    for warmup in (0.1, 0.0):
        arm = "warmup" if warmup else "none"
        accuracy = {}
        for clip in (1.0, 100.0):
            for seed in (0, 1, 2, 3):
                run = scores(recipe("topic", lr=1e-3, warmup_fraction=warmup, max_grad_norm=clip, seed=seed))
                accuracy[clip, seed] = run.metrics["accuracy"]
                figures[f"{arm}_clip{clip:g}_seed{seed}"] = run.metrics["accuracy"]
                norms = run.history.grad_norm
                if clip == 1.0:
                    over_one.append(sum(norm > clip for norm in norms))
                    largest_one.append(max(norms))
                else:
                    clipped_100 += sum(norm > clip for norm in norms)
                    if largest_100 is None or max(norms) > largest_100[0]:
                        largest_100 = (max(norms), f"seed {seed} {'with' if warmup else 'without'} warmup")
        for seed in (0, 1, 2, 3):
            change = accuracy[100.0, seed] - accuracy[1.0, seed]
            raised, lowered = raised + (change > 5), lowered + (change < -5)
    figures.update(clip1_steps_over_min=min(over_one), clip1_steps_over_max=max(over_one),
                   clip1_largest_norm_min=min(largest_one), clip1_largest_norm_max=max(largest_one),
                   clip100_steps_clipped=clipped_100, clip100_largest_norm=largest_100[0],
                   clip100_largest_run=largest_100[1], pairs_raised=raised, pairs_lowered=lowered,
                   pairs_moved=raised + lowered)
    return figures


@exercise(4)
def bf16_loss_curves() -> dict:
    """The base run in fp32 and under bf16 autocast, seeds 0-3: the largest gap between the loss curves.

    The range over the seeds of the largest per-step gap, and whether this processor has bf16 matrix
    units (without them a bf16 run takes ~100 times as long as an fp32 one)."""
    gaps = []
    for seed in (0, 1, 2, 3):
        fp32 = scores(recipe("topic", seed=seed)).history.train["loss"]
        bf16 = scores(recipe("topic", seed=seed, bf16=True)).history.train["loss"]
        gaps.append(max(abs(a - b) for a, b in zip(fp32, bf16, strict=True)))
    return {"largest_gap_min": min(gaps), "largest_gap_max": max(gaps),
            "bf16_units": "has" if has_bf16_units() else "has no"}
