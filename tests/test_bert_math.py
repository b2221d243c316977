"""Properties of the equations ctxlib.models.bert implements, checked by hand computation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ctxlib.layers.attention import MultiHeadSelfAttention, scaled_dot_product_attention
from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel

CONFIG = BertConfig(vocab_size=60, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                    intermediate_size=40, max_position_embeddings=16, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)


def test_embeddings_are_layer_norm_of_token_plus_position_plus_segment():  # eq 3.2
    model = BertModel(CONFIG).eval()
    ids = torch.tensor([[5, 9, 9, 2]])
    types = torch.tensor([[0, 0, 1, 1]])
    emb = model.embeddings
    by_hand = F.layer_norm(
        emb.word_embeddings.weight[ids[0]] + emb.position_embeddings.weight[:4] + emb.token_type_embeddings.weight[types[0]],
        (CONFIG.hidden_size,), emb.LayerNorm.weight, emb.LayerNorm.bias, CONFIG.layer_norm_eps,
    )
    hidden = model(ids, token_type_ids=types, output_hidden_states=True).hidden_states[0][0]
    torch.testing.assert_close(hidden, by_hand)
    # The same token (9) at two positions gets two different vectors: positions are added.
    assert not torch.allclose(hidden[1], hidden[2])


def test_multi_head_attention_equals_per_head_formula():  # eqs 4.1, 4.2, 4.3, 4.5
    torch.manual_seed(3)
    attn = MultiHeadSelfAttention(hidden_size=12, num_heads=3).eval()
    h = torch.randn(1, 5, 12)
    concat, probs = attn(h, need_weights=True)
    d_k = 4
    for i in range(3):
        rows = slice(i * d_k, (i + 1) * d_k)
        q = h[0] @ attn.query.weight[rows].T + attn.query.bias[rows]
        k = h[0] @ attn.key.weight[rows].T + attn.key.bias[rows]
        v = h[0] @ attn.value.weight[rows].T + attn.value.bias[rows]
        a = torch.softmax(q @ k.T / math.sqrt(d_k), dim=-1)
        torch.testing.assert_close(probs[0, i], a)
        torch.testing.assert_close(concat[0, :, rows], a @ v)


def test_scaled_dot_product_matches_torch_reference_with_bias():
    torch.manual_seed(4)
    q, k, v = torch.randn(3, 2, 4, 6, 8).unbind(0)
    bias = torch.randn(2, 1, 6, 6)
    out, probs = scaled_dot_product_attention(q, k, v, bias)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 4, 6))


def test_padding_does_not_change_the_real_tokens():
    model = BertModel(CONFIG).eval()
    short = torch.tensor([[3, 8, 11]])
    padded = torch.tensor([[3, 8, 11, 0, 0], [3, 8, 11, 42, 17]])
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]])
    alone = model(short).last_hidden_state
    batched = model(padded, attention_mask=mask).last_hidden_state
    # Whatever ids sit under the mask, the three real tokens are encoded as if alone.
    torch.testing.assert_close(batched[:, :3], alone.expand(2, -1, -1))


def test_mlm_head_is_tied_and_losses_add_up():  # eqs 4.6, 4.7
    torch.manual_seed(5)
    model = BertForPreTraining(CONFIG).eval()
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    ids = torch.randint(1, 60, (2, 7))
    labels = torch.full_like(ids, -100)
    labels[0, 1], labels[1, 4], labels[1, 5] = 7, 8, 9
    nsp = torch.tensor([1, 0])
    out = model(ids, labels=labels, next_sentence_label=nsp)
    # eq 4.7 by hand: transform, project on the word embeddings, add the output bias.
    head = model.cls.predictions
    hidden = model.bert(ids).last_hidden_state
    logits = head.transform(hidden) @ model.bert.embeddings.word_embeddings.weight.T + head.bias
    torch.testing.assert_close(out.prediction_logits, logits)
    log_p = logits.log_softmax(-1)
    mlm = -(log_p[0, 1, 7] + log_p[1, 4, 8] + log_p[1, 5, 9]) / 3  # mean over the masked set M
    nsp_by_hand = -(out.seq_relationship_logits.log_softmax(-1)[[0, 1], nsp]).mean()
    torch.testing.assert_close(out.mlm_loss, mlm)
    torch.testing.assert_close(out.nsp_loss, nsp_by_hand)
    torch.testing.assert_close(out.loss, mlm + nsp_by_hand)
    # masked_only: the same loss from the rows of M alone, in row-major order
    sparse = model(ids, labels=labels, next_sentence_label=nsp, masked_only=True)
    torch.testing.assert_close(sparse.prediction_logits, logits[labels != -100])
    torch.testing.assert_close(sparse.loss, out.loss)
    with pytest.raises(ValueError, match="masked_only=True needs labels"):
        model(ids, masked_only=True)


def test_config_round_trips_through_dict():
    assert BertConfig.from_dict(CONFIG.to_dict()) == CONFIG
    assert CONFIG.head_dim == 8


def test_causal_mask_hides_the_future_and_matches_transformers_decoder_mask():
    import transformers

    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12)
    torch.manual_seed(0)
    model = BertModel(config).eval()
    ids = torch.randint(1, 40, (2, 9))
    changed = ids.clone()
    changed[:, 6:] = torch.randint(1, 40, (2, 3))
    with torch.no_grad():
        causal, causal_changed = (model(x, causal=True).last_hidden_state for x in (ids, changed))
        both, both_changed = (model(x).last_hidden_state for x in (ids, changed))
        probs = model(ids, causal=True, output_attentions=True).attentions[0]
    # Changing tokens 6.. moves no earlier vector under the causal mask, and every vector without it.
    torch.testing.assert_close(causal[:, :6], causal_changed[:, :6])
    assert ((both[:, :6] - both_changed[:, :6]).abs().amax(-1) > 1e-4).all()
    assert probs.triu(1).abs().max() == 0  # no query attends to a later key
    # The reference: transformers' BertModel as a decoder (is_decoder=True applies a causal mask).
    reference = transformers.BertModel(transformers.BertConfig(**config.to_dict(), is_decoder=True),
                                       add_pooling_layer=False).eval()
    reference.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("pooler.")})
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    with torch.no_grad():
        expected = reference(ids, attention_mask=mask).last_hidden_state
        got = model(ids, attention_mask=mask, causal=True).last_hidden_state
    real = mask.bool()
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=1e-5)
