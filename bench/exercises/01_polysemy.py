"""The runs behind the exercises of 01_polysemy.md whose solutions quote a measurement.

    python bench/exercise_record.py 01_polysemy
"""

from __future__ import annotations

import numpy as np
import torch

from ctxlib.analysis.occurrences import occurrence_vectors
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.probe import separation_by_layer
from ctxlib.analysis.wsd import wordnet_wsd
from ctxlib.models.pretrained import minilm

from _common import and_list, exercise


@exercise(4)
def euclidean_separation() -> dict:
    """Chapter 1's 1-NN sense separation on cosine against Euclidean distance, and the norms.

    The mean over the ten words at the static row, layer 0 and the top layer under each metric,
    the largest difference between the metrics at an encoder layer, the best layer under each,
    the words whose own best layer changes, and the spread (std / mean) of the vectors' lengths
    within a layer: smallest and largest from layer 0 to the layer below the top, and the top's."""
    model, tokenizer = minilm()
    study = PolysemyStudy(model, tokenizer)
    names = list(study.layer_names)  # "static", "layer 0", ..., the top layer
    mean, best = {}, {}
    for metric in ("cosine", "euclidean"):
        separation = {word: separation_by_layer(entry.occurrences.vectors, entry.labels, study.layer_names, metric)
                      for word, entry in study.by_word.items()}
        mean[metric] = [float(np.mean([s.nn_accuracy[i] for s in separation.values()])) for i in range(len(names))]
        best[metric] = {word: s.best_layer() for word, s in separation.items()}
    changed = [word for word in best["cosine"] if best["cosine"][word] != best["euclidean"][word]]
    encoder = range(names.index("layer 1"), len(names))
    norms = torch.cat([entry.occurrences.vectors.norm(dim=-1) for entry in study.by_word.values()], dim=1)
    spread = (norms.std(dim=1) / norms.mean(dim=1)).tolist()  # std / mean of the lengths, per layer
    below_top = spread[names.index("layer 0"):-1]  # layer 0 to the layer below the top
    static, layer0 = names.index("static"), names.index("layer 0")
    return {"static_cosine": mean["cosine"][static], "static_euclidean": mean["euclidean"][static],
            "layer0_cosine": mean["cosine"][layer0], "layer0_euclidean": mean["euclidean"][layer0],
            "top_cosine": mean["cosine"][-1], "top_euclidean": mean["euclidean"][-1],
            "encoder_largest_difference": max(abs(mean["cosine"][i] - mean["euclidean"][i]) for i in encoder),
            "best_layer_cosine": names[int(np.argmax(mean["cosine"]))],
            "best_layer_euclidean": names[int(np.argmax(mean["euclidean"]))],
            "best_layer_changes": len(changed),
            "changed_words": and_list(changed) or "none",
            "norm_spread_min": min(below_top), "norm_spread_max": max(below_top), "norm_spread_top": spread[-1]}



@exercise(5)
def wordnet_wsd_seeds() -> dict:
    """Section 1.4's WordNet protocol at seeds 0 to 4: how far the top layer and the baseline move.

    The top layer's accuracy at seeds 1 to 4 (seed 0 is the page's), its range over the five
    seeds, that range in units of σ of its gain at seed 0 (the σ the page prints), and the range
    of the first-sense baseline."""
    model, tokenizer = minilm()
    runs = [wordnet_wsd(lambda spans: occurrence_vectors(model, tokenizer, spans), seed=seed) for seed in range(5)]
    top = [run.centroid_accuracy[-1] for run in runs]
    first_sense = [run.first_sense_accuracy for run in runs]
    return {**{f"top_layer_seed_{seed}": top[seed] for seed in range(1, 5)},
            "top_layer_range": max(top) - min(top),
            "range_in_sigmas": (max(top) - min(top)) / runs[0].gain_standard_error[-1],
            "first_sense_range": max(first_sense) - min(first_sense)}
