"""The runs behind the exercises of 06a_nsp.md whose solutions quote a measurement.

    python bench/exercise_record.py 06a_nsp
"""

from __future__ import annotations

from ctxlib.data.corpus import load_corpus
from ctxlib.objectives.nsp import SentencePair, contrast_pairs
from ctxlib.studies.nsp_topics import contrast_accuracy, minilm_nsp, nsp_probabilities
from ctxlib.training.pretraining_data import document_ids

from _common import exercise


@exercise(1)
def sentence_order() -> dict:
    """The NSP-tuned MiniLM on true successors swapped: the share it still accepts as IsNext.
    300 pairs, and the difference from the same pairs unswapped."""
    corpus = load_corpus()
    model, _, tokenizer = minilm_nsp(corpus, steps=100)
    documents, topics = document_ids(corpus, "heldout", tokenizer)
    pairs = contrast_pairs(documents, topics, "next", seed=0)[:300]
    swapped = [SentencePair(a=p.b, b=p.a, is_next=False) for p in pairs]
    true_next = float((nsp_probabilities(model, tokenizer, pairs) > 0.5).float().mean())
    swapped_accepted = float((nsp_probabilities(model, tokenizer, swapped) > 0.5).float().mean())
    return {"swapped_accepted": swapped_accepted, "true_minus_swapped": true_next - swapped_accepted}



@exercise(2)
def nsp_longer() -> dict:
    """MiniLM fine-tuned on NSP for 300 steps instead of 100: accuracy on each kind of pair.
    Also each kind's change from 100 steps, and the kind that gains most."""
    corpus = load_corpus()
    accuracy = {}
    for steps in (100, 300):
        model, _, tokenizer = minilm_nsp(corpus, steps=steps)
        accuracy[steps] = contrast_accuracy(model, tokenizer, corpus, per_kind=300)
    change = {kind: accuracy[300][kind] - accuracy[100][kind] for kind in accuracy[300]}
    figures = {}
    for kind in accuracy[300]:  # "next", "other topic", "same topic", "same document"
        figures[f"{kind.replace(' ', '_')}_300"] = accuracy[300][kind]
        figures[f"{kind.replace(' ', '_')}_change"] = change[kind]
    columns = {"next": "true-successor", "other topic": "other-topic", "same topic": "same-topic",
               "same document": "same-document"}  # the bar chart's columns, as the solution names them
    figures["largest_rise"] = columns[max(change, key=change.get)]
    return figures
