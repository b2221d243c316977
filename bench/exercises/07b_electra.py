"""The runs behind the exercises of 07b_electra.md whose solutions quote a measurement.

    python bench/exercise_record.py 07b_electra
"""

from __future__ import annotations

import dataclasses

import torch
from transformers import BertTokenizerFast

from ctxlib.data.corpus import load_corpus
from ctxlib.models.electra import Electra, discriminator_loss, replaced_token_labels
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.bert_pretraining import BATCH_SIZE, book_bert
from ctxlib.studies.electra_pretraining import ELECTRA_MASKING, ELECTRA_TRAINING, book_electra
from ctxlib.training.loop import History, TrainConfig, fit, seeded
from ctxlib.training.pretraining_data import corpus_pairs, heldout_batches, pretraining_batches

from electra_balance import VARIANTS, relative_compute, top_layer_probes

from _common import exercise

POS, SENSE = "POS, linear probe", "sense, 1-NN"  # the top-layer probes, as top_layer_probes names them


def electra_variant(variant: str) -> tuple[Electra, TrainConfig, History, BertTokenizerFast]:
    """One ELECTRA of bench/electra_balance.py's VARIANTS (cached like the page's): the model, its
    training, its history and the tokenizer."""
    options = dict(VARIANTS[variant])
    training = dataclasses.replace(ELECTRA_TRAINING, **options.pop("training", {}))
    model, history, tokenizer = book_electra(load_corpus(), training=training, **options)
    return model, training, history, tokenizer


def discriminator_probes(model: Electra, tokenizer: BertTokenizerFast) -> dict[str, float]:
    """The top-layer probes of an ELECTRA's discriminator."""
    return top_layer_probes(model.discriminator, tokenizer, load_corpus())


def heldout(history: History, score: str) -> dict[int, float]:
    """A held-out score of an ELECTRA run at every evaluation, by step."""
    return dict(history.evaluations[f"heldout {score}"])


def mini_bert_probes() -> dict[str, float]:
    corpus = load_corpus()
    bert, _, tokenizer = book_bert(corpus)
    return top_layer_probes(bert.bert, tokenizer, corpus)


@exercise(1)
def electra_longer() -> dict:
    """ELECTRA trained three times longer: held-out recall by step and top-layer probes.

    Also its final generator and discriminator accuracy and the share of original tokens, and the
    probes as a fraction of the mini-BERT's."""
    model, training, history, tokenizer = electra_variant("3× the steps")
    probes = discriminator_probes(model, tokenizer)
    reference = mini_bert_probes()
    figures = {f"recall_{step}": value for step, value in heldout(history, "replaced_recall").items()}
    end = training.steps
    figures.update(generator_end=heldout(history, "generator_accuracy")[end],
                   accuracy_end=heldout(history, "discriminator_accuracy")[end],
                   original_share_end=heldout(history, "original_share")[end],
                   pos=probes[POS], sense=probes[SENSE],
                   pos_ratio=probes[POS] / reference[POS], sense_ratio=probes[SENSE] / reference[SENSE])
    return figures


@exercise(2)
def electra_learning_rates() -> dict:
    """ELECTRA at the mini-BERT's learning rate (3e-3, 6% warmup) and at half the book's (5e-4).

    Held-out recall, discriminator and generator accuracy, beside the book's generator accuracy."""
    end = ELECTRA_TRAINING.steps
    _, _, high, _ = electra_variant("lr 3e-3, 6% warmup (the mini-BERT's)")
    _, _, low, _ = electra_variant("lr 5e-4")
    _, _, book, _ = electra_variant("the book's ELECTRA")
    figures = {"high_recall_max": max(heldout(high, "replaced_recall").values()),
               "high_accuracy": heldout(high, "discriminator_accuracy")[end],
               "high_original_share": heldout(high, "original_share")[end],
               "high_generator": heldout(high, "generator_accuracy")[end]}
    figures.update({f"low_recall_{step}": value for step, value in heldout(low, "replaced_recall").items()})
    figures.update(low_generator=heldout(low, "generator_accuracy")[end],
                   book_generator=heldout(book, "generator_accuracy")[end])
    return figures


