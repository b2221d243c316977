"""ELECTRA against the MLM mini-BERT at the book's scale: how the result moves with the settings.

Page 7.2 trains one ELECTRA (peak learning rate 1e-3, λ = 50, a one-block generator of the
discriminator's width) for the compute of the mini-BERT's 1,500 steps and finds the MLM model
ahead on both probes. This bench retrains ELECTRA with one setting changed at a time (the
learning rate, λ, the paper's generator shape, three times the length) and prints, for each,
its compute as a multiple of the mini-BERT's run (in FLOPs, ``ctxlib.analysis.memory.training_flops``),
the share of replacements its discriminator catches, and its top-layer probes as a ratio to the
mini-BERT's. Each run is cached like the book's models; cold, the bench takes about 5 minutes
on 2 cores.

    python bench/electra_balance.py
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from ctxlib.analysis.layer_probes import probe_scores, probe_tasks
from ctxlib.analysis.memory import training_flops
from ctxlib.analysis.occurrences import bert_word_vectors
from ctxlib.data.corpus import load_corpus
from ctxlib.models.bert import BertForPreTraining
from ctxlib.models.electra import Electra
from ctxlib.studies.bert_pretraining import BATCH_SIZE, book_bert
from ctxlib.studies.electra_pretraining import ELECTRA_MASKING, ELECTRA_TRAINING, book_electra, electra_scores
from ctxlib.training.loop import TrainConfig
from ctxlib.training.pretraining_data import corpus_pairs, heldout_batches, pretraining_batches

VARIANTS = {
    "the book's ELECTRA": {},
    "lr 3e-3, 6% warmup (the mini-BERT's)": {"training": {"lr": 3e-3, "warmup_fraction": 0.06}},
    "lr 5e-4": {"training": {"lr": 5e-4}},
    "λ = 10": {"discriminator_weight": 10.0},
    "paper's generator shape: 2 blocks × 32": {"generator_layers": 2, "generator_hidden_size": 32},
    "3× the steps": {"training": {"steps": 3 * ELECTRA_TRAINING.steps, "eval_every": 500}},
}
PROBES = ("POS, linear probe", "sense, 1-NN")


def top_layer_probes(encoder: torch.nn.Module, tokenizer, corpus) -> dict[str, float]:
    scores = probe_scores(probe_tasks(lambda s: bert_word_vectors(encoder, tokenizer, s), corpus))
    return {task: scores[task][-1] for task in PROBES}


def relative_compute(corpus) -> Callable[[Electra, dict, TrainConfig], float]:
    """A function giving an ELECTRA run's training FLOPs as a multiple of the mini-BERT's run, both
    counted on one pretraining batch: ``relative(model, options, training)`` for a model built with
    ``options`` (a VARIANTS entry; its generator shape counts) and trained for ``training.steps``."""
    bert, bert_history, tokenizer = book_bert(corpus)
    batch = next(pretraining_batches(corpus_pairs(corpus, "train", tokenizer), tokenizer, BATCH_SIZE, seed=0,
                                     **ELECTRA_MASKING))
    torch.manual_seed(0)
    fresh_bert = BertForPreTraining(bert.config)
    bert_run = len(bert_history.steps) * training_flops(lambda: fresh_bert(**batch, masked_only=True).loss)

    def relative(model: Electra, options: dict, training: TrainConfig) -> float:
        shape = Electra(model.config, **{k: v for k, v in options.items() if k.startswith("generator")})
        step = training_flops(lambda: shape(batch["input_ids"], labels=batch["labels"],
                                            attention_mask=batch["attention_mask"],
                                            token_type_ids=batch["token_type_ids"]).loss)
        return training.steps * step / bert_run

    return relative


def main() -> None:
    corpus = load_corpus()
    bert, bert_history, tokenizer = book_bert(corpus)
    relative = relative_compute(corpus)
    reference = top_layer_probes(bert.bert, tokenizer, corpus)
    heldout = heldout_batches(corpus, tokenizer, **ELECTRA_MASKING)
    print(f"mini-BERT (MLM + NSP, {len(bert_history.steps)} steps): "
          + ", ".join(f"{task} {score:.1%}" for task, score in reference.items()))
    print(f"{'ELECTRA variant':40s} {'compute':>8s} {'caught':>7s} {'generator':>9s} {'POS':>6s} {'sense':>6s}"
          "   (compute: × the mini-BERT's run; POS, sense: ÷ the mini-BERT's)")
    for name, options in VARIANTS.items():
        options = dict(options)
        training = dataclasses.replace(ELECTRA_TRAINING, **options.pop("training", {}))
        model, _, _ = book_electra(corpus, training=training, **options)
        scores = electra_scores(model, heldout)
        probes = top_layer_probes(model.discriminator, tokenizer, corpus)
        print(f"{name:40s} {relative(model, options, training):8.2f} {scores.replaced_recall:7.1%} "
              f"{scores.generator_accuracy:9.1%} {probes[PROBES[0]] / reference[PROBES[0]]:6.2f} "
              f"{probes[PROBES[1]] / reference[PROBES[1]]:6.2f}")


if __name__ == "__main__":
    main()
