"""Position schemes inside a causal LM: causality, RoPE in attention, ALiBi, and the study."""

from __future__ import annotations

import pytest
import torch

from ctxlib.data.corpus import generate_corpus
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.attention import MultiHeadSelfAttention, causal_bias
from ctxlib.studies.extrapolation import SCHEMES, PositionalLM, extrapolation_study, word_stream
from ctxlib.training.loop import TrainConfig


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_is_causal(scheme):
    torch.manual_seed(0)
    model = PositionalLM(scheme, vocab_size=30, max_length=16, hidden=16, heads=2, intermediate=32).eval()
    ids = torch.randint(0, 30, (2, 12))
    changed = ids.clone()
    changed[:, 8:] = torch.randint(0, 30, (2, 4))
    with torch.no_grad():
        a, b = model(ids), model(changed)
    # a prediction at position t depends on positions <= t only
    torch.testing.assert_close(a[:, :8], b[:, :8])
    assert not torch.allclose(a[:, 8:], b[:, 8:])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_only_the_position_free_scheme_ignores_word_order(scheme):
    # One layer without positions attends over the *set* of earlier words: reordering them
    # cannot change the next prediction. Every position scheme must notice the reordering.
    torch.manual_seed(0)
    model = PositionalLM(scheme, vocab_size=30, max_length=16, hidden=16, layers=1, heads=2, intermediate=32).eval()
    ids = torch.tensor([[3, 7, 11, 19, 5]])
    reordered = torch.tensor([[19, 3, 11, 7, 5]])
    with torch.no_grad():
        same = torch.allclose(model(ids)[0, -1], model(reordered)[0, -1], atol=1e-5)
    assert same == (scheme == "none")


def test_rotary_attention_rotates_queries_and_keys():
    torch.manual_seed(0)
    attention = MultiHeadSelfAttention(8, 2).eval()
    x = torch.randn(1, 5, 8)
    plain = attention(x, need_weights=True)[1]
    attention.rotary = True
    rotated = attention(x, need_weights=True)[1]
    assert not torch.allclose(plain, rotated)
    # fast and explicit paths agree with RoPE on
    torch.testing.assert_close(attention(x)[0], attention(x, need_weights=True)[0], atol=1e-6, rtol=1e-5)


def test_causal_bias_hides_the_future():
    bias = causal_bias(4)[0, 0]
    assert (bias.triu(1) < -1e30).sum() == 6 and (bias.tril() == 0).all()


def test_study_runs_cached_and_rejects_unknown_schemes(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus = generate_corpus(num_documents=60, seed=2)
    training = TrainConfig(steps=3, lr=1e-3, progress=False)
    study = extrapolation_study(corpus, schemes=("ALiBi", "learned"), train_length=8, training=training, batch_size=4)
    assert study.lengths == (8, 16, 32) and set(study.loss) == {"ALiBi", "learned"}
    assert all(len(v) == 3 and all(x > 0 for x in v) for v in study.loss.values())
    assert extrapolation_study(corpus, schemes=("ALiBi", "learned"), train_length=8, training=training,
                               batch_size=4) == study  # from the cache
    stream = word_stream([("a", "b"), ("c",)], Vocabulary(["a", "b", "c"]))
    assert stream.tolist() == [4, 5, 3, 6, 3]  # </S> after each sentence
    with pytest.raises(ValueError, match="scheme must be one of"):
        PositionalLM("relative", 10, 8)
