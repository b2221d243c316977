"""The book's pretraining corpus: short English documents generated from a template grammar.

Chapter 2 pretrains a small ELMo biLM on it and Chapters 3-7 a mini-BERT (masked LM and
next-sentence prediction), then probe their layers. No text is downloaded: a probabilistic
grammar (``ctxlib/data/corpus_lexicon.json``, ``ctxlib/data/corpus_topics.json``) writes every
sentence, so each token's Universal POS tag is exact by construction, and so is the sense of
each occurrence of the ten ambiguous words (bank, run, bat, spring, plant, light, bark, match,
pitch, seal), labelled like ``"bank/finance"``.

A document is a paragraph of 3-8 sentences on one topic ("river_walk", "bank_visit",
"cricket_game", ...): an opening sentence that introduces its protagonist, body sentences that
refer back to them with pronouns, sometimes a closing one. The tense (past or present) is one
per document. That coherence is what next-sentence prediction learns to detect.

Three splits of whole documents:

- ``train``: what the models learn from;
- ``heldout``: new documents from the same templates (no sentence of it occurs in ``train``);
- ``novel``: documents written only from templates reserved for evaluation (each topic keeps
  an opening, a closing and six or more body templates out of the other two splits), so a
  probe scored on them measures generalisation to sentences of a form training never showed.

Every sentence of the corpus is distinct: a sentence the grammar has already written is drawn
again (``Corpus.redrawn`` counts how often that was needed), so no held-out sentence occurs in
training and the training split has no exact duplicates.

Conventions:

- Tokens are words and punctuation marks, separately ("the bank closed at 5 ." has six).
- Everything is lowercase except proper names (PROPN: "Anna", "Leeds", "Monday") and the
  pronoun "I"; sentences have no initial capital, so "the" and "The" are never two types.
- UPOS follows Universal Dependencies v2 (English EWT where the guidelines leave a choice):
  copula and auxiliary be/have/do and modals are AUX, possessive "my/his/their" are PRON,
  "to" before a verb is PART, ordinals are ADJ, "today/yesterday" are NOUN. There is no INTJ,
  SYM or X.
- An ambiguous word's sense is on every inflected form: "banks", "ran", "lit", "springs",
  "matches" carry "bank/...", "run/...", and so on. Besides the two senses of each word the
  book names, "spring" has a third (water: a spring in the hills), "match" a third
  (correspond: the curtains match the sofa) and "pitch" three (field, throw, tone). Every sense
  occurs in at least two topics, so the topic alone does not give a sense away.
- Agreement is right by construction: a subject (a noun phrase, the protagonist, or a subject
  the template writes out, declared with ``[AGR:..]``) sets its clause's agreement, and the
  finite verbs and auxiliaries of that clause take their form from it; a clause with two
  subjects is a grammar error. A noun takes a number its determiner allows ("a box", "these
  boxes", "some water"); a singular countable noun never stands without one; no noun occurs
  twice in one sentence. ``tests/test_corpus.py`` expands every template until every optional
  part and choice has been taken and checks these properties on the grammar's annotations.
- Most sentences have 5-25 tokens. Each topic also has long sentences (up to 40 tokens) in
  which a subject and its agreeing verb are separated by a relative clause, often with a noun
  of the other number in between ("the boys who fed the seal near the old pier were ...").

Sense is recoverable from context (topic words, verbs, collocations, the rest of the document)
but never from one fixed neighbour: the most frequent word just left of any sense covers less
than half of its occurrences.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import random
import re
import sys
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import Any

from ctxlib._checks import check_choice, check_positive_int, check_probability
from ctxlib._files import cache_dir, read_text, write_text_atomically

_LEXICON_FILE = "corpus_lexicon.json"
_TOPICS_FILE = "corpus_topics.json"
_UPOS = frozenset(
    ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "NUM", "PROPN", "PUNCT")
)
SPLITS = ("train", "heldout", "novel")
# Token-count bounds; a realisation outside them is drawn again, so optional phrases can be
# generous without a rare combination producing a run-on sentence.
_LENGTH = (5, 40)
_MAX_TRIES = 50
_FRESH_TRIES = 10  # draws of one template that repeat written sentences before another template is tried
_SENTENCES_PER_DOCUMENT = (3, 8)
_CLOSING_PROBABILITY = 0.6  # a document ends on a closing sentence (when its topic has them)
_ADJECTIVE_PROBABILITY = 0.3  # a noun phrase whose class names adjectives gets one
_PLURAL_PROBABILITY = 0.35  # a countable noun whose number neither slot nor determiner fixes
_OPTIONAL_PROBABILITY = 0.5  # "( ... )" in a template
_PRONOUN_PROBABILITY = 0.7  # a later mention of a named protagonist is "she"/"he"/"they"
_ZIPF_EXPONENT = 1.0  # word lists are written most frequent first; entry i has weight 1/(i+1)
# The numbers a noun can take: singular countable, plural, mass (uncountable, singular form).
_NUMBERS = frozenset(("sg", "pl", "mass"))
# What a determiner allows is declared per word in the lexicon ("a": "sg", "some": "pl|mass").
# A noun with no determiner before it may be plural or mass, never singular countable.
_BARE = frozenset(("pl", "mass"))
# Tags that may stand between a determiner and its noun ("the very old river bank").
_INSIDE_NOUN_PHRASE = frozenset(("ADJ", "ADV", "NOUN", "PROPN"))

Token = tuple[str, str, "str | None"]  # (token, UPOS, sense label)
# Inside the generator a token also carries what the grammar knows about it (its number, its
# agreement, what a determiner allows), for the next slot and for the tests; None for most.
_Tok = tuple[str, str, "str | None", "dict[str, Any] | None"]


@dataclass(frozen=True)
class TaggedSentence:
    """One generated sentence: ``tokens[i]`` has tag ``pos[i]`` and sense ``senses[i]``.

    ``senses[i]`` is a label like ``"bank/river"`` where ``tokens[i]`` is a form of one of the
    ambiguous words, else None. ``document`` indexes the sentence's document within its split;
    ``template`` names the template that wrote it ("river_walk/body/3").
    """

    tokens: tuple[str, ...]
    pos: tuple[str, ...]
    senses: tuple[str | None, ...]
    document: int
    topic: str
    template: str = ""


@dataclass(frozen=True)
class Corpus:
    """The sentences of a generated corpus, split by whole documents, each in document order.

    ``novel`` holds documents written only from templates that ``train`` and ``heldout`` never
    use; ``redrawn`` counts the sentences whose first draw repeated one already written, so that
    they were drawn again (about the duplicate rate the grammar would have without that rule)."""

    train: tuple[TaggedSentence, ...]
    heldout: tuple[TaggedSentence, ...]
    novel: tuple[TaggedSentence, ...] = ()
    redrawn: int = 0

    def split(self, name: str) -> tuple[TaggedSentence, ...]:
        """The sentences of split ``name`` ("train", "heldout" or "novel")."""
        check_choice("split", name, SPLITS)
        return getattr(self, name)

    def documents(self, split: str) -> list[list[TaggedSentence]]:
        """The documents of ``split``, each a list of its sentences."""
        documents: list[list[TaggedSentence]] = []
        for sentence in self.split(split):
            if not documents or documents[-1][0].document != sentence.document:
                documents.append([])
            documents[-1].append(sentence)
        return documents

    def vocabulary(self, min_count: int = 1) -> list[str]:
        """Train-split token types seen at least ``min_count`` times: most frequent first,
        ties in alphabetical order, so the list (and any id built from it) is reproducible."""
        check_positive_int("min_count", min_count)
        counts = Counter(token for sentence in self.train for token in sentence.tokens)
        return sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))


def novel_sentences(corpus: Corpus) -> tuple[TaggedSentence, ...]:
    """The sentences that test generalisation: ``corpus.novel``, whose templates training never
    used; a clear error where the corpus has none (one built by hand, or ``novel_fraction=0``)."""
    if not corpus.novel:
        raise ValueError("corpus.novel is empty: scores that claim generalisation need sentences from templates "
                         "never used in training; generate the corpus with novel_fraction > 0")
    return corpus.novel


# --------------------------------------------------------------------------------------------
# Grammar nodes. A template compiles to a tree of these; ``expand`` makes the random structural
# choices and appends finished tokens or slots to ``out``. Slots are realised afterwards, left
# to right, and finite verbs last, so a verb agrees with its subject wherever it stands ("did
# she ...") and a noun sees the determiner before it.


class _Pool:
    """Items drawn by weight: Zipf-like by list position for word lists (``zipf=True``),
    uniform for phrase classes, or the explicit ``weights`` of a determiner table."""

    def __init__(self, items: list[Any], zipf: bool = False, weights: list[float] | None = None) -> None:
        if not items:
            raise ValueError("corpus grammar: an empty word list or phrase class")
        if weights is None:
            weights = [1 / (i + 1) ** _ZIPF_EXPONENT if zipf else 1.0 for i in range(len(items))]
        self.items = items
        self.cumulative = list(accumulate(weights))

    def pick(self, rng: random.Random) -> Any:
        return self.items[bisect.bisect(self.cumulative, rng.random() * self.cumulative[-1])]


class _Literal:
    def __init__(self, token: _Tok) -> None:
        self.token = token

    def expand(self, state: _Document, out: list) -> None:
        out.append(self.token)


class _Sequence:
    def __init__(self, items: list) -> None:
        self.items = items

    def expand(self, state: _Document, out: list) -> None:
        for item in self.items:
            item.expand(state, out)


class _Optional:
    """``( ... )``: present or not; ``node`` numbers it so tests can see both were taken."""

    def __init__(self, body: _Sequence, node: int) -> None:
        self.body, self.node = body, node

    def expand(self, state: _Document, out: list) -> None:
        taken = state.rng.random() < _OPTIONAL_PROBABILITY
        if state.branches is not None:
            state.branches.add((self.node, int(taken)))
        if taken:
            self.body.expand(state, out)


class _Choice:
    def __init__(self, options: list[_Sequence], node: int) -> None:
        self.options, self.node = options, node

    def expand(self, state: _Document, out: list) -> None:
        option = state.rng.randrange(len(self.options))
        if state.branches is not None:
            state.branches.add((self.node, option))
        self.options[option].expand(state, out)


_PHRASE_START = "<phrase>"  # marks where a multi-word phrase begins, until the tokens are joined


class _Phrase:
    """A named word list or phrase class of the lexicon (``[W:name]``); filled after creation
    because phrases may refer to each other."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pool: _Pool | None = None

    def expand(self, state: _Document, out: list) -> None:
        item = self.pool.pick(state.rng)
        if isinstance(item, _Sequence):
            out.append(_PHRASE_START)  # a phrase ("last week") opens a noun phrase of its own
        item.expand(state, out)


