"""Pretraining the book's small ELMo biLM on the project's corpus (notes §2.2, eqs 2.1–2.3).

A 2-layer biLM with a character CNN, small enough to learn something real in under a minute on
two CPU cores: the released ELMo has a 4096-wide cell and a 512-wide projection; this one has
256 and 64. Clipping is off, so the fused LSTM kernel runs (``ProjectedLSTM``). The trained
model is cached (``ctxlib.training.cache.cached_training``): the first run trains, later ones load.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict

import torch

from ctxlib.data.corpus import Corpus, load_corpus
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.models.elmo import BiLM, Elmo, ElmoConfig, batch_to_ids
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded

BOOK_ELMO = ElmoConfig(
    char_embedding_dim=16, filters=((1, 32), (2, 32), (3, 64), (4, 64), (5, 64)), n_highway=1,
    projection_dim=64, cell_size=256, n_layers=2, cell_clip=None, proj_clip=None,
)
# 250 steps of 48 sentences, about 0.6 of an epoch: ~45 s on two cores, within the chapter's budget.
BOOK_TRAINING = TrainConfig(steps=250, lr=6e-3, weight_decay=0.01, warmup_fraction=0.05, max_grad_norm=1.0,
                            eval_every=50, description="ELMo biLM")
BATCH_SIZE = 48
MIN_COUNT = 2  # words seen once stay <unk> in the softmax, as rare words do in a real LM
HELDOUT_SENTENCES = 500  # held-out perplexity is measured on the first 500 held-out sentences


LMBatch = tuple[torch.Tensor, torch.Tensor]


def lm_batches(sentences: Sequence[Sequence[str]], vocab: Vocabulary, batch_size: int, seed: int) -> Iterator[LMBatch]:
    """Endless random batches of ``(char_ids, word_ids)``, reproducible from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        chosen = [sentences[i] for i in torch.randint(len(sentences), (batch_size,), generator=generator)]
        yield batch_to_ids(chosen), vocab.encode(chosen, pad=IGNORE_INDEX)


def bilm_loss(model: BiLM, batch: LMBatch, vocab: Vocabulary) -> dict[str, torch.Tensor]:
    """The loss the book's biLM minimises: eq 2.3's log-likelihood, negated and averaged per
    token over the two directions."""
    forward_nll, backward_nll = model.lm_loss(*batch, bos_id=vocab.bos_id, eos_id=vocab.eos_id)
    return {"loss": (forward_nll + backward_nll) / 2, "forward": forward_nll, "backward": backward_nll}


@torch.no_grad()
def perplexity(model: BiLM, sentences: Sequence[Sequence[str]], vocab: Vocabulary, batch_size: int = 128) -> dict[str, float]:
    """Forward and backward perplexity ``exp(mean NLL)`` over ``sentences``, every token weighted alike."""
    model.eval()
    totals = {"forward": 0.0, "backward": 0.0}
    tokens = 0
    for first in range(0, len(sentences), batch_size):
        chunk = sentences[first:first + batch_size]
        count = sum(len(s) + 1 for s in chunk)  # each direction predicts T words and one boundary
        for name, nll in zip(totals, model.lm_loss(batch_to_ids(chunk), vocab.encode(chunk, pad=IGNORE_INDEX), vocab.bos_id, vocab.eos_id)):
            totals[name] += float(nll) * count
        tokens += count
    return {name: math.exp(total / tokens) for name, total in totals.items()}


def heldout_sentences(corpus: Corpus) -> list[tuple[str, ...]]:
    """The held-out sentences ``book_elmo`` measures perplexity on (and its baselines must too)."""
    return [s.tokens for s in corpus.heldout][:HELDOUT_SENTENCES]


def book_elmo(corpus: Corpus | None = None, training: TrainConfig = BOOK_TRAINING,
              config: ElmoConfig = BOOK_ELMO) -> tuple[Elmo, History, Vocabulary]:
    """The small ELMo the book pretrains: trained on first use, then loaded from the cache.

    Returns the model (as ``Elmo``, whose ``bilm`` keeps the LM heads), the training history
    (train losses per step; held-out perplexities every ``eval_every`` steps) and the softmax
    vocabulary.
    """
    corpus = corpus or load_corpus()
    train_sentences = [s.tokens for s in corpus.train]
    heldout = heldout_sentences(corpus)
    vocab = Vocabulary(corpus.vocabulary(min_count=MIN_COUNT))
    config = ElmoConfig(**{**asdict(config), "vocab_size": len(vocab)})

    def build() -> Elmo:
        with seeded(training.seed):
            return Elmo(config)

    def train(elmo: Elmo) -> History:
        batches = lm_batches(train_sentences, vocab, BATCH_SIZE, training.seed)
        return fit(elmo.bilm, batches, lambda model, batch: bilm_loss(model, batch, vocab), training,
                   evaluate=lambda model: {f"heldout {k} perplexity": v for k, v in perplexity(model, heldout, vocab).items()})

    key = {"config": config, "training": training, "batch_size": BATCH_SIZE, "corpus": corpus}
    elmo, history = cached_training("book-elmo", key, build, train)
    return elmo, history, vocab
