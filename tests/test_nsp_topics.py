"""What NSP learns: probabilities from either kind of model, contrast accuracy, the topic matcher."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from ctxlib.data.corpus import generate_corpus
from ctxlib.models.bert import BertConfig, BertForPreTraining
from ctxlib.models.heads import BertForSequenceClassification
from ctxlib.objectives.nsp import NEXT, SentencePair, encode_pairs, sentence_pairs
from ctxlib.studies.nsp_topics import contrast_accuracy, minilm_nsp, nsp_probabilities, topic_matcher_accuracy
from ctxlib.training.pretraining_data import book_tokenizer, document_ids


@pytest.fixture(scope="module")
def small():
    corpus = generate_corpus(num_documents=200, seed=5)
    return corpus, book_tokenizer(corpus, vocab_size=400)


def tiny_config(tokenizer) -> BertConfig:
    return BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=128)


@pytest.mark.parametrize("kind", ["pretraining", "classifier"])
def test_nsp_probabilities_are_the_softmax_of_the_pair_logits(small, kind):
    corpus, tokenizer = small
    torch.manual_seed(0)
    config = tiny_config(tokenizer)
    model = BertForPreTraining(config) if kind == "pretraining" else BertForSequenceClassification(config, 2)
    pairs = sentence_pairs(document_ids(corpus, "heldout", tokenizer)[0])[:7]
    probabilities = nsp_probabilities(model, tokenizer, pairs, batch_size=3)
    batch = encode_pairs(pairs, cls_id=tokenizer.cls_token_id, sep_id=tokenizer.sep_token_id,
                         pad_id=tokenizer.pad_token_id, max_length=128)
    assert model.training  # nsp_probabilities gave the model back in the mode it came in
    with torch.no_grad():
        out = model.eval()(batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"])
    logits = out.seq_relationship_logits if kind == "pretraining" else out.logits
    torch.testing.assert_close(probabilities, logits.softmax(-1)[:, NEXT])


class Always(torch.nn.Module):
    """A stand-in NSP model that answers IsNext (or NotNext) for every pair."""

    def __init__(self, is_next: bool) -> None:
        super().__init__()
        self.is_next = is_next
        self.config = SimpleNamespace(max_position_embeddings=128)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        logits = torch.zeros(len(input_ids), 2)
        logits[:, NEXT if self.is_next else 1 - NEXT] = 1.0
        return SimpleNamespace(logits=logits)


def test_contrast_accuracy_scores_successors_and_each_negative(small):
    corpus, tokenizer = small
    yes = contrast_accuracy(Always(True), tokenizer, corpus, split="train", per_kind=50)
    no = contrast_accuracy(Always(False), tokenizer, corpus, split="train", per_kind=50)
    assert yes == {"next": 1.0, "other topic": 0.0, "same topic": 0.0, "same document": 0.0}
    assert no == {"next": 0.0, "other topic": 1.0, "same topic": 1.0, "same document": 1.0}


def test_topic_matcher_accuracy_is_half_plus_the_other_topic_share(small):
    corpus, tokenizer = small
    documents, topics = document_ids(corpus, "train", tokenizer)
    accuracy = topic_matcher_accuracy(corpus, tokenizer, split="train")
    # Right on every IsNext pair; on a NotNext pair exactly when B's document has another topic,
    # which a random other document has with probability ~ 1 - 1/number of topics.
    share_other = 1 - 1 / len(set(topics))
    pairs = sentence_pairs(documents)
    negatives = sum(not p.is_next for p in pairs) / len(pairs)
    expected = (1 - negatives) + negatives * share_other
    assert abs(accuracy - expected) < 0.03


def test_minilm_nsp_trains_and_is_cached(small, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus, _ = small
    model, history, tokenizer = minilm_nsp(corpus, steps=2, batch_size=4)
    assert len(history.train["loss"]) == 2 and isinstance(model, BertForSequenceClassification)
    again, _, _ = minilm_nsp(corpus, steps=2, batch_size=4)
    assert torch.equal(model.classifier.weight, again.classifier.weight)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        minilm_nsp(corpus, steps=0)


def test_empty_input_is_a_clear_error(small):
    from ctxlib.training.pretraining_data import collate

    _, tokenizer = small
    with pytest.raises(ValueError, match="pairs is empty"):
        nsp_probabilities(Always(True), tokenizer, [])
    with pytest.raises(ValueError, match="rows is empty"):
        collate([], pad_id=0)


def test_pairs_longer_than_the_model_reads_are_cut_to_its_position_limit(small):
    corpus, tokenizer = small
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12)
    long = [SentencePair(tuple(range(10, 30)), tuple(range(30, 50)), True)]
    model = BertForPreTraining(config).eval()
    probabilities = nsp_probabilities(model, tokenizer, long)
    # By hand: the pair encoded to the model's 12 positions, P(IsNext) the softmax's entry 0.
    batch = encode_pairs(long, cls_id=tokenizer.cls_token_id, sep_id=tokenizer.sep_token_id,
                         pad_id=tokenizer.pad_token_id, max_length=12)
    assert batch["input_ids"].shape == (1, 12)
    with torch.no_grad():
        logits = model(batch["input_ids"], token_type_ids=batch["token_type_ids"]).seq_relationship_logits
    torch.testing.assert_close(probabilities, logits.softmax(-1)[:, 0])
