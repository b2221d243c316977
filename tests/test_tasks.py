"""The generated fine-tuning tasks: labels right by construction, files equal to the generator,
round trips through the standard-format writers and readers."""

from __future__ import annotations

from collections import Counter

import pytest

from ctxlib.data.corpus import TaggedSentence, load_corpus
from ctxlib.data.task_formats import (Answer, LabelledText, QAExample, TaggedTokens, entity_spans, read_conll,
                                      read_labelled_tsv, read_squad, write_conll, write_labelled_tsv, write_squad)
from ctxlib.data.tasks import (ENTITY_TYPES, QUESTIONS, entity_tags, generate_task, load_task, qa_examples,
                               write_task_files)


def _sentence(tokens: str, pos: str) -> TaggedSentence:
    words = tuple(tokens.split())
    return TaggedSentence(words, tuple(pos.split()), (None,) * len(words), 0, "football_game")


def test_entity_tags_by_hand():
    s = _sentence("Anna played against York Wanderers near York on Monday .",
                  "PROPN VERB ADP PROPN PROPN ADP PROPN ADP PROPN PUNCT")
    assert entity_tags(s) == ("B-PER", "O", "O", "B-ORG", "I-ORG", "O", "B-LOC", "O", "B-DATE", "O")
    with pytest.raises(ValueError, match="proper noun 'Zork' has no entity type"):
        entity_tags(_sentence("Zork ran .", "PROPN VERB PUNCT"))
    with pytest.raises(ValueError, match="team name 'Wanderers' without its town"):
        entity_tags(_sentence("the Wanderers won .", "DET PROPN VERB PUNCT"))


def test_shipped_files_are_what_the_generator_writes(tmp_path):
    write_task_files(load_corpus(), tmp_path)
    for task in ("topic", "ner", "qa"):
        assert load_task(task) == load_task(task, tmp_path), f"ctxlib/data/task_files/{task}_* is stale: run write_task_files"


def test_tasks_are_consistent_and_disjoint():
    corpus = load_corpus()
    topic_train, topic_test = load_task("topic")
    assert len(Counter(e.label for e in topic_train)) == 20  # every topic has training examples
    # Test examples come from the novel documents, written from templates training never used.
    novel, train = ({" ".join(s.tokens) for s in split} for split in (corpus.novel, corpus.train))
    assert all(e.text in novel and e.text not in train for e in topic_test)
    ner_train, ner_test = load_task("ner")
    assert all(" ".join(s.tokens) in novel and " ".join(s.tokens) not in train for s in ner_test)
    assert all(set(s.tags) != {"O"} for s in ner_train + ner_test)
    kinds = Counter(kind for s in ner_train for kind, _, _ in entity_spans(s.tags))
    assert set(kinds) == set(ENTITY_TYPES)
    qa_train, qa_test = load_task("qa")
    novel_contexts = {" ".join(w for s in d[:2] for w in s.tokens) for d in corpus.documents("novel")}
    assert all(e.context in novel_contexts for e in qa_test)
    for example in qa_train + qa_test:
        kind = next(k for k, q in QUESTIONS.items() if q == example.question)
        words = example.context.split(" ")
        word_starts = {sum(len(w) + 1 for w in words[:i]) for i in range(len(words))}
        assert all(a.start in word_starts for a in example.answers)  # answers are whole words
        if kind == "LOC":  # a town inside a team name is not a place
            assert not any(example.context.startswith(f"{a.text} {team}", a.start) for a in example.answers
                           for team in ("Rovers", "United", "Wanderers", "Athletic", "Rangers", "Albion", "City", "Harriers"))
    unanswerable = sum(not e.answers for e in qa_train) / len(qa_train)
    assert 0.25 < unanswerable < 0.45
    assert qa_examples(corpus, "train", 5, seed=3) == qa_examples(corpus, "train", 5, seed=3)  # deterministic


def test_qa_answers_list_every_mention():
    corpus = load_corpus()
    for example in qa_examples(corpus, "heldout", 60, seed=4):
        document = corpus.documents("heldout")[int(example.id.split("-")[1])]  # ids are split-index-type
        words = [w for s in document[:2] for w in s.tokens]
        tags = [t for s in document[:2] for t in entity_tags(s)]
        kind = next(k for k, q in QUESTIONS.items() if q == example.question)
        mentions = sorted(" ".join(words[a:b + 1]) for k, a, b in entity_spans(tags) if k == kind)
        assert sorted(a.text for a in example.answers) == mentions


def test_writers_round_trip(tmp_path):
    texts = [LabelledText("the bank closed .", "bank_visit"), LabelledText("we ran .", "morning_run")]
    write_labelled_tsv(tmp_path / "t.tsv", texts)
    assert read_labelled_tsv(tmp_path / "t.tsv") == texts
    tagged = [TaggedTokens(("Anna", "ran"), ("B-PER", "O"))]
    write_conll(tmp_path / "t.conll", tagged)
    assert read_conll(tmp_path / "t.conll") == tagged
    qa = [QAExample("a", "Anna ran .", "who ?", (Answer("Anna", 0),)), QAExample("b", "Anna ran .", "when ?", ())]
    write_squad(tmp_path / "t.json", qa)
    assert read_squad(tmp_path / "t.json") == qa


def test_bad_task_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="task must be one of"):
        generate_task("parsing", load_corpus())
    with pytest.raises(ValueError, match=r"n=100000 is more than the \d+ documents"):
        qa_examples(load_corpus(), "train", 100000)
    with pytest.raises(ValueError, match="the context at 1 reads 'nna ', not the answer 'Anna'"):
        write_squad(tmp_path / "x.json", [QAExample("a", "Anna ran .", "who ?", (Answer("Anna", 1),))])
    with pytest.raises(ValueError, match="I- tag must continue"):
        write_conll(tmp_path / "x.conll", [TaggedTokens(("ran",), ("I-PER",))])
    (tmp_path / "x.tsv").write_text("text\tlabel\n")
    with pytest.raises(ValueError, match="header 'sentence<TAB>label'"):
        read_labelled_tsv(tmp_path / "x.tsv")
