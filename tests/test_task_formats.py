"""CoNLL and SQuAD readers on sample files in those formats; entity-level scoring by hand."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ctxlib.data.task_formats import (Answer, LabelledText, QAExample, TaggedTokens, check_bio, entity_f1, entity_spans,
                                      read_conll, read_labelled_tsv, read_squad, write_conll, write_labelled_tsv,
                                      write_squad)

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


@pytest.mark.parametrize("seed", range(4))
def test_entity_f1_equals_seqeval(seed):
    """seqeval (the CoNLL evaluation in Python, default mode) on random BIO sequences, ill-formed
    ones included: an I- tag after O or after another type starts an entity, as in conlleval."""
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = random.Random(seed)
    tags = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(60)]
    predicted = [[t if rng.random() < 0.7 else rng.choice(tags) for t in sentence] for sentence in gold]
    ours = entity_f1(gold, predicted)
    assert ours["precision"] == pytest.approx(seqeval.precision_score(gold, predicted))
    assert ours["recall"] == pytest.approx(seqeval.recall_score(gold, predicted))
    assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, predicted))


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
    with pytest.raises(ValueError, match=r"\(question 'q1'\): the context at 14 reads 'long the river bank '"):
        read_squad(bad)
    bad.write_text(json.dumps({"version": "1.1"}))
    with pytest.raises(ValueError, match="a SQuAD file has a top-level 'data' list"):
        read_squad(bad)


def _squad(tmp_path, change) -> Path:
    data = json.loads((SAMPLES / "sample-squad-v2.json").read_text())
    change(data["data"][0]["paragraphs"][0]["qas"])
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("change", "message"), [
    (lambda qas: qas[0]["answers"][0].update(answer_start=-1), "answer_start must be a character offset >= 0, got -1"),
    (lambda qas: qas[0]["answers"][0].update(answer_start="13"), "answer_start must be a character offset >= 0, got '13'"),
    (lambda qas: qas[0]["answers"][0].update(answer_start=True), "answer_start must be a character offset >= 0, got True"),
    (lambda qas: qas[0]["answers"][0].update(text=""), "an answer's text must be a non-empty string"),
    (lambda qas: qas[2].update(is_impossible="true"), "is_impossible must be true or false, got 'true'"),
    (lambda qas: qas[2].update(is_impossible=1), "is_impossible must be true or false, got 1"),
    (lambda qas: qas[1].update(id="q1"), "question id 'q1' occurs twice"),
    (lambda qas: qas[0].pop("question"), "'question' must be a non-empty string, got None"),
    (lambda qas: qas.append("q4"), "a question must be a JSON object, got str"),
])
def test_squad_reader_rejects_what_is_not_squad(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        read_squad(_squad(tmp_path, change))


def test_readers_accept_a_byte_order_mark_and_name_a_file_that_is_not_utf8(tmp_path):
    for sample, reader in (("sample.conll", read_conll), ("sample-squad-v2.json", read_squad)):
        with_bom = tmp_path / sample
        with_bom.write_bytes(b"\xef\xbb\xbf" + (SAMPLES / sample).read_bytes())
        assert reader(with_bom) == reader(SAMPLES / sample)
        latin = tmp_path / f"latin-{sample}"
        latin.write_bytes((SAMPLES / sample).read_text().replace("Grace", "Zoë").replace("bank", "bänk").encode("latin-1"))
        with pytest.raises(ValueError, match=rf"latin-{sample}: not UTF-8 text \(byte 0x"):
            reader(latin)
    tsv = tmp_path / "topic.tsv"
    tsv.write_bytes(b"\xef\xbb\xbfsentence\tlabel\nthe bank .\tfinance\n")
    assert read_labelled_tsv(tsv) == [LabelledText("the bank .", "finance")]
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [')
    with pytest.raises(ValueError, match=r"bad.json: not valid JSON"):
        read_squad(bad)


GOOD_TSV = [LabelledText("the bank opened", "finance"), LabelledText("a river bank", "nature")]
GOOD_CONLL = [TaggedTokens(("Grace", "walked"), ("B-PER", "O"))]
GOOD_SQUAD = [QAExample("q1", "by the river bank", "where?", (Answer("river bank", 7),)),
              QAExample("q2", "by the river bank", "who?", ())]


@pytest.mark.parametrize(("writer", "reader", "good", "bad", "message"), [
    (write_labelled_tsv, read_labelled_tsv, GOOD_TSV, [*GOOD_TSV, LabelledText("two\ntwo lines", "x")],
     r"examples\[2\].text must be a non-empty str on one line without a tab"),
    (write_labelled_tsv, read_labelled_tsv, GOOD_TSV, [*GOOD_TSV, LabelledText("a line\u2028break", "x")],
     r"examples\[2\].text must be a non-empty str on one line"),
    (write_labelled_tsv, read_labelled_tsv, GOOD_TSV, [*GOOD_TSV, LabelledText("fine", "")],
     r"examples\[2\].label must be a non-empty str"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens(("New York",), ("B-LOC",))],
     r"sentences\[1\]: token 'New York' cannot be a CoNLL column"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens(("x",), ("B-LOC X",))],
     r"sentences\[1\]: tag 'B-LOC X' cannot be a CoNLL column"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens((), ())],
     r"sentences\[1\] must have one tag per token and at least one token"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens(("a", "b"), ("O",))],
     r"sentences\[1\] must have one tag per token"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens(("-DOCSTART-",), ("O",))],
     r"token '-DOCSTART-' cannot be a CoNLL column"),
    (write_conll, read_conll, GOOD_CONLL, [*GOOD_CONLL, TaggedTokens(("x", "y"), ("O", "I-PER"))],
     r"sentences\[1\]: tag 1 is 'I-PER' after 'O'"),
    (write_squad, read_squad, GOOD_SQUAD, [*GOOD_SQUAD, QAExample("q1", "again", "dup?", ())],
     r"question id 'q1' occurs twice"),
    (write_squad, read_squad, GOOD_SQUAD, [*GOOD_SQUAD, QAExample("q3", "the bank", "?", (Answer("bank", 5),))],
     r"the context at 5 reads 'ank', not the answer 'bank'"),
    (write_squad, read_squad, GOOD_SQUAD, [*GOOD_SQUAD, QAExample("q3", "the bank", "?", (Answer("the", -4),))],
     r"answer_start must be a character offset >= 0, got -4"),
])
def test_writers_check_everything_first_and_keep_the_old_file(tmp_path, writer, reader, good, bad, message):
    path = tmp_path / "out"
    writer(path, good)
    assert reader(path) == good  # the round trip
    before = path.read_bytes()
    with pytest.raises(ValueError, match=message):
        writer(path, bad)  # before: the old file truncated, a partial one left
    assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]
