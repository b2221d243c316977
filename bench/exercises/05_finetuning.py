"""The runs behind the exercises of 05_finetuning.md whose solutions quote a measurement.

    python bench/exercise_record.py 05_finetuning
"""

from __future__ import annotations

from collections import Counter

from ctxlib.data.task_formats import read_conll
from ctxlib.data.tasks import load_task
from ctxlib.studies.finetuning import METRICS

from _common import PRIMARY, RECIPE_EPOCHS, exercise, recipe, scores

NAMES = {"topic": "topics", "ner": "NER", "qa": "QA"}  # how the solutions name the tasks


@exercise(1)
def random_init_longer() -> dict:
    """The random-init runs ten times longer than chapter 5's recipe, and the gap to MiniLM closed.
    Their scores, the share of the gap to MiniLM's recipe run closed on each task, and the tasks
    where it closes most and least."""
    figures, closed = {}, {}
    for task in METRICS:
        metric = PRIMARY[task]
        minilm = scores(recipe(task)).metrics[metric]
        scratch = scores(recipe(task, init="random")).metrics[metric]
        longer = scores(recipe(task, init="random", epochs=10 * RECIPE_EPOCHS[task])).metrics[metric]
        closed[task] = (longer - scratch) / (minilm - scratch)
        figures[f"{task}_random_10x"] = longer
        figures[f"{task}_gap_closed"] = closed[task]
    figures["closes_most"] = NAMES[max(closed, key=closed.get)]
    figures["closes_least"] = NAMES[min(closed, key=closed.get)]
    return figures



@exercise(2)
def usual_learning_rates() -> dict:
    """MiniLM with the usual fine-tuning learning rates on chapter 5's short schedule.
    Scores at 2e-5 and 5e-5, the share of each task's score at 1e-4 each loses, the task that
    loses most at each, and the topic score at 2e-5 against the majority class's."""
    topic_test = load_task("topic")[1]
    majority = Counter(e.label for e in topic_test).most_common(1)[0][1] / len(topic_test)
    figures, lost = {}, {}
    for task in METRICS:
        at = {lr: scores(recipe(task, lr=lr)).metrics[PRIMARY[task]] for lr in (2e-5, 5e-5, 1e-4)}
        for lr, name in ((2e-5, "2e5"), (5e-5, "5e5")):
            figures[f"{task}_lr_{name}"] = at[lr]
            figures[f"{task}_loss_{name}"] = lost[task, name] = 1 - at[lr] / at[1e-4]
        if task == "topic":  # scores are in points (%), the majority class a fraction
            figures["topic_lr_2e5_over_majority"] = at[2e-5] / (100 * majority)
    for name in ("2e5", "5e5"):
        figures[f"suffers_most_{name}"] = NAMES[max(METRICS, key=lambda task: lost[task, name])]
    return figures



@exercise(3)
def head_learning_rate() -> dict:
    """Topic accuracy with the head at the encoder's learning rate, and the recipe's gain over it.
    (The recipe's head learns at 100 times the encoder's rate.)"""
    same = scores(recipe("topic", head_lr_factor=1.0)).metrics["accuracy"]
    hundred = scores(recipe("topic", head_lr_factor=100.0)).metrics["accuracy"]
    return {"same_rate_accuracy": same, "gain_over_same_rate": hundred - same}



@exercise(4)
def conll_error() -> dict:
    """The error read_conll gives for an I-PER after O."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.conll"
        path.write_text("Ada B-PER\nLovelace I-PER\nwrote O\n\nthen O\nLovelace I-PER\nleft O\n", encoding="utf-8")
        try:
            read_conll(path)
        except ValueError as error:
            return {"error": str(error).replace(folder, "<folder>")}
    raise AssertionError("read_conll accepted an I-PER after O")



@exercise(5)
def converged_ceilings() -> dict:
    """NER and QA trained to convergence by early stopping, and how far below it the recipe is.
    Test scores, development score after the first epoch and at its best, the epoch kept and the
    epochs run."""
    figures = {}
    for task in ("ner", "qa"):
        run = scores(recipe(task, epochs=8, patience=1))
        short = scores(recipe(task)).metrics
        dev = [value for _, value in run.history.evaluations[f"dev {PRIMARY[task]}"]]
        figures.update({f"{task}_dev_first": dev[0], f"{task}_dev_best": max(dev),
                        f"{task}_kept_epoch": dev.index(max(dev)) + 1, f"{task}_epochs_run": len(dev)})
        for metric in METRICS[task]:  # NER: entity F1; QA: exact match, then F1
            figures[f"{task}_{metric}_converged"] = run.metrics[metric]
        first = METRICS[task][0]
        figures[f"{task}_{first}_gap"] = run.metrics[first] - short[first]
    return figures
