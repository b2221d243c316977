"""Position schemes inside a causal LM: causality, RoPE in attention, ALiBi, and the study."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlib.data.corpus import generate_corpus
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.attention import MultiHeadSelfAttention, causal_bias
from ctxlib.layers.positions import apply_rope
from ctxlib.models.bert import BertConfig, BertModel
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
    # In float64: from BERT's N(0, 0.02) start the logits differ by ~1e-6 across orders, which
    # float32's rounding could hide; a set's sum is the same up to ~1e-15.
    model = PositionalLM(scheme, vocab_size=30, max_length=16, hidden=16, layers=1, heads=2, intermediate=32)
    model = model.double().eval()
    ids = torch.tensor([[3, 7, 11, 19, 5]])
    reordered = torch.tensor([[19, 3, 11, 7, 5]])
    with torch.no_grad():
        same = torch.allclose(model(ids)[0, -1], model(reordered)[0, -1], rtol=0, atol=1e-12)
    assert same == (scheme == "none")


def test_rotary_attention_rotates_queries_and_keys():
    torch.manual_seed(0)
    plain_attention = MultiHeadSelfAttention(8, 2).eval()
    attention = MultiHeadSelfAttention(8, 2, rotary=True).eval()
    attention.load_state_dict(plain_attention.state_dict())
    x = torch.randn(1, 5, 8)
    plain, rotated = plain_attention(x, need_weights=True)[1], attention(x, need_weights=True)[1]
    assert not torch.allclose(plain, rotated)
    # By hand: the scores of rotated queries and keys (eq of RoPE, ctxlib.layers.positions).
    q, k = (apply_rope(attention.split_heads(layer(x))) for layer in (attention.query, attention.key))
    torch.testing.assert_close(rotated, (q @ k.transpose(-2, -1) / 2).softmax(-1))
    # fast and explicit paths agree with RoPE on
    torch.testing.assert_close(attention(x)[0], attention(x, need_weights=True)[0], atol=1e-6, rtol=1e-5)
    with pytest.raises(TypeError, match="rotary must be a bool"):
        MultiHeadSelfAttention(8, 2, rotary="yes")


def test_rope_is_a_config_field_saved_with_the_model(tmp_path):
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=6, position_embedding_type="rotary")
    assert BertConfig.from_dict(config.to_dict()) == config
    model = BertModel(config).eval()
    assert model.embeddings.position_embeddings is None
    assert all(layer.attention.self.rotary for layer in model.encoder.layer)
    # No position table, so no length limit: a sequence longer than max_position_embeddings is encoded.
    ids = torch.tensor([[3, 7, 11, 19, 5, 8, 9, 4, 2, 6]])
    assert model(ids).last_hidden_state.shape == (1, 10, 8)
    with pytest.raises(ValueError, match="no factorised embeddings, shared layers or RoPE"):
        model.save_pretrained(tmp_path)
    lm = PositionalLM("RoPE", 10, 8)
    assert all(layer.attention.self.rotary for layer in lm.layers)
    assert not any(layer.attention.self.rotary for layer in PositionalLM("ALiBi", 10, 8).layers)


def test_causal_bias_hides_the_future():
    bias = causal_bias(4)[0, 0]
    assert (bias.triu(1) < -1e30).sum() == 6 and (bias.tril() == 0).all()


def test_study_runs_cached_and_rejects_unknown_schemes(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus = generate_corpus(num_documents=60, seed=2)
    training = TrainConfig(steps=3, lr=1e-3, progress=False)
    study = extrapolation_study(corpus, schemes=("ALiBi", "learned"), train_length=8, training=training, batch_size=4)
    assert study.lengths == (8, 16, 32) and set(study.loss) == {"ALiBi", "learned"}
    # Three steps barely move a model initialised near 0: its next-word distribution is still close
    # to uniform, so the held-out loss is close to ln |V|, at every length.
    uniform = math.log(len(Vocabulary(corpus.vocabulary(min_count=2))))
    assert all(len(v) == 3 and all(abs(x - uniform) < 0.1 * uniform for x in v) for v in study.loss.values())
    assert extrapolation_study(corpus, schemes=("ALiBi", "learned"), train_length=8, training=training,
                               batch_size=4) == study  # from the cache
    stream = word_stream([("a", "b"), ("c",)], Vocabulary(["a", "b", "c"]))
    assert stream.tolist() == [4, 5, 3, 6, 3]  # </S> after each sentence
    with pytest.raises(ValueError, match="scheme must be one of"):
        PositionalLM("relative", 10, 8)
