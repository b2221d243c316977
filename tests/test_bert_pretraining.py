"""The mini-BERT's data pipeline: WordPiece vocabulary, NSP + MLM batches, scores, fill-mask."""

from __future__ import annotations


import pytest
import torch

from ctxlib.bert import BertConfig
from ctxlib.bert_pretraining import (SPECIAL_TOKENS, book_bert, book_tokenizer, corpus_pairs, fill_mask,
                                     most_frequent_token_accuracy, pretraining_batch, pretraining_batches)
from ctxlib.corpus import generate_corpus
from ctxlib.masking import IGNORE_INDEX
from ctxlib.train import TrainConfig


@pytest.fixture(scope="module")
def small():
    corpus = generate_corpus(num_documents=120, seed=3)
    return corpus, book_tokenizer(corpus, vocab_size=400)


def test_wordpiece_vocabulary_is_learned_from_the_corpus_and_reproducible(small):
    corpus, tokenizer = small
    assert len(tokenizer) == 400 and tokenizer.convert_ids_to_tokens(list(range(5))) == list(SPECIAL_TOKENS)
    frequent = corpus.vocabulary()[0]
    assert tokenizer.tokenize(frequent) == [frequent.lower()]  # a frequent word is one piece
    pieces = tokenizer.tokenize("unbelievably")
    assert len(pieces) > 1 and all(p.startswith("##") for p in pieces[1:])
    assert "".join(p.removeprefix("##") for p in pieces) == "unbelievably"
    again = book_tokenizer.__wrapped__(corpus, vocab_size=400)
    assert again.get_vocab() == tokenizer.get_vocab()
    with pytest.raises(ValueError, match="vocab_size must be at least"):
        book_tokenizer.__wrapped__(corpus, vocab_size=20)


def test_batches_carry_both_labels_of_eq_4_6(small):
    corpus, tokenizer = small
    pairs = corpus_pairs(corpus, "train", tokenizer)
    batch = pretraining_batch(pairs[:32], tokenizer, torch.Generator().manual_seed(0))
    ids, labels = batch["input_ids"], batch["labels"]
    specials = torch.isin(ids, torch.tensor([tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id]))
    assert (labels[specials & (ids != tokenizer.mask_token_id)] == IGNORE_INDEX).all()
    assert (ids[:, 0] == tokenizer.cls_token_id).all() and (labels != IGNORE_INDEX).any()
    assert batch["next_sentence_label"].tolist() == [0 if p.is_next else 1 for p in pairs[:32]]
    # similar lengths in a batch: little padding
    stream = pretraining_batches(pairs, tokenizer, batch_size=16, seed=0)
    padding = [float(1 - b["attention_mask"].float().mean()) for b in (next(stream) for _ in range(10))]
    assert max(padding) < 0.3


def test_most_frequent_token_accuracy_by_hand():
    labels = torch.tensor([[5, 5, -100, 7], [5, -100, -100, 9]])
    assert most_frequent_token_accuracy([{"labels": labels}]) == pytest.approx(3 / 5)


def test_training_runs_is_cached_and_fills_masks(small, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus, _ = small
    config = BertConfig(vocab_size=400, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    training = TrainConfig(steps=4, lr=1e-3, eval_every=2, progress=False)
    model, history, tokenizer = book_bert(corpus, training, config)
    assert [step for step, _ in history.evaluations["heldout mlm_accuracy"]] == [2, 4]
    assert set(history.train) == {"loss", "MLM", "NSP"}
    torch.testing.assert_close(torch.tensor(history.train["loss"]),
                               torch.tensor(history.train["MLM"]) + torch.tensor(history.train["NSP"]))
    again, _, _ = book_bert(corpus, training, config)  # loaded from the cache
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    predictions = fill_mask(model, tokenizer, "the [MASK] was high .", k=3)
    assert len(predictions) == 1 and len(predictions[0]) == 3
    assert sum(p for _, p in predictions[0]) <= 1 and predictions[0][0][1] >= predictions[0][1][1]
    with pytest.raises(ValueError, match=r"text must contain \[MASK\]"):
        fill_mask(model, tokenizer, "no mask here")
    with pytest.raises(ValueError, match="k must be a positive int"):
        fill_mask(model, tokenizer, "the [MASK] .", k=0)
