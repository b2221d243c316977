"""The mini-BERT's data pipeline: WordPiece vocabulary, NSP + MLM batches, scores, fill-mask."""

from __future__ import annotations

import pytest
import torch

from ctxlib.analysis.mlm_scores import fill_mask, most_frequent_token_accuracy
from ctxlib.data.corpus import generate_corpus
from ctxlib.models.bert import BertConfig
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.bert_pretraining import book_bert
from ctxlib.training.loop import TrainConfig
from ctxlib.training.pretraining_data import (SPECIAL_TOKENS, book_tokenizer, collate, corpus_pairs, pretraining_batch,
                                              pretraining_batches, statically_masked)


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


def masked_positions(batch) -> dict[tuple[int, ...], tuple]:
    """Each row's original tokens (key) and what masking did to it: the inputs and labels."""
    out = {}
    for row in range(len(batch["input_ids"])):
        n = int(batch["attention_mask"][row].sum())
        labels, inputs = batch["labels"][row, :n], batch["input_ids"][row, :n]
        original = torch.where(labels == IGNORE_INDEX, inputs, labels)
        out[tuple(original.tolist())] = (tuple(inputs.tolist()), tuple(labels.tolist()))
    return out


def test_static_masking_gives_each_pair_one_mask_whatever_its_batch(small):
    corpus, tokenizer = small
    pairs = corpus_pairs(corpus, "train", tokenizer)
    seen: dict[tuple[int, ...], set] = {}
    for dynamic in (False, True):
        stream = pretraining_batches(pairs, tokenizer, batch_size=16, seed=0, dynamic=dynamic)
        masks: dict[tuple[int, ...], set] = {}
        for batch in (next(stream) for _ in range(150)):  # ~6 epochs of these pairs: most drawn often
            for original, masked in masked_positions(batch).items():
                masks.setdefault(original, set()).add(masked)
        seen[dynamic] = masks
    repeated = [o for o, m in seen[True].items() if len(m) > 1]
    assert len(repeated) > 50  # dynamic: a pair drawn again is masked anew
    assert all(len(m) == 1 for m in seen[False].values())  # static: never
    # The pipeline's fixed masks are statically_masked's, whatever the padding around a row.
    rows = statically_masked(pairs[:8], tokenizer, seed=0)
    stacked = masked_positions(collate(rows, tokenizer.pad_token_id))
    for original, masked in stacked.items():
        if original in seen[False]:
            assert seen[False][original] == {masked}
    # Pair i keeps its mask when masked alone, from first_index=i.
    alone = statically_masked(pairs[5:6], tokenizer, seed=0, first_index=5)[0]
    assert torch.equal(alone["input_ids"], rows[5]["input_ids"]) and torch.equal(alone["labels"], rows[5]["labels"])
    # About 15% of the eligible tokens carry a label, as with dynamic masks.
    labelled = sum(int((r["labels"] != IGNORE_INDEX).sum()) for r in statically_masked(pairs, tokenizer))
    eligible = sum(len(p.a) + len(p.b) for p in pairs)
    assert abs(labelled / eligible - 0.15) < 0.01


def test_collate_pads_rows_and_ignores_padding():
    rows = [{"input_ids": torch.tensor([[2, 7, 3]]), "labels": torch.tensor([[-100, 7, -100]]),
             "attention_mask": torch.ones(1, 3, dtype=torch.long), "next_sentence_label": torch.tensor([0])},
            {"input_ids": torch.tensor([[2, 8]]), "labels": torch.tensor([[-100, 8]]),
             "attention_mask": torch.ones(1, 2, dtype=torch.long), "next_sentence_label": torch.tensor([1])}]
    batch = collate(rows, pad_id=0)
    assert batch["input_ids"].tolist() == [[2, 7, 3], [2, 8, 0]]
    assert batch["labels"].tolist() == [[-100, 7, -100], [-100, 8, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["next_sentence_label"].tolist() == [0, 1]


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
    # By hand: the softmax over the vocabulary at the [MASK] position, its three largest entries.
    encoded = tokenizer("the [MASK] was high .", return_tensors="pt")
    with torch.no_grad():
        logits = model(**encoded).prediction_logits[0, encoded["input_ids"][0] == tokenizer.mask_token_id]
    top = logits.softmax(-1)[0].topk(3)
    assert [token for token, _ in predictions[0]] == tokenizer.convert_ids_to_tokens(top.indices.tolist())
    assert [p for _, p in predictions[0]] == pytest.approx(top.values.tolist())
    with pytest.raises(ValueError, match=r"text must contain \[MASK\]"):
        fill_mask(model, tokenizer, "no mask here")
    with pytest.raises(ValueError, match="k must be a positive int"):
        fill_mask(model, tokenizer, "the [MASK] .", k=0)


def test_mlm_only_training_records_no_nsp_loss(small, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus, _ = small
    config = BertConfig(vocab_size=400, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    training = TrainConfig(steps=3, lr=1e-3, progress=False)
    _, history, _ = book_bert(corpus, training, config, name="mlm-only", nsp=False)
    _, both, _ = book_bert(corpus, training, config, name="mlm-nsp")
    assert set(history.train) == {"loss"} and set(both.train) == {"loss", "MLM", "NSP"}
    # Same seed, same batches: the MLM-only loss is the first step's MLM term of the joint run.
    assert history.train["loss"][0] == pytest.approx(both.train["MLM"][0], rel=1e-5)
