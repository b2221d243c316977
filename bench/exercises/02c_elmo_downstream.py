"""The runs behind the exercises of 02c_elmo_downstream.md whose solutions quote a measurement.

    python bench/exercise_record.py 02c_elmo_downstream
"""

from __future__ import annotations

from ctxlib.data.corpus import load_corpus
from ctxlib.studies.elmo_downstream import SETTINGS, Setting, TaggingTask, pos_task, sense_task

from _common import _downstream, exercise

# Each of page 2.5's settings by a figure-name stem and by the words a solution reads it in.
NAMES = {Setting("base"): ("base", "the tagger without ELMo"),
         Setting("replace"): ("replace_frozen", "the frozen replacement"),
         Setting("concat"): ("concat_frozen", "the frozen concatenation"),
         Setting("replace", fine_tune=True): ("replace_fine_tuned", "the fine-tuned replacement"),
         Setting("concat", fine_tune=True): ("concat_fine_tuned", "the fine-tuned concatenation")}
assert set(NAMES) == set(SETTINGS)


def _accuracy(task: TaggingTask, seed: int = 0) -> dict:
    """Page 2.5's table (``_downstream``) by setting stem: each setting's held-out accuracy
    (all, seen, unseen words), beside the unseen share and the most-frequent-tag baseline."""
    table = _downstream(task, seed)
    return {"unseen share": table["unseen share"], "most frequent tag": table["most frequent tag"],
            **{stem: table[setting.label] for setting, (stem, _) in NAMES.items()}}


def _verdict(gaps: list[float]) -> str:
    """What seeds say of a difference, by the book's rule (``ctxlib.claims``): a finding when it
    has the same sign at every seed and its smallest size exceeds its spread (max − min)."""
    spread = max(gaps) - min(gaps)
    if all(gap > 0 for gap in gaps) or all(gap < 0 for gap in gaps):
        sign = "positive" if gaps[0] > 0 else "negative"
        size = "more" if min(abs(gap) for gap in gaps) > spread else "less"
        return f"{sign} at every seed, by {size} than its spread"
    return f"positive at {sum(gap > 0 for gap in gaps)} of {len(gaps)} seeds"


@exercise(1)
def downstream_seeds() -> dict:
    """Page 2.5's differences with the tagger trained from seeds 0, 1 and 2, and their verdicts.

    The page's printed differences of held-out accuracy: concatenation (frozen) minus no ELMo
    over all and over unseen words, replacement minus concatenation (frozen) on seen words,
    fine-tuned minus frozen concatenation over all words; each at seeds 1 and 2 (seed 0: the
    page's), the all-words gain at seed 0 too (the page prints only its table's two scores), and
    each one's spread over the three seeds with what it says (``_verdict``)."""
    task = pos_task(load_corpus(), train_sentences=50)
    runs = [_accuracy(task, seed) for seed in (0, 1, 2)]
    differences = {
        "concat_vs_base_all": lambda r: r["concat_frozen"]["all"] - r["base"]["all"],
        "concat_vs_base_unseen": lambda r: r["concat_frozen"]["unseen"] - r["base"]["unseen"],
        "replace_vs_concat_seen": lambda r: r["replace_frozen"]["seen"] - r["concat_frozen"]["seen"],
        "fine_tune_vs_frozen_all": lambda r: r["concat_fine_tuned"]["all"] - r["concat_frozen"]["all"]}
    result = {}
    for name, difference in differences.items():
        gaps = [difference(run) for run in runs]
        result |= {f"{name}_seed_1": gaps[1], f"{name}_seed_2": gaps[2],
                   f"{name}_spread": max(gaps) - min(gaps), f"{name}_verdict": _verdict(gaps)}
    result["concat_vs_base_all_seed_0"] = differences["concat_vs_base_all"](runs[0])  # not printed on the page
    return result



@exercise(2)
def downstream_more_labels() -> dict:
    """Page 2.5's table with 200 labelled sentences instead of 50: what changes.

    With 200 sentences: the unseen share, the most-frequent-tag baseline, the accuracy over all
    words without ELMo, with the frozen concatenation and with the frozen replacement, and the
    concatenation's lead over no ELMo (all and unseen words), with how much each lead changed
    from the page's 50 sentences."""
    corpus = load_corpus()
    few, more = (_accuracy(pos_task(corpus, train_sentences=n)) for n in (50, 200))
    lead = lambda run, part: run["concat_frozen"][part] - run["base"][part]
    return {"unseen_share": more["unseen share"], "most_frequent_tag": more["most frequent tag"],
            "base_all": more["base"]["all"], "concat_all": more["concat_frozen"]["all"],
            "replace_all": more["replace_frozen"]["all"],
            "lead_all": lead(more, "all"), "lead_all_change": lead(more, "all") - lead(few, "all"),
            "lead_unseen": lead(more, "unseen"), "lead_unseen_change": lead(more, "unseen") - lead(few, "unseen")}



@exercise(4)
def downstream_senses() -> dict:
    """Page 2.5's settings on the sense-tagging task, beside its most-frequent-sense baseline.

    The unseen share of the task's test words, the baseline, every setting's accuracy over all
    words (by its stem in ``NAMES``) and the best setting, in words."""
    run = _accuracy(sense_task(load_corpus()))
    accuracy = {stem: run[stem]["all"] for stem, _ in NAMES.values()}
    best = max(NAMES.values(), key=lambda names: accuracy[names[0]])
    return {"unseen_share": run["unseen share"], "most_frequent_sense": run["most frequent tag"],
            **accuracy, "best_setting": best[1]}
