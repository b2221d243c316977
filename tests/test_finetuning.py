"""Fine-tuning recipe: encodings that put labels and answers where they belong, SQuAD scoring by
hand, evaluation of a perfect predictor, the cache, and clear errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from ctxlib.data.tasks import load_task
from ctxlib.models.heads import HeadOutput, QuestionAnsweringOutput
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.finetuning import TAGS, FineTuning, answer_scores, batches, encode, evaluate, fine_tune, task_labels


@pytest.fixture(scope="module")
def tokenizer(minilm_pair):
    return minilm_pair[1]


def test_ner_labels_sit_on_first_wordpieces(tokenizer):
    train, _ = load_task("ner")
    data = encode("ner", tokenizer, train[:40])
    for row, example in enumerate(train[:40]):
        labelled = (data["labels"][row] != IGNORE_INDEX).nonzero().flatten()
        assert [TAGS[int(data["labels"][row, p])] for p in labelled] == list(example.tags)
        pieces = tokenizer.convert_ids_to_tokens(data["input_ids"][row, labelled].tolist())
        assert not any(piece.startswith("##") for piece in pieces)


def test_qa_positions_cover_the_answer(tokenizer):
    train, _ = load_task("qa")
    examples = train[:80]
    data = encode("qa", tokenizer, examples)
    for row, example in enumerate(examples):
        start, end = int(data["start_positions"][row]), int(data["end_positions"][row])
        if not example.answers:
            assert start == end == 0  # [CLS]
            continue
        assert data["context_mask"][row, start] and data["context_mask"][row, end]
        offsets = data["offsets"][row]
        assert example.context[int(offsets[start, 0]):int(offsets[end, 1])] == example.answers[0].text


def test_answer_scores_by_hand():
    assert answer_scores("the Leeds", ["Leeds"]) == (1.0, 1.0)  # articles and case are normalised away
    exact, f1 = answer_scores("York Wanderers", ["York", "Bath"])  # precision 1/2, recall 1 → F1 2/3
    assert exact == 0.0 and f1 == pytest.approx(2 / 3)
    assert answer_scores("", []) == (1.0, 1.0) and answer_scores("Leeds", []) == (0.0, 0.0)
    assert answer_scores("", ["Leeds"]) == (0.0, 0.0)


class _Oracle(torch.nn.Module):
    """Logits that put all mass on the gold answer: evaluation must score it 100."""

    def __init__(self, task: str, data: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.task, self.data = task, data

    def forward(self, input_ids, *, attention_mask, token_type_ids):
        rows = [next(i for i in range(len(self.data["input_ids"]))
                     if torch.equal(self.data["input_ids"][i, :input_ids.shape[1]], row)) for row in input_ids]
        if self.task == "topic":
            return HeadOutput(torch.nn.functional.one_hot(self.data["labels"][rows], 20).float())
        if self.task == "ner":
            labels = self.data["labels"][rows, :input_ids.shape[1]].clamp(min=0)
            return HeadOutput(torch.nn.functional.one_hot(labels, len(TAGS)).float())
        width = input_ids.shape[1]
        start = torch.nn.functional.one_hot(self.data["start_positions"][rows], width).float() * 10
        end = torch.nn.functional.one_hot(self.data["end_positions"][rows], width).float() * 10
        return QuestionAnsweringOutput(start, end)

    def decode(self, logits, where):
        return [row[mask].argmax(-1).tolist() for row, mask in zip(logits, where)]


@pytest.mark.parametrize("task", ["topic", "ner", "qa"])
def test_a_perfect_predictor_scores_100(task, tokenizer):
    _, test = load_task(task)
    examples = test[:70]  # more than one evaluation batch
    data = encode(task, tokenizer, examples, task_labels(task, load_task(task)[0]))
    metrics = evaluate(task, _Oracle(task, data), data, examples)
    assert all(value == pytest.approx(100.0) for value in metrics.values()), metrics


def test_batches_cover_each_epoch_once(tokenizer):
    train, _ = load_task("topic")
    data = encode("topic", tokenizer, train[:40], task_labels("topic", train))
    stream = batches(data, 16, seed=0)
    epoch = [next(stream) for _ in range(3)]  # 16 + 16 + 8
    assert [len(b["labels"]) for b in epoch] == [16, 16, 8]
    assert sorted(torch.cat([b["labels"] for b in epoch]).tolist()) == sorted(data["labels"].tolist())
    for batch in epoch:  # dynamic padding: cut to the batch's longest sequence
        assert int(batch["attention_mask"].sum(1).max()) == batch["input_ids"].shape[1]


def test_a_topic_run_on_a_few_sentences_has_a_head_for_every_topic():
    # The first 16 training sentences hold only some of the 20 topics; the test file holds all.
    train, test = load_task("topic")
    assert len({e.label for e in train[:16]}) < len({e.label for e in test})
    run = fine_tune(FineTuning("topic", train_size=16, epochs=1, lr=1e-4), progress=False)
    assert run.model.classifier.out_features == len({e.label for e in train}) == len({e.label for e in test})


def test_fine_tune_trains_once_and_caches(tmp_path, monkeypatch, tokenizer):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    setting = FineTuning("ner", train_size=32, epochs=1, lr=1e-4)
    first = fine_tune(setting, progress=False)
    assert first.history.steps == [1, 2]
    # The recorded score is the model's: scoring the returned model again gives the same F1.
    _, test = load_task("ner")
    rescored = evaluate("ner", first.model, encode("ner", tokenizer, test), test)
    assert rescored == pytest.approx(first.metrics)
    assert not first.model.bert.embeddings.word_embeddings.weight.requires_grad
    # The trained model comes back without the last step's gradients (one more copy of every
    # trainable weight per model a page keeps).
    assert all(p.grad is None for p in first.model.parameters())
    again = fine_tune(setting, progress=False)
    assert again.metrics == first.metrics
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(), again.model.state_dict().values()))
    scores_only = fine_tune(setting, progress=False, keep_model=False)
    assert scores_only.model is None and scores_only.metrics == first.metrics
    assert scores_only.history.to_dict() == first.history.to_dict()


def test_early_stopping_keeps_the_best_development_epoch(tmp_path, monkeypatch, tokenizer):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    run = fine_tune(FineTuning("ner", train_size=32, epochs=6, lr=1e-4, patience=1, dev_size=32), progress=False)
    dev = [value for _, value in run.history.evaluations["dev entity_f1"]]
    best = max(range(len(dev)), key=dev.__getitem__)
    # It stopped one epoch after the best (or ran to the end), evaluating once per 2-step epoch.
    assert len(dev) in (best + 2, 6) and [s for s, _ in run.history.evaluations["dev entity_f1"]] == \
        [2 * (i + 1) for i in range(len(dev))]
    # The model returned is the best epoch's: its development score, recomputed, is the best one.
    train, _ = load_task("ner")
    rescored = evaluate("ner", run.model, encode("ner", tokenizer, train[-32:]), train[-32:])
    assert rescored["entity_f1"] == pytest.approx(dev[best])
    # The test score is recorded at the best epoch's step.
    assert run.history.evaluations["entity_f1"][-1][0] == 2 * (best + 1)


def test_bad_settings_are_clear_errors(tokenizer):
    with pytest.raises(ValueError, match="task must be one of"):
        FineTuning("pos")
    with pytest.raises(ValueError, match="init must be one of"):
        FineTuning("topic", init="bert-base")
    with pytest.raises(ValueError, match="crf=True needs task='ner'"):
        FineTuning("topic", crf=True)
    with pytest.raises(ValueError, match="epochs must be > 0, got 0"):
        FineTuning("topic", epochs=0)
    with pytest.raises(ValueError, match="train_size=9999 is more than the 512"):
        fine_tune(FineTuning("topic", train_size=9999))
    with pytest.raises(ValueError, match="patience must be a positive int, got 0"):
        FineTuning("topic", patience=0)
    with pytest.raises(ValueError, match="train_size=480 is more than the 448 training examples left beside the 64"):
        fine_tune(FineTuning("topic", train_size=480, patience=1))
    with pytest.raises(TypeError, match="setting must be a FineTuning"):
        fine_tune({"task": "topic"})
    with pytest.raises(TypeError, match="keep_model must be a bool"):
        fine_tune(FineTuning("topic"), keep_model="no")
    with pytest.raises(ValueError, match=r"labels \['cooking'\] are not among"):
        encode("topic", tokenizer, [SimpleNamespace(text="we ate .", label="cooking")], ("bank_visit",))
