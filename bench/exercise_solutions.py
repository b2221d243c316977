"""Measure the exercises whose solutions quote a measurement, and print the figures they quote.

    python bench/exercise_solutions.py            # every exercise (tens of minutes on 2 cores)
    python bench/exercise_solutions.py 05-1 06a-2  # only these
    python bench/exercise_solutions.py --list

Each exercise is one function, named by its page and number, that runs the experiment with
ctxlib (training through the cache, as the chapters do: set CTXBOOK_CACHE) and returns what the
solution quotes. Too slow to run inside the book's build, the runs are done here once; the
solutions quote the figures with the command that reproduces them. Rerun after anything the
exercises depend on changes (the corpus, a training recipe), and update the quoted figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import torch

from ctxlib.analysis.layer_probes import probe_scores, probe_tasks
from ctxlib.analysis.memory import step_cost
from ctxlib.analysis.mlm_scores import pretraining_scores, unmasked_outputs, unmasked_token_accuracy
from ctxlib.analysis.occurrences import bert_word_vectors, elmo_word_vectors, occurrence_vectors
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.probe import linear_probe_accuracy, separation_by_layer
from ctxlib.analysis.scalar_mix_probe import fit_scalar_mix
from ctxlib.analysis.weight_change import relative_change
from ctxlib.analysis.wsd import wordnet_wsd
from ctxlib.data.corpus import load_corpus
from ctxlib.data.task_formats import check_bio, read_conll
from ctxlib.data.tasks import load_task
from ctxlib.models.electra import Electra, discriminator_loss, replaced_token_labels
from ctxlib.models.elmo import Elmo, batch_to_ids, remove_sentence_boundaries
from ctxlib.models.pretrained import minilm
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.objectives.nsp import SentencePair, contrast_pairs
from ctxlib.studies.bert_pretraining import BATCH_SIZE, BOOK_BERT_TRAINING, book_bert
from ctxlib.studies.electra_pretraining import ELECTRA_MASKING, ELECTRA_TRAINING, book_electra
from ctxlib.studies.elmo_downstream import DOWNSTREAM_TRAINING, TaggingTask, compare_downstream, pos_task, sense_task
from ctxlib.studies.elmo_pretraining import BOOK_ELMO, BOOK_TRAINING, book_elmo
from ctxlib.studies.extrapolation import EXTRAPOLATION_TRAINING, extrapolation_study
from ctxlib.studies.finetuning import (METRICS, FineTuned, FineTuning, _forward, _head_names, batches, build_model,
                                       encode, evaluate, fine_tune, task_labels)
from ctxlib.studies.long_range import median_seconds, recall_accuracy
from ctxlib.studies.nsp_topics import minilm_nsp, nsp_probabilities
from ctxlib.training.loop import TrainConfig, fit, seeded
from ctxlib.training.precision import this_machine
from ctxlib.training.pretraining_data import (corpus_pairs, document_ids, heldout_batches, pretraining_batches,
                                              static_batches)

from electra_balance import VARIANTS, top_layer_probes  # the bench next to this one: the same variants and probes

EXERCISES: dict[str, Callable[[], dict]] = {}
RECIPE_EPOCHS = {"topic": 2, "ner": 1.5, "qa": 1.5}  # chapter 5's recipe
PRIMARY = {"topic": "accuracy", "ner": "entity_f1", "qa": "f1"}


def exercise(name: str):
    def register(function: Callable[[], dict]) -> Callable[[], dict]:
        EXERCISES[name] = function
        return function
    return register


def recipe(task: str, **changes) -> FineTuning:
    return FineTuning(**{**dict(task=task, train_size=256, epochs=RECIPE_EPOCHS[task], lr=1e-4), **changes})


def scores(setting: FineTuning) -> FineTuned:
    """``fine_tune(setting)`` for its scores and history only: the book's cache keeps most runs
    without their weights, and asking for them would train the run again."""
    return fine_tune(setting, keep_model=False)


# ---------------------------------------------------------------------------------------------- 1


@exercise("01-4")
def euclidean_separation() -> dict:
    """Chapter 1's 1-NN sense separation per layer on cosine and on Euclidean distance (mean over
    the words), each word's best layer under both, and the vectors' mean norm per layer."""
    model, tokenizer = minilm()
    study = PolysemyStudy(model, tokenizer)
    result = {"layers": list(study.layer_names)}
    for metric in ("cosine", "euclidean"):
        scores = {word: separation_by_layer(entry.occurrences.vectors, entry.labels, study.layer_names, metric)
                  for word, entry in study.by_word.items()}
        result[f"{metric}: mean 1-NN by layer"] = [round(float(np.mean([s.nn_accuracy[i] for s in scores.values()])), 4)
                                                   for i in range(len(study.layer_names))]
        result[f"{metric}: best layer by word"] = {word: s.best_layer() for word, s in scores.items()}
    norms = torch.cat([entry.occurrences.vectors.norm(dim=-1) for entry in study.by_word.values()], dim=1)
    result["mean norm by layer"] = [round(float(n), 2) for n in norms.mean(dim=1)]
    result["norm spread (std / mean) by layer"] = [round(float(n), 3) for n in norms.std(dim=1) / norms.mean(dim=1)]
    return result


@exercise("01-5")
def wordnet_wsd_seeds() -> dict:
    """Section 1.4's WordNet protocol at seeds 0 to 4: the top layer and the first-sense baseline."""
    model, tokenizer = minilm()
    result = {}
    for seed in range(5):
        wsd = wordnet_wsd(lambda spans: occurrence_vectors(model, tokenizer, spans), seed=seed)
        result[f"seed {seed}"] = {"top layer": wsd.centroid_accuracy[-1], "first sense": wsd.first_sense_accuracy,
                                  "gain over first sense, standard error": wsd.gain_standard_error[-1]}
    return result