@exercise(3)
def uniform_replacements() -> dict:
    """The discriminator alone on uniform random replacements at lr 3e-3: the share caught.

    Over 1,500 steps with a 150-step warmup and over 300 steps with a 30-step warmup, and at step
    1,000 as a multiple of what the book's ELECTRA catches of its generator's replacements."""
    corpus = load_corpus()
    book, book_history, tokenizer = book_electra(corpus)
    vocabulary = len(tokenizer)
    heldout_data = heldout_batches(corpus, tokenizer, **ELECTRA_MASKING)

    def corrupt(batch, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        masked = batch["labels"] != IGNORE_INDEX
        original = torch.where(masked, batch["labels"], batch["input_ids"])
        corrupted = original.clone()
        corrupted[masked] = torch.randint(vocabulary, (int(masked.sum()),), generator=generator)
        return corrupted, replaced_token_labels(original, corrupted)

    def logits(model: Electra, corrupted: torch.Tensor, batch) -> torch.Tensor:
        hidden = model.discriminator(corrupted, attention_mask=batch["attention_mask"],
                                     token_type_ids=batch["token_type_ids"]).last_hidden_state
        return model.discriminator_head(hidden)

    def recall(model: Electra) -> dict[str, float]:
        generator, caught, replaced_total = torch.Generator().manual_seed(1), 0, 0
        with torch.no_grad():
            for batch in heldout_data:
                corrupted, replaced = corrupt(batch, generator)
                caught += int(((logits(model, corrupted, batch) > 0) & replaced.bool()).sum())
                replaced_total += int(replaced.sum())
        return {"replaced_recall": caught / replaced_total}

    curves = {}
    for steps, warmup in ((1500, 150), (300, 30)):
        sampler = torch.Generator().manual_seed(0)

        def loss(model: Electra, batch, sampler: torch.Generator = sampler) -> torch.Tensor:
            corrupted, replaced = corrupt(batch, sampler)
            return discriminator_loss(logits(model, corrupted, batch), replaced, batch["attention_mask"])

        with seeded(0):
            model = Electra(book.config)
        config = dataclasses.replace(ELECTRA_TRAINING, steps=steps, lr=3e-3, warmup_fraction=warmup / steps,
                                     eval_every=steps // 12, progress=False)
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=0)
        history = fit(model, pretraining_batches(pairs, tokenizer, BATCH_SIZE, 0, **ELECTRA_MASKING), loss, config,
                      evaluate=recall)
        curves[warmup] = dict(history.evaluations["replaced_recall"])
    figures = {f"warmup_150_recall_{step}": curves[150][step] for step in (125, 250, 500, 1000, 1500)}
    figures["warmup_30_recall_max"] = max(curves[30].values())
    book_recall = heldout(book_history, "replaced_recall")[ELECTRA_TRAINING.steps]  # the page's, at step 1,000
    figures["uniform_over_book_1000"] = curves[150][1000] / book_recall
    return figures


@exercise(5)
def paper_generator_shape() -> dict:
    """The paper's generator shape (2 blocks of width 32) beside the book's (1 block of width 64).

    Each one's compute as a multiple of the mini-BERT's run, and the paper shape's held-out recall
    and top-layer probes."""
    relative = relative_compute(load_corpus())  # FLOPs counted as bench/electra_balance.py counts them

    def compute(variant: str) -> float:
        """The variant's training run in FLOPs, as a multiple of the mini-BERT's."""
        model, training, _, _ = electra_variant(variant)
        return relative(model, VARIANTS[variant], training)

    paper_shape = "paper's generator shape: 2 blocks × 32"
    book, paper = compute("the book's ELECTRA"), compute(paper_shape)
    model, training, history, tokenizer = electra_variant(paper_shape)
    probes = discriminator_probes(model, tokenizer)
    return {"book_compute": book, "paper_compute": paper, "paper_fewer_flops": 1 - paper / book,
            "paper_recall": heldout(history, "replaced_recall")[training.steps],
            "paper_pos": probes[POS], "paper_sense": probes[SENSE]}
