"""The book's pretraining corpus: short English documents generated from a template grammar.

Chapter 2 pretrains a small ELMo biLM on it and Chapters 3-6 a mini-BERT (masked LM and
next-sentence prediction), then probe their layers. No text is downloaded: a probabilistic
grammar (``ctxlib/data/corpus_lexicon.json``, ``ctxlib/data/corpus_topics.json``) writes every
sentence, so each token's Universal POS tag is exact by construction, and so is the sense of
each occurrence of the ten ambiguous words (bank, run, bat, spring, plant, light, bark, match,
pitch, seal), labelled like ``"bank/finance"``.

A document is a paragraph of 3-8 sentences on one topic ("river_fishing", "bank_visit",
"cricket_match", ...): an opening sentence that introduces its protagonist, body sentences that
refer back to them with pronouns, sometimes a closing one. The tense (past or present) is one
per document. That coherence is what next-sentence prediction learns to detect.

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
  (correspond: the curtains match the sofa) and "pitch" three (field, throw, tone).
- Most sentences have 5-25 tokens. Each topic also has a few long sentences (up to 40 tokens)
  in which a subject and its agreeing verb are separated by a relative clause, often with a
  noun of the other number in between ("the boy who fed the seals near the old pier was ..."):
  Chapter 2 measures how far a biLM carries that information.

Sense is recoverable from context (topic words, verbs, collocations, the rest of the document)
but never from one fixed neighbour: the most frequent word just left of any sense covers less
than half of its occurrences. ``tests/test_corpus.py`` checks that and the other properties.
"""

from __future__ import annotations

import bisect
import functools
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from typing import Any

from ctxlib._checks import check_choice, check_positive_int, check_probability

_LEXICON_FILE = "corpus_lexicon.json"
_TOPICS_FILE = "corpus_topics.json"
_UPOS = frozenset(
    ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "NUM", "PROPN", "PUNCT")
)
_SPLITS = ("train", "heldout")
# Token-count bounds per template kind; a realisation outside them is drawn again, so optional
# phrases can be generous without a rare combination producing a run-on sentence.
_LENGTH = {"short": (5, 25), "long": (12, 40)}
_MAX_TRIES = 50
_SENTENCES_PER_DOCUMENT = (3, 8)
_CLOSING_PROBABILITY = 0.6  # a document ends on a closing sentence (when its topic has them)
_ADJECTIVE_PROBABILITY = 0.3  # a noun phrase whose class names adjectives gets one
_PLURAL_PROBABILITY = 0.35  # a noun phrase of a countable class, number not fixed by the slot
_OPTIONAL_PROBABILITY = 0.5  # "( ... )" in a template
_PRONOUN_PROBABILITY = 0.7  # a later mention of a named protagonist is "she"/"he"/"they"
_ZIPF_EXPONENT = 1.0  # word lists are written most frequent first; entry i has weight 1/(i+1)

Token = tuple[str, str, "str | None"]  # (token, UPOS, sense label)


@dataclass(frozen=True)
class TaggedSentence:
    """One generated sentence: ``tokens[i]`` has tag ``pos[i]`` and sense ``senses[i]``.

    ``senses[i]`` is a label like ``"bank/river"`` where ``tokens[i]`` is a form of one of the
    ambiguous words, else None. ``document`` indexes the sentence's document within its split.
    """

    tokens: tuple[str, ...]
    pos: tuple[str, ...]
    senses: tuple[str | None, ...]
    document: int
    topic: str


@dataclass(frozen=True)
class Corpus:
    """The sentences of a generated corpus, split by whole documents, each in document order."""

    train: tuple[TaggedSentence, ...]
    heldout: tuple[TaggedSentence, ...]

    def documents(self, split: str) -> list[list[TaggedSentence]]:
        """The documents of ``split`` ("train" or "heldout"), each a list of its sentences."""
        check_choice("split", split, _SPLITS)
        documents: list[list[TaggedSentence]] = []
        for sentence in getattr(self, split):
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


# --------------------------------------------------------------------------------------------
# Grammar nodes. A template compiles to a tree of these; ``expand`` makes the random structural
# choices and appends finished tokens or slots to ``out``. Slots are realised afterwards, subjects
# first, so a verb or auxiliary agrees with its subject even where it comes first ("did she ...").


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
    def __init__(self, token: str, pos: str, sense: str | None) -> None:
        self.token: Token = (token, pos, sense)

    def expand(self, state: _Document, out: list) -> None:
        out.append(self.token)