# ---------------------------------------------------------------------------------------------- 2


@exercise("02-1")
def stateless_parity() -> dict:
    """The AllenNLP parity check with the LSTM state reset for every batch."""
    import h5py
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "allennlp-elmo"
    reference = Elmo.from_allennlp(fixture / "options.json", fixture / "lm_weights.hdf5")
    sentences = json.loads((fixture / "sentences.json").read_text())
    half = reference.config.projection_dim
    worst = 0.0
    # Largest difference per direction, at the first three, the last three and the other words.
    regions = {(d, r): 0.0 for d in ("forward", "backward") for r in ("first 3", "middle", "last 3")}
    with torch.no_grad():
        for i in range(10):
            batch = [sentences[k][i].split() for k in range(3)]
            out = reference.bilm(batch_to_ids(batch), state=None)
            top, _ = remove_sentence_boundaries(out.layers[2], out.mask)
            for k in range(3):
                with h5py.File(fixture / f"lm_embeddings_{k}.hdf5", "r") as expected:
                    target = np.concatenate([expected[str(i)][0], expected[str(i)][1]], axis=-1)
                error = np.abs(top[k, :len(batch[k])].numpy() - target)
                worst = max(worst, float(error.max()))
                n = len(batch[k])
                for t in range(n):
                    region = "first 3" if t < 3 else "last 3" if t >= n - 3 else "middle"
                    for direction, columns in (("forward", slice(0, half)), ("backward", slice(half, None))):
                        key = (direction, region)
                        regions[key] = max(regions[key], float(error[t, columns].max()))
    return {"largest difference": worst, **{f"{d}, {r}": v for (d, r), v in regions.items()}}


@exercise("02-4")
def elmo_longer() -> dict:
    """The book's biLM trained for 1,000 steps instead of 250."""
    corpus = load_corpus()
    _, history, _ = book_elmo(corpus, training=dataclasses.replace(BOOK_TRAINING, steps=1000, eval_every=125))
    heldout = {d: history.evaluations[f"heldout {d} perplexity"] for d in ("forward", "backward")}
    train = {d: [math.exp(sum(history.train[d][max(0, s - 50):s]) / len(history.train[d][max(0, s - 50):s]))
                 for s, _ in heldout[d]] for d in ("forward", "backward")}
    return {"held-out perplexity by step": heldout, "training perplexity, 50-step mean at those steps": train}


@exercise("02d-1")
def recall_longer() -> dict:
    """The BiLSTM's recall accuracy with more training steps, at three distances."""
    return {f"T={d}, {s} steps": recall_accuracy("BiLSTM", d, steps=s)
            for d in (16, 32, 64) for s in (150, 1000)}


