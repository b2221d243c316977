"""The runs behind the exercises of 03_bert.md whose solutions quote a measurement.

    python bench/exercise_record.py 03_bert
"""

from __future__ import annotations

import dataclasses
import math

from ctxlib.analysis.layer_probes import probe_scores, probe_tasks
from ctxlib.analysis.mlm_scores import unmasked_token_accuracy
from ctxlib.analysis.occurrences import bert_word_vectors
from ctxlib.data.corpus import load_corpus
from ctxlib.studies.bert_pretraining import BOOK_BERT_TRAINING, book_bert
from ctxlib.training.pretraining_data import HELDOUT_PAIRS, corpus_pairs

from _common import _masking_arms, exercise


@exercise(5)
def masking_rule_probes() -> dict:
    """Devlin et al.'s Table 8, small: three masking rules' MLM, visible-token and probe scores.

    For 80/10/10 (``standard``), ``[MASK]`` only (``mask_only``) and random only (``random_only``):
    held-out MLM accuracy (80/10/10's is the page's, so not returned), the MLM head's accuracy at
    visible tokens, the top-layer POS linear probe and sense 1-NN; the rule with the best of each
    probe, and 80/10/10's lead over ``[MASK]`` only on the POS probe."""
    corpus = load_corpus()
    arms = _masking_arms()
    tokenizer = arms["80/10/10"][2]
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:1000]
    stems = {"80/10/10": "standard", "[MASK] only": "mask_only", "random only": "random_only"}
    result, pos, sense = {}, {}, {}
    for name, (model, history, _) in arms.items():
        stem = stems[name]
        probes = probe_scores(probe_tasks(lambda s, m=model: bert_word_vectors(m.bert, tokenizer, s), corpus))
        pos[name], sense[name] = probes["POS, linear probe"][-1], probes["sense, 1-NN"][-1]
        if name != "80/10/10":
            result[f"mlm_{stem}"] = history.evaluations["heldout mlm_accuracy"][-1][1]
        result |= {f"visible_{stem}": unmasked_token_accuracy(model, tokenizer, pairs),
                   f"pos_{stem}": pos[name], f"sense_{stem}": sense[name]}
    return {**result, "best_pos": max(pos, key=pos.get), "best_sense": max(sense, key=sense.get),
            "pos_lead_over_mask_only": pos["80/10/10"] - pos["[MASK] only"]}



@exercise(6)
def twice_the_budget() -> dict:
    """The mini-BERT pretrained for 3,000 steps: when NSP leaves chance, and where both end.

    Held-out NSP accuracy at every evaluation (``nsp_<step>``), MLM accuracy at the first and the
    last, the first step at which NSP is above chance by three standard errors on the held-out
    pairs (the page's rule), and MLM accuracy at that step."""
    _, history, _ = book_bert(load_corpus(), training=dataclasses.replace(BOOK_BERT_TRAINING, steps=3000),
                              name="bert-3000")
    nsp, mlm = history.evaluations["heldout nsp_accuracy"], dict(history.evaluations["heldout mlm_accuracy"])
    margin = 3 * math.sqrt(0.25 / HELDOUT_PAIRS)
    leaves = next((step for step, value in nsp if value > 0.5 + margin), None)
    if leaves is None:
        raise ValueError("NSP never leaves chance in 3,000 steps: exercise 6's solution must say so")
    return {**{f"nsp_{step}": value for step, value in nsp}, "mlm_first": mlm[min(mlm)], "mlm_last": mlm[max(mlm)],
            "nsp_leaves_chance": leaves, "mlm_when_nsp_leaves": mlm[leaves]}
