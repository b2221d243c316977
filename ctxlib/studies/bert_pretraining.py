"""Pretraining the book's mini-BERT on the project's corpus (notes §3.4, eq 4.6: L = L_MLM + L_NSP).

The pieces, each from its own module: a WordPiece vocabulary trained on the corpus's training
split (``book_tokenizer``), sentence pairs for NSP (``ctxlib.objectives.nsp``), dynamic 80/10/10 masking
(``ctxlib.objectives.masking``), ``BertForPreTraining`` (``ctxlib.models.bert``) and the one fit loop
(``ctxlib.training.loop``). The model is two layers of width 64, small enough to learn something real in
under a minute on two CPU cores; BERT-base has 12 layers of width 768. It is cached like the
book's ELMo: the first run trains, later ones load.
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import check_positive_int
from ctxlib.analysis.mlm_scores import pretraining_scores
from ctxlib.data.corpus import Corpus, load_corpus
from ctxlib.models.bert import BertConfig, BertForPreTraining
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded
from ctxlib.training.pretraining_data import (WORDPIECE_VOCAB_SIZE, PretrainingBatch, book_tokenizer, corpus_pairs,
                                              heldout_batches, pretraining_batches)

# Width 64 learns more per second of CPU than width 128 (50% vs 30% held-out MLM accuracy after
# ~70 s); dropout is off because 1,500 steps are about six epochs of 16,000 pairs, each seen with
# fresh masks: the model is far from overfitting.
BOOK_BERT = BertConfig(vocab_size=WORDPIECE_VOCAB_SIZE, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=256, max_position_embeddings=64, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
BATCH_SIZE = 64
# 1,500 steps of 64 pairs: ~55 s on two cores (1,300 steps end visibly worse: 40% MLM, 58% NSP).
# A higher peak rate (5e-3) stalls MLM near 25%.
BOOK_BERT_TRAINING = TrainConfig(steps=1500, lr=3e-3, weight_decay=0.01, warmup_fraction=0.06, max_grad_norm=1.0,
                                 eval_every=250, description="mini-BERT")


def book_bert(corpus: Corpus | None = None, training: TrainConfig = BOOK_BERT_TRAINING, config: BertConfig = BOOK_BERT,
              name: str = "book-bert", dynamic: bool = True, train_pairs: int | None = None, nsp: bool = True,
              **masking: float) -> tuple[BertForPreTraining, History, BertTokenizerFast]:
    """The mini-BERT the book pretrains with MLM + NSP (eq 4.6; eq 5.1 is the minimisation over
    the corpus that ``fit`` approximates with AdamW steps): trained on first use, then
    loaded from the cache. ``nsp=False`` trains on the MLM loss alone (as RoBERTa and ELECTRA's
    baselines do); ``masking`` overrides ``mask_tokens``' ratios (the Table 8 ablation);
    ``dynamic=False`` masks each pair once for the whole run (see ``pretraining_batches``);
    ``train_pairs`` trains on only the first that many pairs of the training split.
    Returns the model, its history (train losses per step; held-out scores every
    ``eval_every`` steps) and the tokenizer."""
    corpus = corpus or load_corpus()
    if train_pairs is not None:
        check_positive_int("train_pairs", train_pairs)
    tokenizer = book_tokenizer(corpus, config.vocab_size)
    config = BertConfig(**{**asdict(config), "vocab_size": len(tokenizer)})

    def build() -> BertForPreTraining:
        with seeded(training.seed):
            return BertForPreTraining(config)

    def loss(model: BertForPreTraining, batch: PretrainingBatch) -> dict[str, torch.Tensor]:
        if not nsp:
            batch = {k: v for k, v in batch.items() if k != "next_sentence_label"}
            return {"loss": model(**batch, masked_only=True).mlm_loss}
        out = model(**batch, masked_only=True)
        return {"loss": out.loss, "MLM": out.mlm_loss, "NSP": out.nsp_loss}

    def train(model: BertForPreTraining) -> History:
        # Tokenised only here: a page that loads the cached model does not pay for it.
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=training.seed)[:train_pairs]
        if len(pairs) < BATCH_SIZE:
            raise ValueError(f"train_pairs={train_pairs} gives {len(pairs)} pairs, fewer than a batch of {BATCH_SIZE}")
        heldout = heldout_batches(corpus, tokenizer)
        return fit(model, pretraining_batches(pairs, tokenizer, BATCH_SIZE, training.seed, dynamic, **masking), loss,
                   training,
                   evaluate=lambda m: {f"heldout {k}": v for k, v in asdict(pretraining_scores(m, heldout)).items()})

    key = {"config": config, "training": training, "batch_size": BATCH_SIZE, "masking": masking, "dynamic": dynamic,
           "train_pairs": train_pairs, "nsp": nsp, "vocabulary": tokenizer.get_vocab(), "corpus": corpus}
    model, history = cached_training(name, key, build, train)
    return model, history, tokenizer


