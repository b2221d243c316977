"""The real-text arm: WordNet's extracted examples and Peters et al.'s centroid WSD protocol."""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import json
import sys
import tomllib
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxlib.analysis.occurrences import (OccurrenceVectors, elmo_occurrence_vectors, elmo_word_vectors,
                                         occurrence_vectors)
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.probe import nn_accuracy, separation_by_layer
from ctxlib.analysis.wsd import (Prediction, centroid_scores, nearest_sense, sense_centroids, split_by_sense,
                                 wordnet_wsd, wsd_by_layer)
from ctxlib.data import wordnet
from ctxlib.data.senses import SenseSentence
from ctxlib.models.elmo import Elmo, ElmoConfig
from ctxlib.studies.elmo_pretraining import BOOK_ELMO

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "ctxlib" / "data"
WORDNET_DIR = Path("/usr/share/wordnet")


@functools.cache
def tool():
    """tools/extract_wordnet.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("extract_wordnet", ROOT / "tools" / "extract_wordnet.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def unit(degrees: float) -> np.ndarray:
    return np.array([np.cos(np.deg2rad(degrees)), np.sin(np.deg2rad(degrees))])


# ---------------------------------------------------------------------------------------------
# The protocol, by hand.

def test_a_centroid_is_the_mean_of_its_senses_training_vectors():
    x = np.array([[1.0, 0.0], [3.0, 2.0], [0.0, 5.0], [7.0, 7.0]])
    centroids = sense_centroids(x, ["a.n", "a.n", "a.n", "b.v"], ["a.n.02", "a.n.02", "a.n.01", "b.v.01"])
    names, matrix = centroids["a.n"]
    assert names == ("a.n.02", "a.n.01")  # order of first appearance
    np.testing.assert_allclose(matrix, [[2.0, 1.0], [0.0, 5.0]])
    np.testing.assert_allclose(centroids["b.v"][1], [[7.0, 7.0]])


def test_test_occurrences_go_to_the_nearest_centroid_not_the_nearest_single_occurrence():
    # Sense a has training occurrences at 0° and 80° (centroid at 40°), sense b one at 60°. A
    # test occurrence at 75° is 5° from a's single occurrence but 35° from a's centroid and 15°
    # from b's: single-occurrence 1-NN says a, Peters et al.'s centroid rule says b.
    # (A second test occurrence at 62°, sense b, gives the single-occurrence scorer two labels.)
    train = np.stack([unit(0), unit(80), unit(60)])
    test = np.stack([unit(75), unit(62)])
    assert nn_accuracy(train, ["a", "a", "b"], test, ["a", "b"]) == 1.0
    centroids = sense_centroids(train, ["w.n"] * 3, ["a", "a", "b"])
    assert nearest_sense(centroids, test, ["w.n"] * 2, {"w.n": "a"}) == [Prediction(("b",), False)] * 2


def test_centroid_scores_on_a_given_split_by_hand():
    # w.n: a at 0°, b at 90°; tests at 10° (a: right), 80° (gold a: wrong); u.v unseen, falls
    # back to u.v.01 (right); t.n's two senses have equal centroids (a tie: 1/2).
    train = np.stack([unit(0), unit(90), unit(45), unit(45)])
    scores = centroid_scores(train, ["w.n", "w.n", "t.n", "t.n"], ["a", "b", "c", "d"],
                             np.stack([unit(10), unit(80), unit(30), unit(7)]), ["w.n", "w.n", "u.v", "t.n"],
                             ["a", "a", "u.v.01", "d"], {"w.n": "b", "u.v": "u.v.01", "t.n": "c"})
    np.testing.assert_allclose(scores, [1.0, 0.0, 1.0, 0.5])


def test_a_lemma_unseen_in_training_falls_back_to_its_first_sense():
    centroids = sense_centroids(np.stack([unit(0), unit(90)]), ["w.n", "w.n"], ["w.n.01", "w.n.02"])
    predictions = nearest_sense(centroids, np.stack([unit(85), unit(85)]), ["w.n", "u.v"],
                                {"w.n": "w.n.01", "u.v": "u.v.01"})
    assert predictions == [Prediction(("w.n.02",), False), Prediction(("u.v.01",), True)]


def test_tied_centroids_score_the_chance_of_a_uniform_pick():
    same = np.ones((3, 4))
    centroids = sense_centroids(same, ["w.n"] * 3, ["s1", "s2", "s3"])
    (prediction,) = nearest_sense(centroids, np.ones((1, 4)), ["w.n"], {"w.n": "s1"})
    assert set(prediction.senses) == {"s1", "s2", "s3"}
    assert prediction.score("s2") == pytest.approx(1 / 3)
    assert prediction.score("s9") == 0.0


def _sentence(lemma: str, sense: str, i: int) -> SenseSentence:
    return SenseSentence(lemma, sense, f"sentence {i}", 0, 8)


def test_wsd_by_layer_by_hand():
    # x.n: senses 01 and 02 twice each, 03 once (training only); y.v: 01 and 02 twice each, and
    # its WordNet first sense y.v.03 has no example. Within a sense the vectors are equal, so the
    # result does not depend on which occurrence the split sends to test.
    e = np.eye(3)
    rows = [("x.n", "x.n.01", e[0]), ("x.n", "x.n.01", e[0]), ("x.n", "x.n.02", e[1]), ("x.n", "x.n.02", e[1]),
            ("x.n", "x.n.03", e[2]), ("y.v", "y.v.01", e[0]), ("y.v", "y.v.01", e[0]), ("y.v", "y.v.02", e[1]),
            ("y.v", "y.v.02", e[1])]
    sentences = [_sentence(lemma, sense, i) for i, (lemma, sense, _) in enumerate(rows)]
    sharp = np.stack([v for _, _, v in rows])
    flat = np.ones_like(sharp)
    occurrences = OccurrenceVectors(("sharp", "flat"), torch.tensor(np.stack([sharp, flat])))
    result = wsd_by_layer(occurrences, sentences, {"x.n": "x.n.01", "y.v": "y.v.03"}, test_fraction=0.5, seed=3)

    assert (result.n_test, result.n_train, result.n_lemmas, result.n_fallback) == (4, 5, 2, 0)
    assert result.first_sense_accuracy == pytest.approx(1 / 4)  # only x.n.01's test occurrence
    # flat: x.n's three seen senses tie (1/3 each), y.v's two (1/2 each).
    assert result.centroid_accuracy == pytest.approx((1.0, (1 / 3 + 1 / 3 + 1 / 2 + 1 / 2) / 4))
    assert result.chance == pytest.approx(result.centroid_accuracy[1])
    # sharp: gains over the first sense per test occurrence 0, 1, 1, 1: sd 0.5, standard error 0.5 / √4.
    assert result.gain("sharp") == pytest.approx((0.75, 0.25))
    # Leave-one-out: x.n.03's only neighbours (at equal distance) are of other senses, the rest
    # find their twin: 8 of 9. Chance: (2·1 + 2·1) / (5·4) for x.n, (2 + 2) / (4·3) for y.v.
    assert result.loo_accuracy[0] == pytest.approx(8 / 9)
    assert result.loo_chance == pytest.approx((5 * 4 / 20 + 4 * 4 / 12) / 9)


def test_leave_one_out_pools_probe_separation_per_lemma():
    rng = np.random.default_rng(0)
    sentences = [_sentence(lemma, f"{lemma}.0{k}", i) for i, (lemma, k) in
                 enumerate([("a.n", 1)] * 3 + [("a.n", 2)] * 3 + [("b.v", 1)] * 2 + [("b.v", 2)] * 4)]
    vectors = torch.tensor(rng.normal(size=(2, len(sentences), 5)))
    occurrences = OccurrenceVectors(("l0", "l1"), vectors)
    result = wsd_by_layer(occurrences, sentences, {"a.n": "a.n.01", "b.v": "b.v.01"})
    a = separation_by_layer(vectors[:, :6], [s.sense for s in sentences[:6]], ("l0", "l1"))
    b = separation_by_layer(vectors[:, 6:], [s.sense for s in sentences[6:]], ("l0", "l1"))
    expected = (6 * np.array(a.nn_accuracy) + 6 * np.array(b.nn_accuracy)) / 12
    np.testing.assert_allclose(result.loo_accuracy, expected)


def test_split_is_by_sense_seeded_and_keeps_single_occurrences_in_training():
    sizes = {"s1": 1, "s2": 2, "s3": 3, "s4": 4, "s5": 5}
    senses = [s for s, n in sizes.items() for _ in range(n)]
    lemmas = ["w.n"] * len(senses)
    test = split_by_sense(lemmas, senses, 0.5, seed=0)
    per_sense = Counter(s for s, t in zip(senses, test) if t)
    assert dict(per_sense) == {"s2": 1, "s3": 1, "s4": 2, "s5": 2}  # floor(n / 2)
    np.testing.assert_array_equal(test, split_by_sense(lemmas, senses, 0.5, seed=0))
    masks = {tuple(split_by_sense(lemmas, senses, 0.5, seed=s)) for s in range(10)}
    assert len(masks) > 1, "the seed must change which occurrences are held out"


@pytest.mark.parametrize("call, error", [
    (lambda: split_by_sense(["a"], ["s"], 1.5, 0), ValueError),
    (lambda: split_by_sense(["a"], ["s"], 0.5, "0"), TypeError),
    (lambda: split_by_sense(["a", "b"], ["s"], 0.5, 0), ValueError),
    (lambda: sense_centroids(np.ones((3, 2)), ["a"] * 2, ["s"] * 2), ValueError),
    (lambda: nearest_sense({}, np.ones((1, 2)), ["a"], {}), ValueError),
    (lambda: centroid_scores(np.ones((1, 2)), ["a"], ["s"], np.ones((1, 2)), ["a"], [], {"a": "s"}), ValueError),
])
def test_bad_input_is_a_named_error(call, error):
    with pytest.raises(error):
        call()


def test_wsd_by_layer_rejects_a_missing_first_sense_and_a_count_mismatch():
    sentences = [_sentence("a.n", f"a.n.0{k}", i) for i, k in enumerate([1, 1, 2, 2])]
    occurrences = OccurrenceVectors(("l0",), torch.ones(1, 4, 2))
    with pytest.raises(ValueError, match="first_sense"):
        wsd_by_layer(occurrences, sentences, {})
    with pytest.raises(ValueError, match="occurrences"):
        wsd_by_layer(occurrences, sentences[:3], {"a.n": "a.n.01"})


# ---------------------------------------------------------------------------------------------
# The extracted data.

# English irregular forms, by hand (the regular ones are generated below).
IRREGULAR = {"break": {"broke", "broken"}, "fall": {"fell", "fallen"}, "get": {"got", "gotten"},
             "give": {"gave", "given"}, "go": {"went", "gone"}, "hold": {"held"}, "keep": {"kept"},
             "leave": {"left"}, "light": {"lit"}, "make": {"made"}, "run": {"ran"}, "see": {"saw", "seen"},
             "spring": {"sprang", "sprung"}, "strike": {"struck", "stricken"}, "take": {"took", "taken"}}


def regular_forms(lemma: str, pos: str) -> set[str]:
    forms = {lemma, lemma + "s", lemma + "es"}
    if lemma.endswith("y"):
        forms |= {lemma[:-1] + "ies", lemma[:-1] + "ied"}
    if pos == "v":
        forms |= {lemma + "d", lemma + "ed", lemma + "ing", lemma + lemma[-1] + "ed", lemma + lemma[-1] + "ing"}
        if lemma.endswith("e") and not lemma.endswith("ee"):
            forms.add(lemma[:-1] + "ing")  # make: making (but see: seeing)
    return forms


@pytest.fixture(scope="module")
def raw():
    return json.loads((DATA / "wordnet_examples.json").read_text(encoding="utf-8"))


def test_every_span_is_a_whole_word_and_a_form_of_its_lemma(raw):
    for key, entry in raw["lemmas"].items():
        lemma, pos = entry["lemma"], entry["pos"]
        assert key == f"{lemma}.{pos}"
        allowed = regular_forms(lemma, pos) | (IRREGULAR.get(lemma, set()) if pos == "v" else set())
        for sense in entry["senses"]:
            for example in sense["examples"]:
                text, start, end = example["text"], example["start"], example["end"]
                assert text[start:end].lower() in allowed, (key, text[start:end])
                assert start == 0 or not text[start - 1].isalpha(), text
                assert end == len(text) or not text[end].isalpha(), text


def test_senses_are_in_wordnet_order(raw):
    # WordNet numbers a lemma's senses by their counts in its sense-tagged corpora, most frequent
    # first; the names carry the number and the counts never rise along the list.
    for key, entry in raw["lemmas"].items():
        names = [s["sense"] for s in entry["senses"]]
        assert names == [f"{key}.{n:02d}" for n in range(1, len(names) + 1)]
        counts = [s["tag_count"] for s in entry["senses"]]
        assert counts == sorted(counts, reverse=True), key
        assert wordnet.first_sense(key) == names[0]


def test_no_sentence_is_labelled_with_two_senses_of_one_lemma(raw):
    for key, entry in raw["lemmas"].items():
        texts = [e["text"] for s in entry["senses"] for e in s["examples"]]
        assert len(texts) == len(set(texts)), key


def test_counts_recorded_in_the_file_are_the_files_own(raw):
    counts = raw["counts"]
    entries = raw["lemmas"].values()
    assert counts["lemmas"] == len(raw["lemmas"])
    assert counts["senses"] == sum(len(e["senses"]) for e in entries)
    assert counts["sentences"] == sum(len(s["examples"]) for e in entries for s in e["senses"])
    assert wordnet.counts() == counts


def test_the_books_words_are_in_where_wordnet_has_examples():
    lemmas = {key.split(".")[0] for key in wordnet.lemmas()}
    assert set(tool().BOOK_WORDS) <= lemmas
    assert {"bank.n", "light.n", "run.v"} <= set(wordnet.sense_words())


def test_the_testable_view_keeps_senses_with_two_examples_and_lemmas_with_two_such_senses():
    minimum = wordnet.min_examples_per_sense()
    assert minimum == 2
    for word in wordnet.sense_words():
        glosses = wordnet.senses(word)
        assert len(glosses) >= 2 and all(glosses.values())
        per_sense = Counter(s.sense for s in wordnet.load_sense_sentences(word))
        assert set(per_sense) == set(glosses) and min(per_sense.values()) >= minimum
    untestable = set(wordnet.lemmas()) - set(wordnet.sense_words())
    for lemma in untestable:
        assert sum(len(s.examples) >= minimum for s in wordnet.sense_inventory(lemma)) < 2


@pytest.mark.parametrize("call, error", [
    (lambda: wordnet.senses("bank"), ValueError),        # a lemma needs its part of speech
    (lambda: wordnet.senses("bat.n"), ValueError),       # in the file, but not testable
    (lambda: wordnet.sense_inventory(3), TypeError),
])
def test_unknown_lemmas_are_named_errors(call, error):
    with pytest.raises(error, match="lemma"):
        call()


def test_a_span_that_is_not_a_word_is_rejected(raw, monkeypatch):
    broken = json.loads(json.dumps(raw))
    example = broken["lemmas"]["bank.n"]["senses"][0]["examples"][0]
    example["end"] = len(example["text"]) + 5
    with pytest.raises(ValueError, match="not a word"):
        wordnet._validated(broken)


def test_the_licence_travels_with_the_data():
    text = wordnet.licence()
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in text
    assert "Permission to use, copy, modify and distribute" in text


def test_package_data_ships_both_files():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["ctxlib.data"]
    for name in ("wordnet_examples.json", "WORDNET_LICENSE"):
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name


@pytest.mark.skipif(not (WORDNET_DIR / "data.noun").is_file(),
                    reason="WordNet's database is not installed (apt-get install wordnet-base); the committed "
                           "file cannot be regenerated here")
def test_the_committed_file_is_what_the_tool_writes():
    extract = tool()
    assert extract.render(extract.extract(WORDNET_DIR)) == (DATA / "wordnet_examples.json").read_text(encoding="utf-8")
    assert extract.licence_text(WORDNET_DIR) == (DATA / "WORDNET_LICENSE").read_text(encoding="utf-8")


def test_the_tools_locator_finds_inflections_and_refuses_two_uses():
    extract = tool()
    exceptions = {"ran": {"run"}}
    assert extract.locate("She ran home.", "run", "v", exceptions) == [(4, 7)]
    assert extract.locate("the river-bank", "bank", "n", {}) == []  # a compound is not the word
    assert extract.locate("the bank's banks", "bank", "n", {}) == [(4, 8), (11, 16)]


# ---------------------------------------------------------------------------------------------
# On MiniLM.

def test_polysemy_study_reads_wordnet(minilm_pair):
    study = PolysemyStudy(*minilm_pair, words=["run.n", "order.n"], source=wordnet)
    for word in study.words:
        entry = study.by_word[word]
        assert entry.glosses == wordnet.senses(word)
        assert entry.labels == tuple(s.sense for s in wordnet.load_sense_sentences(word))


def test_context_beats_the_first_sense_on_real_text(minilm_pair):
    # A statistical bound: the top layer (chosen before looking, not the best of eight) must beat
    # the first-sense baseline by more than 3 standard errors of the paired difference.
    model, tokenizer = minilm_pair
    result = wordnet_wsd(lambda spans: occurrence_vectors(model, tokenizer, spans))
    gain, sigma = result.gain("layer 6")
    assert result.n_test > 200 and result.n_fallback == 0
    assert gain > 3 * sigma, (gain, sigma)


def test_elmo_occurrence_vectors_pick_the_spans_word():
    torch.manual_seed(0)
    elmo = Elmo(ElmoConfig(**{**asdict(BOOK_ELMO), "vocab_size": 10})).eval()
    spans = [SenseSentence("run.v", "run.v.01", "Don't run--you'll be out of breath", 6, 9),
             SenseSentence("bank.n", "bank.n.01", "the bank.", 4, 8)]
    picked = elmo_occurrence_vectors(elmo, spans)
    words = elmo_word_vectors(elmo, [["Don", "'", "t", "run", "-", "-", "you", "'", "ll", "be", "out", "of", "breath"],
                                     ["the", "bank", "."]])
    torch.testing.assert_close(picked.vectors, words.vectors[:, [3, 14]])
    with pytest.raises(ValueError, match="not one word"):
        elmo_occurrence_vectors(elmo, [SenseSentence("run.v", "run.v.01", "running", 0, 3)])