class _Sequence:
    def __init__(self, items: list) -> None:
        self.items = items

    def expand(self, state: _Document, out: list) -> None:
        for item in self.items:
            item.expand(state, out)


class _Optional:
    def __init__(self, body: _Sequence) -> None:
        self.body = body

    def expand(self, state: _Document, out: list) -> None:
        if state.rng.random() < _OPTIONAL_PROBABILITY:
            self.body.expand(state, out)


class _Choice:
    def __init__(self, options: list[_Sequence]) -> None:
        self.options = options

    def expand(self, state: _Document, out: list) -> None:
        self.options[state.rng.randrange(len(self.options))].expand(state, out)


class _Phrase:
    """A named word list or phrase class of the lexicon (``[W:name]``); filled after creation
    because phrases may refer to each other."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pool: _Pool | None = None

    def expand(self, state: _Document, out: list) -> None:
        self.pool.pick(state.rng).expand(state, out)


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
    """A node realised after structural expansion; ``is_subject`` ones first."""

    is_subject = False

    def expand(self, state: _Document, out: list) -> None:
        out.append(self)

    def realise(self, state: _Document) -> list[Token]:
        raise NotImplementedError


@dataclass(frozen=True)
class _Noun:
    singular: str
    plural: str | None  # None: a mass noun, always singular ("water", "bait")
    sense: str | None


@dataclass(frozen=True)
class _NounClass:
    pool: _Pool
    adjectives: _Phrase | None


class _NounPhrase(_Slot):
    """``[S:cls]`` (a subject: sets agreement), ``[NP:cls]``, ``[NPsg:cls]``, ``[NPpl:cls]``:
    determiner, sometimes an adjective, the noun."""

    def __init__(
        self, nouns: _NounClass, number: str | None, group: str | None, determiners: dict[str, _Phrase]
    ) -> None:
        self.nouns, self.number, self.group, self.determiners = nouns, number, group, determiners
        self.is_subject = group is not None

    def realise(self, state: _Document) -> list[Token]:
        noun: _Noun = self.nouns.pool.pick(state.rng)
        if noun.plural is None:
            number = "mass"
        else:
            number = self.number or ("pl" if state.rng.random() < _PLURAL_PROBABILITY else "sg")
        out: list = []
        self.determiners[number].expand(state, out)
        if self.nouns.adjectives is not None and state.rng.random() < _ADJECTIVE_PROBABILITY:
            self.nouns.adjectives.expand(state, out)
        out.append((noun.plural if number == "pl" else noun.singular, "NOUN", noun.sense))
        if self.is_subject:
            state.agreement[self.group] = "3pl" if number == "pl" else "3sg"
        return out


class _BareNoun(_Slot):
    """``[N:cls]`` and ``[Npl:cls]``: the noun alone ("a box of [Npl:x]", "[N:x] season")."""

    def __init__(self, nouns: _NounClass, plural: bool) -> None:
        self.nouns, self.plural = nouns, plural

    def realise(self, state: _Document) -> list[Token]:
        noun: _Noun = self.nouns.pool.pick(state.rng)
        form = noun.plural if self.plural and noun.plural is not None else noun.singular
        return [(form, "NOUN", noun.sense)]


@dataclass(frozen=True)
class _Verb:
    forms: dict[str, str]  # base, 3sg, past, ing, pp
    sense: str | None


class _FiniteVerb(_Slot):
    """``[V:cls]``: the verb in the document's tense, agreeing with its group's subject."""

    def __init__(self, pool: _Pool, group: str) -> None:
        self.pool, self.group = pool, group

    def realise(self, state: _Document) -> list[Token]:
        verb: _Verb = self.pool.pick(state.rng)
        if state.tense == "past":
            form = "past"
        else:
            form = "3sg" if state.subject_agreement(self.group) == "3sg" else "base"
        return [(verb.forms[form], "VERB", verb.sense)]


class _VerbForm(_Slot):
    """``[Vb:cls]`` base, ``[Vg:cls]`` -ing, ``[Vd:cls]`` past participle: no agreement."""

    def __init__(self, pool: _Pool, form: str) -> None:
        self.pool, self.form = pool, form

    def realise(self, state: _Document) -> list[Token]:
        verb: _Verb = self.pool.pick(state.rng)
        return [(verb.forms[self.form], "VERB", verb.sense)]


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

    def __init__(self, table: dict[str, Any], group: str) -> None:
        self.table, self.group = table, group

    def realise(self, state: _Document) -> list[Token]:
        agreement = state.subject_agreement(self.group)
        form = self.table[state.tense].get(agreement, self.table[state.tense + "_else"])
        return [(form, "AUX", None)]


class _Agreement(_Slot):
    """``[AGR:3sg]`` (``1sg``, ``1pl``, ``3pl``): no tokens; sets its group's agreement, for a
    subject the template writes out itself ("the sun [AGR:3sg] [V:set]", "moss [AGR:3sg] ...")."""

    is_subject = True

    def __init__(self, group: str, agreement: str) -> None:
        self.group, self.agreement = group, agreement

    def realise(self, state: _Document) -> list[Token]:
        state.agreement[self.group] = self.agreement
        return []


class _Integer(_Slot):
    """``[INT:lo:hi]``: a number written in digits, lo <= n <= hi."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def realise(self, state: _Document) -> list[Token]:
        return [(str(state.rng.randint(self.low, self.high)), "NUM", None)]


