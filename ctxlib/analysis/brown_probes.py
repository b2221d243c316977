"""Part of speech per layer on real English (notes §2.4; Peters et al. 2018, Table 6), with the
floors an expert asks for: Brown's gold tags, each word's most frequent tag, and Hewitt & Liang's
(2019) control task.

The probe is ``ctxlib.analysis.probe.linear_probe_accuracy`` on every layer's vector of a word.
Its training words come from sentences of Brown's training texts, its test words from the test
texts (``ctxlib.data.brown``: the split is by whole texts, so no test sentence comes from a text
the probe was trained on), and the labels are the 12 universal tags. A word's *type* is its
lowercased form: the encoders probed here are uncased, so "The" and "the" reach them alike, and
the lookup, the control task and the count of unseen words all key on what the encoder sees.

A high probe score can come from the probe, not the layer: a linear classifier on 384
dimensions can memorise which word is which, and each word's tag with it. Hewitt & Liang's
**control task** measures that capacity: every word *type* gets one tag drawn at random from
the training tags' distribution, fixed for all its occurrences, so a probe can score above
chance on it only by recognising the word, never by reading its syntax. **Selectivity** is the
probe's accuracy on the real tags minus its accuracy on the control tags: high when the probe
reads the tags off the layer rather than learning them word by word.

A control tag can be learned only for a type the probe was trained on, so where many test words
are new (``unseen_share``), control accuracy has a low ceiling and selectivity mixes what the
probe did not memorise with how well the layer places new words; ``seen_words`` keeps the test
words whose type training holds, where the control task can be learned in full.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

import numpy as np

from ctxlib._checks import check_positive_int
from ctxlib.analysis.layer_probes import Encoder, TokenTask
from ctxlib.analysis.probe import linear_probe_accuracy
from ctxlib.data.brown import sample_brown


def brown_pos_task(encode: Encoder, train_sentences: int = 500, test_sentences: int = 250,
                   max_tokens: int = 4000, seed: int = 0) -> TokenTask:
    """Encode sentences of Brown's training and test texts once (sentences of up to 40 words,
    ``sample_brown``); keep up to ``max_tokens`` words of each, drawn at random (the probe's cost
    stays bounded), with their universal tags and their lowercased forms."""
    check_positive_int("max_tokens", max_tokens)
    rng = np.random.default_rng(seed)
    parts = {}
    for split, count in (("train", train_sentences), ("test", test_sentences)):
        chosen = sample_brown(split, count, seed)
        vectors = encode([s.words for s in chosen])
        words = [w.lower() for s in chosen for w in s.words]  # the type: what an uncased encoder sees
        tags = [t for s in chosen for t in s.universal]
        index = np.sort(rng.permutation(len(words))[:max_tokens])
        parts[split] = (vectors, tuple(words[i] for i in index), tuple(tags[i] for i in index), index)
    (train_vectors, train_words, train_tags, train_index), (test_vectors, test_words, test_tags, test_index) = (
        parts["train"], parts["test"])
    return TokenTask("part of speech (Brown)", train_vectors.layer_names, train_vectors.vectors[:, train_index],
                     train_tags, test_vectors.vectors[:, test_index], test_tags, train_words, test_words)


def control_tags(train_words: Sequence[str], train_tags: Sequence[str], test_words: Sequence[str],
                 seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Hewitt & Liang's control task: each word type (training's or test's) gets one tag drawn
    from the distribution of ``train_tags``, and every occurrence of the type carries it. Returns
    the control tags of the training and the test words."""
    if len(train_words) != len(train_tags) or len(train_words) == 0:
        raise ValueError(f"train_words and train_tags must be non-empty and of one length, got {len(train_words)} "
                         f"and {len(train_tags)}")
    rng = random.Random(seed)
    control: dict[str, str] = {}
    for word in (*train_words, *test_words):  # reading order: the draw does not depend on set order
        if word not in control:
            control[word] = rng.choice(train_tags)  # a draw from the empirical distribution
    return tuple(control[w] for w in train_words), tuple(control[w] for w in test_words)


def selectivity_scores(task: TokenTask, seed: int = 0,
                       probe: Callable[..., float] = linear_probe_accuracy) -> dict[str, list[float]]:
    """Per layer: the probe's held-out accuracy on the real tags, on the control tags, and their
    difference (selectivity)."""
    train_control, test_control = control_tags(task.train_words, task.train_labels, task.test_words, seed)
    real = [probe(a, task.train_labels, b, task.test_labels) for a, b in zip(task.train_layers, task.test_layers)]
    control = [probe(a, train_control, b, test_control) for a, b in zip(task.train_layers, task.test_layers)]
    return {"POS": real, "control task": control, "selectivity": [r - c for r, c in zip(real, control)]}


def seen_words(task: TokenTask) -> TokenTask:
    """``task`` with only the test words whose type occurs among its training words."""
    seen = set(task.train_words)
    keep = [i for i, w in enumerate(task.test_words) if w in seen]
    if not keep:
        raise ValueError("no test word of task occurs among its training words")
    return dataclasses.replace(task, test_layers=task.test_layers[:, keep],
                               test_labels=tuple(task.test_labels[i] for i in keep),
                               test_words=tuple(task.test_words[i] for i in keep))


def unseen_share(task: TokenTask) -> float:
    """The share of the test words whose form no training word has: where a lookup can only guess."""
    seen = set(task.train_words)
    return float(np.mean([w not in seen for w in task.test_words]))

