"""The runs behind the exercises of 05b_finetuning_choices.md whose solutions quote a measurement.

    python bench/exercise_record.py 05b_finetuning_choices
"""

from __future__ import annotations

from collections import Counter

from ctxlib.data.task_formats import check_bio
from ctxlib.data.tasks import load_task
from ctxlib.models.pretrained import minilm
from ctxlib.studies.finetuning import (FineTuning, METRICS, _forward, _head_names, batches, build_model, encode,
                                      evaluate, fine_tune, task_labels)
from ctxlib.training.loop import TrainConfig, fit

from _common import PRIMARY, _predicted_tags, exercise, recipe, scores

NAMES = {"topic": "topics", "ner": "NER", "qa": "QA"}  # how the solutions name the tasks


def curve_run(task: str, init: str, size: int, **options) -> FineTuning:
    """A run of the page's learning curve: the recipe's steps whatever the training-set size."""
    steps = {"topic": 32, "ner": 24, "qa": 24}[task]
    return FineTuning(task, init=init, train_size=size, epochs=steps * 16 / size, lr=1e-4, **options)


@exercise(1)
def topic_learning_curve() -> dict:
    """The learning curve of 5.2 for topic classification: 16, 64 and 256 labelled sentences.
    Also the majority class's accuracy and the gap between MiniLM and random init at 16, against
    NER's."""
    figures = {f"{init}_{n}": scores(curve_run("topic", init, n)).metrics["accuracy"]
               for init in ("minilm", "random") for n in (16, 64, 256)}
    topic_test = load_task("topic")[1]
    figures["majority_class"] = Counter(e.label for e in topic_test).most_common(1)[0][1] / len(topic_test)
    figures["topic_gap_16"] = figures["minilm_16"] - figures["random_16"]
    figures["ner_gap_16"] = (scores(curve_run("ner", "minilm", 16)).metrics["entity_f1"]
                             - scores(curve_run("ner", "random", 16)).metrics["entity_f1"])
    figures["topic_gap_vs_ner"] = "smaller" if figures["topic_gap_16"] < figures["ner_gap_16"] else "larger"
    return figures



@exercise(2)
def last_block_only() -> dict:
    """Each task with only the encoder's last block (and the head) trainable, against frozen and full.
    Its scores and the share of the gap between frozen and full fine-tuning that it closes."""
    figures, closed = {}, {}
    for task in METRICS:
        setting = recipe(task)
        train_examples, test_examples = load_task(task)
        train_examples = train_examples[:setting.train_size]
        labels = task_labels(task, train_examples)
        _, tokenizer = minilm()
        train_data, test_data = (encode(task, tokenizer, e, labels) for e in (train_examples, test_examples))
        model = build_model(setting, len(labels))
        model.bert.requires_grad_(False)
        model.bert.encoder.layer[-1].requires_grad_(True)
        config = TrainConfig(steps=setting.steps(len(train_examples)), lr=setting.lr, seed=setting.seed,
                             warmup_fraction=setting.warmup_fraction, max_grad_norm=setting.max_grad_norm,
                             weight_decay=setting.weight_decay, progress=False)
        fit(model, batches(train_data, setting.batch_size, setting.seed),
            lambda net, batch: _forward(task, net, batch, with_labels=True).loss, config,
            lr_scale={name: setting.head_lr_factor for name in _head_names(model)})
        metric = PRIMARY[task]
        frozen = scores(recipe(task, frozen=True)).metrics[metric]
        full = scores(recipe(task)).metrics[metric]
        last = evaluate(task, model, test_data, test_examples)[metric]
        figures[f"{task}_last_block"] = last
        figures[f"{task}_gap_closed"] = closed[task] = (last - frozen) / (full - frozen)
    figures["closes_most"] = NAMES[max(closed, key=closed.get)]
    return figures



@exercise(3)
def bio_violations() -> dict:
    """How often the softmax tagger's and the CRF's predicted tag sequences break BIO, at 16 and 256.
    Counts of test sentences (16 and 256 labelled sentences), the CRF's entity F1 at 256 and the
    largest F1 difference between the taggers."""
    _, test_examples = load_task("ner")
    _, tokenizer = minilm()
    figures, f1 = {"test_sentences": len(test_examples)}, {}
    for name, setting in (("softmax_16", FineTuning("ner", train_size=16, epochs=24, lr=1e-4)),
                          ("softmax_256", recipe("ner")),
                          ("crf_16", FineTuning("ner", train_size=16, epochs=24, lr=1e-4, crf=True)),
                          ("crf_256", recipe("ner", crf=True))):
        run = fine_tune(setting)
        broken = 0
        for sentence in _predicted_tags(run.model, tokenizer, test_examples):
            try:
                check_bio(sentence)
            except ValueError:
                broken += 1
        figures[f"{name}_broken"] = broken
        f1[name] = run.metrics["entity_f1"]
    figures["crf_256_f1"] = f1["crf_256"]
    figures["max_f1_difference"] = max(abs(f1[f"softmax_{n}"] - f1[f"crf_{n}"]) for n in (16, 256))
    return figures
