"""Using ELMo in a downstream task (notes §2.5, eq 2.6): concatenate or replace, frozen or fine-tuned.

A task model already has its own input vector ``x_t^base`` for each word (here, word
embeddings it learns from its own labelled data). ELMo is added at the input:

    x_t^down = [x_t^base; v_t]    (eq 2.6, "concat")
    x_t^down = v_t                ("replace")

where ``v_t = γ Σ_j s_j h_{t,j}`` is eq 2.5's mix of the biLM's layers. The biLM is either
frozen (only ``s``, ``γ`` and the task model learn: the feature-based mode Peters et al. 2018
used) or fine-tuned with the task (every biLM weight moves, at a lower learning rate).

The task is a small BiLSTM tagger trained on a few labelled sentences of the book's corpus:
part of speech (``pos_task``), or the senses of the ten ambiguous words (``sense_task``).
"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ctxlib._checks import check_bool, check_choice, check_positive_int
from ctxlib.analysis.layer_probes import sample_sentences
from ctxlib.data.corpus import Corpus, TaggedSentence, novel_sentences
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.scalar_mix import ScalarMix
from ctxlib.models.elmo import Elmo, batch_to_ids
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded

INPUTS = ("base", "replace", "concat")


@dataclass(frozen=True)
class Setting:
    """One way to use ELMo: ``inputs`` is "base" (no ELMo), "replace" or "concat" (eq 2.6);
    ``fine_tune`` updates the biLM's weights with the task."""

    inputs: str
    fine_tune: bool = False

    def __post_init__(self) -> None:
        check_choice("inputs", self.inputs, INPUTS)
        check_bool("fine_tune", self.fine_tune)
        if self.inputs == "base" and self.fine_tune:
            raise ValueError("fine_tune=True needs ELMo in the input: inputs='base' has no biLM to fine-tune")

    @property
    def label(self) -> str:
        if self.inputs == "base":
            return "x_base only (no ELMo)"
        what = "[x_base; v_t] (concat)" if self.inputs == "concat" else "v_t (replace)"
        return f"{what}, {'fine-tuned' if self.fine_tune else 'frozen'} biLM"


SETTINGS = (Setting("base"), Setting("replace"), Setting("concat"),
            Setting("replace", fine_tune=True), Setting("concat", fine_tune=True))


