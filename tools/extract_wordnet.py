"""Extract WordNet 3.0's sense-labelled example sentences: the book's real-text arm.

    python tools/extract_wordnet.py [--wordnet /usr/share/wordnet] [--out ctxlib/data]

Reads the WordNet database files of Debian's ``wordnet-base`` package (``apt-get install
wordnet-base``) directly: ``index.{noun,verb}`` for each lemma's synsets in sense order,
``data.{noun,verb}`` for each synset's gloss and quoted example sentences, ``cntlist.rev`` for
the sense-tagged counts that order the senses, and ``{noun,verb}.exc`` for irregular forms. It
writes ``wordnet_examples.json`` and the WordNet licence ``WORDNET_LICENSE`` into ``--out``.
The book reads only those two files, so it never needs apt or a network at run time; the
tests check that the committed file is what this script writes (where the database exists).

What the file holds, for each chosen lemma (a word and a part of speech, key ``"bank.n"``):
every sense in WordNet's order (sense 1 is the most frequent in WordNet's sense-tagged
corpora), its synset offset, tag count and gloss, and each example sentence of the synset that
uses the lemma exactly once, with the character span of that use. An example that does not use
the lemma (it illustrates another word of the synset) or uses it more than once (which
occurrence carries the label would be a guess) is dropped and counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ctxlib._files import write_text_atomically

ROOT = Path(__file__).resolve().parent.parent
WORDNET_DIR = Path("/usr/share/wordnet")
DATA_FILE = "wordnet_examples.json"
LICENSE_FILE = "WORDNET_LICENSE"
POS_NAMES = {"n": "noun", "v": "verb"}
# The number WordNet's sense keys give each part of speech (wndb(5WN), "sense key").
SS_TYPE_NUMBER = {"n": 1, "v": 2}

# The book's ten ambiguous words (ctxlib/data/polysemy.json): kept, in every part of speech
# where WordNet locates the word in examples of at least two senses, even when too few to test.
BOOK_WORDS = ("bank", "run", "bat", "spring", "plant", "light", "bark", "match", "pitch", "seal")
# A sense enters the train/test split only with at least two located examples (one to train
# on, one to test); WordNet rarely gives more than three.
MIN_EXAMPLES_PER_SENSE = 2
# The lemmas with the most such senses, this many per part of speech (ties: more examples,
# then alphabetical). 15 + 15 give about 600 sentences, which MiniLM encodes in a few seconds
# on two cores: the budget of one section of a chapter.
LEMMAS_PER_POS = 15

# WordNet's detachment rules (morph.c, morphy(7WN)): an inflected ending and its replacement.
SUFFIX_RULES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
}
# A word of an example: letters, hyphenated compounds kept whole ("river-bank" is not "bank"),
# an apostrophe ending it ("bank's" is "bank" + "'s").
WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
EXAMPLE = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class Synset:
    offset: str
    lex_filenum: int
    words: dict[str, int]  # lower-cased word -> lex_id
    definition: str
    examples: tuple[str, ...]


def _database_lines(path: Path) -> Iterable[str]:
    """The lines of a database file after its licence header (header lines start with two spaces)."""
    with open(path, encoding="ascii") as file:
        for line in file:
            if not line.startswith("  "):
                yield line.rstrip("\n")


def read_index(wordnet: Path, pos: str) -> dict[str, tuple[str, ...]]:
    """lemma -> its synset offsets in sense order (index.pos, wndb(5WN))."""
    index = {}
    for line in _database_lines(wordnet / f"index.{POS_NAMES[pos]}"):
        fields = line.split()
        synset_count = int(fields[2])
        index[fields[0]] = tuple(fields[-synset_count:])
    return index


def read_synsets(wordnet: Path, pos: str) -> dict[str, Synset]:
    """offset -> Synset, from data.pos: words with lex_ids, the definition, the quoted examples."""
    synsets = {}
    for line in _database_lines(wordnet / f"data.{POS_NAMES[pos]}"):
        head, gloss = line.split(" | ", 1)
        fields = head.split()
        word_count = int(fields[3], 16)
        words = {fields[4 + 2 * i].lower(): int(fields[5 + 2 * i], 16) for i in range(word_count)}
        definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
        synsets[fields[0]] = Synset(fields[0], int(fields[1]), words, definition,
                                    tuple(e.strip() for e in EXAMPLE.findall(gloss)))
    return synsets


def read_exceptions(wordnet: Path, pos: str) -> dict[str, set[str]]:
    """inflected form -> its base forms, from pos.exc ("ran run")."""
    exceptions: dict[str, set[str]] = {}
    for line in _database_lines(wordnet / f"{POS_NAMES[pos]}.exc"):
        inflected, *bases = line.split()
        exceptions.setdefault(inflected, set()).update(bases)
    return exceptions


def read_tag_counts(wordnet: Path) -> dict[str, int]:
    """sense key -> tag count, from cntlist.rev; an untagged sense is absent.

    The file's sense-number column is not used: for 401 of its 26,427 noun and verb senses it is
    one more than the sense's place in index.pos, whose order is WordNet's sense order (the one
    its own browser and nltk return). The count is looked up by sense key, which both agree on."""
    counts = {}
    for line in _database_lines(wordnet / "cntlist.rev"):
        key, _number, count = line.split()
        counts[key] = int(count)
    return counts


def base_forms(word: str, pos: str, exceptions: dict[str, set[str]]) -> set[str]:
    """What ``word`` may be an inflection of: itself, its exception-list bases and the results of
    WordNet's detachment rules. Over-generation is harmless here: a candidate only counts when
    it equals the one lemma asked about."""
    word = word.lower()
    forms = {word} | exceptions.get(word, set())
    for ending, replacement in SUFFIX_RULES[pos]:
        if word.endswith(ending) and len(word) > len(ending):
            forms.add(word[: -len(ending)] + replacement)
    return forms


def locate(text: str, lemma: str, pos: str, exceptions: dict[str, set[str]]) -> list[tuple[int, int]]:
    """Character spans of every word of ``text`` that is a form of ``lemma``."""
    return [m.span() for m in WORD.finditer(text) if lemma in base_forms(m.group(), pos, exceptions)]


def extract_lemma(lemma: str, pos: str, offsets: tuple[str, ...], synsets: dict[str, Synset],
                  exceptions: dict[str, set[str]], tag_counts: dict[str, int],
                  dropped: Counter) -> dict:
    """One lemma's senses in WordNet order with their located examples; ``dropped`` counts the rest."""
    senses = []
    for number, offset in enumerate(offsets, start=1):
        synset = synsets[offset]
        key = f"{lemma}%{SS_TYPE_NUMBER[pos]}:{synset.lex_filenum:02d}:{synset.words[lemma]:02d}::"
        tag_count = tag_counts.get(key, 0)
        examples = []
        for text in dict.fromkeys(synset.examples):  # a repeated example counts once
            spans = locate(text, lemma, pos, exceptions)
            if len(spans) == 1:
                examples.append({"text": text, "start": spans[0][0], "end": spans[0][1]})
            else:
                dropped["another word of the synset" if not spans else "the lemma more than once"] += 1
        senses.append({"sense": f"{lemma}.{pos}.{number:02d}", "synset": offset, "tag_count": tag_count,
                       "gloss": synset.definition, "examples": examples})
    # The same sentence under two senses of one lemma would be a contradictory label.
    seen = Counter(e["text"] for s in senses for e in s["examples"])
    for sense in senses:
        kept = [e for e in sense["examples"] if seen[e["text"]] == 1]
        dropped["the same sentence under two senses"] += len(sense["examples"]) - len(kept)
        sense["examples"] = kept
    return {"lemma": lemma, "pos": pos, "senses": senses}


