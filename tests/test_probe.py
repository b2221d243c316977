"""Separation scores against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from ctxlib.analysis.probe import loo_1nn_accuracy, loo_chance, separation_by_layer, silhouette
from ctxlib.models.pretrained import minilm


def test_silhouette_by_hand():
    # Four unit vectors on a circle: two near 0°, two near 90°, cosine distance 1 - cos.
    angles = np.deg2rad([0, 10, 90, 100])
    x = np.c_[np.cos(angles), np.sin(angles)]
    labels = ["a", "a", "b", "b"]
    d = 1 - x @ x.T
    s = []
    for i in range(4):
        own = [j for j in range(4) if j != i and labels[j] == labels[i]]
        other = [j for j in range(4) if labels[j] != labels[i]]
        a, b = d[i, own].mean(), d[i, other].mean()
        s.append((b - a) / max(a, b))
    assert silhouette(x, labels) == pytest.approx(np.mean(s))


def test_1nn_accuracy_by_hand_and_ties():
    x = np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0], [1.0, 0.05]])
    labels = ["a", "a", "b", "b", "b"]  # the last point sits among the a's
    # Point 4's neighbour is an a (wrong); points 0 and 1 have point 4 as nearest (wrong).
    assert loo_1nn_accuracy(x, labels) == pytest.approx(2 / 5)
    same = np.ones((6, 3))
    labels = [0, 0, 0, 1, 1, 1]
    # Identical points: every other point is a tied neighbour; 2 of 5 share the label.
    assert loo_1nn_accuracy(same, labels) == pytest.approx(2 / 5)


def test_euclidean_counts_length_where_cosine_does_not():
    # Two groups by direction, with lengths that cross them: a short and a long vector of each.
    x = np.array([[1.0, 0.0], [9.0, 4.0], [0.0, 1.0], [4.0, 9.0]])
    labels = ["a", "a", "b", "b"]
    assert loo_1nn_accuracy(x, labels) == 1.0  # cosine: only directions
    # Euclidean: the two short vectors are each other's nearest, the long ones too.
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    expected = np.mean([labels[j] == labels[i] for i, j in enumerate(d.argmin(axis=1))])
    assert loo_1nn_accuracy(x, labels, metric="euclidean") == pytest.approx(expected) == 0.0
    sep = separation_by_layer(x[None], labels, ["only"], metric="euclidean")
    assert sep.nn_accuracy == (0.0,) and sep.silhouette[0] < 0 < silhouette(x, labels)


def test_separation_reports_chance_and_orders_layers():
    rng = np.random.default_rng(0)
    labels = [0] * 10 + [1] * 10
    mixed = rng.normal(size=(20, 8))
    apart = np.r_[rng.normal(size=(10, 8)) + 6, rng.normal(size=(10, 8)) - 6]
    sep = separation_by_layer(np.stack([np.ones((20, 8)), mixed, apart]), labels, ["static", "mixed", "apart"])
    assert sep.chance == pytest.approx(2 * 10 * 9 / (20 * 19))
    assert sep.nn_accuracy[0] == pytest.approx(sep.chance) and sep.silhouette[0] == 0
    assert sep.nn_accuracy[2] == 1.0 and sep.silhouette[2] > 0.8 > sep.silhouette[1]
    assert sep.best_layer() == "apart"


def test_bad_input():
    with pytest.raises(ValueError, match=r"labels must have one entry per vector \(3\)"):
        silhouette(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match=r"at least two groups"):
        loo_1nn_accuracy(np.eye(3), [1, 1, 1])
    with pytest.raises(ValueError, match=r"vectors must have 3 dimensions"):
        separation_by_layer(np.eye(3), [0, 1, 1], ["x"])
    with pytest.raises(ValueError, match=r"layer_names must name each of the 1 layers, got 2"):
        separation_by_layer(np.eye(3)[None], [0, 1, 1], ["x", "y"])
    with pytest.raises(ValueError, match=r"metric.*'manhattan'"):
        loo_1nn_accuracy(np.eye(3), [0, 1, 1], metric="manhattan")


def test_linear_probe_finds_linear_structure_and_not_noise():
    from ctxlib.analysis.probe import linear_probe_accuracy

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 10))
    y = (x[:, 3] + 0.5 * x[:, 7] > 0).astype(int)  # a linear property
    noise = rng.integers(0, 2, size=600)  # a property the vectors do not hold
    assert linear_probe_accuracy(x[:400], y[:400], x[400:], y[400:]) > 0.95
    # 200 test points: chance 0.5 with standard deviation 0.035; 0.62 is more than 3 sigma away.
    assert linear_probe_accuracy(x[:400], noise[:400], x[400:], noise[400:]) < 0.62


def test_nearest_neighbours_by_cosine():
    import torch

    from ctxlib.analysis.neighbours import nearest

    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.1]])
    names = ["east", "north", "north-east", "west"]
    result = nearest(table, names, torch.tensor([[2.0, 0.2], [1.0, 0.0]]), k=2, exclude_self=[None, "east"])
    assert [n for n, _ in result[0]] == ["east", "north-east"]
    assert [n for n, _ in result[1]] == ["north-east", "north"]
    assert result[1][0][1] == pytest.approx(2 ** -0.5)
    with pytest.raises(ValueError, match=r"names must name each of the 4 rows, got 3"):
        nearest(table, names[:3], table)


def test_held_out_nearest_neighbour_accuracy():
    from ctxlib.analysis.probe import nn_accuracy

    train = np.array([[1.0, 0.0], [0.0, 1.0]])
    test = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert nn_accuracy(train, ["a", "b"], test, ["a", "b", "b"]) == pytest.approx(2 / 3)


def test_identical_embedding_rows_score_chance_on_euclidean_distance():
    """MiniLM's static row of *spring*, given to 45 occurrences of three senses (chapter 1's static
    layer): every pair ties, so 1-NN scores the chance level, 14/44. sklearn's euclidean distances
    between these identical rows differ by ~2e-8 from one pair to the next (the matrix product's
    rounding), which once broke the ties and scored 'static' below chance."""
    model, tokenizer = minilm()
    row = model.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("spring")].detach()
    vectors = row.repeat(45, 1)
    senses = ["season", "coil", "source"] * 15
    assert loo_1nn_accuracy(vectors, senses, metric="euclidean") == pytest.approx(loo_chance(senses), abs=1e-12)
    assert loo_1nn_accuracy(vectors, senses, metric="cosine") == pytest.approx(loo_chance(senses), abs=1e-12)