# ---------------------------------------------------------------------------------------------- 2.5


def _downstream(task: TaggingTask, seed: int = 0) -> dict:
    """compare_downstream as page 2.5 runs it (the biLM of seed 0), with the task's unseen share
    and its most-frequent-tag baseline."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    tagged = task.labels(task.test) != IGNORE_INDEX
    results = compare_downstream(task, elmo, training=dataclasses.replace(DOWNSTREAM_TRAINING, seed=seed))
    return {"unseen share": float((~task.seen(task.test)[tagged]).float().mean()),
            "most frequent tag": task.most_frequent_tag_accuracy(),
            **{r.setting.label: r.accuracy for r in results}}


@exercise("02c-1")
def downstream_seeds() -> dict:
    """Page 2.5's table with the tagger trained from seeds 0, 1 and 2."""
    task = pos_task(load_corpus(), train_sentences=50)
    return {f"seed {seed}": _downstream(task, seed) for seed in (0, 1, 2)}


@exercise("02c-2")
def downstream_more_labels() -> dict:
    """Page 2.5's table with 200 labelled sentences instead of 50."""
    return _downstream(pos_task(load_corpus(), train_sentences=200))


@exercise("02c-4")
def downstream_senses() -> dict:
    """Page 2.5's settings on the sense-tagging task, beside its most-frequent-sense baseline."""
    return _downstream(sense_task(load_corpus()))


@exercise("02-2")
def clipped_bilm() -> dict:
    """The book's biLM pretrained for 100 steps without and with cell_clip = proj_clip = 3 (the
    released ELMo's): the training loss at a few steps, and the training time."""
    corpus = load_corpus()
    training = dataclasses.replace(BOOK_TRAINING, steps=100)
    losses, result = {}, {}
    for name, clip in (("no clip", None), ("clip 3", 3.0)):
        _, history, _ = book_elmo(corpus, training=training,
                                  config=dataclasses.replace(BOOK_ELMO, cell_clip=clip, proj_clip=clip))
        losses[name] = history.train["loss"]
        result[name] = {"loss at steps 1, 10, 50, 100": [losses[name][i] for i in (0, 9, 49, 99)],
                        "seconds": history.seconds}
    result["largest loss difference"] = max(abs(a - b) for a, b in zip(*losses.values()))
    return result


@exercise("02b-1")
def concatenated_layers() -> dict:
    """Eq 2.4's concatenation of the book ELMo's three layers under a linear probe, beside each
    layer alone and the learned mix of eq 2.5 (300 steps at lr 0.02, the page's explorer)."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    result = {}
    for name, task in probe_tasks(lambda s: elmo_word_vectors(elmo, s), corpus).items():
        flat = lambda layers: layers.permute(1, 0, 2).flatten(1)  # [L, N, H] -> [N, L·H]
        result[name] = {
            "each layer": [linear_probe_accuracy(a, task.train_labels, b, task.test_labels)
                           for a, b in zip(task.train_layers, task.test_layers)],
            "concatenated": linear_probe_accuracy(flat(task.train_layers), task.train_labels,
                                                  flat(task.test_layers), task.test_labels),
            "learned mix": fit_scalar_mix(task.train_layers, task.train_labels, task.test_layers, task.test_labels,
                                          task.layer_names, steps=300, lr=0.02).accuracy}
    return result


# ---------------------------------------------------------------------------------------------- 3, 6


def _masking_arms() -> dict:
    corpus = load_corpus()
    return {"80/10/10": book_bert(corpus),
            "[MASK] only": book_bert(corpus, name="bert-mask-only", mask_replace_prob=1.0, random_replace_prob=0.0),
            "random only": book_bert(corpus, name="bert-random-only", mask_replace_prob=0.0, random_replace_prob=1.0)}


@exercise("03-5")
def masking_rule_probes() -> dict:
    """Devlin et al.'s Table 8, small: visible-token accuracy and top-layer probes of three rules."""
    corpus = load_corpus()
    arms = _masking_arms()
    tokenizer = arms["80/10/10"][2]
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:1000]
    result = {}
    for name, (model, history, _) in arms.items():
        probes = probe_scores(probe_tasks(lambda s, m=model: bert_word_vectors(m.bert, tokenizer, s), corpus))
        result[name] = {"held-out MLM accuracy": history.evaluations["heldout mlm_accuracy"][-1][1],
                        "visible token": unmasked_token_accuracy(model, tokenizer, pairs),
                        "POS probe, top layer": probes["POS, linear probe"][-1],
                        "sense 1-NN, top layer": probes["sense, 1-NN"][-1]}
    return result


