"""Bad input across the public API, as a new user might give it: each is a clear error naming
the argument and what is allowed. Every case here returned a silent wrong answer (or a deep
trace) before: k=0 neighbours, NaN similarities, a str sentence read character by character,
causal="no" taken as True, "7" taken as example 7, a NaN learning-rate scale."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlib.analysis.neighbours import nearest
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.scalar_mix import ScalarMix
from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel, mlm_cross_entropy
from ctxlib.objectives.masking import IGNORE_INDEX, Masker, mask_tokens
from ctxlib.objectives.nsp import SentencePair, encode_pairs
from ctxlib.studies.finetuning import FineTuning
from ctxlib.training.loop import parameter_groups

TINY = BertConfig(vocab_size=10, hidden_size=4, num_hidden_layers=1, num_attention_heads=1, intermediate_size=4,
                  max_position_embeddings=4)
IDS = torch.ones(1, 3, dtype=torch.long)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: nearest(torch.randn(5, 3), list("abcde"), torch.randn(2, 3), k=0), ValueError,
     "k must be a positive int, got 0"),
    (lambda: nearest(torch.randn(5, 3), list("abcde"), torch.randn(2, 3), k=9), ValueError,
     "k=9 is more than the table's 5 rows"),
    (lambda: nearest(torch.randn(5, 3), list("abcde"), torch.tensor([[math.nan, 0.0, 0.0]])), ValueError,
     r"queries holds 1 NaN or infinite value\(s\)"),
    (lambda: ScalarMix(2, initial_weights=[math.nan, 0.0]), ValueError, r"initial_weights\[0\] must be finite"),
    (lambda: ScalarMix(2, layer_norm="no"), TypeError, r"layer_norm must be a bool \(True or False\), got str 'no'"),
    (lambda: ScalarMix(1, layer_norm=True)([torch.ones(1, 3, 2)], torch.ones(1, 2, dtype=torch.long)), ValueError,
     r"mask must have shape \(1, 3\), got \(1, 2\)"),
    (lambda: ScalarMix(1)([[1.0, 2.0]]), TypeError, "layers must be floating-point tensors, got \\['list'\\]"),
    (lambda: encode_pairs([SentencePair((), (3, 4), True)], cls_id=1, sep_id=2, pad_id=0), ValueError,
     r"pairs\[0\] must be a SentencePair with a token in A and in B"),
    (lambda: Masker(100, 3)(IDS, ["7"], 0), TypeError, "example id must be an int, got str '7'"),
    (lambda: Masker(100, 3)(IDS, [2.7], 0), TypeError, "example id must be an int, got float 2.7"),
    (lambda: mask_tokens(IDS, vocab_size=10, mask_token_id=3, generator=0), TypeError,
     "generator must be a torch.Generator or None, got int"),
    (lambda: parameter_groups(torch.nn.Sequential(torch.nn.Linear(2, 2)), 0.1, 1e-3, {"0": math.nan}), ValueError,
     r"lr_scale\['0'\] must be finite, got nan"),
    (lambda: parameter_groups(torch.nn.Sequential(torch.nn.Linear(2, 2)), 0.1, 1e-3, {"0": -1.0}), ValueError,
     r"lr_scale\['0'\] must be > 0, got -1.0"),
    (lambda: Vocabulary("bank"), TypeError, "tokens must be an iterable of str tokens, not one str"),
    (lambda: Vocabulary([1, 2]), TypeError, r"tokens must be str, got \[1, 2\]"),
    (lambda: Vocabulary(["a"]).encode("a b", pad=0), TypeError, "sentences must be a list of token lists"),
    (lambda: Vocabulary(["a"]).encode(["a b"], pad=0), TypeError, "sentences must be a list of token lists"),
    (lambda: BertModel(TINY)(IDS, causal="no"), TypeError, r"causal must be a bool \(True or False\), got str 'no'"),
    (lambda: BertModel(TINY)(IDS, output_hidden_states=1), TypeError, "output_hidden_states must be a bool"),
    (lambda: BertForPreTraining(TINY)(IDS, masked_only="yes"), TypeError, "masked_only must be a bool"),
    (lambda: mlm_cross_entropy(torch.randn(1, 3, 10), torch.full((1, 3), IGNORE_INDEX)), ValueError,
     r"labels mark no masked position \(all are -100\): the MLM loss.* is undefined"),  # before: NaN
    (lambda: BertForPreTraining(TINY)(IDS, labels=torch.full((1, 3), IGNORE_INDEX)), ValueError,
     "labels mark no masked position"),
    (lambda: FineTuning("ner", crf="no"), TypeError, r"crf must be a bool \(True or False\), got str 'no'"),
    (lambda: FineTuning("topic", epochs=math.inf), ValueError, "epochs must be finite, got inf"),
    (lambda: FineTuning("topic", lr=-5e-5), ValueError, "lr must be > 0, got -5e-05"),
    (lambda: FineTuning("topic", head_lr_factor=math.nan), ValueError, "head_lr_factor must be finite, got nan"),
    (lambda: FineTuning("topic", weight_decay=-0.01), ValueError, "weight_decay must be >= 0, got -0.01"),
    (lambda: FineTuning("topic", seed=1.5), TypeError, "seed must be an int, got float 1.5"),
])
def test_bad_input_is_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
