"""What the exercise runs share: the decorator that marks a run and chapter 5's recipe."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from ctxlib.data.corpus import load_corpus
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.bert_pretraining import book_bert
from ctxlib.studies.elmo_downstream import DOWNSTREAM_TRAINING, TaggingTask, compare_downstream
from ctxlib.studies.elmo_pretraining import book_elmo
from ctxlib.studies.finetuning import FineTuned, FineTuning, _forward, encode, fine_tune


def exercise(number: int) -> Callable[[Callable[[], dict]], Callable[[], dict]]:
    """Mark ``function`` as the run behind exercise ``number`` of the page its file is named
    after (``bench/exercises/01_polysemy.py``: page 1's exercises). It returns the figures the
    solution quotes, by name (``ctxlib.records.exercise_figures``)."""
    def mark(function: Callable[[], dict]) -> Callable[[], dict]:
        function.exercise_number = number
        return function
    return mark


def and_list(words: list[str]) -> str:
    """``["plant", "bark", "seal"]`` as "plant, bark and seal", for a solution to quote ("" for none)."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


RECIPE_EPOCHS = {"topic": 2, "ner": 1.5, "qa": 1.5}  # chapter 5's recipe
PRIMARY = {"topic": "accuracy", "ner": "entity_f1", "qa": "f1"}


def recipe(task: str, **changes) -> FineTuning:
    return FineTuning(**{**dict(task=task, train_size=256, epochs=RECIPE_EPOCHS[task], lr=1e-4), **changes})



def scores(setting: FineTuning) -> FineTuned:
    """``fine_tune(setting)`` for its scores and history only: the book's cache keeps most runs
    without their weights, and asking for them would train the run again."""
    return fine_tune(setting, keep_model=False)


def rate_text(lr: float) -> str:
    """A learning rate as a solution writes it: 3e-4, 1e-3 (a figure when a run finds it)."""
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def rate_key(lr: float) -> str:
    """A learning rate inside a figure's name: 3e_4 for 3e-4."""
    return rate_text(lr).replace("-", "_")



def _downstream(task: TaggingTask, seed: int = 0) -> dict:
    """compare_downstream as page 2.5 runs it (the biLM of seed 0), with the task's unseen share
    and its most-frequent-tag baseline."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    tagged = task.labels(task.test) != IGNORE_INDEX
    results = compare_downstream(task, elmo, training=dataclasses.replace(DOWNSTREAM_TRAINING, seed=seed))
    return {"unseen share": float((~task.seen(task.test)[tagged]).float().mean()),
            "most frequent tag": task.most_frequent_tag_accuracy(),
            **{r.setting.label: r.accuracy for r in results}}



def _masking_arms() -> dict:
    corpus = load_corpus()
    return {"80/10/10": book_bert(corpus),
            "[MASK] only": book_bert(corpus, name="bert-mask-only", mask_replace_prob=1.0, random_replace_prob=0.0),
            "random only": book_bert(corpus, name="bert-random-only", mask_replace_prob=0.0, random_replace_prob=1.0)}



def _predicted_tags(model, tokenizer, examples) -> list[list[str]]:
    """The tagger's tag sequence for every test sentence, decoded as the task's evaluation does."""
    from ctxlib.studies.finetuning import TAGS
    model.eval()
    data = encode("ner", tokenizer, examples)
    out = []
    with torch.no_grad():
        for first in range(0, len(examples), 64):
            batch = {k: v[first:first + 64] for k, v in data.items()}
            logits = _forward("ner", model, batch, with_labels=False).logits
            out += [[TAGS[t] for t in tags] for tags in model.decode(logits, batch["labels"] != IGNORE_INDEX)]
    return out