@exercise("03-6")
def twice_the_budget() -> dict:
    """The mini-BERT pretrained for 3,000 steps: held-out NSP and MLM accuracy at every evaluation."""
    _, history, _ = book_bert(load_corpus(), training=dataclasses.replace(BOOK_BERT_TRAINING, steps=3000),
                              name="bert-3000")
    return {metric: [[step, round(value, 3)] for step, value in history.evaluations[f"heldout {metric}"]]
            for metric in ("nsp_accuracy", "mlm_accuracy")}


@exercise("03b-3")
def speed_at_length() -> dict:
    """Forward time of the book's ELMo and mini-BERT at 8 and 64 tokens, batch 1 and 8 (page 3.7's timing)."""
    corpus = load_corpus()
    elmo, _, _ = book_elmo(corpus)
    bert, _, tokenizer = book_bert(corpus)
    text = [s.tokens for s in corpus.heldout if len(s.tokens) >= 16][:8]
    result = {}
    for batch_size in (1, 8):
        for n in (8, 64):
            batch = [(list(s) * 8)[:n] for s in text[:batch_size]]
            ids = tokenizer([" ".join(s) for s in batch], truncation=True, max_length=n, padding="max_length",
                            return_tensors="pt")
            chars = batch_to_ids(batch)
            with torch.no_grad():
                elmo_s = median_seconds(lambda c=chars: elmo(c), repeats=9)
                bert_s = median_seconds(lambda i=ids: bert.bert(**i), repeats=9)
            result[f"batch {batch_size}, {n} tokens"] = {"ELMo ms": 1e3 * elmo_s, "BERT ms": 1e3 * bert_s,
                                                         "ELMo / BERT": elmo_s / bert_s}
    return result


@exercise("06b-1")
def small_data_static_masking() -> dict:
    """Static and dynamic masking on the first 2,000 pairs for 600 steps (19 epochs): MLM accuracy
    on the static run's own masks and on fresh ones (500 training pairs), and held out."""
    corpus = load_corpus()
    training = dataclasses.replace(BOOK_BERT_TRAINING, steps=600)
    result = {}
    for name, dynamic in (("dynamic", True), ("static", False)):
        model, history, tokenizer = book_bert(corpus, training=training, name=f"small-{name}", dynamic=dynamic,
                                              train_pairs=2000)
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=training.seed)[:500]
        result[name] = {"own masks": pretraining_scores(model, static_batches(pairs, tokenizer, seed=0)).mlm_accuracy,
                        "fresh masks": pretraining_scores(model, static_batches(pairs, tokenizer, seed=1)).mlm_accuracy,
                        "held out": history.evaluations["heldout mlm_accuracy"][-1][1],
                        "held-out loss": history.evaluations["heldout mlm_loss"][-1][1]}
    return result


@exercise("06-2")
def mask_only_visible_by_frequency() -> dict:
    """Which visible tokens the [MASK]-only model still names: accuracy by frequency band."""
    corpus = load_corpus()
    model, _, tokenizer = book_bert(corpus, name="bert-mask-only", mask_replace_prob=1.0, random_replace_prob=0.0)
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:1000]
    counts = Counter(i for p in corpus_pairs(corpus, "train", tokenizer) for i in (*p.a, *p.b))
    rank = {token: r for r, (token, _) in enumerate(counts.most_common())}
    bands = {"20 most frequent": (0, 20), "ranks 20-200": (20, 200), "rarer": (200, 10 ** 9)}
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
    total = sum(right.values())
    result = {name: {"tokens": seen[name], "accuracy": right[name] / max(seen[name], 1),
                     "share of all correct": right[name] / max(total, 1)} for name in bands}
    return result


