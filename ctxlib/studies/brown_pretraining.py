"""Pretraining the book's ELMo biLM on real English, the Brown corpus (notes §2.2, eqs 2.1–2.3).

The chapters' live runs learn the generated corpus in under a minute; showing what Peters et al.
show needs real text and more compute than a chapter's 90 s, so this recipe runs once per seed
(``tools/pretrain.py``, about 40 minutes on two cores) and its checkpoint ships with a model card.

* **Data**: ``ctxlib.data.brown``'s train split (45,476 sentences, 0.92 M tokens), words as the
  corpus writes them (cased, as ELMo reads them); held-out perplexity on the dev split while
  training, and on the test split for the card.
* **Softmax**: over the ``VOCAB_SIZE`` most frequent train words, the rest ``<unk>``: the
  character layer still reads every word, only the predicted word is bucketed, as bilm-tf's
  vocabulary file buckets the 1B Word Benchmark's rare words.
* **Model**: ``BROWN_ELMO``, ELMo's shape at a width two cores can train (the released model:
  4096-wide cells, 512-wide projections); it starts as bilm-tf starts (``ctxlib.models.elmo``).
* **Optimiser**: ctxlib's ``fit`` (AdamW, warmup, clipping) where bilm-tf used Adagrad at 0.2;
  a full softmax where bilm-tf sampled 8,192 negatives.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from ctxlib.data.brown import load_brown
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.models.elmo import Elmo, ElmoConfig
from ctxlib.studies.elmo_pretraining import bilm_loss, lm_batches, perplexity
from ctxlib.training.loop import History, TrainConfig, fit, seeded

__all__ = ["BROWN_ELMO", "BROWN_ELMO_TRAINING", "VOCAB_SIZE", "BATCH_SIZE", "Pretrained", "brown_vocabulary",
           "brown_sentences", "pretrain_brown_elmo"]

VOCAB_SIZE = 10_000
BATCH_SIZE = 64
BROWN_ELMO = ElmoConfig(
    char_embedding_dim=16, filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 128), (6, 128)), n_highway=2,
    projection_dim=128, cell_size=512, n_layers=2, cell_clip=None, proj_clip=None,
)
BROWN_ELMO_TRAINING = TrainConfig(steps=6000, lr=3e-3, weight_decay=0.01, warmup_fraction=0.02, max_grad_norm=1.0,
                                  eval_every=500, description="ELMo biLM on Brown")
DEV_SENTENCES = 1000  # dev perplexity during training: the first 1,000 dev sentences


def brown_sentences(split: str) -> list[tuple[str, ...]]:
    """The words of each sentence of one split of Brown."""
    return [sentence.words for sentence in load_brown(split)]


def brown_vocabulary(size: int = VOCAB_SIZE) -> Vocabulary:
    """The softmax's words: the ``size`` most frequent word forms of Brown's train split (ties in
    first-seen order), after the four specials."""
    counts = Counter(word for sentence in brown_sentences("train") for word in sentence)
    return Vocabulary(word for word, _ in counts.most_common(size))


@dataclass(frozen=True)
class Pretrained:
    """A pretraining run: the model, its softmax vocabulary, its history and what the card reports."""

    elmo: Elmo
    vocabulary: Vocabulary
    training: TrainConfig
    batch_size: int
    history: History  # its ``seconds``: the wall time of the training steps
    test_perplexity: dict[str, float]


def pretrain_brown_elmo(training: TrainConfig = BROWN_ELMO_TRAINING, config: ElmoConfig = BROWN_ELMO,
                        vocab_size: int = VOCAB_SIZE, batch_size: int = BATCH_SIZE) -> Pretrained:
    """Train the biLM on Brown's train split under ``training.seed``; held-out perplexity on dev
    every ``training.eval_every`` steps and on test at the end."""
    vocabulary = brown_vocabulary(vocab_size)
    config = ElmoConfig(**{**asdict(config), "vocab_size": len(vocabulary)})
    train, dev = brown_sentences("train"), brown_sentences("dev")[:DEV_SENTENCES]
    with seeded(training.seed):
        elmo = Elmo(config)
    history = fit(elmo.bilm, lm_batches(train, vocabulary, batch_size, training.seed),
                  lambda model, batch: bilm_loss(model, batch, vocabulary), training,
                  evaluate=lambda model: {f"dev {k} perplexity": v for k, v in perplexity(model, dev, vocabulary).items()})
    test = perplexity(elmo.bilm, brown_sentences("test"), vocabulary)
    return Pretrained(elmo.eval(), vocabulary, training, batch_size, history, test)
