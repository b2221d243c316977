"""The runs behind the exercises of 06_training_problems.md whose solutions quote a measurement.

    python bench/exercise_record.py 06_training_problems
"""

from __future__ import annotations

from collections import Counter

from ctxlib.analysis.layer_probes import probe_scores, probe_tasks
from ctxlib.analysis.mlm_scores import unmasked_outputs, unmasked_token_accuracy
from ctxlib.analysis.occurrences import bert_word_vectors
from ctxlib.data.corpus import load_corpus
from ctxlib.studies.bert_pretraining import book_bert
from ctxlib.training.pretraining_data import corpus_pairs

from _common import _masking_arms, exercise


@exercise(1)
def random_only_arm() -> dict:
    """The random-only arm of Devlin et al.'s Table 8, as a row of the page's table.
    Also the column it hurts most against 80/10/10, and where its top-layer probes rank among the
    three rules (chapter 3's cached models)."""
    corpus = load_corpus()
    arms = _masking_arms()  # chapter 3's three rules, cached
    tokenizer = arms["80/10/10"][2]
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:1000]
    rows = {}  # the page's table's columns, for each rule
    for name, (model, history, _) in arms.items():
        probes = probe_scores(probe_tasks(lambda s, m=model: bert_word_vectors(m.bert, tokenizer, s), corpus))
        rows[name] = {"held-out MLM accuracy": history.evaluations["heldout mlm_accuracy"][-1][1],
                      "MLM head reads the visible token": unmasked_token_accuracy(model, tokenizer, pairs),
                      "POS probe, top layer": probes["POS, linear probe"][-1],
                      "sense 1-NN, top layer": probes["sense, 1-NN"][-1]}
    arm, full = rows["random only"], rows["80/10/10"]
    places = ("highest", "second highest", "lowest")

    def place(column: str) -> str:
        ranked = sorted(rows, key=lambda name: rows[name][column], reverse=True)
        return places[ranked.index("random only")]

    return {"random_mlm_accuracy": arm["held-out MLM accuracy"],
            "random_visible": arm["MLM head reads the visible token"],
            "random_pos_probe": arm["POS probe, top layer"], "random_sense_probe": arm["sense 1-NN, top layer"],
            "most_hurt_column": max(full, key=lambda column: full[column] - arm[column]),
            "pos_probe_place": place("POS probe, top layer"), "sense_probe_place": place("sense 1-NN, top layer")}



@exercise(2)
def mask_only_visible_by_frequency() -> dict:
    """Which visible tokens the [MASK]-only model still names: accuracy by frequency band."""
    corpus = load_corpus()
    model, _, tokenizer = book_bert(corpus, name="bert-mask-only", mask_replace_prob=1.0, random_replace_prob=0.0)
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:1000]
    counts = Counter(i for p in corpus_pairs(corpus, "train", tokenizer) for i in (*p.a, *p.b))
    rank = {token: r for r, (token, _) in enumerate(counts.most_common())}
    bands = {"top20": (0, 20), "mid": (20, 200), "rare": (200, 10 ** 9)}  # ranks 0-19, 20-199, the rest
    right = {name: 0 for name in bands}
    seen = {name: 0 for name in bands}
    for batch, out in unmasked_outputs(model, tokenizer, pairs):
        real = batch["special_tokens_mask"] == 0
        ids = batch["input_ids"][real].tolist()
        hits = (out.prediction_logits.argmax(-1) == batch["input_ids"])[real].tolist()
        for token, hit in zip(ids, hits):
            r = rank.get(token, 10 ** 9)
            band = next(name for name, (low, high) in bands.items() if low <= r < high)
            seen[band] += 1
            right[band] += int(hit)
    figures = {}
    for name in bands:
        figures[f"{name}_tokens"] = seen[name]
        figures[f"{name}_accuracy"] = right[name] / max(seen[name], 1)
    figures["top20_share_of_correct"] = right["top20"] / max(sum(right.values()), 1)
    return figures