@exercise("06a-1")
def sentence_order() -> dict:
    """The NSP-tuned MiniLM on true successors and on the same pairs swapped."""
    corpus = load_corpus()
    model, _, tokenizer = minilm_nsp(corpus, steps=100)
    documents, topics = document_ids(corpus, "heldout", tokenizer)
    pairs = contrast_pairs(documents, topics, "next", seed=0)[:300]
    swapped = [SentencePair(a=p.b, b=p.a, is_next=False) for p in pairs]
    true_next = float((nsp_probabilities(model, tokenizer, pairs) > 0.5).float().mean())
    swapped_accepted = float((nsp_probabilities(model, tokenizer, swapped) > 0.5).float().mean())
    return {"true successors accepted": true_next, "swapped pairs accepted as IsNext": swapped_accepted}


@exercise("06a-2")
def nsp_longer() -> dict:
    """MiniLM fine-tuned on NSP for 300 steps instead of 100: accuracy on each kind of pair."""
    from ctxlib.studies.nsp_topics import contrast_accuracy

    corpus = load_corpus()
    result = {}
    for steps in (100, 300):
        model, _, tokenizer = minilm_nsp(corpus, steps=steps)
        result[f"{steps} steps"] = contrast_accuracy(model, tokenizer, corpus, per_kind=300)
    return result


# ---------------------------------------------------------------------------------------------- 4


@exercise("04-4")
def extrapolation_longer() -> dict:
    """The position schemes trained five times longer: loss change at four times the length."""
    corpus = load_corpus()
    result = {}
    for steps in (300, 1500):
        study = extrapolation_study(corpus, training=dataclasses.replace(EXTRAPOLATION_TRAINING, steps=steps))
        result[f"{steps} steps"] = {scheme: {"loss at 32": losses[0], "change at 4x": losses[-1] - losses[0]}
                                    for scheme, losses in study.loss.items()}
    return result


# ---------------------------------------------------------------------------------------------- 5


@exercise("05-1")
def random_init_longer() -> dict:
    """The random-init runs ten times longer than chapter 5's recipe, beside MiniLM's."""
    result = {}
    for task in METRICS:
        metric = PRIMARY[task]
        result[task] = {"MiniLM, recipe": scores(recipe(task)).metrics[metric],
                        "random, recipe": scores(recipe(task, init="random")).metrics[metric],
                        "random, 10x steps": scores(recipe(task, init="random",
                                                              epochs=10 * RECIPE_EPOCHS[task])).metrics[metric]}
    return result


@exercise("05-2")
def usual_learning_rates() -> dict:
    """MiniLM with the usual fine-tuning learning rates on chapter 5's short schedule."""
    return {task: {f"lr {lr:g}": scores(recipe(task, lr=lr)).metrics[PRIMARY[task]] for lr in (2e-5, 5e-5, 1e-4)}
            for task in METRICS}


@exercise("05-3")
def head_learning_rate() -> dict:
    """Topic accuracy with the head at 100 times the encoder's learning rate, and at the same."""
    return {f"head_lr_factor {f:g}": scores(recipe("topic", head_lr_factor=f)).metrics["accuracy"]
            for f in (100.0, 1.0)}


