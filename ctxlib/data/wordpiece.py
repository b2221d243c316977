"""WordPiece's rule for splitting one word into vocabulary pieces (§3.3).

BERT's tokenizer first normalises the text (lower-casing, for an uncased model) and splits it
into words at white space and punctuation; then each word is split on its own by greedy
longest-match-first (Schuster and Nakajima 2012; Wu et al. 2016): take the longest prefix of
the word that is in the vocabulary, then the longest piece of the rest that is in the
vocabulary *with* the continuation mark ``##``, and so on. A word that cannot be covered this
way, because some character has no piece, becomes one unknown token. This is what
``tokenizers``' ``WordPiece`` model and BERT's original ``tokenization.py`` do; the tokenizers
are fast Rust code, this function is the same rule written out to be read.
"""

from __future__ import annotations

from collections.abc import Container

CONTINUATION = "##"


def wordpiece_split(word: str, vocabulary: Container[str], unknown: str = "[UNK]",
                    max_chars: int = 100) -> list[str]:
    """The pieces of one normalised word: greedy longest-match-first against ``vocabulary``.

    Every piece after the first carries the ``##`` prefix. A word longer than ``max_chars``
    characters, or one with a stretch no piece covers, is ``[unknown]``, as in BERT.
    """
    if not isinstance(word, str) or not word or any(c.isspace() for c in word):
        raise ValueError(f"word must be one non-empty word without white space, got {word!r}")
    if len(word) > max_chars:
        return [unknown]
    pieces, start = [], 0
    while start < len(word):
        # The longest candidate first: shrink the end until the piece is in the vocabulary.
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
            if piece in vocabulary:
                pieces.append(piece)
                start = end
                break
        else:
            return [unknown]
    return pieces