class _Tensed:
    """``[WT:name]``: phrase class ``name_past`` or ``name_present``, by the document's tense."""

    def __init__(self, by_tense: dict[str, _Phrase]) -> None:
        self.by_tense = by_tense

    def expand(self, state: _Document, out: list) -> None:
        self.by_tense[state.tense].expand(state, out)


class _PerDocument:
    """``[D:name]``: one entry of the class, drawn once per document (its river, team, town)."""

    def __init__(self, phrase: _Phrase) -> None:
        self.phrase = phrase

    def expand(self, state: _Document, out: list) -> None:
        if self.phrase.name not in state.fixed:
            state.fixed[self.phrase.name] = self.phrase.pool.pick(state.rng)
        state.fixed[self.phrase.name].expand(state, out)


class _Slot:
    """A node realised after structural expansion, left to right; ``deferred`` ones (finite
    verbs) after all the others, once every subject is known."""

    deferred = False

    def expand(self, state: _Document, out: list) -> None:
        out.append(self)

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        raise NotImplementedError


@dataclass(frozen=True)
class _Noun:
    singular: str
    plural: str | None  # None: a mass noun, always singular ("water", "bait")
    sense: str | None
    mass_too: bool = False  # countable, and also used as mass ("a light", "lights", "plenty of light")

    def numbers(self) -> tuple[str, ...]:
        if self.plural is None:
            return ("mass",)
        return ("sg", "pl", "mass") if self.mass_too else ("sg", "pl")

    def token(self, number: str, info: dict[str, Any]) -> _Tok:
        form = self.plural if number == "pl" else self.singular
        return (form, "NOUN", self.sense, {"noun": number, "lemma": self.singular, **info})


@dataclass(frozen=True)
class _NounClass:
    name: str
    pool: _Pool
    adjectives: _Phrase | None

    def pick(self, state: _Document, allowed: frozenset[str], avoid: set[str]) -> tuple[_Noun, str]:
        """A noun and its number: the number one of ``allowed``, the noun none of ``avoid``."""
        for _ in range(_MAX_TRIES):
            noun: _Noun = self.pool.pick(state.rng)
            options = [n for n in noun.numbers() if n in allowed]
            if not options or noun.singular in avoid or noun.plural in avoid:
                continue
            # A plural slot takes the plural where the noun has one ("on weekends", not "on weekend").
            plural = "pl" in options and (len(options) == 1 or "sg" not in allowed
                                          or state.rng.random() < _PLURAL_PROBABILITY)
            return noun, "pl" if plural else "sg" if "sg" in options else "mass"
        raise ValueError(f"corpus grammar: no noun of {self.name!r} can be {'/'.join(sorted(allowed))} here "
                         f"without repeating one of {sorted(avoid)}")


def _add_nouns(nouns: set[str], tokens: Any) -> None:
    """Note every noun form (and a slot noun's lemma) of ``tokens``, so no later slot repeats it."""
    for token, pos, _, info in tokens:
        if pos == "NOUN":
            nouns.add(token)
            if info is not None and "lemma" in info:
                nouns.add(info["lemma"])


def _determiner_allows(parts: list, index: int) -> frozenset[str]:
    """The numbers the determiner before ``parts[index]`` allows (``_BARE`` where there is none):
    the nearest token to the left that is not inside a noun phrase ends the search."""
    for part in reversed(parts[:index]):
        if isinstance(part, _Slot) or part is _PHRASE_START:
            return _BARE  # a finite verb (realised later) or the start of a phrase: outside the noun phrase
        for token, pos, _, info in reversed(part if isinstance(part, list) else [part]):
            if info is not None and "det" in info:
                return info["det"]
            if pos not in _INSIDE_NOUN_PHRASE:
                return _BARE
    return _BARE