@exercise("05-4")
def conll_error() -> dict:
    """The error read_conll gives for an I-PER after O."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.conll"
        path.write_text("Ada B-PER\nLovelace I-PER\nwrote O\n\nthen O\nLovelace I-PER\nleft O\n", encoding="utf-8")
        try:
            read_conll(path)
        except ValueError as error:
            return {"error": str(error).replace(folder, "<folder>")}
    return {"error": None}


@exercise("05-5")
def converged_ceilings() -> dict:
    """NER and QA trained to convergence by early stopping, beside the short recipe."""
    result = {}
    for task in ("ner", "qa"):
        run = scores(recipe(task, epochs=8, patience=1))
        dev = [round(value, 1) for _, value in run.history.evaluations[f"dev {PRIMARY[task]}"]]
        result[task] = {"recipe": scores(recipe(task)).metrics, "converged": run.metrics, "dev per epoch": dev}
    return result


@exercise("05b-1")
def topic_learning_curve() -> dict:
    """The learning curve of 5.2 for topic classification: 16, 64 and 256 labelled sentences."""
    steps = 32
    return {init: {n: scores(FineTuning("topic", init=init, train_size=n, epochs=steps * 16 / n,
                                           lr=1e-4)).metrics["accuracy"] for n in (16, 64, 256)}
            for init in ("minilm", "random")}


@exercise("05b-2")
def last_block_only() -> dict:
    """Each task with only the encoder's last block (and the head) trainable, against frozen and full."""
    result = {}
    for task in METRICS:
        setting = recipe(task)
        train_examples, test_examples = load_task(task)
        train_examples = train_examples[:setting.train_size]
        labels = task_labels(task, train_examples)
        _, tokenizer = minilm()
        train_data, test_data = (encode(task, tokenizer, e, labels) for e in (train_examples, test_examples))
        model = build_model(setting, len(labels))
        model.bert.requires_grad_(False)
        model.bert.encoder.layer[-1].requires_grad_(True)
        config = TrainConfig(steps=setting.steps(len(train_examples)), lr=setting.lr, seed=setting.seed,
                             warmup_fraction=setting.warmup_fraction, max_grad_norm=setting.max_grad_norm,
                             weight_decay=setting.weight_decay, progress=False)
        start = time.perf_counter()
        fit(model, batches(train_data, setting.batch_size, setting.seed),
            lambda net, batch: _forward(task, net, batch, with_labels=True).loss, config,
            lr_scale={name: setting.head_lr_factor for name in _head_names(model)})
        metric = PRIMARY[task]
        result[task] = {"frozen": scores(recipe(task, frozen=True)).metrics[metric],
                        "last block trained": evaluate(task, model, test_data, test_examples)[metric],
                        "all trained": scores(recipe(task)).metrics[metric],
                        "seconds, last block": time.perf_counter() - start}
    return result


@exercise("05b-3")
def bio_violations() -> dict:
    """How often the softmax tagger's predicted tag sequences break BIO, at 16 and 256 sentences,
    and the CRF at 256."""
    _, test_examples = load_task("ner")
    _, tokenizer = minilm()
    result = {}
    for name, setting in (("softmax, 16", FineTuning("ner", train_size=16, epochs=24, lr=1e-4)),
                          ("softmax, 256", recipe("ner")),
                          ("CRF, 16", FineTuning("ner", train_size=16, epochs=24, lr=1e-4, crf=True)),
                          ("CRF, 256", recipe("ner", crf=True))):
        run = fine_tune(setting)
        tags = _predicted_tags(run.model, tokenizer, test_examples)
        broken = 0
        for sentence in tags:
            try:
                check_bio(sentence)
            except ValueError:
                broken += 1
        result[name] = {"entity F1": run.metrics["entity_f1"], "sentences breaking BIO": broken / len(tags)}
    return result


def _predicted_tags(model, tokenizer, examples) -> list[list[str]]:
    """The tagger's tag sequence for every test sentence, decoded as the task's evaluation does."""
    from ctxlib.studies.finetuning import TAGS
    model.eval()
    data = encode("ner", tokenizer, examples)
    out = []
    with torch.no_grad():
        for first in range(0, len(examples), 64):
            batch = {k: v[first:first + 64] for k, v in data.items()}
            logits = _forward("ner", model, batch, with_labels=False).logits
            out += [[TAGS[t] for t in tags] for tags in model.decode(logits, batch["labels"] != IGNORE_INDEX)]
    return out


# ---------------------------------------------------------------------------------------------- 6.2


@exercise("06c-1")
def learning_rate_boundary() -> dict:
    """Topic accuracy by peak learning rate, with and without warmup, at 32 and 128 steps, seeds 0-2."""
    return {f"{epochs} epochs, warmup {warmup:g}": {
                f"lr {lr:g}": [fine_tune(recipe("topic", lr=lr, epochs=epochs, warmup_fraction=warmup, seed=seed),
                                         keep_model=False).metrics["accuracy"] for seed in (0, 1, 2)]
                for lr in (3e-4, 5e-4, 7e-4, 1e-3, 2e-3, 3e-3)}
            for epochs in (2, 8) for warmup in (0.1, 0.0)}


@exercise("06c-2")
def stronger_weight_decay() -> dict:
    """Both optimisers at λ = 0.01 and 0.1: test accuracy and how far the encoder moved from MiniLM."""
    start = minilm()[0]
    result = {}
    for optimizer in ("adamw", "adam_l2"):
        for decay in (0.01, 0.1):
            run = fine_tune(recipe("topic", optimizer=optimizer, weight_decay=decay))
            result[f"{optimizer}, λ {decay:g}"] = {"accuracy": run.metrics["accuracy"],
                                                   "encoder moved": relative_change(run.model.bert, start)}
    return result