def testable_senses(entry: dict) -> int:
    return sum(len(s["examples"]) >= MIN_EXAMPLES_PER_SENSE for s in entry["senses"])


def extract(wordnet: Path) -> dict:
    """The whole data file as a dict: the chosen lemmas and the counts of what was dropped."""
    tag_counts = read_tag_counts(wordnet)
    candidates, dropped_by_lemma = {}, {}
    for pos in POS_NAMES:
        index, synsets, exceptions = read_index(wordnet, pos), read_synsets(wordnet, pos), read_exceptions(wordnet, pos)
        for lemma, offsets in index.items():
            # Single words only: a multi-word lemma ("river_bank") is not one token of a sentence.
            if len(offsets) < 2 or not lemma.isalpha():
                continue
            dropped = Counter()
            candidates[f"{lemma}.{pos}"] = extract_lemma(lemma, pos, offsets, synsets, exceptions, tag_counts, dropped)
            dropped_by_lemma[f"{lemma}.{pos}"] = dropped

    def with_examples(entry: dict) -> int:
        return sum(len(s["examples"]) >= 1 for s in entry["senses"])

    chosen = [k for k, e in candidates.items() if e["lemma"] in BOOK_WORDS and with_examples(e) >= 2]
    for pos in POS_NAMES:
        ranked = sorted((k for k, e in candidates.items() if e["pos"] == pos and testable_senses(e) >= 2),
                        key=lambda k: (-testable_senses(candidates[k]),
                                       -sum(len(s["examples"]) for s in candidates[k]["senses"]), k))
        chosen += [k for k in ranked[:LEMMAS_PER_POS] if k not in chosen]
    chosen.sort()
    lemmas = {key: candidates[key] for key in chosen}
    dropped = sum((dropped_by_lemma[key] for key in chosen), Counter())
    return {
        "source": "WordNet 3.0 (Princeton University), database files of Debian's wordnet-base; "
                  "extracted by tools/extract_wordnet.py",
        "selection": {"book_words": list(BOOK_WORDS), "min_examples_per_sense": MIN_EXAMPLES_PER_SENSE,
                      "lemmas_per_pos": LEMMAS_PER_POS},
        "counts": {
            "lemmas": len(lemmas),
            "senses": sum(len(e["senses"]) for e in lemmas.values()),
            "senses_with_examples": sum(len(s["examples"]) >= 1 for e in lemmas.values() for s in e["senses"]),
            "sentences": sum(len(s["examples"]) for e in lemmas.values() for s in e["senses"]),
            "dropped": dict(sorted(dropped.items())),
        },
        "lemmas": lemmas,
    }


