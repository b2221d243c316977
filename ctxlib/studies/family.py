"""The BERT family in one table (notes §7.1): configurations, counted parameters, published sizes.

Each member that is a BERT with different settings is a ``BertConfig`` that ctxlib builds:
RoBERTa is BERT's architecture with a larger byte-level vocabulary and one segment type;
ALBERT factorises the embeddings and shares one block across all layers
(``embedding_size``, ``share_layers``); ELECTRA's discriminator is a BERT encoder with the
replaced-token head in the pooler's place (the small one with factorised embeddings).
DeBERTa's disentangled attention is not a BERT setting, so its row is counted with
``transformers``' own ``DebertaV2Model``. Every count builds the model on the meta device: no
weights are allocated.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ctxlib.analysis.memory import parameter_count
from ctxlib.models.bert import BertConfig, BertPooler
from ctxlib.models.electra import ElectraDiscriminatorHead


@dataclass(frozen=True)
class FamilyMember:
    """A model of the family: its configuration (None where ctxlib does not build it), the layer
    on top of the encoder that the published count includes (a key of ``TOPS``, or None), the
    published parameter count and where it is published, what it changed, and a note where the
    published figure needs one."""

    name: str
    config: BertConfig | None
    top: str | None
    published: float
    source: str
    changed: str
    note: str = ""


# What sits on the encoder in a published count: BERT's pooler (the NSP/classification input),
# ELECTRA's per-token "replaced?" head.
TOPS = {"pooler": BertPooler, "replaced-token head": ElectraDiscriminatorHead}

DEBERTA_V3_BASE = {"vocab_size": 128100, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": True,
                   "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True,
                   "pos_att_type": ["p2c", "c2p"], "position_biased_input": False, "type_vocab_size": 0,
                   "max_relative_positions": -1, "layer_norm_eps": 1e-7}

FAMILY = (
    FamilyMember("BERT-base", BertConfig(), "pooler", 110e6, "Devlin et al. 2019",
                 "12 layers, width 768, 12 heads; MLM + NSP"),
    FamilyMember("BERT-large", BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                          intermediate_size=4096), "pooler", 340e6, "Devlin et al. 2019",
                 "24 layers, width 1024, 16 heads"),
    FamilyMember("RoBERTa-base", BertConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                                            pad_token_id=1, layer_norm_eps=1e-5), "pooler", 125e6, "Liu et al. 2019",
                 "same architecture; no NSP, dynamic masking, 10× the data, larger batches, byte-level BPE"),
    FamilyMember("ALBERT-base", BertConfig(vocab_size=30000, embedding_size=128, share_layers=True), "pooler", 12e6,
                 "Lan et al. 2020", "embeddings factorised (V×128, 128×768), one block shared by all 12 layers; "
                                    "sentence-order prediction instead of NSP"),
    FamilyMember("ELECTRA-small", BertConfig(embedding_size=128, hidden_size=256, num_attention_heads=4,
                                             intermediate_size=1024), "replaced-token head", 13.55e6,
                 "Google's checkpoint, as KerasHub counts it", "replaced-token detection: a discriminator on every "
                                                               "token, a small generator (§7.2)",
                 note="Clark et al. (2020, Table 1) print 14M, this count to two figures. KerasHub's count of "
                      "the released discriminator is the precise one (it puts a 65.8K pooler where this row has "
                      "the 66.0K replaced-token head). With the generator it is pretrained with (12 blocks "
                      "of width 64, sharing the embeddings), the whole ELECTRA-small is 14.2M, which "
                      "`ctxlib.models.electra.Electra` builds"),
    FamilyMember("ELECTRA-base", BertConfig(), "replaced-token head", 110e6, "Clark et al. 2020",
                 "BERT-base's encoder trained by replaced-token detection"),
    FamilyMember("DeBERTa-v3-base", None, None, 184e6, "He et al. 2023 (86M backbone + 98M embeddings)",
                 "disentangled attention (content and relative position scored apart), ELECTRA-style training"),
)


def deberta_v3_base_count() -> int:
    """DeBERTa-v3-base's parameters, from ``transformers``' ``DebertaV2Model`` on the meta device."""
    from transformers import DebertaV2Config, DebertaV2Model

    with torch.device("meta"):
        model = DebertaV2Model(DebertaV2Config(**DEBERTA_V3_BASE))
    return sum(p.numel() for p in model.parameters())


def count(member: FamilyMember) -> int:
    """The member's parameters, built on the meta device."""
    if member.config is None:
        return deberta_v3_base_count()
    encoder = parameter_count(member.config, pooler=False)
    if member.top is None:
        return encoder
    with torch.device("meta"):
        top = TOPS[member.top](member.config)
    return encoder + sum(p.numel() for p in top.parameters())


def matches_published(counted: int, published: float, tolerance: float = 0.03) -> bool:
    """Within ``tolerance`` (a fraction) of the published size."""
    return abs(counted / published - 1) <= tolerance
