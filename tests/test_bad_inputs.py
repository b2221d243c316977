"""Bad input across the public API, as a new user might give it: each is a clear error naming
the argument and what is allowed. Every case here returned a silent wrong answer (or a deep
trace) before: k=0 neighbours, NaN similarities, a str sentence read character by character,
causal="no" taken as True, "7" taken as example 7, a NaN learning-rate scale."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlib._checks import check_texts, check_token_lists
from ctxlib.analysis.neighbours import nearest
from ctxlib.analysis.polysemy import checked_study
from ctxlib.data.task_formats import entity_f1
from ctxlib.layers.positions import alibi_bias, apply_rope
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.scalar_mix import ScalarMix
from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel, mlm_cross_entropy
from ctxlib.objectives.masking import IGNORE_INDEX, Masker, mask_tokens
from ctxlib.objectives.nsp import SentencePair, encode_pairs, sentence_pairs
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
    # Each of the following returned a silent wrong answer or a deep trace before (issue 32).
    (lambda: alibi_bias(2, 4, causal="no"), TypeError, r"causal must be a bool \(True or False\), got str 'no'"),
    (lambda: apply_rope(torch.zeros(8)), ValueError, r"x must have at least 2 dimensions \[\.\.\., T, d\].*got shape \(8,\)"),
    (lambda: ScalarMix(2)([torch.ones(1, 3, 2)] * 2, torch.ones(1, 3, dtype=torch.bool)), ValueError,
     "mask is read only with layer_norm=True"),
    (lambda: nearest(torch.randn(5, 3), list("abcde"), torch.zeros(1, 3)), ValueError,
     r"queries row\(s\) \[0\] are zero vectors, whose cosine similarity is undefined"),
    (lambda: nearest(torch.cat([torch.randn(4, 3), torch.zeros(1, 3)]), list("abcde"), torch.randn(1, 3)), ValueError,
     r"table row\(s\) \[4\] are zero vectors"),
    (lambda: entity_f1([["B-PER", "O"]], [["B-PER", "X-FOO"]]), ValueError,
     "predicted holds the tag 'X-FOO'; BIO tags are O, B-TYPE or I-TYPE"),
    (lambda: entity_f1([["PER"]], [["O"]]), ValueError, "gold holds the tag 'PER'"),
    (lambda: sentence_pairs(["the bank", "a river"]), TypeError,
     r"documents\[0\] must be a list of sentences \(token-id lists\), got str"),
    (lambda: sentence_pairs([["the bank"], ["a river"]]), TypeError,
     r"documents\[0\]\[0\] must be a list of int token ids, got 'the bank'"),
    (lambda: sentence_pairs("the bank"), TypeError, "documents must be a list of documents"),
    (lambda: check_token_lists("sentences", "the bank"), TypeError, "sentences must be a list of token lists"),
    (lambda: check_token_lists("sentences", ["the bank"]), TypeError,
     r"sentences\[0\] must be a list of tokens, got str 'the bank'"),
    (lambda: check_token_lists("sentences", [["the", 1]]), TypeError, r"sentences\[0\] must hold str tokens"),
    (lambda: check_texts("sentences", "the bank"), TypeError, "sentences must be a list of str, got str"),
    (lambda: checked_study(None), TypeError, "study must be a PolysemyStudy .*, got NoneType"),
])
def test_bad_input_is_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ----------------------------------------------------------------------------------------------
# Functions that read a caller's model give it back in the mode it came in (before: left in
# eval mode, so a model in the middle of training went on without dropout).

def _tiny_pretraining(tokenizer) -> BertForPreTraining:
    return BertForPreTraining(BertConfig(vocab_size=len(tokenizer), hidden_size=8, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=8, max_position_embeddings=32))


@pytest.mark.parametrize("training", [True, False])
def test_reading_a_model_leaves_its_mode_as_it_was(minilm_pair, training):
    from ctxlib.analysis.attention_views import head_statistics
    from ctxlib.analysis.mlm_scores import fill_mask
    from ctxlib.analysis.occurrences import bert_word_vectors

    model, tokenizer = minilm_pair
    pretraining = _tiny_pretraining(tokenizer)
    calls = [(model, lambda: bert_word_vectors(model, tokenizer, [["the", "bank"]])),
             (model, lambda: head_statistics(model, tokenizer, ["the bank ."])),
             (pretraining, lambda: fill_mask(pretraining, tokenizer, "the [MASK] .", k=2))]
    was = model.training
    try:
        for net, call in calls:
            net.train(training)
            net.encoder.layer[0].eval() if hasattr(net, "encoder") else net.bert.encoder.layer[0].eval()  # a mixed mode
            modes = [m.training for m in net.modules()]
            call()
            assert [m.training for m in net.modules()] == modes
    finally:
        model.train(was)


def test_fill_mask_refuses_more_tokens_than_the_vocabulary_holds(minilm_pair):
    from ctxlib.analysis.mlm_scores import fill_mask

    _, tokenizer = minilm_pair
    with pytest.raises(ValueError, match=f"k must be at most the vocabulary's {len(tokenizer)} tokens, got"):
        fill_mask(_tiny_pretraining(tokenizer), tokenizer, "the [MASK] .", k=len(tokenizer) + 1)


def test_text_lists_are_refused_where_token_lists_belong(minilm_pair):
    from ctxlib.analysis.occurrences import bert_word_vectors

    model, tokenizer = minilm_pair
    with pytest.raises(TypeError, match=r"sentences\[0\] must be a list of tokens, got str 'the bank'"):
        bert_word_vectors(model, tokenizer, ["the bank"])  # before: one "word" per character


def test_a_tag_on_padding_is_refused():
    """Before: the head trained on a position attention never let the encoder read."""
    from ctxlib.models.heads import BertForTokenClassification

    model = BertForTokenClassification(TINY, num_labels=3)
    labels = torch.tensor([[0, 1, 2]])
    with pytest.raises(ValueError, match=r"labels tag padding \(attention_mask 0\) at 1 position\(s\), the first at "
                                         r"row 0, position 2"):
        model(IDS, attention_mask=torch.tensor([[1, 1, 0]]), labels=labels)
    assert model(IDS, attention_mask=torch.tensor([[1, 1, 0]]), labels=torch.tensor([[0, 1, IGNORE_INDEX]])).loss > 0
