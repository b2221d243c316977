"""The runs behind the exercises of 06b_dynamic_masking.md whose solutions quote a measurement.

    python bench/exercise_record.py 06b_dynamic_masking
"""

from __future__ import annotations

import dataclasses

from ctxlib.analysis.mlm_scores import pretraining_scores
from ctxlib.data.corpus import load_corpus
from ctxlib.studies.bert_pretraining import BOOK_BERT_TRAINING, book_bert
from ctxlib.training.pretraining_data import corpus_pairs, static_batches

from _common import exercise


@exercise(1)
def small_data_static_masking() -> dict:
    """Static and dynamic masking on the first 2,000 pairs for 600 steps (19 epochs).
    MLM accuracy on the static run's own masks and on fresh ones (500 training pairs) and held
    out, held-out loss, the static run's own-to-fresh ratio and the dynamic run's difference."""
    corpus = load_corpus()
    training = dataclasses.replace(BOOK_BERT_TRAINING, steps=600)
    figures = {}
    for name, dynamic in (("dynamic", True), ("static", False)):
        model, history, tokenizer = book_bert(corpus, training=training, name=f"small-{name}", dynamic=dynamic,
                                              train_pairs=2000)
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=training.seed)[:500]
        figures[f"{name}_own_masks"] = pretraining_scores(model, static_batches(pairs, tokenizer, seed=0)).mlm_accuracy
        figures[f"{name}_fresh_masks"] = pretraining_scores(model, static_batches(pairs, tokenizer,
                                                                                  seed=1)).mlm_accuracy
        figures[f"{name}_heldout"] = history.evaluations["heldout mlm_accuracy"][-1][1]
        figures[f"{name}_heldout_loss"] = history.evaluations["heldout mlm_loss"][-1][1]
    figures["static_own_over_fresh"] = figures["static_own_masks"] / figures["static_fresh_masks"]
    figures["dynamic_own_minus_fresh"] = figures["dynamic_own_masks"] - figures["dynamic_fresh_masks"]
    return figures