def licence_text(wordnet: Path) -> str:
    """WordNet's licence, as its database files carry it in their header."""
    with open(wordnet / "data.noun", encoding="ascii") as file:
        header = [line for line in file if line.startswith("  ")]
    # Header lines read "  1 This software ...  ": drop the two spaces and the line number.
    lines = [re.sub(r"^  \d+ ?", "", line).rstrip() for line in header]
    return "\n".join(lines).strip() + "\n"


def render(data: dict) -> str:
    """The JSON text exactly as it is committed: one example per line keeps diffs readable."""
    return json.dumps(data, indent=1, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", type=Path, default=WORDNET_DIR, help="the WordNet 3.0 dict folder")
    parser.add_argument("--out", type=Path, default=ROOT / "ctxlib" / "data")
    args = parser.parse_args(argv)
    if not (args.wordnet / "data.noun").is_file():
        parser.error(f"--wordnet {str(args.wordnet)!r} holds no WordNet database (data.noun); "
                     "install it with: apt-get install wordnet-base")
    data = extract(args.wordnet)
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(args.out / DATA_FILE, render(data))
    write_text_atomically(args.out / LICENSE_FILE, licence_text(args.wordnet))
    counts = data["counts"]
    print(f"{counts['lemmas']} lemmas, {counts['senses']} senses ({counts['senses_with_examples']} with examples), "
          f"{counts['sentences']} sentences; dropped: {counts['dropped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