class _NounPhrase(_Slot):
    """``[S:cls]`` (a subject: sets agreement), ``[NP:cls]``, ``[NPsg:cls]``, ``[NPpl:cls]``:
    determiner (from the lexicon's table for the noun's number), sometimes an adjective, the noun."""

    def __init__(self, nouns: _NounClass, numbers: frozenset[str], group: str | None,
                 determiners: dict[str, _Phrase]) -> None:
        self.nouns, self.numbers, self.group, self.determiners = nouns, numbers, group, determiners

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        noun, number = self.nouns.pick(state, self.numbers, state.nouns)
        out: list = []
        self.determiners[number].expand(state, out)
        if self.nouns.adjectives is not None and state.rng.random() < _ADJECTIVE_PROBABILITY:
            self.nouns.adjectives.expand(state, out)
        out = [token for token in out if token is not _PHRASE_START]
        info = {}
        if self.group is not None:
            info = {"subject": self.group, "agreement": state.set_subject(self.group, _noun_agreement(number))}
        return out + [noun.token(number, info)]


def _noun_agreement(number: str) -> str:
    return "3pl" if number == "pl" else "3sg"


class _BareNoun(_Slot):
    """``[N:cls]`` (singular or mass) and ``[Npl:cls]`` (plural or mass): the noun alone, its
    determiner written by the template ("a [N:x]", "[Pp] [N:x]") or none ("a box of [Npl:x]");
    its number is one that determiner allows. ``[SN:cls]``, ``[SNpl:cls]``: the same as a
    subject ("the [SN:x] that ..."), setting its group's agreement."""

    def __init__(self, nouns: _NounClass, numbers: frozenset[str], group: str | None) -> None:
        self.nouns, self.numbers, self.group = nouns, numbers, group

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        noun, number = self.nouns.pick(state, self.numbers & _determiner_allows(parts, index), state.nouns)
        info = {}
        if self.group is not None:
            info = {"subject": self.group, "agreement": state.set_subject(self.group, _noun_agreement(number))}
        return [noun.token(number, info)]


@dataclass(frozen=True)
class _Verb:
    forms: dict[str, str]  # base, 3sg, past, ing, pp
    sense: str | None


class _FiniteVerb(_Slot):
    """``[V:cls]``: the verb in the document's tense, agreeing with its group's subject."""

    deferred = True

    def __init__(self, pool: _Pool, group: str) -> None:
        self.pool, self.group = pool, group

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        verb: _Verb = self.pool.pick(state.rng)
        agreement = state.subject_agreement(self.group)
        if state.tense == "past":
            form = "past"
        else:
            form = "3sg" if agreement == "3sg" else "base"
        info = {"finite": self.group, "agreement": agreement, "forms": verb.forms}
        return [(verb.forms[form], "VERB", verb.sense, info)]


class _VerbForm(_Slot):
    """``[Vb:cls]`` base, ``[Vg:cls]`` -ing, ``[Vd:cls]`` past participle: no agreement."""

    def __init__(self, pool: _Pool, form: str) -> None:
        self.pool, self.form = pool, form

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        verb: _Verb = self.pool.pick(state.rng)
        return [(verb.forms[self.form], "VERB", verb.sense, None)]


_AGREEMENTS = ("1sg", "1pl", "3sg", "3pl")
# Finite auxiliaries by tense and agreement ("1sg", "1pl", "3sg", "3pl").
_AUXILIARIES = {
    "BE": {"past": {"1sg": "was", "3sg": "was"}, "past_else": "were",
           "present": {"1sg": "am", "3sg": "is"}, "present_else": "are"},
    "HAVE": {"past": {}, "past_else": "had", "present": {"3sg": "has"}, "present_else": "have"},
    "DO": {"past": {}, "past_else": "did", "present": {"3sg": "does"}, "present_else": "do"},
}


class _FiniteAuxiliary(_Slot):
    """``[BE]``, ``[HAVE]``, ``[DO]``: the auxiliary in the document's tense, agreeing."""

    deferred = True

    def __init__(self, name: str, group: str) -> None:
        self.name, self.table, self.group = name, _AUXILIARIES[name], group

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        agreement = state.subject_agreement(self.group)
        form = self.table[state.tense].get(agreement, self.table[state.tense + "_else"])
        return [(form, "AUX", None, {"finite": self.group, "agreement": agreement, "auxiliary": self.name})]


class _Agreement(_Slot):
    """``[AGR:3sg]`` (``1sg``, ``1pl``, ``3pl``): no tokens; sets its group's agreement, for a
    subject the template writes out itself ("it [AGR:3sg] [V:rain]", "[D:team] [AGR:3pl] ...")."""

    def __init__(self, group: str, agreement: str) -> None:
        self.group, self.agreement = group, agreement

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        state.set_subject(self.group, self.agreement)
        return []


class _Integer(_Slot):
    """``[INT:lo:hi]``: a number written in digits, lo <= n <= hi; a determiner for its noun."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        n = state.rng.randint(self.low, self.high)
        return [(str(n), "NUM", None, {"det": frozenset(("sg",)) if n == 1 else frozenset(("pl",))})]


class _ProtagonistSubject(_Slot):
    """``[P]``: the document's protagonist as a subject; its name (or "my parents") the first
    time in the document, later mostly its pronoun, always the pronoun a second time in one
    sentence."""

    def __init__(self, group: str) -> None:
        self.group = group

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        hero = state.protagonist
        info = {"subject": self.group, "agreement": state.set_subject(self.group, hero.agreement)}
        named = hero.name is not None and (
            not state.introduced or (not state.named_in_sentence and state.rng.random() >= _PRONOUN_PROBABILITY)
        )
        state.introduced = True
        state.named_in_sentence = True
        words = hero.name if named else (hero.pronouns[0],)
        return [(token, pos, sense, info) for token, pos, sense, _ in words]


_POSSESSIVE = {"det": frozenset(_NUMBERS)}  # "her box", "her boxes", "her water"


class _ProtagonistCase(_Slot):
    """``[Po]`` the protagonist's object pronoun ("her"), ``[Pp]`` its possessive ("her")."""

    def __init__(self, case: int) -> None:
        self.case = case

    def realise(self, state: _Document, parts: list, index: int) -> list[_Tok]:
        token, pos, sense, _ = state.protagonist.pronouns[self.case]
        return [(token, pos, sense, _POSSESSIVE if self.case == 2 else None)]


@dataclass(frozen=True)
class _Protagonist:
    name: tuple[_Tok, ...] | None  # None: "I" or "we", who are never named
    pronouns: tuple[_Tok, _Tok, _Tok]  # subject, object, possessive
    agreement: str


@dataclass(frozen=True)
class _ProtagonistKind:
    names: _Phrase | None
    pronouns: tuple[_Tok, _Tok, _Tok]
    agreement: str


@dataclass(frozen=True)
class _Templates:
    """The templates a document may use: one opening, body sentences, perhaps a closing."""

    opening: tuple[tuple[_Sequence, str], ...]  # (template, id)
    body: tuple[tuple[_Sequence, str], ...]
    closing: tuple[tuple[_Sequence, str], ...]


@dataclass(frozen=True)
class _Topic:
    name: str
    past_probability: float
    regular: _Templates  # for the train and held-out splits
    novel: _Templates  # reserved for the novel split


