"""The browser's WordPiece tokenizer (book/_static/wordpiece.js), run with node, gives the ids and
character offsets of BertTokenizerFast on MiniLM's vocabulary: on every sentence of the polysemy
explorer's data, the page's example sentences, and text made to catch the corner cases."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ctxlib.analysis.typed_sentence import EXAMPLE_SENTENCES
from ctxlib.data import senses
from ctxlib.models.pretrained import minilm_path, minilm_tokenizer

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "book" / "_static" / "wordpiece.js"
# Reads {"vocab": path, "texts": [...]} on stdin, writes one encoding per text.
HARNESS = """
const fs = require("fs");
const wordpiece = require(process.argv[1]);
const job = JSON.parse(fs.readFileSync(0, "utf8"));
const tok = wordpiece.fromVocab(fs.readFileSync(job.vocab, "utf8"));
process.stdout.write(JSON.stringify(job.texts.map((t) => tok.encode(t))));
"""

TRICKY = [
    "Hello, world! It's 3.14159 -- or $100 (about €90) for 1,000,000 items; e-mail me@example.com.",
    "Café naïve résumé Ångström façade, ÉLAN déjà vu: accents are stripped after NFD.",
    "İstanbul, ΣΊΣΥΦΟΣ and Straße: lowercasing that changes a character's length.",
    "Unknown words: qwxzvbnm, zzzzzzzzzzzzzz, Ǆemal and ﬁnancial ligatures.",
    "Emoji 😀🏦 and astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 characters take two UTF-16 units each.",
    "中文字 mixed with 日本語 and 한국어, and a compatibility ideograph 豈.",
    "Control\u0085chars\u200band\u00a0odd\u2003spaces\tand\nnewlines\r\nkeep their offsets.",
    "Special tokens: [MASK] and [SEP] are matched, [mask] and [cls] are not; a[SEP]b.",
    "Quotes «like this», “these” and ‘these’, a dash — and an ellipsis…",
    "Maths: x^2 + y^2 = z^2, a<b>c, ~tilde~, `backtick`, pipe|bar, 50% off & more #tag @user.",
    "A" * 101 + " and a word of exactly one hundred letters " + "b" * 100,
    "   leading and trailing spaces   ",
    "",
    "Tokenization of unaffable, unbelievably hyphenated-compound words like state-of-the-art.",
]


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("node is not installed: the JS tokenizer cannot be tested (apt-get install nodejs)")
    return path


def _js_encode(node: str, texts: list[str]) -> list[dict]:
    job = json.dumps({"vocab": str(minilm_path() / "vocab.txt"), "texts": texts})
    done = subprocess.run([node, "-e", HARNESS, str(SCRIPT)], input=job, capture_output=True, text=True,
                          encoding="utf-8", check=True, timeout=120)
    return json.loads(done.stdout)


def _utf16(text: str, index: int) -> int:
    """A Python (code point) index into ``text`` as a JavaScript (UTF-16) index."""
    return len(text[:index].encode("utf-16-le")) // 2


@pytest.mark.parametrize("corpus", ["sense sentences", "examples", "tricky"])
def test_js_tokenizer_matches_bert_tokenizer_fast(node: str, corpus: str) -> None:
    texts = {
        "sense sentences": [s.text for word in senses.sense_words() for s in senses.load_sense_sentences(word)],
        "examples": [text for text, _word, _sense in EXAMPLE_SENTENCES],
        "tricky": TRICKY,
    }[corpus]
    reference = minilm_tokenizer()
    ours = _js_encode(node, texts)
    assert len(ours) == len(texts)
    for text, got in zip(texts, ours):
        want = reference(text, return_offsets_mapping=True)
        assert got["ids"] == want["input_ids"], (text, got["tokens"],
                                                 reference.convert_ids_to_tokens(want["input_ids"]))
        offsets = [[_utf16(text, a), _utf16(text, b)] for a, b in want["offset_mapping"]]
        assert got["offsets"] == offsets, text


def test_tricky_text_exercises_the_corner_cases() -> None:
    """The tricky sentences really contain unknown words, stripped accents and special tokens
    (a corpus that lacked them would make the comparison above vacuous for those rules)."""
    tokens = [minilm_tokenizer().tokenize(text) for text in TRICKY]
    flat = [t for sentence in tokens for t in sentence]
    assert "[UNK]" in flat and "[MASK]" in flat and "cafe" in flat and "##" in "".join(flat)
    assert any(t in flat for t in ("中", "日")) and "$" in flat and "istanbul" in flat


def test_js_tokenizer_rejects_a_vocabulary_without_special_tokens(node: str, tmp_path: Path) -> None:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("hello\nworld\n", encoding="utf-8")
    script = f"require({json.dumps(str(SCRIPT))}).fromVocab(require('fs').readFileSync({json.dumps(str(vocab))}, 'utf8'))"
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "vocabulary has no [PAD]" in done.stderr
