"""The runs behind the exercises of 03b_bert_vs_elmo.md whose solutions quote a measurement.

    python bench/exercise_record.py 03b_bert_vs_elmo
"""

from __future__ import annotations

import torch

from ctxlib.analysis.memory import parameter_count
from ctxlib.data.corpus import load_corpus
from ctxlib.models.bert import BertConfig
from ctxlib.models.elmo import batch_to_ids
from ctxlib.studies.bert_pretraining import book_bert
from ctxlib.studies.elmo_pretraining import book_elmo
from ctxlib.studies.long_range import median_seconds

from _common import exercise


@exercise(1)
def bert_large_count() -> dict:
    """BERT-large's parameters (pooler included) and the word-embedding table's share, beside BERT-base's."""
    large = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    result = {}
    for name, config in (("large", large), ("base", BertConfig())):
        total = parameter_count(config, pooler=True)
        result[f"{name}_millions"] = total / 1e6
        result[f"{name}_embedding_millions"] = config.vocab_size * config.hidden_size / 1e6
        result[f"{name}_embedding_share"] = config.vocab_size * config.hidden_size / total
    return result


@exercise(3)
def speed_at_length() -> dict:
    """Forward time of the book's ELMo and mini-BERT at 8 and 64 tokens, batch 1 and 8.

    Page 3.7's timing (median of 9 passes): each model's milliseconds and their ratio ELMo / BERT
    for every batch ``b`` and length ``t`` (``elmo_ms_b1_t8``, ``ratio_b8_t64``, ...), where the
    ratio is largest, and what eight sentences cost each model against one at 64 tokens."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    bert, _, tokenizer = book_bert(corpus)
    text = [s.tokens for s in corpus.heldout if len(s.tokens) >= 16][:8]
    result, ratios = {}, {}
    for batch_size in (1, 8):
        for n in (8, 64):
            batch = [(list(s) * 8)[:n] for s in text[:batch_size]]
            ids = tokenizer([" ".join(s) for s in batch], truncation=True, max_length=n, padding="max_length",
                            return_tensors="pt")
            chars = batch_to_ids(batch)
            with torch.no_grad():
                elmo_s = median_seconds(lambda c=chars: elmo(c), repeats=9)
                bert_s = median_seconds(lambda i=ids: bert.bert(**i), repeats=9)
            key = f"b{batch_size}_t{n}"
            ratios[f"batch {batch_size}, {n} tokens"] = elmo_s / bert_s
            result |= {f"elmo_ms_{key}": 1e3 * elmo_s, f"bert_ms_{key}": 1e3 * bert_s, f"ratio_{key}": elmo_s / bert_s}
    return {**result, "largest_ratio_at": max(ratios, key=ratios.get),
            "elmo_batch_cost_t64": result["elmo_ms_b8_t64"] / result["elmo_ms_b1_t64"],
            "bert_batch_cost_t64": result["bert_ms_b8_t64"] / result["bert_ms_b1_t64"]}
