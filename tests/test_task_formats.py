"""CoNLL and SQuAD readers on sample files in those formats; entity-level scoring by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlib.data.task_formats import check_bio, entity_f1, entity_spans, read_conll, read_squad

SAMPLES = Path(__file__).parent / "fixtures" / "tasks"


def test_read_conll_sample():
    sentences = read_conll(SAMPLES / "sample.conll")
    assert len(sentences) == 2
    assert sentences[0].tokens[:2] == ("Grace", "walked") and sentences[0].tags[-2:] == ("B-LOC", "O")
    assert entity_spans(sentences[1].tags) == {("ORG", 1, 3)}
    assert entity_spans(sentences[0].tags) == {("PER", 0, 0), ("LOC", 4, 4), ("LOC", 6, 6)}


def test_bad_conll_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("Grace B-PER\nwalked O\nhome I-LOC\n\n")
    with pytest.raises(ValueError, match=r"tag 2 is 'I-LOC' after 'O'; an I- tag must continue"):
        read_conll(bad)
    with pytest.raises(ValueError, match="BIO tags are O, B-TYPE or I-TYPE"):
        check_bio(["O", "PER"])
    bad.write_text("Grace\n")
    with pytest.raises(ValueError, match="line 1 has one column"):
        read_conll(bad)


def test_entity_f1_by_hand():
    gold = [["B-PER", "O", "B-LOC", "I-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "O", "B-LOC", "O"], ["B-ORG", "O"]]  # LOC boundary wrong: 2 of 3 right
    scores = entity_f1(gold, predicted)
    assert scores == {"precision": pytest.approx(2 / 3), "recall": pytest.approx(2 / 3), "f1": pytest.approx(2 / 3)}
    assert entity_spans(["I-PER", "I-PER", "B-PER"]) == {("PER", 0, 1), ("PER", 2, 2)}  # conlleval's reading
    with pytest.raises(ValueError, match="same number of sentences"):
        entity_f1(gold, predicted[:1])


def test_read_squad_v2_sample():
    examples = read_squad(SAMPLES / "sample-squad-v2.json")
    assert [e.id for e in examples] == ["q1", "q2", "q3"]
    assert examples[0].answers[0].text == "along the river bank" and examples[0].answers[0].start == 13
    assert len(examples[1].answers) == 2 and examples[2].answers == ()  # unanswerable


def test_bad_squad_answers_are_caught(tmp_path):
    data = json.loads((SAMPLES / "sample-squad-v2.json").read_text())
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 14
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"question 'q1': the context at 14 reads 'long the river bank '"):
        read_squad(bad)
    bad.write_text(json.dumps({"version": "1.1"}))
    with pytest.raises(ValueError, match="a SQuAD file has a top-level 'data' list"):
        read_squad(bad)
