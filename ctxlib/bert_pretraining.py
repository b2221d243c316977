"""Pretraining the book's mini-BERT on the project's corpus (notes §3.4, eq 4.6: L = L_MLM + L_NSP).

The pieces, each from its own module: a WordPiece vocabulary trained on the corpus's training
split (``book_tokenizer``), sentence pairs for NSP (``ctxlib.nsp``), dynamic 80/10/10 masking
(``ctxlib.masking``), ``BertForPreTraining`` (``ctxlib.bert``) and the one fit loop
(``ctxlib.train``). The model is two layers of width 64, small enough to learn something real in
under a minute on two CPU cores; BERT-base has 12 layers of width 768. It is cached like the
book's ELMo: the first run trains, later ones load.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import torch
from transformers import BertTokenizerFast

from ctxlib._checks import check_positive_int
from ctxlib.bert import BertConfig, BertForPreTraining
from ctxlib.corpus import Corpus, load_corpus
from ctxlib.masking import IGNORE_INDEX, Masker, mask_tokens
from ctxlib.nsp import SentencePair, encode_pairs, sentence_pairs, truncate_pair
from ctxlib.pretrained import cache_dir, cached_training
from ctxlib.train import History, TrainConfig, fit

WORDPIECE_VOCAB_SIZE = 2000
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Width 64 learns more per second of CPU than width 128 (50% vs 30% held-out MLM accuracy after
# ~70 s); dropout is off because 1,500 steps are about six epochs of 16,000 pairs, each seen with
# fresh masks: the model is far from overfitting.
BOOK_BERT = BertConfig(vocab_size=WORDPIECE_VOCAB_SIZE, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=256, max_position_embeddings=64, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
MAX_LENGTH = 64
BATCH_SIZE = 64
# 1,500 steps of 64 pairs: ~55 s on two cores (1,300 steps end visibly worse: 40% MLM, 58% NSP).
# A higher peak rate (5e-3) stalls MLM near 25%.
BOOK_BERT_TRAINING = TrainConfig(steps=1500, lr=3e-3, weight_decay=0.01, warmup_fraction=0.06, max_grad_norm=1.0,
                                 eval_every=250, description="mini-BERT")
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
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text(text, encoding="utf-8")
    return BertTokenizerFast.from_pretrained(folder, do_lower_case=True)


def corpus_key(corpus: Corpus) -> tuple:
    """What identifies a corpus in a cache key: its sizes and its first and last sentences."""
    return len(corpus.train), len(corpus.heldout), corpus.train[0].tokens, corpus.train[-1].tokens


def vocabulary_digest(tokenizer: BertTokenizerFast) -> str:
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return hashlib.sha256("\n".join(tokens).encode()).hexdigest()[:12]


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
    ``(seed, first_index + i)`` (``ctxlib.masking.Masker`` with ``dynamic=False``), so a pair's
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
    """Stack one-row batches into one, padding each to the longest (labels padded with -100)."""
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


@dataclass(frozen=True)
class PretrainingScores:
    """Held-out MLM accuracy (top-1 on the masked positions) and NSP accuracy, with the losses."""

    mlm_accuracy: float
    nsp_accuracy: float
    mlm_loss: float
    nsp_loss: float


@torch.no_grad()
def pretraining_scores(model: BertForPreTraining, batches: Sequence[PretrainingBatch],
                       causal: bool = False) -> PretrainingScores:
    """Held-out scores of ``model`` on ``batches``; ``causal=True`` runs it with a left-to-right
    attention mask (which BERT never trained with)."""
    model.eval()
    right = total = nsp_right = nsp_total = 0
    mlm_loss = nsp_loss = 0.0
    for batch in batches:
        out = model(**batch, masked_only=True, causal=causal)
        masked = batch["labels"] != IGNORE_INDEX
        right += int((out.prediction_logits.argmax(-1) == batch["labels"][masked]).sum())
        total += int(masked.sum())
        nsp_right += int((out.seq_relationship_logits.argmax(-1) == batch["next_sentence_label"]).sum())
        nsp_total += len(batch["next_sentence_label"])
        mlm_loss += float(out.mlm_loss) * int(masked.sum())
        nsp_loss += float(out.nsp_loss) * len(batch["next_sentence_label"])
    return PretrainingScores(right / total, nsp_right / nsp_total, mlm_loss / total, nsp_loss / nsp_total)


def heldout_batches(corpus: Corpus, tokenizer: BertTokenizerFast, count: int = HELDOUT_PAIRS,
                    batch_size: int = 125, **masking: float) -> list[PretrainingBatch]:
    """Fixed, masked once with a fixed seed: every evaluation scores the same positions."""
    pairs = corpus_pairs(corpus, "heldout", tokenizer, seed=1)[:count]
    generator = torch.Generator().manual_seed(1)
    return [pretraining_batch(pairs[i:i + batch_size], tokenizer, generator, seed=i, **masking)
            for i in range(0, len(pairs), batch_size)]


def book_bert(corpus: Corpus | None = None, training: TrainConfig = BOOK_BERT_TRAINING, config: BertConfig = BOOK_BERT,
              name: str = "book-bert", dynamic: bool = True, train_pairs: int | None = None, nsp: bool = True,
              **masking: float) -> tuple[BertForPreTraining, History, BertTokenizerFast]:
    """The mini-BERT the book pretrains with MLM + NSP (eq 4.6; eq 5.1 is the minimisation over
    the corpus that ``fit`` approximates with AdamW steps): trained on first use, then
    loaded from the cache. ``nsp=False`` trains on the MLM loss alone (as RoBERTa and ELECTRA's
    baselines do); ``masking`` overrides ``mask_tokens``' ratios (the Table 8 ablation);
    ``dynamic=False`` masks each pair once for the whole run (see ``pretraining_batches``);
    ``train_pairs`` trains on only the first that many pairs of the training split.
    Returns the model, its history (train losses per step; held-out scores every
    ``eval_every`` steps) and the tokenizer."""
    corpus = corpus or load_corpus()
    if train_pairs is not None:
        check_positive_int("train_pairs", train_pairs)
    tokenizer = book_tokenizer(corpus, config.vocab_size)
    config = BertConfig(**{**asdict(config), "vocab_size": len(tokenizer)})

    def build() -> BertForPreTraining:
        torch.manual_seed(training.seed)
        return BertForPreTraining(config)

    def loss(model: BertForPreTraining, batch: PretrainingBatch) -> dict[str, torch.Tensor]:
        if not nsp:
            batch = {k: v for k, v in batch.items() if k != "next_sentence_label"}
            return {"loss": model(**batch, masked_only=True).mlm_loss}
        out = model(**batch, masked_only=True)
        return {"loss": out.loss, "MLM": out.mlm_loss, "NSP": out.nsp_loss}

    def train(model: BertForPreTraining) -> History:
        # Tokenised only here: a page that loads the cached model does not pay for it.
        pairs = corpus_pairs(corpus, "train", tokenizer, seed=training.seed)[:train_pairs]
        if len(pairs) < BATCH_SIZE:
            raise ValueError(f"train_pairs={train_pairs} gives {len(pairs)} pairs, fewer than a batch of {BATCH_SIZE}")
        heldout = heldout_batches(corpus, tokenizer)
        return fit(model, pretraining_batches(pairs, tokenizer, BATCH_SIZE, training.seed, dynamic, **masking), loss,
                   training,
                   evaluate=lambda m: {f"heldout {k}": v for k, v in asdict(pretraining_scores(m, heldout)).items()})

    key = {"config": asdict(config), "training": asdict(training), "batch_size": BATCH_SIZE, "masking": masking,
           "dynamic": dynamic, "train_pairs": train_pairs, "nsp": nsp, "vocab": vocabulary_digest(tokenizer),
           "corpus": corpus_key(corpus)}
    model, history = cached_training(name, key, build, train)
    return model, history, tokenizer


@torch.no_grad()
def fill_mask(model: BertForPreTraining, tokenizer: BertTokenizerFast, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """The ``k`` most probable tokens, with their probabilities, at each ``[MASK]`` of ``text``."""
    check_positive_int("k", k)
    encoded = tokenizer(text, return_tensors="pt")
    where = encoded["input_ids"][0] == tokenizer.mask_token_id
    if not where.any():
        raise ValueError(f"text must contain {tokenizer.mask_token} where a token should be predicted, got {text!r}")
    model.eval()
    logits = model(**encoded).prediction_logits[0, where]
    top = logits.softmax(-1).topk(k)
    return [[(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids)]
            for ps, ids in zip(top.values, top.indices)]


def unmasked_outputs(model: torch.nn.Module, tokenizer: BertTokenizerFast, pairs: Sequence[SentencePair],
                     batch_size: int = 250) -> Iterator[tuple[PretrainingBatch, Any]]:
    """Each batch of ``pairs``, encoded with nothing masked and cut to the model's own position
    limit (``config.max_position_embeddings``), with the model's output on it (no gradients)."""
    check_positive_int("batch_size", batch_size)
    if len(pairs) == 0:
        raise ValueError("pairs is empty: give at least one SentencePair to score")
    model.eval()
    for first in range(0, len(pairs), batch_size):
        batch = encode_pairs(pairs[first:first + batch_size], cls_id=tokenizer.cls_token_id,
                             sep_id=tokenizer.sep_token_id, pad_id=tokenizer.pad_token_id,
                             max_length=model.config.max_position_embeddings)
        with torch.no_grad():
            yield batch, model(batch["input_ids"], attention_mask=batch["attention_mask"],
                               token_type_ids=batch["token_type_ids"])


def unmasked_token_accuracy(model: BertForPreTraining, tokenizer: BertTokenizerFast, pairs: Sequence[SentencePair],
                            batch_size: int = 250) -> float:
    """Top-1 accuracy of the MLM head at every token of *unmasked* pairs ([CLS] and [SEP]
    excluded): whether the model's output at a token it can see still says what the token is,
    the situation of every token in fine-tuning."""
    right = total = 0
    for batch, out in unmasked_outputs(model, tokenizer, pairs, batch_size):
        real = batch["special_tokens_mask"] == 0
        right += int((out.prediction_logits.argmax(-1) == batch["input_ids"])[real].sum())
        total += int(real.sum())
    return right / total


def most_frequent_token_accuracy(batches: Sequence[PretrainingBatch]) -> float:
    """MLM accuracy of always answering the commonest masked token: the floor a model must beat."""
    labels = torch.cat([b["labels"][b["labels"] != IGNORE_INDEX] for b in batches])
    return float(torch.bincount(labels).max()) / len(labels)