class _Document:
    """The state one document's sentences share: random stream, tense, protagonist, fixed
    choices; plus the agreement and naming state of the sentence being written."""

    def __init__(self, rng: random.Random, tense: str, protagonist: _Protagonist | None) -> None:
        self.rng, self.tense, self.protagonist = rng, tense, protagonist
        self.fixed: dict[str, Any] = {}
        self.introduced = False
        self.agreement: dict[str, str] = {}
        self.named_in_sentence = False
        self.nouns: set[str] = set()  # the nouns of the sentence being written, which no slot repeats
        self.branches: set[tuple[int, int]] | None = None  # a set records the branches taken (for the tests)

    def set_subject(self, group: str, agreement: str) -> str:
        if group in self.agreement:
            raise ValueError(f"corpus grammar: agreement group {group!r} has two subjects in one sentence; "
                             "give the second clause its own group ([P2], [S2:..], [V2:..])")
        self.agreement[group] = agreement
        return agreement

    def subject_agreement(self, group: str) -> str:
        if group not in self.agreement:
            raise ValueError(f"corpus grammar: a verb of agreement group {group!r} has no subject slot")
        return self.agreement[group]


class _Grammar:
    """The compiled grammar: what generation needs, nothing of the JSON left."""

    def __init__(self) -> None:
        self.determiners: dict[str, _Phrase] = {}  # "sg", "pl", "mass"
        self.protagonists: list[_ProtagonistKind] = []
        self.protagonist_pool: _Pool | None = None
        self.topics: list[_Topic] = []
        self.templates: dict[str, tuple[_Sequence, _Topic]] = {}  # id -> template, its topic
        self.branches: dict[str, frozenset[tuple[int, int]]] = {}  # id -> its own (node, option) pairs
        self.all_branches: frozenset[tuple[int, int]] = frozenset()
        self.a_words: frozenset[str] = frozenset()  # vowel letter, consonant sound: "a university"
        self.an_words: frozenset[str] = frozenset()  # consonant letter, vowel sound: "an hour"


# --------------------------------------------------------------------------------------------
# Compiling the JSON grammar.

_SLOT = re.compile(r"\[([A-Za-z]+?)(\d*)(?::(.*))?\]")


def _regular_verb_forms(base: str) -> dict[str, str]:
    consonant_y = base.endswith("y") and base[-2:-1] not in "aeiou"
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        third = base + "es"
    else:
        third = base[:-1] + "ies" if consonant_y else base + "s"
    if base.endswith("e"):
        past = base + "d"
    else:
        past = base[:-1] + "ied" if consonant_y else base + "ed"
    if base.endswith("ie"):
        ing = base[:-2] + "ying"
    elif base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        ing = base[:-1] + "ing"
    else:
        ing = base + "ing"
    return {"base": base, "3sg": third, "past": past, "ing": ing, "pp": past}


def _regular_plural(singular: str) -> str:
    if singular.endswith(("s", "sh", "ch", "x", "z")):
        return singular + "es"
    if singular.endswith("y") and singular[-2:-1] not in "aeiou":
        return singular[:-1] + "ies"
    return singular + "s"


def _numbers(spec: str, where: str) -> frozenset[str]:
    numbers = frozenset(_NUMBERS if spec == "any" else spec.split("|"))
    if not numbers <= _NUMBERS:
        raise ValueError(f"corpus grammar: {where} allows {spec!r}; write 'any' or numbers from {sorted(_NUMBERS)}")
    return numbers


