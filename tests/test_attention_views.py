"""√d_k scaling statistics, per-head statistics, and bertviz's offline rewrite."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ctxlib.analysis.attention_scaling import scaling_study, softmax_jacobian_norm
from ctxlib.analysis.attention_views import BERTVIZ_CDN_TO_VENDOR, head_statistics, offline_html


def test_unscaled_score_variance_grows_as_d_k_and_scaling_keeps_it_at_one():
    study = scaling_study(d_ks=(4, 64, 1024), keys=16, samples=2000)
    unscaled, scaled = study.variance["unscaled"], study.variance["scaled by √d_k"]
    # the variance of a sample of 32,000 scores is within 5% of its expectation here
    assert np.allclose(unscaled / np.array(study.d_k), 1, rtol=0.05)
    assert np.allclose(scaled, 1, rtol=0.05)
    # unscaled, the softmax saturates and passes ever less gradient; scaled, nothing changes
    assert study.max_weight["unscaled"][-1] > 0.9 and np.all(np.diff(study.jacobian_norm["unscaled"]) < 0)
    assert np.ptp(study.jacobian_norm["scaled by √d_k"]) < 0.02


def test_softmax_jacobian_norm_by_hand():
    uniform = torch.zeros(1, 4)  # p = 1/4 each: J = I/4 - 1/16
    expected = math.sqrt(4 * (1 / 4 - 1 / 16) ** 2 + 12 * (1 / 16) ** 2)
    assert float(softmax_jacobian_norm(uniform)) == pytest.approx(expected)
    assert float(softmax_jacobian_norm(torch.tensor([[0.0, 100.0]]))) == pytest.approx(0, abs=1e-6)


def test_head_statistics_on_minilm(minilm_pair):
    model, tokenizer = minilm_pair
    sentences = ["The bank raised its rates.", "She sat on the river bank, reading."]
    stats = head_statistics(model, tokenizer, sentences)
    assert stats.entropy.shape == stats.mass["[CLS]"].shape == (6, 12)
    # By hand, sentence by sentence (no padding): each query's entropy in bits and its
    # attention to the previous token and to [CLS], averaged over every query of both sentences.
    entropy, previous, cls, queries = torch.zeros(6, 12), torch.zeros(6, 12), torch.zeros(6, 12), 0
    for sentence in sentences:
        encoded = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            probs = torch.stack(model(**encoded, output_attentions=True).attentions)[:, 0]  # [L, H, T, T]
        entropy += -(probs * probs.log2()).sum(-1).sum(-1)
        previous += probs.diagonal(offset=-1, dim1=-2, dim2=-1).sum(-1)
        cls += probs[..., 0].sum(-1)
        queries += probs.shape[-1]
    torch.testing.assert_close(torch.from_numpy(stats.entropy), entropy / queries, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(torch.from_numpy(stats.mass["previous token"]), previous / queries, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(torch.from_numpy(stats.mass["[CLS]"]), cls / queries, atol=1e-5, rtol=1e-4)
    # Batching pads the shorter sentence; padding must not change a statistic.
    one_by_one = head_statistics(model, tokenizer, sentences, batch_size=1)
    torch.testing.assert_close(torch.from_numpy(one_by_one.entropy), torch.from_numpy(stats.entropy), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="sentences is empty"):
        head_statistics(model, tokenizer, [])


def test_offline_html_replaces_every_fetched_url():
    html = "".join(f'<script src="{url}"></script>' for url in BERTVIZ_CDN_TO_VENDOR)
    html += "// credit: https://github.com/tensorflow/tensor2tensor\n"
    out = offline_html(html)
    assert all(local in out for local in BERTVIZ_CDN_TO_VENDOR.values()) and "cdnjs" not in out
    with pytest.raises(ValueError, match="https://cdn.example.org/x.js"):
        offline_html('<script src="https://cdn.example.org/x.js"></script>')
