"""A word vocabulary: token ↔ id, with the specials a language model's softmax needs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<S>", "</S>"


class Vocabulary:
    """Ids for ``tokens`` after the four specials (``<pad>`` = 0, ``<unk>``, ``<S>``, ``</S>``).

    A word outside the vocabulary maps to ``<unk>``: the one vector a word-level model has for
    every word it never saw, which is what ELMo's character layer does away with.
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        if isinstance(tokens, str):
            raise TypeError(f"tokens must be an iterable of str tokens, not one str, got {tokens!r}")
        self.tokens: list[str] = [PAD, UNK, BOS, EOS]
        self.tokens += [t for t in dict.fromkeys(tokens) if t not in self.tokens]
        wrong = [t for t in self.tokens if not isinstance(t, str)]
        if wrong:
            raise TypeError(f"tokens must be str, got {wrong[:3]}")
        self.index = {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self.index

    def id(self, token: str) -> int:
        return self.index.get(token, self.index[UNK])

    @property
    def bos_id(self) -> int:
        return self.index[BOS]

    @property
    def eos_id(self) -> int:
        return self.index[EOS]

    def encode(self, sentences: Sequence[Sequence[str]], *, pad: int) -> torch.Tensor:
        """``[B, T]`` ids, ``pad`` past each sentence's end (a padding id, or a loss's ignore label)."""
        if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
            raise TypeError("sentences must be a list of token lists, e.g. [['the', 'bank']]: a str would be read "
                            "character by character")
        if len(sentences) == 0:
            raise ValueError("sentences is empty: give at least one sentence")
        ids = torch.full((len(sentences), max(map(len, sentences))), pad, dtype=torch.long)
        for row, sentence in enumerate(sentences):
            ids[row, :len(sentence)] = torch.tensor([self.id(t) for t in sentence], dtype=torch.long)
        return ids