class _ProtagonistSubject(_Slot):
    """``[P]``: the document's protagonist as a subject; its name (or "my parents") the first
    time in the document, later mostly its pronoun, always the pronoun a second time in one
    sentence."""

    is_subject = True

    def __init__(self, group: str) -> None:
        self.group = group

    def realise(self, state: _Document) -> list[Token]:
        hero = state.protagonist
        state.agreement[self.group] = hero.agreement
        named = hero.name is not None and (
            not state.introduced or (not state.named_in_sentence and state.rng.random() >= _PRONOUN_PROBABILITY)
        )
        state.introduced = True
        state.named_in_sentence = True
        return list(hero.name) if named else [hero.pronouns[0]]


class _ProtagonistCase(_Slot):
    """``[Po]`` the protagonist's object pronoun ("her"), ``[Pp]`` its possessive ("her")."""

    def __init__(self, case: int) -> None:
        self.case = case

    def realise(self, state: _Document) -> list[Token]:
        return [state.protagonist.pronouns[self.case]]


@dataclass(frozen=True)
class _Protagonist:
    name: tuple[Token, ...] | None  # None: "I" or "we", who are never named
    pronouns: tuple[Token, Token, Token]  # subject, object, possessive
    agreement: str


@dataclass(frozen=True)
class _ProtagonistKind:
    names: _Phrase | None
    pronouns: tuple[Token, Token, Token]
    agreement: str


@dataclass(frozen=True)
class _Topic:
    name: str
    past_probability: float
    opening: list[_Sequence]
    body: list[tuple[_Sequence, str]]  # (template, "short" or "long")
    closing: list[_Sequence]


class _Document:
    """The state one document's sentences share: random stream, tense, protagonist, fixed
    choices; plus the agreement and naming state of the sentence being written."""

    def __init__(self, rng: random.Random, tense: str, protagonist: _Protagonist | None) -> None:
        self.rng, self.tense, self.protagonist = rng, tense, protagonist
        self.fixed: dict[str, Any] = {}
        self.introduced = False
        self.agreement: dict[str, str] = {}
        self.named_in_sentence = False

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


