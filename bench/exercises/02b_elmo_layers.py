"""The runs behind the exercises of 02b_elmo_layers.md whose solutions quote a measurement.

    python bench/exercise_record.py 02b_elmo_layers
"""

from __future__ import annotations

from ctxlib.analysis.layer_probes import probe_tasks
from ctxlib.analysis.occurrences import elmo_word_vectors
from ctxlib.analysis.probe import linear_probe_accuracy
from ctxlib.analysis.scalar_mix_probe import fit_scalar_mix
from ctxlib.data.corpus import load_corpus
from ctxlib.studies.elmo_pretraining import book_elmo

from _common import exercise


@exercise(1)
def concatenated_layers() -> dict:
    """Eq 2.4's concatenation of the book ELMo's three layers under a linear probe, per task.

    For part of speech (``pos_``) and word sense (``sense_``): the concatenation's accuracy, the
    learned mix of eq 2.5 (300 steps at lr 0.02, the page's explorer), the best single layer by
    name (the page's table scores each), and the concatenation's lead over that layer and over
    the mix."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    tasks = probe_tasks(lambda s: elmo_word_vectors(elmo, s), corpus)
    flat = lambda layers: layers.permute(1, 0, 2).flatten(1)  # [L, N, H] -> [N, L·H]
    result = {}
    for prefix, name in (("pos", "part of speech"), ("sense", "word sense")):
        task = tasks[name]
        single = [linear_probe_accuracy(a, task.train_labels, b, task.test_labels)
                  for a, b in zip(task.train_layers, task.test_layers)]
        concatenated = linear_probe_accuracy(flat(task.train_layers), task.train_labels,
                                             flat(task.test_layers), task.test_labels)
        mix = fit_scalar_mix(task.train_layers, task.train_labels, task.test_layers, task.test_labels,
                             task.layer_names, steps=300, lr=0.02).accuracy
        best = max(range(len(single)), key=single.__getitem__)
        result |= {f"{prefix}_concatenated": concatenated, f"{prefix}_learned_mix": mix,
                   f"{prefix}_best_layer": task.layer_names[best],
                   f"{prefix}_lead_over_best_layer": concatenated - single[best],
                   f"{prefix}_lead_over_mix": concatenated - mix}
    return result