class DownstreamTagger(nn.Module):
    """Eq 2.6 at the input of a BiLSTM tagger: ``x_down → BiLSTM → linear`` for every word.

    ``elmo`` is copied, so training (and freezing) never touches the caller's model.
    """

    def __init__(self, setting: Setting, num_classes: int, words: Vocabulary | None = None,
                 elmo: Elmo | None = None, base_dim: int = 64, hidden: int = 64, dropout: float = 0.3) -> None:
        super().__init__()
        if not isinstance(setting, Setting):
            raise TypeError(f"setting must be a Setting, got {type(setting).__name__}")
        check_positive_int("num_classes", num_classes)
        self.setting = setting
        uses_base, uses_elmo = setting.inputs != "replace", setting.inputs != "base"
        if uses_base and words is None:
            raise ValueError(f"inputs={setting.inputs!r} uses x_base: give words, the task's word vocabulary")
        if uses_elmo and not isinstance(elmo, Elmo):
            raise ValueError(f"inputs={setting.inputs!r} uses ELMo: give elmo, an Elmo model, got {type(elmo).__name__}")
        self.words = words
        self.embedding = nn.Embedding(len(words), base_dim, padding_idx=0) if uses_base else None
        self.elmo = copy.deepcopy(elmo).requires_grad_(setting.fine_tune) if uses_elmo else None
        if self.elmo is not None and self.elmo.bilm.softmax is not None:
            self.elmo.bilm.softmax.requires_grad_(False)  # the LM head plays no part in tagging
        self.mix = ScalarMix(elmo.config.n_layers + 1) if uses_elmo else None
        width = (base_dim if uses_base else 0) + (2 * elmo.config.projection_dim if uses_elmo else 0)
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.LSTM(width, hidden, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * hidden, num_classes)

    def inputs(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """``x_down`` ``[B, T, D]`` (eq 2.6) and the mask ``[B, T]``."""
        parts, mask = [], None
        if self.embedding is not None:
            ids = self.words.encode(sentences, pad=0)
            parts.append(self.embedding(ids))
            mask = ids != 0
        if self.elmo is not None:
            with torch.set_grad_enabled(self.setting.fine_tune and torch.is_grad_enabled()):
                out = self.elmo(batch_to_ids(sentences))
            # The layers differ in scale (the book biLM's token layer is ~7× its LSTM layers), so
            # each is normalised first: per word, not with ScalarMix's AllenNLP-style statistics
            # over the whole batch, which would make a word's tag depend on its batch neighbours.
            parts.append(self.mix([F.layer_norm(layer, layer.shape[-1:]) for layer in out.layers]))
            mask = out.mask
        return torch.cat(parts, dim=-1), mask

    def forward(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """Sense logits ``[B, T, C]`` for every word of ``sentences``."""
        x, mask = self.inputs(sentences)
        lengths = mask.sum(1)
        packed = pack_padded_sequence(self.dropout(x), lengths.cpu(), batch_first=True, enforce_sorted=False)
        hidden, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=x.shape[1])
        return self.classifier(self.dropout(hidden))

    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


@dataclass(frozen=True)
class TaggingTask:
    """A tagging task on the corpus: ``field`` is the ``TaggedSentence`` attribute that holds
    the tags ("pos", or "senses" where untagged words are None); ``tags`` the classes."""

    train: tuple[TaggedSentence, ...]
    test: tuple[TaggedSentence, ...]
    tags: tuple[str, ...]
    field: str

    def labels(self, sentences: Sequence[TaggedSentence]) -> torch.Tensor:
        """``[B, T]`` class ids, ``IGNORE_INDEX`` on untagged words and padding (ignored by the loss)."""
        index = {tag: i for i, tag in enumerate(self.tags)}
        labels = torch.full((len(sentences), max(len(s.tokens) for s in sentences)), IGNORE_INDEX)
        for row, sentence in enumerate(sentences):
            for column, tag in enumerate(getattr(sentence, self.field)):
                if tag is not None:
                    labels[row, column] = index[tag]
        return labels

    @cached_property
    def words(self) -> Vocabulary:
        """The vocabulary of ``x_base``, built once from the words of the training sentences."""
        return Vocabulary(token for sentence in self.train for token in sentence.tokens)

    def seen(self, sentences: Sequence[TaggedSentence]) -> torch.Tensor:
        """``[B, T]``: True where the word occurs in the task's training sentences."""
        vocabulary = self.words
        seen = torch.zeros(len(sentences), max(len(s.tokens) for s in sentences), dtype=torch.bool)
        for row, sentence in enumerate(sentences):
            seen[row, :len(sentence.tokens)] = torch.tensor([t in vocabulary for t in sentence.tokens])
        return seen

    def most_frequent_tag_accuracy(self) -> float:
        """Held-out accuracy of giving each word its most frequent training tag (an unseen
        word: the most frequent tag of all): what knowing the word, without its context, is worth."""
        by_word: dict[str, Counter] = {}
        for sentence in self.train:
            for token, tag in zip(sentence.tokens, getattr(sentence, self.field)):
                if tag is not None:
                    by_word.setdefault(token, Counter())[tag] += 1
        overall = sum(by_word.values(), Counter()).most_common(1)[0][0]
        pairs = [(token, tag) for sentence in self.test
                 for token, tag in zip(sentence.tokens, getattr(sentence, self.field)) if tag is not None]
        return sum((by_word[t].most_common(1)[0][0] if t in by_word else overall) == tag for t, tag in pairs) / len(pairs)


def _task(field: str, train: Sequence[TaggedSentence], test: Sequence[TaggedSentence]) -> TaggingTask:
    tags = sorted({tag for s in train for tag in getattr(s, field) if tag is not None})
    # A held-out sentence with a tag the training sentences never show could not be scored.
    test = [s for s in test if all(tag is None or tag in tags for tag in getattr(s, field))]
    return TaggingTask(tuple(train), tuple(test), tuple(tags), field)


def pos_task(corpus: Corpus, train_sentences: int = 50, test_sentences: int = 400, seed: int = 0) -> TaggingTask:
    """Part-of-speech tagging from ``train_sentences`` labelled sentences, sampled reproducibly;
    scored on ``test_sentences`` of templates training never used (``corpus.novel``)."""
    check_positive_int("train_sentences", train_sentences)
    check_positive_int("test_sentences", test_sentences)
    rng = random.Random(seed)
    test = novel_sentences(corpus)
    return _task("pos", rng.sample(corpus.train, min(train_sentences, len(corpus.train))),
                 rng.sample(test, min(test_sentences, len(test))))


def sense_task(corpus: Corpus, train_sentences: int = 300, test_sentences: int = 800, seed: int = 0) -> TaggingTask:
    """Word-sense tagging of the ten ambiguous words, in sentences that contain one; scored on
    sentences of templates training never used (``corpus.novel``)."""
    check_positive_int("train_sentences", train_sentences)
    check_positive_int("test_sentences", test_sentences)
    return _task("senses", sample_sentences(corpus.train, train_sentences, seed),
                 sample_sentences(novel_sentences(corpus), test_sentences, seed))


@dataclass(frozen=True)
class DownstreamResult:
    """A trained setting: held-out accuracy on all tagged words, on words seen in the task's
    training sentences and on unseen ones; its trainable parameters; its training history; and
    the learned layer weights ``s = softmax(w)`` of eq 2.5 (None without ELMo)."""

    setting: Setting
    accuracy: dict[str, float]
    trainable_parameters: int
    history: History
    layer_weights: tuple[float, ...] | None


DOWNSTREAM_TRAINING = TrainConfig(steps=150, lr=1e-2, weight_decay=0.01, warmup_fraction=0.1,
                                  description="sense tagger")
BATCH_SIZE = 16
BILM_LR_SCALE = 0.1  # fine-tuning moves the pretrained biLM ten times more gently than the new layers


def _batches(task: TaggingTask, batch_size: int, seed: int) -> Iterator[tuple[list[tuple[str, ...]], torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    while True:
        chosen = [task.train[i] for i in torch.randint(len(task.train), (batch_size,), generator=generator)]
        yield [s.tokens for s in chosen], task.labels(chosen)


@torch.no_grad()
def accuracy(model: DownstreamTagger, task: TaggingTask, batch_size: int = 128) -> dict[str, float]:
    """Share of the held-out tagged words whose tag the model predicts: over all of them, over
    words the task's training sentences contain ("seen") and over the others ("unseen")."""
    model.eval()
    right, total = Counter(), Counter()
    for first in range(0, len(task.test), batch_size):
        chunk = task.test[first:first + batch_size]
        labels, seen = task.labels(chunk), task.seen(chunk)
        correct = model([s.tokens for s in chunk]).argmax(-1) == labels
        tagged = labels != IGNORE_INDEX
        for name, where in (("all", tagged), ("seen", tagged & seen), ("unseen", tagged & ~seen)):
            right[name] += int(correct[where].sum())
            total[name] += int(where.sum())
    return {name: right[name] / total[name] if total[name] else math.nan for name in ("all", "seen", "unseen")}


def train_downstream(setting: Setting, task: TaggingTask, elmo: Elmo, training: TrainConfig = DOWNSTREAM_TRAINING,
                     batch_size: int = BATCH_SIZE) -> DownstreamResult:
    """Train one setting's tagger (cached) and score it on the task's held-out sentences."""
    words = task.words

    def build() -> DownstreamTagger:
        with seeded(training.seed):
            return DownstreamTagger(setting, len(task.tags), words, elmo if setting.inputs != "base" else None)

    def train(model: DownstreamTagger) -> History:
        def loss_fn(net: DownstreamTagger, batch) -> torch.Tensor:
            sentences, labels = batch
            logits = net(sentences)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX)
        return fit(model, _batches(task, batch_size, training.seed), loss_fn, training,
                   lr_scale={"elmo": BILM_LR_SCALE} if setting.fine_tune else None)

    key = {"setting": setting, "training": training, "batch_size": batch_size, "elmo_config": elmo.config,
           "elmo": elmo.state_dict(), "task": task}
    model, history = cached_training(f"elmo-downstream-{setting.inputs}-{int(setting.fine_tune)}", key, build, train)
    weights = tuple(model.mix.weights().tolist()) if model.mix is not None else None
    return DownstreamResult(setting, accuracy(model, task), model.trainable_parameters(), history, weights)


def compare_downstream(task: TaggingTask, elmo: Elmo, settings: Sequence[Setting] = SETTINGS,
                       training: TrainConfig = DOWNSTREAM_TRAINING) -> list[DownstreamResult]:
    """Every setting trained the same number of steps on the same batches, from the same seed."""
    return [train_downstream(setting, task, elmo, training) for setting in settings]
