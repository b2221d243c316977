"""Pretraining the book's small ELECTRA on the project's corpus (notes §7.2), beside the mini-BERT.

The discriminator has the mini-BERT's shape (``BOOK_BERT``: 2 blocks of width 64); the generator
shares its embeddings and has one block. The data are the mini-BERT's: the same WordPiece
vocabulary and sentence pairs (the NSP labels unused), masked at 15% with ``[MASK]`` only, as
ELECTRA's generator input is. The training (``ELECTRA_TRAINING``) is the mini-BERT's but for
its length, the compute of the mini-BERT's run, and a lower peak learning rate: at the
mini-BERT's 3e-3 the discriminator settles on answering "original" everywhere and stays there.
Cached like every model the book trains.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import torch
from transformers import BertTokenizerFast

from ctxlib.data.corpus import Corpus, load_corpus
from ctxlib.models.bert import BertConfig
from ctxlib.models.electra import DISCRIMINATOR_WEIGHT, Electra
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.bert_pretraining import BATCH_SIZE, BOOK_BERT, BOOK_BERT_TRAINING
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded
from ctxlib.training.pretraining_data import (PretrainingBatch, book_tokenizer, corpus_pairs, heldout_batches,
                                              pretraining_batches)

# The generator input: every selected token becomes [MASK] (Clark et al. 2020, §2).
ELECTRA_MASKING = {"mask_replace_prob": 1.0, "random_replace_prob": 0.0}

# 1,000 steps cost the FLOPs of the mini-BERT's 1,500 (page 7.2 measures it). Peak learning rate
# on the same 1,000 steps: 3e-3 gives 0.0% of replacements caught, 1e-3 13%, 5e-4 11%.
ELECTRA_TRAINING = replace(BOOK_BERT_TRAINING, steps=1000, lr=1e-3, warmup_fraction=0.1, description="ELECTRA")


@dataclass(frozen=True)
class ElectraScores:
    """Held-out: the generator's MLM accuracy at masked positions, and the discriminator's
    accuracy at telling replaced from original tokens, over all tokens and over the replaced ones;
    ``original_share`` is the accuracy of answering "original" everywhere, the floor to beat."""

    generator_accuracy: float
    discriminator_accuracy: float
    replaced_recall: float
    original_share: float


@torch.no_grad()
def electra_scores(model: Electra, batches: Sequence[PretrainingBatch], seed: int = 0) -> ElectraScores:
    model.eval()
    sampler = torch.Generator().manual_seed(seed)
    right = total = disc_right = disc_total = caught = replaced_total = 0
    for batch in batches:
        out = model(batch["input_ids"], labels=batch["labels"], attention_mask=batch["attention_mask"],
                    token_type_ids=batch["token_type_ids"], generator=sampler)
        masked = batch["labels"] != IGNORE_INDEX
        right += int((out.corrupted_ids[masked] == batch["labels"][masked]).sum())  # a sample equal to the original
        total += int(masked.sum())
        real = batch["attention_mask"].bool()
        said_replaced = out.discriminator_logits > 0
        disc_right += int((said_replaced == out.replaced.bool())[real].sum())
        disc_total += int(real.sum())
        caught += int((said_replaced & out.replaced.bool()).sum())
        replaced_total += int(out.replaced.sum())
    return ElectraScores(right / total, disc_right / disc_total, caught / max(1, replaced_total),
                         1 - replaced_total / disc_total)


def book_electra(corpus: Corpus | None = None, training: TrainConfig = ELECTRA_TRAINING, config: BertConfig = BOOK_BERT,
                 generator_layers: int = 1, generator_hidden_size: int | None = None,
                 discriminator_weight: float = DISCRIMINATOR_WEIGHT,
                 name: str = "book-electra") -> tuple[Electra, History, BertTokenizerFast]:
    """The book's ELECTRA: trained on first use on ``L_MLM + λ L_Disc`` (λ =
    ``discriminator_weight``, 50 as in the paper), then loaded from the cache. The generator's
    shape is ``Electra``'s arguments. Returns the model (its ``discriminator`` is the encoder to
    use), its history and the tokenizer."""
    corpus = corpus or load_corpus()
    tokenizer = book_tokenizer(corpus, config.vocab_size)
    config = BertConfig(**{**asdict(config), "vocab_size": len(tokenizer)})

    def build() -> Electra:
        with seeded(training.seed):
            return Electra(config, generator_layers=generator_layers, generator_hidden_size=generator_hidden_size,
                           discriminator_weight=discriminator_weight)

    def loss(model: Electra, batch: PretrainingBatch) -> dict[str, torch.Tensor]:
        out = model(batch["input_ids"], labels=batch["labels"], attention_mask=batch["attention_mask"],
                    token_type_ids=batch["token_type_ids"])
        return {"loss": out.loss, "MLM": out.mlm_loss, "Disc": out.discriminator_loss}

    def train(model: Electra) -> History:
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=training.seed)
        heldout = heldout_batches(corpus, tokenizer, **ELECTRA_MASKING)
        return fit(model, pretraining_batches(pairs, tokenizer, BATCH_SIZE, training.seed, **ELECTRA_MASKING), loss,
                   training, evaluate=lambda m: {f"heldout {k}": v for k, v in asdict(electra_scores(m, heldout)).items()})

    key = {"config": config, "training": training, "batch_size": BATCH_SIZE, "generator_layers": generator_layers,
           "generator_hidden_size": generator_hidden_size, "discriminator_weight": discriminator_weight,
           "vocabulary": tokenizer.get_vocab(), "corpus": corpus}
    model, history = cached_training(name, key, build, train)
    return model, history, tokenizer
