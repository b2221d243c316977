"""The fine-tuning tasks' lookup baselines: each against a hand count or a reference implementation."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from ctxlib.data.task_formats import Answer, LabelledText, QAExample, TaggedTokens, entity_f1
from ctxlib.data.tasks import load_task
from ctxlib.studies import task_baselines
from ctxlib.studies.task_baselines import (answer_lookup, answer_lookup_scores, bag_of_words_accuracy, tag_lookup,
                                           tag_lookup_f1, unseen_entity_share)


def _tagged(text: str) -> TaggedTokens:
    """'Ada/B-PER visits York/B-LOC' -> TaggedTokens (an untagged word is O)."""
    pairs = [word.split("/") if "/" in word else (word, "O") for word in text.split()]
    return TaggedTokens(tokens=tuple(w for w, _ in pairs), tags=tuple(t for _, t in pairs))


def test_the_tag_lookup_gives_each_word_its_most_frequent_tag_and_o_to_a_word_never_seen():
    train = [_tagged("york/B-LOC is big"), _tagged("York/B-ORG Wanderers/I-ORG win"), _tagged("York/B-LOC again")]
    tagger = tag_lookup(train)
    # York: LOC twice, ORG once (case folded, as the uncased encoder folds it); Leeds never seen.
    assert tagger(["YORK", "Wanderers", "Leeds", "is"]) == ["B-LOC", "I-ORG", "O", "O"]
    # A tie goes to the tag seen first.
    assert tag_lookup([_tagged("Jordan/B-PER"), _tagged("Jordan/B-LOC")])(["Jordan"]) == ["B-PER"]


def test_the_tag_lookup_f1_is_entity_f1_of_its_tags():
    train = [_tagged("Ada/B-PER visits York/B-LOC"), _tagged("Tom/B-PER sees Ada/B-PER")]
    test = [_tagged("Tom/B-PER visits Leeds/B-LOC"), _tagged("Ada/B-PER and York/B-LOC")]
    # Right: Tom, Ada, York; missed: Leeds (never seen); nothing spurious: P = 1, R = 3/4.
    assert tag_lookup_f1(train, test) == pytest.approx(100 * 2 * 0.75 / 1.75)
    assert tag_lookup_f1(train, test) == pytest.approx(
        100 * entity_f1([s.tags for s in test], [tag_lookup(train)(s.tokens) for s in test])["f1"])


def test_unseen_entities_are_those_holding_a_word_training_never_held():
    train = [_tagged("Ada/B-PER visits York/B-LOC")]
    test = [_tagged("Ada/B-PER visits Leeds/B-LOC"), _tagged("York/B-ORG Wanderers/I-ORG win")]
    assert unseen_entity_share(train, test) == pytest.approx(100 * 2 / 3)  # Leeds; York Wanderers
    with pytest.raises(ValueError, match="no entity"):
        unseen_entity_share(train, [_tagged("nobody here")])


def _qa(context: str, question: str, *answers: str) -> QAExample:
    return QAExample(id=context, context=context, question=question,
                     answers=tuple(Answer(text=a, start=context.index(a)) for a in answers))


def test_the_answer_lookup_finds_the_earliest_known_answer_as_a_whole_word():
    train = [_qa("Ana meets Tom .", "who is mentioned ?", "Ana", "Tom"), _qa("Ana Lee runs .", "who is mentioned ?", "Ana Lee"),
             _qa("in York .", "where ?", "York")]
    answer = answer_lookup(train)
    # Tommy is not Tom (a whole word only); of two known answers starting together, the longer.
    assert answer(_qa("Tommy and Ana Lee and Tom sing .", "who is mentioned ?")) == "Ana Lee"
    assert answer(_qa("Tommy sings in York .", "who is mentioned ?")) == ""  # York answers another question
    assert answer(_qa("tom sings .", "Who is mentioned ?")) == "tom"  # case folded, the context's own text kept


def test_the_answer_lookup_scores_are_squad_scores_of_its_answers():
    train = [_qa("Ana meets Tom .", "who ?", "Ana", "Tom")]
    test = [_qa("Tom sings .", "who ?", "Tom"),  # right
            _qa("Ben sings .", "who ?", "Ben"),  # no known name: answers "", wrong
            _qa("the sun sets .", "who ?"),  # unanswerable, answered "": right
            _qa("Ana sings .", "who ?")]  # unanswerable, answered Ana: wrong
    assert answer_lookup_scores(train, test) == {"exact_match": 50.0, "f1": 50.0}


def _topics(*rows: str) -> list[LabelledText]:
    return [LabelledText(text=text, label=label) for text, label in (row.split(" | ") for row in rows)]


def test_the_bag_of_words_model_is_sklearns_logistic_regression_at_the_same_penalty():
    """The optimum of mean cross-entropy + l2 |W|² (bias unpenalised) is scikit-learn's multinomial
    logistic regression with C = 1 / (2 n l2), found by another solver."""
    train, _ = load_task("topic")
    train = train[:128]
    index = {w: i for i, w in enumerate(sorted({w for e in train for w in e.text.lower().split()}))}
    features = task_baselines._counts([e.text for e in train], index)
    labels = sorted({e.label for e in train})
    targets = torch.tensor([labels.index(e.label) for e in train])
    l2 = 1e-2
    weights = task_baselines._logistic_regression(features, targets, len(labels), l2)
    ours = torch.softmax(torch.cat([features, torch.ones(len(train), 1, dtype=torch.float64)], 1) @ weights, -1)
    reference = LogisticRegression(C=1 / (2 * len(train) * l2), tol=1e-10, max_iter=10_000).fit(
        features.numpy(), targets.numpy())
    np.testing.assert_allclose(ours.numpy(), reference.predict_proba(features.numpy()), atol=1e-4)


def test_the_bag_of_words_accuracy_chooses_its_penalty_on_dev_and_scores_test():
    train = _topics("the bank lends money | finance", "a loan from the bank | finance", "the river bank floods | nature",
                    "fish in the river | nature")
    dev = _topics("money and a loan | finance", "the river and fish | nature")
    test = _topics("money money | finance", "fish fish | nature", "loan | nature")
    accuracy, chosen = bag_of_words_accuracy(train, dev, test, l2_grid=(1e-3, 1e-2))
    assert accuracy == pytest.approx(100 * 2 / 3)  # the last test sentence is labelled against its word
    assert chosen == 1e-2  # both penalties score dev alike: the larger (the simpler model) is kept
    with pytest.raises(ValueError, match="l2_grid"):
        bag_of_words_accuracy(train, dev, test, l2_grid=(-1.0,))
    with pytest.raises(ValueError, match="dev must hold at least one example"):
        bag_of_words_accuracy(train, [], test)