class _Compiler:
    """Turns the two JSON files into a ``_Grammar``, checking as it goes that every literal has
    exactly one UPOS tag and that every form of an ambiguous word carries a declared sense.

    Lexicon entries: a noun is "bank" (regular plural), "fish|fish" or "water|-" (mass), a verb
    is its base form (regular, or spelled out in ``irregular_verbs``); either may end in
    "@sense". A template literal is "word", "word/TAG" where the word could have several tags,
    "word@sense" or "word/TAG@sense"; slots are described in ``slot``.
    """

    def __init__(self, lexicon: dict[str, Any], grammar: _Grammar) -> None:
        self.grammar = grammar
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
        self.nouns = {name: self._noun_class(spec) for name, spec in lexicon["nouns"].items()}
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
        singular, bar, plural = word.partition("|")
        if not bar:
            plural = _regular_plural(singular)
        forms = [singular] if plural == "-" else [singular, plural]
        for form in forms:
            self._add_tag(form, "NOUN")
        return _Noun(singular, None if plural == "-" else plural, self._sense(forms, sense, f"noun {entry!r}"))

    def _noun_class(self, spec: dict[str, Any]) -> _NounClass:
        adjectives = self.phrases[spec["adj"]] if "adj" in spec else None
        return _NounClass(_Pool([self._noun(e) for e in spec["words"]], zipf=True), adjectives)

    def _verb(self, entry: str) -> _Verb:
        base, _, sense = entry.partition("@")
        forms = self.irregular.get(base) or _regular_verb_forms(base)
        for form in forms.values():
            self._add_tag(form, "VERB")
        return _Verb(forms, self._sense(list(forms.values()), sense, f"verb {entry!r}"))

    def _word(self, entry: str, pos: str) -> _Literal:
        word, _, sense = entry.partition("@")
        return _Literal(word, pos, self._sense([word], sense, f"word {entry!r}"))

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
        return _Literal(word, tag, self._sense([word], sense, f"literal {text!r}"))

    def _nouns_arg(self, arg: str) -> _NounClass:
        name, _, adjectives = arg.partition(":")
        if name.startswith("+"):
            pool = _Pool([self._noun(name[1:])])
        else:
            pool = self.nouns[name].pool
        if adjectives:
            return _NounClass(pool, self.phrases[adjectives])
        return _NounClass(pool, None) if name.startswith("+") else self.nouns[name]

    def _verbs_arg(self, arg: str) -> _Pool:
        return _Pool([self._verb(arg[1:])]) if arg.startswith("+") else self.verbs[arg]

    def slot(self, text: str) -> Any:
        """One slot: ``[P]``, ``[Po]``, ``[Pp]`` the protagonist; ``[S:nouns]`` (``Ssg``, ``Spl``)
        a subject noun phrase, ``[NP:nouns]`` (``NPsg``, ``NPpl``) any other, ``[N:nouns]`` (``Npl``) a bare
        noun, where ``nouns`` is a class, or "+entry" for one word, optionally followed by
        ":adjectives"; ``[V:verbs]`` a finite verb, ``[Vb:..]``, ``[Vg:..]``, ``[Vd:..]`` its base,
        -ing and past-participle forms; ``[BE]``, ``[HAVE]``, ``[DO]`` finite auxiliaries;
        ``[AGR:3sg]`` (``1sg``, ``1pl``, ``3pl``) the agreement of a subject written as literals;
        ``[W:class]`` a word or phrase of a class, ``[WT:class]`` of ``class_past`` or
        ``class_present`` by tense, ``[D:class]`` the same one throughout the document;
        ``[INT:lo:hi]`` a number in digits. A digit after S, P, AGR, V or an auxiliary names an
        agreement group ("[S2:x] ... [V2:y]"), so a relative clause can have its own subject."""
        match = _SLOT.fullmatch(text)
        if match is None:
            raise ValueError(f"corpus grammar: malformed slot {text!r}")
        kind, group, arg = match.group(1), match.group(2), match.group(3) or ""
        try:
            if kind == "P":
                return _ProtagonistSubject(group)
            if kind in ("Po", "Pp"):
                return _ProtagonistCase(1 if kind == "Po" else 2)
            if kind in ("S", "Ssg", "Spl", "NP", "NPsg", "NPpl"):
                number = {"sg": "sg", "pl": "pl"}.get(kind[-2:])
                subject_group = group if kind.startswith("S") else None
                return _NounPhrase(self._nouns_arg(arg), number, subject_group, self.grammar.determiners)
            if kind in ("N", "Npl"):
                return _BareNoun(self._nouns_arg(arg), kind == "Npl")
            if kind == "V":
                return _FiniteVerb(self._verbs_arg(arg), group)
            if kind in ("Vb", "Vg", "Vd"):
                return _VerbForm(self._verbs_arg(arg), {"Vb": "base", "Vg": "ing", "Vd": "pp"}[kind])
            if kind == "AGR":
                if arg not in _AGREEMENTS:
                    raise ValueError(f"corpus grammar: slot {text!r} must name one of {list(_AGREEMENTS)}")
                return _Agreement(group, arg)
            if kind in _AUXILIARIES:
                return _FiniteAuxiliary(_AUXILIARIES[kind], group)
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
                    items[-1].append(_Optional(options[0]) if part == ")" else _Choice(options))
            elif part.startswith("["):
                items[-1].append(self.slot(part))
            else:
                items[-1].append(self.literal(part))
        if open_groups:
            raise ValueError(f"corpus grammar: unclosed {open_groups[-1][0]!r} in {text!r}")
        return _Sequence(items[0])


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
    for name, spec in topics.items():
        body = [(compiler.template(t), "short") for t in spec["body"]]
        body += [(compiler.template(t), "long") for t in spec.get("long", [])]
        if len(body) < _SENTENCES_PER_DOCUMENT[1] - 1:
            raise ValueError(f"corpus grammar: topic {name!r} needs {_SENTENCES_PER_DOCUMENT[1] - 1} body templates")
        openings = [compiler.template(t) for t in spec["opening"]]
        closings = [compiler.template(t) for t in spec.get("closing", [])]
        grammar.topics.append(_Topic(name, spec.get("past", 0.6), openings, body, closings))
    return grammar