@exercise("06c-3")
def clipping_threshold() -> dict:
    """The lr 1e-3 runs with clipping at 1.0 and at 100, seeds 0-3: steps clipped and accuracy."""
    result = {}
    for warmup in (0.1, 0.0):
        for clip in (1.0, 100.0):
            runs = [fine_tune(recipe("topic", lr=1e-3, warmup_fraction=warmup, max_grad_norm=clip, seed=seed),
                              keep_model=False) for seed in (0, 1, 2, 3)]
            result[f"warmup {warmup:g}, clip {clip:g}"] = {
                "accuracy": [run.metrics["accuracy"] for run in runs],
                "steps clipped": [sum(norm > clip for norm in run.history.grad_norm) for run in runs],
                "steps": len(runs[0].history.grad_norm),
                "largest gradient norm": [max(run.history.grad_norm) for run in runs]}
    return result


# ---------------------------------------------------------------------------------------------- 6.3


@exercise("06d-1")
def larger_learning_rates() -> dict:
    """Chapter 5's topic run at learning rates up to 1e-3: accuracy and the largest training loss."""
    return {f"lr {lr:g}": {"accuracy": (r := scores(recipe("topic", lr=lr))).metrics["accuracy"],
                           "largest training loss": max(r.history.train["loss"]),
                           "last training loss": r.history.train["loss"][-1]}
            for lr in (1e-4, 3e-4, 1e-3)}


@exercise("06d-2")
def sweep_seeds() -> dict:
    """The learning-rate and epoch rows of the sweep at seeds 0, 1, 2: mean and range."""
    rows = {"lr 2e-5": {"lr": 2e-5}, "lr 5e-5": {"lr": 5e-5}, "lr 1e-4": {}, "epochs 4": {"epochs": 4}}
    result = {}
    for name, change in rows.items():
        values = [scores(recipe("topic", seed=seed, **change)).metrics["accuracy"] for seed in (0, 1, 2)]
        result[name] = {"mean": sum(values) / 3, "min": min(values), "max": max(values)}
    return result


@exercise("06d-3")
def lr_epoch_grid() -> dict:
    """The 2 x 2 grid of learning rate and epochs for the topic run."""
    return {f"lr {lr:g}, {e} epochs": scores(recipe("topic", lr=lr, epochs=e)).metrics["accuracy"]
            for lr in (5e-5, 1e-4) for e in (2, 4)}


# ---------------------------------------------------------------------------------------------- 6.4


@exercise("06e-2")
def activation_memory_by_length() -> dict:
    """step_cost for MiniLM's shape, batch 8, at lengths 64, 128 and 256."""
    config = minilm()[0].config
    return {f"length {length}": dataclasses.asdict(step_cost(config, batch=8, length=length, steps=2))
            for length in (64, 128, 256)}


# ---------------------------------------------------------------------------------------------- 7.2


def _electra_run(**options) -> dict:
    """One ELECTRA variant of bench/electra_balance.py (cached like the page's): the held-out
    scores at every evaluation and the top-layer probes at the end."""
    corpus = load_corpus()
    options = dict(options)
    training = dataclasses.replace(ELECTRA_TRAINING, **options.pop("training", {}))
    model, history, tokenizer = book_electra(corpus, training=training, **options)
    curve = {name.removeprefix("heldout "): [[step, round(value, 4)] for step, value in points]
             for name, points in history.evaluations.items()}
    return {"steps": training.steps, "held-out scores by step": curve,
            "top-layer probes": top_layer_probes(model.discriminator, tokenizer, corpus)}


def _mini_bert_probes() -> dict:
    corpus = load_corpus()
    bert, _, tokenizer = book_bert(corpus)
    return top_layer_probes(bert.bert, tokenizer, corpus)


@exercise("07b-1")
def electra_longer() -> dict:
    """The book's ELECTRA and one trained three times longer, beside the mini-BERT's probes."""
    return {"mini-BERT probes": _mini_bert_probes(), "book's ELECTRA": _electra_run(),
            "3x steps": _electra_run(**VARIANTS["3× the steps"])}


