"""The long-range recall task and the two encoders that Chapter 2.6 compares."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from ctxlib.studies import long_range
from ctxlib.studies.long_range import RecallModel, median_seconds, recall_accuracy, recall_batches


def test_recall_batches_put_the_key_first():
    ids, keys = next(recall_batches(length=20, batch_size=64, seed=0))
    assert ids.shape == (64, 20)
    assert torch.equal(ids[:, 0], keys + 1)
    # The noise uses the key ids too, so only the position tells the key apart.
    assert set(ids[:, 1:].unique().tolist()) == set(range(1, 16))
    assert 10 < int(keys.sum()) < 54  # both keys occur (binomial(64, 1/2): 10..54 is > 7 sigma)


@pytest.mark.parametrize("kind", ["BiLSTM", "self-attention"])
def test_encoders_read_out_two_logits(kind):
    model = RecallModel(kind, max_length=12)
    ids, _ = next(recall_batches(12, 4, 0))
    assert model(ids).shape == (4, 2)


def test_median_seconds_times_each_call_after_a_warm_up(monkeypatch):
    # A scripted clock, not a real one: each call of run() takes the next of these durations,
    # so the answer is known exactly whatever else the machine is doing.
    durations = iter([100.0, 3.0, 1.0, 2.0])  # the warm-up (never timed), then three timed calls
    now = [0.0]
    monkeypatch.setattr(long_range, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    calls = []

    def run():
        calls.append(torch.is_grad_enabled())
        now[0] += next(durations)

    assert median_seconds(run, repeats=3) == 2.0
    assert len(calls) == 4 and not any(calls)  # one warm-up and three timed calls, all without gradients


def test_short_distance_is_learned():
    # Distance 4 is easy for both; anything near chance means the training or read-out is broken.
    assert recall_accuracy("self-attention", 4, steps=80) > 0.9
    assert recall_accuracy("BiLSTM", 4, steps=80) > 0.9


def test_bad_kind():
    with pytest.raises(ValueError, match=r"kind must be one of \['BiLSTM', 'self-attention'\], got 'GRU'"):
        RecallModel("GRU", 8)
