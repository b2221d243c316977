"""The runs behind the exercises of 02_elmo.md whose solutions quote a measurement.

    python bench/exercise_record.py 02_elmo
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import torch

from ctxlib.analysis.baselines import NgramLanguageModel
from ctxlib.data.corpus import load_corpus
from ctxlib.models.elmo import Elmo, batch_to_ids, remove_sentence_boundaries
from ctxlib.studies.elmo_pretraining import BATCH_SIZE, BOOK_ELMO, BOOK_TRAINING, book_elmo, heldout_sentences

from _common import exercise


@exercise(1)
def stateless_parity() -> dict:
    """The AllenNLP parity check with the LSTM state reset for every batch: where it differs.

    The largest difference from AllenNLP's embeddings, the region of a sentence it is in, and the
    largest difference per half (forward, backward) at the first three words, the last three and
    the words between."""
    import h5py
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "allennlp-elmo"
    reference = Elmo.from_allennlp(fixture / "options.json", fixture / "lm_weights.hdf5")
    sentences = json.loads((fixture / "sentences.json").read_text())
    half = reference.config.projection_dim
    regions = {(d, r): 0.0 for d in ("forward", "backward") for r in ("first_3", "middle", "last_3")}
    with torch.no_grad():
        for i in range(10):
            batch = [sentences[k][i].split() for k in range(3)]
            out = reference.bilm(batch_to_ids(batch), state=None)
            top, _ = remove_sentence_boundaries(out.layers[2], out.mask)
            for k in range(3):
                with h5py.File(fixture / f"lm_embeddings_{k}.hdf5", "r") as expected:
                    target = np.concatenate([expected[str(i)][0], expected[str(i)][1]], axis=-1)
                error = np.abs(top[k, :len(batch[k])].numpy() - target)
                n = len(batch[k])
                for t in range(n):
                    region = "first_3" if t < 3 else "last_3" if t >= n - 3 else "middle"
                    for direction, columns in (("forward", slice(0, half)), ("backward", slice(half, None))):
                        key = (direction, region)
                        regions[key] = max(regions[key], float(error[t, columns].max()))
    direction, region = max(regions, key=regions.get)
    words = {"first_3": "first three words", "middle": "words between", "last_3": "last three words"}
    return {"largest_difference": max(regions.values()),
            "largest_at": f"the {direction} half at a sentence's {words[region]}",
            **{f"{d}_{r}": value for (d, r), value in regions.items()}}



@exercise(2)
def clipped_bilm() -> dict:
    """The book's biLM pretrained for 100 steps without and with cell_clip = proj_clip = 3.

    The released ELMo's clips: each run's training time and loss at step 100, how much longer
    the clipped run trains, and the largest difference between the two losses at any step."""
    corpus = load_corpus()
    training = dataclasses.replace(BOOK_TRAINING, steps=100)
    runs = {name: book_elmo(corpus, training=training,
                            config=dataclasses.replace(BOOK_ELMO, cell_clip=clip, proj_clip=clip))[1]
            for name, clip in (("no_clip", None), ("clip", 3.0))}
    return {**{f"{name}_seconds": history.seconds for name, history in runs.items()},
            **{f"{name}_loss_at_100": history.train["loss"][99] for name, history in runs.items()},
            "time_ratio": runs["clip"].seconds / runs["no_clip"].seconds,
            "largest_loss_difference": max(abs(a - b) for a, b in zip(runs["no_clip"].train["loss"],
                                                                       runs["clip"].train["loss"]))}



@exercise(4)
def elmo_longer() -> dict:
    """The book's biLM trained for 1,000 steps instead of 250: forward perplexity as it goes.

    Held-out and training (a 50-step mean) forward perplexity at every evaluation (every 125
    steps), the passes over the training sentences, the ratio of held-out to training perplexity
    at the end, the first evaluation where held-out exceeds training, and the first where
    held-out is below the bigram model's held-out perplexity (the page's)."""
    corpus = load_corpus()
    _, history, vocab = book_elmo(corpus, training=dataclasses.replace(BOOK_TRAINING, steps=1000, eval_every=125))
    heldout = history.evaluations["heldout forward perplexity"]
    steps = [step for step, _ in heldout]
    forward = history.train["forward"]
    train = [math.exp(sum(forward[max(0, s - 50):s]) / len(forward[max(0, s - 50):s])) for s in steps]
    bigram = NgramLanguageModel([s.tokens for s in corpus.train], vocab, 2).perplexity(heldout_sentences(corpus))
    above = [step for (step, value), t in zip(heldout, train) if value > t]
    below_bigram = [step for step, value in heldout if value < bigram]
    return {**{f"heldout_{step}": value for step, value in heldout},
            **{f"train_{step}": value for step, value in zip(steps, train)},
            "passes": len(forward) * BATCH_SIZE / len(corpus.train),
            "final_ratio": heldout[-1][1] / train[-1],
            "first_heldout_above_train": f"step {above[0]:,}" if above else "no evaluated step",
            "first_below_bigram": f"step {below_bigram[0]:,}" if below_bigram else "no evaluated step"}
