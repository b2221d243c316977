"""The pretraining data pipeline, one way: corpus → NSP pairs → WordPiece ids → masks → batches.

The book's WordPiece vocabulary is built from the corpus's training split (``book_tokenizer``);
pairs come from ``ctxlib.objectives.nsp``, masks from ``ctxlib.objectives.masking``; the batches
feed ``ctxlib.training.loop.fit``.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import cache

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import check_positive_int
from ctxlib._files import cache_dir, write_text_atomically
from ctxlib.data.corpus import Corpus, load_corpus
from ctxlib.objectives.masking import IGNORE_INDEX, Masker, mask_tokens
from ctxlib.objectives.nsp import SentencePair, encode_pairs, sentence_pairs, truncate_pair

WORDPIECE_VOCAB_SIZE = 2000
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_LENGTH = 64
HELDOUT_PAIRS = 500


@cache
def book_tokenizer(corpus: Corpus | None = None, vocab_size: int = WORDPIECE_VOCAB_SIZE) -> BertTokenizerFast:
    """A lower-casing WordPiece tokenizer with a vocabulary built from the training split.

    The vocabulary: the five specials, every character as a word-initial piece and as a
    ``##`` continuation, then whole words, most frequent first (ties alphabetically), up to
    ``vocab_size``. WordPiece's greedy longest-match then splits a rarer word into the longest
    known prefix and continuations ("banks" → "bank", "##s"). This is simpler than learning
    merges, and deterministic: the tokenizers library's WordPiece trainer breaks ties between
    equally frequent merges in hash order, so its vocabulary changes from process to process
    (and a cached model would no longer match it). The file is written under the cache folder,
    named by its content.
    """
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    check_positive_int("vocab_size", vocab_size)
    corpus = corpus or load_corpus()
    normalise, split = BertNormalizer(lowercase=True), BertPreTokenizer()
    counts = Counter(word for s in corpus.train
                     for word, _ in split.pre_tokenize_str(normalise.normalize_str(" ".join(s.tokens))))
    characters = sorted({c for word in counts for c in word})
    pieces = list(dict.fromkeys([*SPECIAL_TOKENS, *characters, *("##" + c for c in characters)]))
    if len(pieces) > vocab_size:
        raise ValueError(f"vocab_size must be at least {len(pieces)} (specials and every character of the corpus), "
                         f"got {vocab_size}")
    known = set(pieces)
    pieces += [w for w in sorted(counts, key=lambda w: (-counts[w], w)) if w not in known][: vocab_size - len(pieces)]
    text = "\n".join(pieces) + "\n"
    folder = cache_dir() / f"book-wordpiece-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    vocabulary = folder / "vocab.txt"
    # Named by its content, so a file already there is this very vocabulary, unless damaged:
    # rewrite only then (and atomically), so concurrent readers never see it half written.
    if not (vocabulary.is_file() and vocabulary.read_bytes() == text.encode()):
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(vocabulary, text)
    return BertTokenizerFast.from_pretrained(folder, do_lower_case=True)


def document_ids(corpus: Corpus, split: str, tokenizer: BertTokenizerFast) -> tuple[list[list[list[int]]], list[str]]:
    """The documents of ``split`` as WordPiece ids (a list of sentences each), and their topics."""
    documents = corpus.documents(split)
    flat = [" ".join(s.tokens) for d in documents for s in d]
    ids = iter(tokenizer(flat, add_special_tokens=False)["input_ids"])
    return [[next(ids) for _ in d] for d in documents], [d[0].topic for d in documents]


def corpus_pairs(corpus: Corpus, split: str, tokenizer: BertTokenizerFast, seed: int = 0) -> list[SentencePair]:
    """NSP pairs from the documents of ``split``, as WordPiece ids."""
    return sentence_pairs(document_ids(corpus, split, tokenizer)[0], seed=seed)


PretrainingBatch = dict[str, torch.Tensor]


def pretraining_batch(pairs: Sequence[SentencePair], tokenizer: BertTokenizerFast, generator: torch.Generator,
                      seed: int = 0, **masking: float) -> PretrainingBatch:
    """Encode ``pairs`` and mask them: the inputs and both labels of eq 4.6."""
    batch = encode_pairs(pairs, cls_id=tokenizer.cls_token_id, sep_id=tokenizer.sep_token_id,
                         pad_id=tokenizer.pad_token_id, max_length=MAX_LENGTH, seed=seed)
    batch["input_ids"], batch["labels"] = mask_tokens(
        batch["input_ids"], vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
        special_tokens_mask=batch.pop("special_tokens_mask"), generator=generator, **masking)
    return batch


def statically_masked(pairs: Sequence[SentencePair], tokenizer: BertTokenizerFast, seed: int = 0,
                      first_index: int = 0, **masking: float) -> list[PretrainingBatch]:
    """Each pair encoded and masked once, as BERT's data pipeline wrote masked copies of its
    data: one-row batches, pair ``first_index + i`` masked by a generator seeded from
    ``(seed, first_index + i)`` (``ctxlib.objectives.masking.Masker`` with ``dynamic=False``), so a pair's
    mask never depends on its batch, its padding or which other pairs were masked with it."""
    masker = Masker(len(tokenizer), tokenizer.mask_token_id, dynamic=False, seed=seed, **masking)
    rows = []
    for index, pair in enumerate(pairs, start=first_index):
        # Truncated here, once, so the fixed mask always falls on the same tokens.
        a, b = truncate_pair(pair.a, pair.b, MAX_LENGTH - 3, random.Random(seed * 1_000_003 + index))
        row = encode_pairs([SentencePair(tuple(a), tuple(b), pair.is_next)], cls_id=tokenizer.cls_token_id,
                           sep_id=tokenizer.sep_token_id, pad_id=tokenizer.pad_token_id, max_length=MAX_LENGTH)
        row["input_ids"], row["labels"] = masker(row["input_ids"], [index], epoch=0,
                                                 special_tokens_mask=row.pop("special_tokens_mask"))
        rows.append(row)
    return rows


def collate(rows: Sequence[PretrainingBatch], pad_id: int) -> PretrainingBatch:
    """Stack one-row batches into one, padding each to the longest (labels padded with ``IGNORE_INDEX``)."""
    if len(rows) == 0:
        raise ValueError("rows is empty: give at least one encoded pair to collate")
    length = max(row["input_ids"].shape[1] for row in rows)
    fill = {"input_ids": pad_id, "labels": IGNORE_INDEX}
    return {name: torch.cat([torch.nn.functional.pad(row[name], (0, length - row[name].shape[1]),
                                                     value=fill.get(name, 0)) if row[name].dim() == 2 else row[name]
                             for row in rows])
            for name in rows[0]}


def static_batches(pairs: Sequence[SentencePair], tokenizer: BertTokenizerFast, seed: int = 0, batch_size: int = 125,
                   **masking: float) -> list[PretrainingBatch]:
    """``pairs`` masked as ``statically_masked`` masks them, in batches of ``batch_size``: with a
    static run's seed, the very masks it trained on; with another seed, fresh ones."""
    check_positive_int("batch_size", batch_size)
    rows = statically_masked(pairs, tokenizer, seed, **masking)
    return [collate(rows[i:i + batch_size], tokenizer.pad_token_id) for i in range(0, len(rows), batch_size)]


