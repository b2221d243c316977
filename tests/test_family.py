"""The family table: counts equal transformers' for the same configurations, and the published sizes."""

from __future__ import annotations

import pytest
import torch
import transformers

from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel
from ctxlib.studies.family import FAMILY, count, matches_published


def reference_count(name: str) -> int:
    """The same model built by transformers on the meta device."""
    configs = {
        "BERT-base": (transformers.BertModel, transformers.BertConfig()),
        "BERT-large": (transformers.BertModel, transformers.BertConfig(hidden_size=1024, num_hidden_layers=24,
                                                                       num_attention_heads=16, intermediate_size=4096)),
        "RoBERTa-base": (transformers.RobertaModel, transformers.RobertaConfig(max_position_embeddings=514,
                                                                               type_vocab_size=1)),
        "ALBERT-base": (transformers.AlbertModel, transformers.AlbertConfig(
            vocab_size=30000, embedding_size=128, hidden_size=768, num_attention_heads=12, intermediate_size=3072)),
        "ELECTRA-small": (transformers.ElectraForPreTraining, transformers.ElectraConfig(
            embedding_size=128, hidden_size=256, num_attention_heads=4, intermediate_size=1024)),
        "ELECTRA-base": (transformers.ElectraForPreTraining, transformers.ElectraConfig(
            embedding_size=768, hidden_size=768, num_attention_heads=12, intermediate_size=3072)),
    }
    cls, config = configs[name]
    with torch.device("meta"):
        return sum(p.numel() for p in cls(config).parameters())


@pytest.mark.parametrize("member", [m for m in FAMILY if m.config is not None], ids=lambda m: m.name)
def test_ctxlib_builds_each_member_with_transformers_parameter_count(member):
    assert count(member) == reference_count(member.name)


@pytest.mark.parametrize("member", FAMILY, ids=lambda m: m.name)
def test_counts_match_the_published_sizes(member):
    assert matches_published(count(member), member.published), (member.name, count(member))


def test_electra_small_is_the_papers_14m_at_its_two_figures():
    electra_small = next(m for m in FAMILY if m.name == "ELECTRA-small")
    assert round(count(electra_small) / 1e6) == 14  # Clark et al. 2020, Table 1


def test_matches_published_rule():
    assert matches_published(109_482_240, 110e6)     # within 3%
    assert not matches_published(100e6, 110e6)
    assert matches_published(13_483_008, 14e6, tolerance=0.04) and not matches_published(13_483_008, 14e6)


def test_albert_options_really_share_and_factorise():
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, embedding_size=8, share_layers=True)
    torch.manual_seed(0)
    model = BertModel(config).eval()
    layers = model.encoder.layer
    assert layers[0] is layers[1] is layers[2]
    assert model.embeddings.word_embeddings.weight.shape == (100, 8)
    ids = torch.randint(1, 100, (2, 7))
    out = model(ids, output_hidden_states=True)
    assert out.last_hidden_state.shape == (2, 7, 32) and len(out.hidden_states) == 4
    # Applying the one block three times by hand gives the same output.
    hidden = model.embeddings(ids, torch.zeros_like(ids))
    for _ in range(3):
        hidden, _ = layers[0](hidden, None, False)
    torch.testing.assert_close(out.last_hidden_state, hidden)
    # The MLM decoder ties to the narrow embedding table.
    pretraining = BertForPreTraining(config)
    assert pretraining.cls.predictions.decoder.weight is pretraining.bert.embeddings.word_embeddings.weight
    assert pretraining(ids).prediction_logits.shape == (2, 7, 100)


def test_albert_options_are_validated_and_not_saved_as_bert(tmp_path):
    with pytest.raises(ValueError, match="embedding_size must be a positive int, got 0"):
        BertConfig(embedding_size=0)
    with pytest.raises(TypeError, match=r"share_layers must be a bool \(True or False\), got int 1"):
        BertConfig(share_layers=1)
    small = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                       max_position_embeddings=8, share_layers=True)
    with pytest.raises(ValueError, match="no factorised embeddings, shared layers or RoPE"):
        BertModel(small).save_pretrained(tmp_path)
    assert "share_layers" not in BertConfig().to_dict() and "embedding_size" not in BertConfig().to_dict()