class _Compiler:
    """Turns the two JSON files into a ``_Grammar``, checking as it goes that every literal has
    exactly one UPOS tag, that every determiner declares the numbers it allows, and that every
    form of an ambiguous word carries a declared sense.

    Lexicon entries: a noun is "bank" (regular plural), "fish|fish", "water|-" (mass) or
    "~light" (countable, and mass as well: "a light", "some light"), a verb
    is its base form (regular, or spelled out in ``irregular_verbs``); either may end in
    "@sense". A template literal is "word", "word/TAG" where the word could have several tags,
    "word@sense" or "word/TAG@sense"; slots are described in ``slot``.
    """

    def __init__(self, lexicon: dict[str, Any], grammar: _Grammar) -> None:
        self.grammar = grammar
        self.nodes = itertools.count()
        self.form_lemma: dict[str, str] = {}
        self.senses: dict[str, set[str]] = {}
        for lemma, entry in lexicon["ambiguous"].items():
            self.senses[lemma] = set(entry["senses"])
            for form in entry["forms"]:
                self.form_lemma[form] = lemma
        self.irregular = {
            lemma: dict(zip(("base", "3sg", "past", "ing", "pp"), [lemma, *forms.split()]))
            for lemma, forms in lexicon["irregular_verbs"].items()
        }
        self.determiner_numbers = {word: _numbers(spec, f"determiner {word!r}")
                                   for word, spec in lexicon["determiner_numbers"].items()}
        self.possessives = frozenset(lexicon["possessives"])
        self.tags: dict[str, set[str]] = {}
        for word, tag in lexicon["function_words"].items():
            self._add_tag(word, tag)
        for forms in self.irregular.values():
            for form in forms.values():
                self._add_tag(form, "VERB")
        words = lexicon["words"]
        for spec in words.values():
            for entry in spec.get("words", ()):
                self._add_tag(entry.partition("@")[0], spec["pos"])
        self.phrases = {name: _Phrase(name) for name in words}
        self.nouns = {name: self._noun_class(name, spec) for name, spec in lexicon["nouns"].items()}
        self.verbs = {name: _Pool([self._verb(e) for e in entries], zipf=True) for name, entries in lexicon["verbs"].items()}
        # Phrases are compiled last, once every word's possible tags are known.
        for name, spec in words.items():
            if "pos" in spec:
                self.phrases[name].pool = _Pool([self._word(e, spec["pos"]) for e in spec["words"]], zipf=True)
            else:
                self.phrases[name].pool = _Pool([self.template(p) for p in spec["phrases"]])
        for number, entries in lexicon["determiners"].items():
            table = _Phrase(f"determiners_{number}")
            table.pool = _Pool([self.template(text) for text, _ in entries], weights=[w for _, w in entries])
            grammar.determiners[number] = table

    def _add_tag(self, word: str, tag: str) -> None:
        if tag not in _UPOS:
            raise ValueError(f"corpus grammar: {word!r} has tag {tag!r}, not one of {sorted(_UPOS)}")
        self.tags.setdefault(word, set()).add(tag)

    def _sense(self, forms: list[str], sense: str, where: str) -> str | None:
        """The sense label of a word whose forms are ``forms``; an error if it is ambiguous and
        unlabelled, labelled and not ambiguous, or labelled with an undeclared sense."""
        lemmas = {self.form_lemma.get(form.lower()) for form in forms}
        if not sense:
            if lemmas != {None}:
                raise ValueError(f"corpus grammar: {where} is a form of an ambiguous word and needs @sense")
            return None
        lemma = next(iter(lemmas))
        if len(lemmas) != 1 or lemma is None or sense not in self.senses[lemma]:
            raise ValueError(f"corpus grammar: {where} has sense {sense!r}, not a declared sense of its word")
        return f"{lemma}/{sense}"

    def _noun(self, entry: str) -> _Noun:
        word, _, sense = entry.partition("@")
        mass_too = word.startswith("~")
        singular, bar, plural = word.removeprefix("~").partition("|")
        if not bar:
            plural = _regular_plural(singular)
        if mass_too and plural == "-":
            raise ValueError(f"corpus grammar: noun {entry!r} is marked '~' (also mass) but has no plural")
        forms = [singular] if plural == "-" else [singular, plural]
        for form in forms:
            self._add_tag(form, "NOUN")
        return _Noun(singular, None if plural == "-" else plural, self._sense(forms, sense, f"noun {entry!r}"), mass_too)

    def _noun_class(self, name: str, spec: dict[str, Any]) -> _NounClass:
        adjectives = self.phrases[spec["adj"]] if "adj" in spec else None
        return _NounClass(name, _Pool([self._noun(e) for e in spec["words"]], zipf=True), adjectives)

    def _verb(self, entry: str) -> _Verb:
        base, _, sense = entry.partition("@")
        forms = self.irregular.get(base) or _regular_verb_forms(base)
        for form in forms.values():
            self._add_tag(form, "VERB")
        return _Verb(forms, self._sense(list(forms.values()), sense, f"verb {entry!r}"))

    def _token(self, word: str, tag: str, sense: str | None) -> _Tok:
        """A literal token; a determiner, numeral, possessive or quantifier ("many", "a few") gets
        the numbers it allows a following noun to take."""
        if tag == "PRON" and word in self.possessives:
            return (word, tag, sense, _POSSESSIVE)
        if tag in ("DET", "NUM", "ADJ") and word in self.determiner_numbers:
            return (word, tag, sense, {"det": self.determiner_numbers[word]})
        if tag in ("DET", "NUM"):
            raise ValueError(f"corpus grammar: determiner {word!r} needs an entry in determiner_numbers")
        return (word, tag, sense, None)

    def _word(self, entry: str, pos: str) -> _Literal:
        word, _, sense = entry.partition("@")
        return _Literal(self._token(word, pos, self._sense([word], sense, f"word {entry!r}")))

    def literal(self, text: str) -> _Literal:
        word, _, sense = text.partition("@") if len(text) > 1 else (text, "", "")
        head, slash, tag = word.rpartition("/")
        if slash and head:
            word = head
        else:
            tags = self.tags.get(word, set())
            if len(tags) != 1:
                raise ValueError(f"corpus grammar: literal {word!r} has tags {sorted(tags)}; write it as {word}/TAG")
            tag = next(iter(tags))
        if tag not in _UPOS:
            raise ValueError(f"corpus grammar: literal {text!r} has tag {tag!r}, not one of {sorted(_UPOS)}")
        return _Literal(self._token(word, tag, self._sense([word], sense, f"literal {text!r}")))

    def _nouns_arg(self, arg: str) -> _NounClass:
        name, _, adjectives = arg.partition(":")
        if name.startswith("+"):
            nouns = _NounClass(name, _Pool([self._noun(name[1:])]), None)
        else:
            nouns = self.nouns[name]
        return _NounClass(nouns.name, nouns.pool, self.phrases[adjectives]) if adjectives else nouns

    def _verbs_arg(self, arg: str) -> _Pool:
        return _Pool([self._verb(arg[1:])]) if arg.startswith("+") else self.verbs[arg]

    def slot(self, text: str) -> Any:
        """One slot: ``[P]``, ``[Po]``, ``[Pp]`` the protagonist; ``[S:nouns]`` (``Ssg``, ``Spl``)
        a subject noun phrase, ``[NP:nouns]`` (``NPsg``, ``NPpl``) any other; ``[N:nouns]``
        (``Npl``) a noun whose determiner, if any, the template writes, ``[SN:nouns]``
        (``SNpl``) the same as a subject; ``nouns`` is a class, or "+entry" for one word,
        optionally followed by ":adjectives". ``[V:verbs]`` a finite verb, ``[Vb:..]``,
        ``[Vg:..]``, ``[Vd:..]`` its base, -ing and past-participle forms; ``[BE]``, ``[HAVE]``,
        ``[DO]`` finite auxiliaries; ``[AGR:3sg]`` (``1sg``, ``1pl``, ``3pl``) the agreement of a
        subject written as literals; ``[W:class]`` a word or phrase of a class, ``[WT:class]`` of
        ``class_past`` or ``class_present`` by tense, ``[D:class]`` the same one throughout the
        document; ``[INT:lo:hi]`` a number in digits. A digit after S, SN, P, AGR, V or an
        auxiliary names an agreement group ("[S2:x] ... [V2:y]"), so a relative clause can have
        its own subject."""
        match = _SLOT.fullmatch(text)
        if match is None:
            raise ValueError(f"corpus grammar: malformed slot {text!r}")
        kind, group, arg = match.group(1), match.group(2), match.group(3) or ""
        singular, plural = frozenset(("sg", "mass")), frozenset(("pl", "mass"))
        try:
            if kind == "P":
                return _ProtagonistSubject(group)
            if kind in ("Po", "Pp"):
                return _ProtagonistCase(1 if kind == "Po" else 2)
            if kind in ("S", "Ssg", "Spl", "NP", "NPsg", "NPpl"):
                numbers = {"sg": singular, "pl": plural}.get(kind[-2:], _NUMBERS)
                return _NounPhrase(self._nouns_arg(arg), numbers, group if kind[0] == "S" else None,
                                   self.grammar.determiners)
            if kind in ("N", "Npl", "SN", "SNpl"):
                return _BareNoun(self._nouns_arg(arg), plural if kind.endswith("pl") else singular,
                                 group if kind[0] == "S" else None)
            if kind == "V":
                return _FiniteVerb(self._verbs_arg(arg), group)
            if kind in ("Vb", "Vg", "Vd"):
                return _VerbForm(self._verbs_arg(arg), {"Vb": "base", "Vg": "ing", "Vd": "pp"}[kind])
            if kind == "AGR":
                if arg not in _AGREEMENTS:
                    raise ValueError(f"corpus grammar: slot {text!r} must name one of {list(_AGREEMENTS)}")
                return _Agreement(group, arg)
            if kind in _AUXILIARIES:
                return _FiniteAuxiliary(kind, group)
            if kind == "W":
                return self.phrases[arg]
            if kind == "WT":
                return _Tensed({tense: self.phrases[f"{arg}_{tense}"] for tense in ("past", "present")})
            if kind == "D":
                return _PerDocument(self.phrases[arg])
            if kind == "INT":
                low, high = (int(n) for n in arg.split(":"))
                return _Integer(low, high)
        except KeyError as error:
            raise ValueError(f"corpus grammar: slot {text!r} names unknown class {error}") from None
        raise ValueError(f"corpus grammar: slot {text!r} has unknown kind {kind!r}")

    def template(self, text: str) -> _Sequence:
        """Compile ``text``: space-separated literals and slots, "( ... )" optional parts and
        "{ a | b }" choices, nested freely."""
        open_groups: list[tuple[str, list[_Sequence]]] = []  # ("(" or "{", finished options)
        items: list[list] = [[]]  # the items of the sequence being built, innermost last
        for part in text.split():
            if part in ("(", "{"):
                open_groups.append((part, []))
                items.append([])
            elif part in ("|", ")", "}"):
                opener = {"|": "{", ")": "(", "}": "{"}[part]
                if not open_groups or open_groups[-1][0] != opener:
                    raise ValueError(f"corpus grammar: unbalanced {part!r} in {text!r}")
                open_groups[-1][1].append(_Sequence(items.pop()))
                if part == "|":
                    items.append([])
                else:
                    _, options = open_groups.pop()
                    node = next(self.nodes)
                    items[-1].append(_Optional(options[0], node) if part == ")" else _Choice(options, node))
            elif part.startswith("["):
                items[-1].append(self.slot(part))
            else:
                items[-1].append(self.literal(part))
        if open_groups:
            raise ValueError(f"corpus grammar: unclosed {open_groups[-1][0]!r} in {text!r}")
        return _Sequence(items[0])