def pretraining_batches(pairs: Sequence[SentencePair], tokenizer: BertTokenizerFast, batch_size: int, seed: int,
                        dynamic: bool = True, **masking: float) -> Iterator[PretrainingBatch]:
    """Endless random batches, masked afresh each time they are drawn (dynamic masking, as
    RoBERTa), or, with ``dynamic=False``, always with the one mask ``statically_masked`` gave
    each pair (static masking, as BERT).

    A batch is ``batch_size`` pairs of similar length (neighbours in length order from a random
    start): padding to the longest pair then wastes little, which makes a step ~1.5× cheaper
    than a batch of random lengths."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    fixed = None if dynamic else statically_masked(pairs, tokenizer, seed, **masking)
    by_length = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].a) + len(pairs[i].b), i))
    while True:
        start = rng.randrange(len(pairs) - batch_size + 1)
        chosen = by_length[start:start + batch_size]
        if fixed is not None:
            yield collate([fixed[i] for i in chosen], tokenizer.pad_token_id)
        else:
            yield pretraining_batch([pairs[i] for i in chosen], tokenizer, generator, seed=rng.randrange(2**31),
                                    **masking)


def heldout_batches(corpus: Corpus, tokenizer: BertTokenizerFast, count: int = HELDOUT_PAIRS,
                    batch_size: int = 125, **masking: float) -> list[PretrainingBatch]:
    """Fixed, masked once with a fixed seed: every evaluation scores the same positions."""
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:count]
    generator = torch.Generator().manual_seed(1)
    return [pretraining_batch(pairs[i:i + batch_size], tokenizer, generator, seed=i, **masking)
            for i in range(0, len(pairs), batch_size)]