@exercise("07b-2")
def electra_learning_rates() -> dict:
    """ELECTRA at the mini-BERT's learning rate (3e-3, 6% warmup) and at half the book's (5e-4)."""
    return {name: _electra_run(**VARIANTS[name]) for name in ("lr 3e-3, 6% warmup (the mini-BERT's)", "lr 5e-4")}


@exercise("07b-3")
def uniform_replacements() -> dict:
    """The discriminator alone on uniform random replacements at lr 3e-3: the share caught over
    1,500 steps with a 150-step warmup and over 300 steps with a 30-step warmup."""
    corpus = load_corpus()
    book, _, tokenizer = book_electra(corpus)
    vocabulary = len(tokenizer)
    heldout = heldout_batches(corpus, tokenizer, **ELECTRA_MASKING)

    def corrupt(batch, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        masked = batch["labels"] != IGNORE_INDEX
        original = torch.where(masked, batch["labels"], batch["input_ids"])
        corrupted = original.clone()
        corrupted[masked] = torch.randint(vocabulary, (int(masked.sum()),), generator=generator)
        return corrupted, replaced_token_labels(original, corrupted)

    def scores(model: Electra, corrupted: torch.Tensor, batch) -> torch.Tensor:
        hidden = model.discriminator(corrupted, attention_mask=batch["attention_mask"],
                                     token_type_ids=batch["token_type_ids"]).last_hidden_state
        return model.discriminator_head(hidden)

    def recall(model: Electra) -> dict[str, float]:
        generator, caught, replaced_total = torch.Generator().manual_seed(1), 0, 0
        with torch.no_grad():
            for batch in heldout:
                corrupted, replaced = corrupt(batch, generator)
                caught += int(((scores(model, corrupted, batch) > 0) & replaced.bool()).sum())
                replaced_total += int(replaced.sum())
        return {"replaced_recall": caught / replaced_total}

    result = {}
    for steps, warmup in ((1500, 150), (300, 30)):
        sampler = torch.Generator().manual_seed(0)

        def loss(model: Electra, batch, sampler: torch.Generator = sampler) -> torch.Tensor:
            corrupted, replaced = corrupt(batch, sampler)
            return discriminator_loss(scores(model, corrupted, batch), replaced, batch["attention_mask"])

        with seeded(0):
            model = Electra(book.config)
        config = dataclasses.replace(ELECTRA_TRAINING, steps=steps, lr=3e-3, warmup_fraction=warmup / steps,
                                     eval_every=steps // 12, progress=False)
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=0)
        history = fit(model, pretraining_batches(pairs, tokenizer, BATCH_SIZE, 0, **ELECTRA_MASKING), loss, config,
                      evaluate=recall)
        result[f"{steps} steps, warmup {warmup}"] = [[step, round(value, 3)]
                                                     for step, value in history.evaluations["replaced_recall"]]
    return result


@exercise("07b-5")
def paper_generator_shape() -> dict:
    """The paper's generator shape (2 blocks of width 32) beside the book's (1 block of width 64)."""
    return {"book's ELECTRA": _electra_run(),
            "paper's shape": _electra_run(**VARIANTS["paper's generator shape: 2 blocks × 32"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="exercises to run (default: all)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.list:
        for name, function in EXERCISES.items():
            print(f"{name:6s} {function.__doc__.splitlines()[0]}")
        return 0
    unknown = sorted(set(args.names) - set(EXERCISES))
    if unknown:
        parser.error(f"unknown exercises {unknown}; --list shows them")
    # One thread, as each kernel of the book's build runs (tools/execute_chapters.py): the figures
    # then equal the pages' own where an exercise repeats a page's run, and two of these processes
    # can share two cores without fighting over them (two such processes: 4.0 topic steps a second
    # each on one thread, 1.4 on two).
    torch.set_num_threads(1)
    print(this_machine())  # beside any time an exercise reports: they are this machine's, not the book's
    results = {}
    for name in args.names or EXERCISES:
        start = time.perf_counter()
        results[name] = EXERCISES[name]()
        print(f"== {name} ({time.perf_counter() - start:.0f} s): {EXERCISES[name].__doc__.splitlines()[0]}")
        print(json.dumps(results[name], indent=1, default=float))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
