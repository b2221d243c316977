"""The runs behind the exercises of 06d_finetuning_hyperparameters.md whose solutions quote a measurement.

    python bench/exercise_record.py 06d_finetuning_hyperparameters
"""

from __future__ import annotations

from collections import Counter

from ctxlib.data.tasks import load_task

from _common import exercise, rate_key, rate_text, recipe, scores


@exercise(1)
def larger_learning_rates() -> dict:
    """Chapter 5's topic run at learning rates up to 1e-3: accuracy and the training losses.

    Accuracy at 3e-4 and 1e-3 (the page's sweep has 1e-4), the best of the three rates, the
    training loss at the first step, its largest and its last, and the majority class's share (%)
    of the test set."""
    runs = {lr: scores(recipe("topic", lr=lr)) for lr in (1e-4, 3e-4, 1e-3)}
    figures = {"best_rate": rate_text(max(runs, key=lambda lr: runs[lr].metrics["accuracy"]))}
    for lr in (3e-4, 1e-3):  # the page's sweep has the run at 1e-4
        loss = runs[lr].history.train["loss"]
        figures.update({f"accuracy_{rate_key(lr)}": runs[lr].metrics["accuracy"], f"loss_first_{rate_key(lr)}": loss[0],
                        f"loss_largest_{rate_key(lr)}": max(loss), f"loss_last_{rate_key(lr)}": loss[-1]})
    test = load_task("topic")[1]
    figures["majority_class"] = 100 * Counter(e.label for e in test).most_common(1)[0][1] / len(test)
    return figures


ROWS = {"lr_2e_5": {"lr": 2e-5}, "lr_5e_5": {"lr": 5e-5}, "lr_1e_4": {}, "epochs_4": {"epochs": 4}}
# The differences the sweep shows between these rows, as the solution names them.
DIFFERENCES = {("lr_2e_5", "lr_5e_5"): "2e-5 to 5e-5", ("lr_5e_5", "lr_1e_4"): "5e-5 to 1e-4",
               ("lr_1e_4", "epochs_4"): "2 to 4 epochs"}


def seed_accuracy(name: str) -> list[float]:
    """Topic accuracy of sweep row ``name`` (ROWS) at seeds 0, 1 and 2."""
    return [scores(recipe("topic", seed=seed, **ROWS[name])).metrics["accuracy"] for seed in (0, 1, 2)]


@exercise(2)
def sweep_seeds() -> dict:
    """The learning-rate and epoch rows of the sweep at seeds 0, 1, 2: mean and range.

    Also which of the three differences between them survive, their ranges apart."""
    values = {name: seed_accuracy(name) for name in ROWS}
    figures = {}
    for name, row in values.items():
        figures.update({f"{name}_mean": sum(row) / len(row), f"{name}_min": min(row), f"{name}_max": max(row)})
    surviving = [label for (low, high), label in DIFFERENCES.items()
                 if min(values[high]) > max(values[low]) or max(values[high]) < min(values[low])]
    figures["surviving_count"] = len(surviving)
    figures["surviving"] = ", ".join(surviving) if surviving else "none"
    return figures


@exercise(3)
def lr_epoch_grid() -> dict:
    """The 2 x 2 grid of learning rate and epochs for the topic run.

    The cell the sweep lacks (5e-5 for 4 epochs), the best rate at each length and by how much, and
    whether that cell lies below, inside or above the base run's range over seeds 0-2."""
    grid = {(lr, e): scores(recipe("topic", lr=lr, epochs=e)).metrics["accuracy"]
            for lr in (5e-5, 1e-4) for e in (2, 4)}
    figures = {"half_rate_4_epochs": grid[5e-5, 4]}
    for e in (2, 4):
        best, other = sorted((5e-5, 1e-4), key=lambda lr: grid[lr, e], reverse=True)
        figures[f"best_rate_{e}_epochs"] = rate_text(best)
        figures[f"margin_{e}_epochs"] = grid[best, e] - grid[other, e]
    base = seed_accuracy("lr_1e_4")  # exercise 2's range of the base run
    figures["half_rate_vs_base"] = ("below" if grid[5e-5, 4] < min(base) else
                                    "above" if grid[5e-5, 4] > max(base) else "inside")
    return figures