def _own_branches(node: Any) -> list[tuple[int, int]]:
    """The (node, option) pairs of a template's own optional parts and choices (not those of
    the phrases it names, which are counted once, as phrases)."""
    if isinstance(node, _Sequence):
        return [pair for item in node.items for pair in _own_branches(item)]
    if isinstance(node, _Optional):
        return [(node.node, 0), (node.node, 1), *_own_branches(node.body)]
    if isinstance(node, _Choice):
        return [(node.node, i) for i in range(len(node.options))] + [
            pair for option in node.options for pair in _own_branches(option)]
    return []


_KINDS = ("opening", "body", "long", "closing")


@functools.cache
def _grammar() -> _Grammar:
    # Read through importlib.resources so the data is found in an installed wheel as well as in
    # an editable checkout; compiled once per process.
    data = resources.files("ctxlib").joinpath("data")
    lexicon = json.loads(data.joinpath(_LEXICON_FILE).read_text(encoding="utf-8"))
    topics = json.loads(data.joinpath(_TOPICS_FILE).read_text(encoding="utf-8"))
    grammar = _Grammar()
    compiler = _Compiler(lexicon, grammar)
    grammar.a_words = frozenset(lexicon["a_words"])
    grammar.an_words = frozenset(lexicon["an_words"])
    for spec in lexicon["protagonists"]:
        pronouns = tuple(compiler.literal(p).token for p in spec["pronouns"])
        names = compiler.phrases[spec["names"]] if "names" in spec else None
        grammar.protagonists.append(_ProtagonistKind(names, pronouns, spec["agreement"]))
    grammar.protagonist_pool = _Pool(grammar.protagonists, weights=[s["weight"] for s in lexicon["protagonists"]])

    def compile_kinds(name: str, spec: dict[str, list[str]], prefix: str) -> dict[str, list[tuple[_Sequence, str]]]:
        compiled: dict[str, list[tuple[_Sequence, str]]] = {}
        for kind in _KINDS:
            compiled[kind] = []
            for index, text in enumerate(spec.get(kind, ())):
                template_id = f"{name}/{prefix}{kind}/{index}"
                sequence = compiler.template(text)
                grammar.branches[template_id] = frozenset(_own_branches(sequence))
                compiled[kind].append((sequence, template_id))
        return compiled

    for name, spec in topics.items():
        regular, novel = compile_kinds(name, spec, ""), compile_kinds(name, spec["novel"], "novel_")
        for kinds, where in ((regular, ""), (novel, " novel")):
            if not kinds["opening"] or len(kinds["body"]) + len(kinds["long"]) < _SENTENCES_PER_DOCUMENT[0]:
                raise ValueError(f"corpus grammar: topic {name!r} needs{where} openings and at least "
                                 f"{_SENTENCES_PER_DOCUMENT[0]} body templates")
        if len(regular["body"]) + len(regular["long"]) < _SENTENCES_PER_DOCUMENT[1] - 1:
            raise ValueError(f"corpus grammar: topic {name!r} needs {_SENTENCES_PER_DOCUMENT[1] - 1} body templates")
        topic = _Topic(name, spec.get("past", 0.6), *(
            _Templates(tuple(kinds["opening"]), tuple(kinds["body"] + kinds["long"]), tuple(kinds["closing"]))
            for kinds in (regular, novel)))
        grammar.topics.append(topic)
        for kinds in (regular, novel):
            for sequence, template_id in itertools.chain(*kinds.values()):
                grammar.templates[template_id] = (sequence, topic)
    phrases = [*compiler.phrases.values(), *grammar.determiners.values()]
    grammar.all_branches = frozenset(pair for node in itertools.chain(*(p.pool.items for p in phrases),
                                                                      (t for t, _ in grammar.templates.values()))
                                     for pair in _own_branches(node))
    return grammar


# --------------------------------------------------------------------------------------------
# Generation.


def _realise(template: _Sequence, state: _Document, grammar: _Grammar) -> list[_Tok]:
    state.agreement = {}
    state.named_in_sentence = False
    parts: list = []
    template.expand(state, parts)
    slots = [(i, part) for i, part in enumerate(parts) if isinstance(part, _Slot)]
    state.nouns = set()
    _add_nouns(state.nouns, (part for part in parts if type(part) is tuple))
    for i, slot in slots:
        if not slot.deferred:
            parts[i] = slot.realise(state, parts, i)
            _add_nouns(state.nouns, parts[i])
    for i, slot in slots:
        if slot.deferred:
            parts[i] = slot.realise(state, parts, i)
    tokens: list[_Tok] = []
    phrase_start = False
    for part in parts:
        if part is _PHRASE_START:
            phrase_start = True
        elif type(part) is tuple:
            tokens.append(part)
        else:
            tokens += part
        if phrase_start and type(part) is not str and part:
            first = len(tokens) - (1 if type(part) is tuple else len(part))
            tokens[first] = (*tokens[first][:3], {**(tokens[first][3] or {}), "phrase": True})
            phrase_start = False
    return _fix_articles(tokens, grammar)


def _sentence(template: _Sequence, template_id: str, state: _Document, grammar: _Grammar,
              written: set[tuple[str, ...]] | None) -> tuple[list[_Tok] | None, bool]:
    """A realisation of ``template`` of allowed length that is not in ``written`` (added to it;
    None if ``_FRESH_TRIES`` draws were all written already), and whether the first draw was a
    repeat."""
    low, high = _LENGTH
    repeats = 0
    for _ in range(_MAX_TRIES):
        introduced = state.introduced
        tokens = _realise(template, state, grammar)
        if low <= len(tokens) <= high:
            if written is None:
                return tokens, False
            key = tuple(t[0] for t in tokens)
            if key not in written:
                written.add(key)
                return tokens, repeats > 0
            repeats += 1
            if repeats == _FRESH_TRIES:
                break
        state.introduced = introduced
    if repeats == 0:
        raise ValueError(f"corpus grammar: template {template_id!r} never fits {low}-{high} tokens")
    state.introduced = introduced
    return None, True


def _fix_articles(tokens: list[_Tok], grammar: _Grammar) -> list[_Tok]:
    """"a" becomes "an" before a vowel sound ("an old bank", "a university", "an hour")."""
    for i, (token, pos, sense, info) in enumerate(tokens[:-1]):
        if token == "a" and pos == "DET":
            following = tokens[i + 1][0].lower()
            vowel = following[0] in "aeiou"
            if (vowel and following not in grammar.a_words) or following in grammar.an_words:
                tokens[i] = ("an", pos, sense, info)
    return tokens