# --------------------------------------------------------------------------------------------
# Generation.


def _sentence(template: _Sequence, length: str, state: _Document, grammar: _Grammar, topic: str) -> list[Token]:
    low, high = _LENGTH[length]
    for _ in range(_MAX_TRIES):
        state.agreement = {}
        state.named_in_sentence = False
        introduced = state.introduced
        parts: list = []
        template.expand(state, parts)
        # Subjects first, so that agreement is known wherever the verb stands.
        for pass_subjects in (True, False):
            for i, part in enumerate(parts):
                if isinstance(part, _Slot) and part.is_subject == pass_subjects:
                    parts[i] = part.realise(state)
        tokens = [token for part in parts for token in (part if isinstance(part, list) else (part,))]
        if low <= len(tokens) <= high:
            return _fix_articles(tokens, grammar)
        state.introduced = introduced
    raise ValueError(f"corpus grammar: a {topic!r} template never fits {low}-{high} tokens")


def _fix_articles(tokens: list[Token], grammar: _Grammar) -> list[Token]:
    """"a" becomes "an" before a vowel sound ("an old bank", "a university", "an hour")."""
    for i, (token, pos, sense) in enumerate(tokens[:-1]):
        if token == "a" and pos == "DET":
            following = tokens[i + 1][0].lower()
            vowel = following[0] in "aeiou"
            if (vowel and following not in grammar.a_words) or following in grammar.an_words:
                tokens[i] = ("an", pos, sense)
    return tokens


def _document(topic: _Topic, rng: random.Random, grammar: _Grammar) -> list[list[Token]]:
    tense = "past" if rng.random() < topic.past_probability else "present"
    kind: _ProtagonistKind = grammar.protagonist_pool.pick(rng)
    state = _Document(rng, tense, None)
    name = None
    if kind.names is not None:
        tokens: list = []
        kind.names.expand(state, tokens)
        name = tuple(tokens)
    state.protagonist = _Protagonist(name, kind.pronouns, kind.agreement)
    count = rng.randint(*_SENTENCES_PER_DOCUMENT)
    closing = bool(topic.closing) and rng.random() < _CLOSING_PROBABILITY
    plan = [(rng.choice(topic.opening), "short")]
    plan += rng.sample(topic.body, count - 1 - closing)
    if closing:
        plan.append((rng.choice(topic.closing), "short"))
    return [_sentence(template, length, state, grammar, topic.name) for template, length in plan]


def _check_seed(seed: object) -> int:
    # bool is an int subclass; a seed of True is a mistake, not seed 1.
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    return seed


def generate_corpus(num_documents: int = 4000, heldout_fraction: float = 0.1, seed: int = 0) -> Corpus:
    """``num_documents`` documents from the grammar; the last ``round(num_documents *
    heldout_fraction)`` of them are held out whole.

    Topics are dealt in rounds (every topic once per round, in a shuffled order), so both splits
    cover every topic about equally. The output depends on ``seed`` alone: one
    ``random.Random(seed)`` drives every choice, and the grammar is read in file order.
    """
    check_positive_int("num_documents", num_documents)
    fraction = check_probability("heldout_fraction", heldout_fraction, allow_one=False)
    _check_seed(seed)
    num_heldout = round(num_documents * fraction)
    if num_heldout == num_documents:
        raise ValueError(
            f"heldout_fraction={heldout_fraction} holds out all num_documents={num_documents} documents; "
            "lower it or generate more documents so that the train split is not empty"
        )
    grammar = _grammar()
    rng = random.Random(seed)
    order: list[_Topic] = []
    while len(order) < num_documents:
        round_ = list(grammar.topics)
        rng.shuffle(round_)
        order += round_
    splits: dict[str, list[TaggedSentence]] = {"train": [], "heldout": []}
    num_train = num_documents - num_heldout
    for index, topic in enumerate(order[:num_documents]):
        split, document = ("train", index) if index < num_train else ("heldout", index - num_train)
        for tokens in _document(topic, rng, grammar):
            words, tags, senses = zip(*tokens)
            splits[split].append(TaggedSentence(words, tags, senses, document, topic.name))
    return Corpus(tuple(splits["train"]), tuple(splits["heldout"]))


@functools.cache
def load_corpus() -> Corpus:
    """The book's standard corpus, ``generate_corpus()`` with its defaults, built once per process."""
    return generate_corpus()
