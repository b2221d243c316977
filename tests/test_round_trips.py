"""Every writer's file reads back exactly through its reader, for any text its format allows, and
anything else is refused by the writer before it touches the file (property-based: Hypothesis).

The pairs: ``write_labelled_tsv``/``read_labelled_tsv``, ``write_conll``/``read_conll``,
``write_squad``/``read_squad`` (``ctxlib.data.task_formats``). Text is drawn from all of Unicode but the surrogates (which UTF-8 cannot
encode), so the separators a reader splits on (tab, every line break ``str.splitlines`` knows,
every whitespace ``str.split`` knows) are drawn too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlib.data.task_formats import (Answer, LabelledText, QAExample, TaggedTokens, check_bio, read_conll,
                                      read_labelled_tsv, read_squad, write_conll, write_labelled_tsv, write_squad)

# The default 100 examples per property, and no deadline: a slow example on a busy machine is
# not a failure (no test may depend on timing).
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CHARACTER = st.characters(blacklist_categories=("Cs",))
# Strings that weigh on the formats, drawn beside arbitrary characters: a byte-order mark,
# no-break and ordinary spaces, the unit separator (whitespace to str.split, not a line break),
# CoNLL's document marker, accents, CJK.
ALLOWED_AWKWARD = ["\xa0", " ", "\ufeff", "\x1f", "-DOCSTART-", "é", "字"]
# What each reader splits on: a tab (TSV), every line break str.splitlines knows.
LINE_BREAKS = ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def texts(character: st.SearchStrategy[str], min_size: int = 0) -> st.SearchStrategy[str]:
    """Strings of ``character`` and of the awkward strings those characters can form."""
    pieces = st.one_of(character, st.sampled_from(ALLOWED_AWKWARD))
    return st.lists(pieces, min_size=min_size, max_size=6).map("".join)


def with_one_of(valid: st.SearchStrategy[str], forbidden: list[str]) -> st.SearchStrategy[str]:
    """A valid string with a forbidden one put somewhere in it."""
    return st.tuples(valid, st.sampled_from(forbidden), valid).map("".join)


OLD = "what the file held before\n"


def _refused_untouched(path: Path, write, *args) -> None:
    """``write`` raises a ValueError or TypeError and leaves ``path`` as it was."""
    path.write_text(OLD, encoding="utf-8")
    with pytest.raises((ValueError, TypeError)):
        write(path, *args)
    assert path.read_text(encoding="utf-8") == OLD
    assert [p.name for p in path.parent.iterdir()] == [path.name], "a temporary file was left behind"


# ----------------------------------------------------------------------------------------------
# Labelled sentences (TSV)

TSV_CHARACTER = CHARACTER.filter(lambda c: c != "\t" and c not in LINE_BREAKS)
TSV_FIELD = texts(TSV_CHARACTER, min_size=1).filter(bool)
NOT_TSV_FIELD = st.one_of(st.just(""), with_one_of(texts(TSV_CHARACTER), ["\t", *LINE_BREAKS]))


@PROPERTY
@given(st.lists(st.builds(LabelledText, TSV_FIELD, TSV_FIELD), min_size=1, max_size=6))
def test_labelled_tsv_round_trips(tmp_path, examples):
    path = tmp_path / "data.tsv"
    write_labelled_tsv(path, examples)
    assert read_labelled_tsv(path) == examples


@PROPERTY
@given(st.lists(st.builds(LabelledText, TSV_FIELD, TSV_FIELD), max_size=3),
       st.one_of(st.builds(LabelledText, NOT_TSV_FIELD, TSV_FIELD), st.builds(LabelledText, TSV_FIELD, NOT_TSV_FIELD)),
       st.integers(0, 3))
def test_labelled_tsv_writer_refuses_what_would_not_read_back(tmp_path, good, bad, where):
    _refused_untouched(tmp_path / "data.tsv", write_labelled_tsv, [*good[:where], bad, *good[where:]])


# ----------------------------------------------------------------------------------------------
# CoNLL BIO columns

COLUMN_CHARACTER = CHARACTER.filter(lambda c: not c.isspace())
COLUMN = texts(COLUMN_CHARACTER.filter(lambda c: c != " "), min_size=1).filter(lambda t: t.split() == [t]
                                                                                 and t != "-DOCSTART-")
NOT_COLUMN = st.one_of(st.just(""), st.just("-DOCSTART-"),
                       with_one_of(COLUMN, [" ", "\t", "\xa0", "\x1f", "\u3000", *LINE_BREAKS]))
TYPES = st.sampled_from(["PER", "LOC", "ORG", "MISC"]) | COLUMN


@st.composite
def bio_tags(draw, length: int) -> tuple[str, ...]:
    """A well-formed BIO sequence: an I-X only after B-X or I-X."""
    tags, previous = [], "O"
    for _ in range(length):
        choice = draw(st.sampled_from(["O", "B", "I"] if previous != "O" else ["O", "B"]))
        tag = "O" if choice == "O" else f"B-{draw(TYPES)}" if choice == "B" else f"I-{previous[2:]}"
        tags.append(tag)
        previous = tag
    return tuple(tags)


@st.composite
def tagged_sentences(draw) -> TaggedTokens:
    length = draw(st.integers(1, 6))
    tokens = tuple(draw(st.lists(COLUMN, min_size=length, max_size=length)))
    return TaggedTokens(tokens, draw(bio_tags(length)))


@PROPERTY
@given(st.lists(tagged_sentences(), min_size=1, max_size=5).filter(lambda s: not s[0].tokens[0].startswith("\ufeff")))
def test_conll_round_trips(tmp_path, sentences):
    path = tmp_path / "data.conll"
    write_conll(path, sentences)
    assert read_conll(path) == sentences


@PROPERTY
@given(st.lists(tagged_sentences(), max_size=3), st.integers(0, 3), NOT_COLUMN,
       st.booleans())
def test_conll_writer_refuses_a_column_that_would_not_read_back(tmp_path, good, where, word, as_tag):
    tokens, tags = (("fine", "fine"), (word, "O")) if as_tag else ((word, "fine"), ("O", "O"))
    _refused_untouched(tmp_path / "data.conll", write_conll, [*good[:where], TaggedTokens(tokens, tags), *good[where:]])


@PROPERTY
@given(st.lists(st.sampled_from(["O", "B-PER", "I-PER", "I-LOC", "B-LOC"]), min_size=1, max_size=6))
def test_conll_writer_refuses_exactly_the_tags_bio_forbids(tmp_path, tags):
    sentence = TaggedTokens(tuple(f"w{i}" for i in range(len(tags))), tuple(tags))
    try:
        check_bio(tags)
    except ValueError:
        _refused_untouched(tmp_path / "data.conll", write_conll, [sentence])
    else:
        write_conll(tmp_path / "data.conll", [sentence])
        assert read_conll(tmp_path / "data.conll") == [sentence]


# ----------------------------------------------------------------------------------------------
# SQuAD JSON

NONEMPTY = texts(CHARACTER, min_size=1).filter(bool)


@st.composite
def qa_examples(draw, id: str) -> QAExample:
    """A question on a context, with answers that are spans of it (none: unanswerable)."""
    context = draw(texts(st.one_of(CHARACTER, st.sampled_from(LINE_BREAKS + ["\t"]))))
    spans = [(i, j) for i in range(len(context)) for j in range(i + 1, len(context) + 1)]
    chosen = draw(st.lists(st.sampled_from(spans), max_size=2)) if spans else []
    return QAExample(id, context, draw(NONEMPTY), tuple(Answer(context[i:j], i) for i, j in chosen))


@st.composite
def squad_sets(draw) -> list[QAExample]:
    ids = draw(st.lists(NONEMPTY, max_size=5, unique=True))
    examples = [draw(qa_examples(id)) for id in ids]
    # Questions that share a context, as a SQuAD paragraph holds several.
    for i in draw(st.lists(st.integers(0, max(len(examples) - 1, 0)), max_size=2)) if examples else []:
        examples.append(QAExample(f"{examples[i].id}+", examples[i].context, "again?", ()))
    return [e for n, e in enumerate(examples) if e.id not in {x.id for x in examples[:n]}]


@PROPERTY
@given(squad_sets())
def test_squad_round_trips_as_a_set_of_questions(tmp_path, examples):
    """Read back, the same questions with the same answers. A paragraph holds every question on
    its context, so questions come back grouped by context, in the order each context first
    appeared, and in their own order within it."""
    path = tmp_path / "data.json"
    write_squad(path, examples)
    contexts = list(dict.fromkeys(e.context for e in examples))
    grouped = [e for context in contexts for e in examples if e.context == context]
    assert read_squad(path) == grouped


@PROPERTY
@given(squad_sets().filter(bool), st.sampled_from(["id", "question", "answer_text", "answer_start"]))
def test_squad_writer_refuses_what_its_reader_rejects(tmp_path, examples, field):
    first = examples[0]
    if field in ("id", "question"):
        bad = QAExample(**{**first.__dict__, field: ""})
    elif field == "answer_text":
        bad = QAExample(first.id, first.context, first.question, (Answer(first.context + "?", 0),))
    else:
        bad = QAExample(first.id, first.context, first.question, (Answer("x", len(first.context) + 1),))
    _refused_untouched(tmp_path / "data.json", write_squad, [bad, *examples[1:]])


@pytest.mark.parametrize(("text", "read", "message"), [
    ("", read_conll, "holds no sentence"),
    ("\n\n\n", read_conll, "holds no sentence"),
    ("-DOCSTART- -X- O\n\n", read_conll, "holds no sentence"),
    ("sentence\tlabel\n", read_labelled_tsv, "holds the header and no example"),
])
def test_a_file_with_nothing_in_it_is_refused(tmp_path, text, read, message):
    """Before: an empty list, as if the file held a data set with no example."""
    path = tmp_path / "data"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read(path)


@pytest.mark.parametrize(("write", "kind"), [(write_conll, "TaggedTokens"), (write_labelled_tsv, "LabelledText")])
def test_writers_refuse_what_their_readers_refuse(tmp_path, write, kind):
    _refused_untouched(tmp_path / "data", write, [])
    _refused_untouched(tmp_path / "data", write, "not a list")


def test_a_first_token_that_begins_with_a_byte_order_mark_is_refused(tmp_path):
    """Found by test_conll_round_trips: the file would begin with U+FEFF, which read_text drops."""
    _refused_untouched(tmp_path / "data.conll", write_conll, [TaggedTokens(("\ufeff0",), ("O",))])
    write_conll(tmp_path / "data.conll", [TaggedTokens(("0", "\ufeff0"), ("O", "O"))])  # elsewhere it reads back
    assert read_conll(tmp_path / "data.conll") == [TaggedTokens(("0", "\ufeff0"), ("O", "O"))]


def test_squad_writer_refuses_repeated_ids(tmp_path):
    example = QAExample("q1", "a context", "what?", (Answer("context", 2),))
    _refused_untouched(tmp_path / "data.json", write_squad, [example, example])