def _new_document(topic: _Topic, rng: random.Random, grammar: _Grammar) -> _Document:
    tense = "past" if rng.random() < topic.past_probability else "present"
    kind: _ProtagonistKind = grammar.protagonist_pool.pick(rng)
    state = _Document(rng, tense, None)
    name = None
    if kind.names is not None:
        for _ in range(_MAX_TRIES):  # "Anna and Anna" is not a couple
            tokens: list = []
            kind.names.expand(state, tokens)
            tokens = [t for t in tokens if t is not _PHRASE_START]
            if len({t[0] for t in tokens if t[1] == "PROPN"}) == sum(t[1] == "PROPN" for t in tokens):
                break
        name = tuple(tokens)
    state.protagonist = _Protagonist(name, kind.pronouns, kind.agreement)
    return state


def _document(topic: _Topic, templates: _Templates, rng: random.Random, grammar: _Grammar,
              written: set[tuple[str, ...]]) -> tuple[list[tuple[list[_Tok], str]], int]:
    """One document's sentences (with their template ids), none of them in ``written``, and how
    many first draws were repeats. A template that only repeats gives way to another."""
    state = _new_document(topic, rng, grammar)
    longest = min(_SENTENCES_PER_DOCUMENT[1], 1 + len(templates.body) + bool(templates.closing))
    count = rng.randint(_SENTENCES_PER_DOCUMENT[0], longest)
    closing = bool(templates.closing) and rng.random() < _CLOSING_PROBABILITY
    wanted = [(templates.opening, 1), (templates.body, count - 1 - closing), (templates.closing, int(closing))]
    sentences: list[tuple[list[_Tok], str]] = []
    repeats = 0
    for candidates, number in wanted:
        taken = 0
        for template, template_id in rng.sample(candidates, len(candidates)):
            if taken == number:
                break
            tokens, repeated = _sentence(template, template_id, state, grammar, written)
            repeats += repeated
            if tokens is not None:
                sentences.append((tokens, template_id))
                taken += 1
    if len(sentences) < _SENTENCES_PER_DOCUMENT[0] or sentences[0][1].split("/")[1] not in ("opening", "novel_opening"):
        raise ValueError(f"corpus grammar: topic {topic.name!r} has written every sentence its templates allow; "
                         "generate fewer documents or add templates")
    return sentences, repeats


def _check_seed(seed: object) -> int:
    # bool is an int subclass; a seed of True is a mistake, not seed 1.
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    return seed


def generate_corpus(num_documents: int = 6000, heldout_fraction: float = 0.1, novel_fraction: float = 0.1,
                    seed: int = 0) -> Corpus:
    """``num_documents`` documents from the grammar: ``round(num_documents * heldout_fraction)``
    held out and ``round(num_documents * novel_fraction)`` written from the reserved templates
    (``Corpus.novel``); the rest train.

    Topics are dealt in rounds (every topic once per round, in a shuffled order), so every split
    covers every topic about equally. No sentence is written twice. The output depends on
    ``seed`` alone: one ``random.Random(seed)`` drives every choice, and the grammar is read in
    file order.
    """
    check_positive_int("num_documents", num_documents)
    heldout = round(num_documents * check_probability("heldout_fraction", heldout_fraction, allow_one=False))
    novel = round(num_documents * check_probability("novel_fraction", novel_fraction, allow_one=False))
    _check_seed(seed)
    if heldout + novel >= num_documents:
        raise ValueError(
            f"heldout_fraction={heldout_fraction} and novel_fraction={novel_fraction} leave none of "
            f"num_documents={num_documents} documents for training; lower them or generate more documents")
    grammar = _grammar()
    rng = random.Random(seed)
    order: list[_Topic] = []
    while len(order) < num_documents:
        round_ = list(grammar.topics)
        rng.shuffle(round_)
        order += round_
    splits: dict[str, list[TaggedSentence]] = {split: [] for split in SPLITS}
    bounds = {"train": 0, "heldout": num_documents - heldout - novel, "novel": num_documents - novel}
    written: set[tuple[str, ...]] = set()
    redrawn = 0
    for index, topic in enumerate(order[:num_documents]):
        split = "novel" if index >= bounds["novel"] else "heldout" if index >= bounds["heldout"] else "train"
        templates = topic.novel if split == "novel" else topic.regular
        sentences, repeats = _document(topic, templates, rng, grammar, written)
        redrawn += repeats
        for tokens, template_id in sentences:
            words, tags, senses, _ = zip(*tokens)
            splits[split].append(TaggedSentence(words, tags, senses, index - bounds[split], topic.name, template_id))
    return Corpus(*(tuple(splits[split]) for split in SPLITS), redrawn=redrawn)


@functools.cache
def load_corpus() -> Corpus:
    """The book's standard corpus, ``generate_corpus()`` with its defaults, built once per process.

    Generating it takes about 1.4 s and every chapter's kernel needs it, so it is also kept on
    disk (``cache_dir()``, as JSON: reading it back takes about 0.3 s) under a key made of what
    can change it: this module's code, the grammar's two files and the Python version, whose
    ``random`` draws it. A stored file that cannot be read is reported and written afresh; a
    cache folder that cannot be written to costs the caching, never the corpus."""
    return _stored_or_generated()


def _stored_or_generated() -> Corpus:
    path = _stored_corpus_path()
    try:
        return _corpus_from_json(json.loads(read_text(path)))
    except (FileNotFoundError, NotADirectoryError):  # not stored yet, or no cache folder can exist there
        pass
    except (OSError, ValueError, KeyError, TypeError) as error:
        warnings.warn(f"{path}: unreadable ({error}); generating the corpus again", stacklevel=2)
    corpus = generate_corpus()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = {split: [(s.tokens, s.pos, s.senses, s.document, s.topic, s.template) for s in corpus.split(split)]
                  for split in SPLITS}
        write_text_atomically(path, json.dumps({**stored, "redrawn": corpus.redrawn}, separators=(",", ":")))
    except OSError as error:
        warnings.warn(f"{path}: cannot keep the corpus there ({error}); it is generated again next time",
                      stacklevel=2)
    return corpus


def _stored_corpus_path() -> Path:
    data = resources.files("ctxlib").joinpath("data")
    digest = hashlib.sha256()
    for part in (Path(__file__).read_bytes(), data.joinpath(_LEXICON_FILE).read_bytes(),
                 data.joinpath(_TOPICS_FILE).read_bytes(), ".".join(map(str, sys.version_info[:3])).encode()):
        digest.update(hashlib.sha256(part).digest())
    return cache_dir() / f"corpus-{digest.hexdigest()[:16]}.json"


def _corpus_from_json(stored: dict[str, Any]) -> Corpus:
    def sentence(fields: list[Any]) -> TaggedSentence:
        tokens, pos, senses, document, topic, template = fields
        return TaggedSentence(tuple(tokens), tuple(pos), tuple(senses), document, topic, template)

    return Corpus(*(tuple(map(sentence, stored[split])) for split in SPLITS), redrawn=stored["redrawn"])


# --------------------------------------------------------------------------------------------
# Looking inside the grammar (for the tests) and at a corpus (for the page).


