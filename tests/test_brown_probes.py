"""Brown's POS probe and Hewitt & Liang's control task: what each score can and cannot hold."""

from collections import Counter

import numpy as np
import pytest
import torch

from ctxlib.analysis.brown_probes import brown_pos_task, control_tags, seen_words, selectivity_scores, unseen_share
from ctxlib.analysis.layer_probes import TokenTask
from ctxlib.analysis.occurrences import OccurrenceVectors
from ctxlib.data.brown import UNIVERSAL_TAGS, load_brown, sample_brown


def test_control_tags_give_every_occurrence_of_a_type_one_tag_drawn_from_the_training_distribution():
    words = [f"w{i % 2000}" for i in range(6000)]
    tags = ["NOUN"] * 3000 + ["VERB"] * 2000 + ["DET"] * 1000  # 1/2, 1/3, 1/6
    train_control, test_control = control_tags(words, tags, ["w1", "unseen", "unseen"], seed=0)
    by_type = {}
    for word, tag in zip(words, train_control):
        assert by_type.setdefault(word, tag) == tag  # one tag per type
    assert test_control[0] == by_type["w1"] and test_control[1] == test_control[2]
    # One draw per type from the empirical distribution: 2,000 types, each share within 4 standard errors.
    shares = Counter(by_type.values())
    for tag, p in (("NOUN", 1 / 2), ("VERB", 1 / 3), ("DET", 1 / 6)):
        assert abs(shares[tag] / 2000 - p) < 4 * np.sqrt(p * (1 - p) / 2000)
    assert control_tags(words, tags, [], seed=0) == control_tags(words, tags, [], seed=0)
    assert control_tags(words, tags, [], seed=0) != control_tags(words, tags, [], seed=1)


def _task(train_vectors, train_words, train_tags, test_vectors, test_words, test_tags) -> TokenTask:
    return TokenTask("toy", ("only",), torch.as_tensor(train_vectors)[None], tuple(train_tags),
                     torch.as_tensor(test_vectors)[None], tuple(test_tags), tuple(train_words), tuple(test_words))


def test_selectivity_is_low_where_a_layer_holds_word_identity_and_high_where_it_holds_only_the_class():
    rng = np.random.default_rng(0)
    types, classes = 60, ("A", "B", "C")
    tag_of = {f"w{i}": classes[i % 3] for i in range(types)}
    words = [f"w{i}" for i in rng.integers(0, types, 3000)]
    tags = [tag_of[w] for w in words]
    split = 2000
    # Word identity: a one-hot vector per type; the probe can learn any tag per word, real or control.
    identity = np.eye(types)[[int(w[1:]) for w in words]]
    memorised = selectivity_scores(_task(identity[:split], words[:split], tags[:split], identity[split:],
                                         words[split:], tags[split:]))
    assert memorised["POS"][0] == pytest.approx(1.0) and memorised["control task"][0] == pytest.approx(1.0)
    assert memorised["selectivity"][0] == pytest.approx(0.0)
    # The class alone, plus noise: nothing tells the words of a class apart, so the control task
    # falls to about what guessing one tag per class gets, and selectivity is high.
    by_class = np.eye(3)[[classes.index(t) for t in tags]] + 0.1 * rng.standard_normal((3000, 3))
    syntax = selectivity_scores(_task(by_class[:split], words[:split], tags[:split], by_class[split:], words[split:],
                                      tags[split:]))
    assert syntax["POS"][0] == pytest.approx(1.0)
    assert syntax["control task"][0] < 0.6
    assert syntax["selectivity"] == [syntax["POS"][0] - syntax["control task"][0]]


def test_the_brown_task_keeps_each_word_with_its_own_universal_tag_and_vector():
    seen = []

    def encode(sentences):  # a vector that names the sentence and the position: [2, N, 2]
        seen.append([tuple(s) for s in sentences])
        rows = [(len(seen) * 1000 + i, j) for i, s in enumerate(sentences) for j in range(len(s))]
        return OccurrenceVectors(("a", "b"), torch.tensor(rows, dtype=torch.float32)[None].repeat(2, 1, 1))

    task = brown_pos_task(encode, train_sentences=20, test_sentences=10, max_tokens=50, seed=3)
    assert len(task.train_labels) == 50 and len(task.test_labels) == 50
    train = sample_brown("train", 20, seed=3)
    assert seen[0] == [s.words for s in train]
    for vector, word, tag in zip(task.train_layers[0], task.train_words, task.train_labels):
        sentence = train[int(vector[0]) - 1000]
        # The type is the lowercased form: what an uncased encoder sees.
        assert sentence.words[int(vector[1])].lower() == word and sentence.universal[int(vector[1])] == tag
        assert tag in UNIVERSAL_TAGS
    assert all(len(s.words) <= 40 for s in sample_brown("test", 300, seed=0))
    assert {s.text for s in sample_brown("test", 300, seed=0)} <= {s.text for s in load_brown("test")}
    assert 0 <= unseen_share(task) <= 1


def test_seen_words_keeps_the_test_words_whose_type_training_holds_with_their_vectors_and_tags():
    task = _task([[0.0], [1.0]], ["a", "b"], ["X", "Y"], [[2.0], [3.0], [4.0]], ["b", "c", "a"], ["Y", "X", "X"])
    assert unseen_share(task) == pytest.approx(1 / 3)
    seen = seen_words(task)
    assert seen.test_words == ("b", "a") and seen.test_labels == ("Y", "X")
    assert seen.test_layers[0, :, 0].tolist() == [2.0, 4.0]
    assert seen.train_words == task.train_words and unseen_share(seen) == 0
    with pytest.raises(ValueError, match="no test word"):
        seen_words(_task([[0.0]], ["a"], ["X"], [[1.0]], ["z"], ["X"]))