@dataclass(frozen=True)
class Realisation:
    """One sentence a template wrote, with what the grammar knows about each token: ``info[i]``
    is None or a dict with ``noun`` (its number: "sg", "pl" or "mass") and ``lemma`` for a noun a
    slot chose; ``det`` (the numbers it allows a noun) for a determiner, numeral or possessive;
    ``subject`` (its agreement group) and ``agreement`` for a subject's words; ``finite`` (the
    group), ``agreement`` and ``forms`` (a verb's base, 3sg, past, ing, pp) or ``auxiliary``
    ("BE", "HAVE", "DO") for a finite verb; ``phrase`` on the first word of a phrase the lexicon
    wrote ("last week"), which begins a noun phrase of its own. ``subjects`` lists the agreement each group's
    subjects set; ``branches`` the (node, option) pairs of the optional parts and choices taken."""

    tokens: tuple[str, ...]
    pos: tuple[str, ...]
    senses: tuple[str | None, ...]
    info: tuple[dict[str, Any] | None, ...]
    tense: str
    subjects: dict[str, str]
    branches: frozenset[tuple[int, int]]


def template_ids() -> tuple[str, ...]:
    """Every template of the grammar, as "topic/kind/index" (kinds: opening, body, long,
    closing, and novel_... for those reserved for the novel split)."""
    return tuple(_grammar().templates)


def template_branches(template_id: str | None = None) -> frozenset[tuple[int, int]]:
    """The (node, option) pairs of ``template_id``'s own optional parts and choices; with None,
    those of every template, phrase and determiner table of the grammar."""
    grammar = _grammar()
    if template_id is None:
        return grammar.all_branches
    check_choice("template_id", template_id, tuple(grammar.templates))
    return grammar.branches[template_id]


def realise_template(template_id: str, seed: int) -> Realisation:
    """One realisation of ``template_id`` in a fresh document (random protagonist and tense, the
    protagonist named already or not), as ``generate_corpus`` writes it."""
    grammar = _grammar()
    check_choice("template_id", template_id, tuple(grammar.templates))
    template, topic = grammar.templates[template_id]
    rng = random.Random(_check_seed(seed))
    state = _new_document(topic, rng, grammar)
    state.introduced = rng.random() < 0.5
    state.branches = set()
    tokens, _ = _sentence(template, template_id, state, grammar, None)
    words, tags, senses, info = zip(*tokens)
    return Realisation(words, tags, senses, info, state.tense, dict(state.agreement), frozenset(state.branches))


@dataclass(frozen=True)
class CorpusStatistics:
    """What a reader should know about a corpus before trusting a score measured on it.

    ``duplicates``: training sentences that repeat an earlier training sentence; ``redrawn``:
    sentences the generator drew again because it had written them already; ``overlap``:
    held-out and novel sentences that also occur in training; ``novel_templates_in_training``:
    novel sentences whose template training used; ``ambiguous_share``: per split, the share of
    sentences with a form of one of the ten ambiguous words. On the training split:
    ``word_counts``, occurrences of each ambiguous word (all forms) and of a few function words;
    ``topics_per_sense`` and ``senses_per_topic``; ``sense_from_topic``, the share of ambiguous
    occurrences whose sense is the commonest one of their word in their topic (how far the
    topic alone gives a sense away: the baseline a sense probe has to beat)."""

    documents: dict[str, int]
    sentences: dict[str, int]
    tokens: int
    types: int
    duplicates: int
    redrawn: int
    overlap: dict[str, int]
    novel_templates_in_training: int
    ambiguous_share: dict[str, float]
    word_counts: dict[str, int]
    topics_per_sense: dict[str, int]
    senses_per_topic: dict[str, int]
    sense_from_topic: float

    def rows(self) -> list[tuple[str, str]]:
        """(quantity, value) rows for a table on the page."""
        splits = " / ".join(SPLITS)
        ambiguous = {w: c for w, c in self.word_counts.items() if w in _AMBIGUOUS_WORDS}
        commonest = max(ambiguous, key=ambiguous.get)
        functions = ", ".join(f"*{w}* {self.word_counts[w]:,}" for w in _FUNCTION_WORDS)
        train = self.sentences["train"]
        return [
            (f"documents ({splits})", " / ".join(f"{self.documents[s]:,}" for s in SPLITS)),
            (f"sentences ({splits})", " / ".join(f"{self.sentences[s]:,}" for s in SPLITS)),
            ("tokens (all splits); word types in training", f"{self.tokens:,}; {self.types:,}"),
            ("training sentences that repeat another", f"{self.duplicates} ({self.duplicates / train:.1%})"),
            ("sentences drawn again because already written", f"{self.redrawn:,} ({self.redrawn / sum(self.sentences.values()):.1%})"),
            ("held-out / novel sentences also in training", f"{self.overlap['heldout']} / {self.overlap['novel']}"),
            ("novel sentences from a template training used", f"{self.novel_templates_in_training}"),
            (f"sentences with an ambiguous word ({splits})", " / ".join(f"{self.ambiguous_share[s]:.1%}" for s in SPLITS)),
            ("commonest ambiguous word in training, beside function words",
             f"*{commonest}* {ambiguous[commonest]:,}; {functions}"),
            ("topics each sense occurs in (fewest–most)",
             f"{min(self.topics_per_sense.values())}–{max(self.topics_per_sense.values())}"),
            ("senses each topic holds (fewest–most)",
             f"{min(self.senses_per_topic.values())}–{max(self.senses_per_topic.values())}"),
            ("senses given by word and topic alone", f"{self.sense_from_topic:.1%}"),
        ]


_AMBIGUOUS_WORDS = ("bank", "run", "bat", "spring", "plant", "light", "bark", "match", "pitch", "seal")
_FUNCTION_WORDS = ("the", "on", "she", "was")


def corpus_statistics(corpus: Corpus) -> CorpusStatistics:
    """Sizes, duplicates, overlap between splits, and how often and where the ambiguous words
    occur (see ``CorpusStatistics``); about a second on the book's corpus."""
    train_texts = Counter(s.tokens for s in corpus.train)
    train_templates = {s.template for s in corpus.train}
    words: Counter = Counter()
    tokens = Counter(t for s in corpus.train for t in s.tokens)
    topics: dict[str, set[str]] = defaultdict(set)
    senses: dict[str, set[str]] = defaultdict(set)
    by_word_topic: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for sentence in corpus.train:
        for sense in sentence.senses:
            if sense is not None:
                word = sense.split("/")[0]
                words[word] += 1
                topics[sense].add(sentence.topic)
                senses[sentence.topic].add(sense)
                by_word_topic[word, sentence.topic][sense] += 1
    return CorpusStatistics(
        documents={split: len(corpus.documents(split)) for split in SPLITS},
        sentences={split: len(corpus.split(split)) for split in SPLITS},
        tokens=sum(len(s.tokens) for split in SPLITS for s in corpus.split(split)),
        types=len(tokens),
        duplicates=sum(n - 1 for n in train_texts.values()),
        redrawn=corpus.redrawn,
        overlap={split: sum(s.tokens in train_texts for s in corpus.split(split)) for split in ("heldout", "novel")},
        novel_templates_in_training=sum(s.template in train_templates for s in corpus.novel),
        ambiguous_share={split: sum(any(s.senses) for s in corpus.split(split)) / max(len(corpus.split(split)), 1)
                         for split in SPLITS},
        word_counts={**{w: words[w] for w in _AMBIGUOUS_WORDS}, **{w: tokens[w] for w in _FUNCTION_WORDS}},
        topics_per_sense={sense: len(t) for sense, t in sorted(topics.items())},
        senses_per_topic={topic: len(s) for topic, s in sorted(senses.items())},
        sense_from_topic=sum(c.most_common(1)[0][1] for c in by_word_topic.values()) / max(sum(words.values()), 1),
    )
