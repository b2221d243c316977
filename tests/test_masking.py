"""MLM masking: the 80/10/10 statistics, specials, whole words, static vs dynamic, and equality
with transformers' DataCollatorForLanguageModeling."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

from ctxlib.models.pretrained import minilm_tokenizer
from ctxlib.objectives.masking import IGNORE_INDEX, Masker, mask_tokens, masking_counts, word_starts

VOCAB, MASK = 1000, 103


def corpus_batch(rows: int = 500, length: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """≥ 10^5 tokens; column 0 is [CLS]-like, the last 20 columns padding: both special."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(200, VOCAB, (rows, length), generator=generator)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -20:] = True
    ids[:, 0], ids[:, -20:] = 101, 0
    return ids, special


def within_4_sigma(count: int, trials: int, p: float) -> bool:
    return abs(count - trials * p) <= 4 * math.sqrt(trials * p * (1 - p))


@pytest.mark.parametrize("p, mask_share, random_share", [(0.15, 0.8, 0.1), (0.3, 0.5, 0.25), (0.05, 0.0, 1.0)])
def test_selection_and_split_follow_their_binomials(p, mask_share, random_share):
    ids, special = corpus_batch()
    inputs, labels = mask_tokens(ids, vocab_size=VOCAB, mask_token_id=MASK, special_tokens_mask=special,
                                 mlm_probability=p, mask_replace_prob=mask_share, random_replace_prob=random_share,
                                 generator=torch.Generator().manual_seed(0))
    eligible = int((~special).sum())
    assert eligible >= 10**5
    selected = labels != IGNORE_INDEX
    n = int(selected.sum())
    assert within_4_sigma(n, eligible, p)
    assert torch.equal(labels[selected], ids[selected])
    as_mask = int((inputs[selected] == MASK).sum())
    changed = int((inputs[selected] != ids[selected]).sum()) - as_mask
    # A random token can equal the original (prob 1/V) or be [MASK] itself; both are rare
    # and only shift the counts by a fraction of a sigma.
    assert within_4_sigma(as_mask, n, mask_share + random_share / VOCAB)
    assert within_4_sigma(changed, n, random_share * (1 - 2 / VOCAB))
    assert torch.equal(inputs[~selected], ids[~selected])  # nothing outside the selection moves


def test_special_tokens_are_never_touched_and_the_input_is_kept():
    ids, special = corpus_batch(rows=50)
    before = ids.clone()
    inputs, labels = mask_tokens(ids, vocab_size=VOCAB, mask_token_id=MASK, special_tokens_mask=special,
                                 mlm_probability=1.0)
    assert torch.equal(ids, before)
    assert torch.equal(inputs[special], ids[special]) and (labels[special] == IGNORE_INDEX).all()
    assert (labels[~special] != IGNORE_INDEX).all()  # p = 1 selects every other token


def test_random_replacements_are_uniform_over_the_vocabulary():
    ids = torch.zeros(400, 256, dtype=torch.long)  # every original is id 0
    inputs, _ = mask_tokens(ids, vocab_size=VOCAB, mask_token_id=MASK, mlm_probability=1.0,
                            mask_replace_prob=0.0, random_replace_prob=1.0,
                            generator=torch.Generator().manual_seed(0))
    values = inputs.flatten().double()
    # uniform on {0, ..., V-1}: mean (V-1)/2, sd sqrt((V²-1)/12); the sample mean within 4 standard errors
    assert abs(values.mean() - (VOCAB - 1) / 2) < 4 * math.sqrt((VOCAB**2 - 1) / 12 / values.numel())
    counts = torch.bincount(inputs.flatten(), minlength=VOCAB).double()
    expected = values.numel() / VOCAB
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < (VOCAB - 1) + 4 * math.sqrt(2 * (VOCAB - 1))  # chi-square, V - 1 degrees of freedom


@pytest.mark.parametrize("probs", [(0.15, 0.8, 0.1), (0.2, 0.6, 0.3), (0.15, 1.0, 0.0)])
def test_equals_transformers_data_collator_with_the_same_generator(probs):
    transformers = pytest.importorskip("transformers")
    p, mask_share, random_share = probs
    tokenizer = minilm_tokenizer()
    texts = ["The bank raised its rates.", "She sat on the river bank and watched the water run by."] * 20
    batch = tokenizer(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt")
    collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=p, mask_replace_prob=mask_share,
                                                            random_replace_prob=random_share)
    for seed in range(3):
        collator.generator = torch.Generator().manual_seed(seed)
        expected = collator.torch_mask_tokens(batch["input_ids"].clone(), batch["special_tokens_mask"].clone())
        ours = mask_tokens(batch["input_ids"], vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
                           special_tokens_mask=batch["special_tokens_mask"], mlm_probability=p,
                           mask_replace_prob=mask_share, random_replace_prob=random_share,
                           generator=torch.Generator().manual_seed(seed))
        assert torch.equal(ours[0], expected[0]) and torch.equal(ours[1], expected[1])


def test_word_starts():
    word_ids = torch.tensor([[-1, 0, 0, 1, 2, 2, -1, -1], [-1, 0, 1, 1, 1, -1, -1, -1]])
    assert word_starts(word_ids).int().tolist() == [[0, 1, 0, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0]]


def test_whole_word_masking_equals_transformers_whole_word_collator():
    transformers = pytest.importorskip("transformers")
    tokenizer = minilm_tokenizer()
    # No punctuation: the collator finds words from character offsets, so it would join "rates."
    # into one word where the tokenizer's word_ids() sees two.
    texts = ["unbelievably long tokenization of embeddings", "the bank raised its rates"] * 20
    batch = tokenizer(texts, padding=True, return_special_tokens_mask=True, return_offsets_mapping=True,
                      return_tensors="pt")
    word_ids = torch.tensor([[-1 if w is None else w for w in batch.word_ids(i)] for i in range(len(texts))])
    # The collator's whole-word mode always uses [MASK] (it warns and sets mask_replace_prob=1);
    # BERT's own whole-word release kept the 80/10/10 choice per piece, ctxlib's default.
    collator = transformers.DataCollatorForLanguageModeling(tokenizer, whole_word_mask=True, mlm_probability=0.3,
                                                            mask_replace_prob=1.0, random_replace_prob=0.0)
    for seed in range(3):
        collator.generator = torch.Generator().manual_seed(seed)
        expected = collator.torch_mask_tokens(batch["input_ids"].clone(), batch["special_tokens_mask"].clone(),
                                              batch["offset_mapping"])
        ours = mask_tokens(batch["input_ids"], vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
                           special_tokens_mask=batch["special_tokens_mask"], mlm_probability=0.3,
                           mask_replace_prob=1.0, random_replace_prob=0.0, word_ids=word_ids,
                           generator=torch.Generator().manual_seed(seed))
        assert torch.equal(ours[0], expected[0]) and torch.equal(ours[1], expected[1])


def test_whole_word_masking_selects_words_with_all_their_pieces():
    tokenizer = minilm_tokenizer()
    texts = ["unbelievably tokenization of embeddings", "the bank"] * 300
    batch = tokenizer(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt")
    word_ids = torch.tensor([[-1 if w is None else w for w in batch.word_ids(i)] for i in range(len(texts))])
    _, labels = mask_tokens(batch["input_ids"], vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
                            special_tokens_mask=batch["special_tokens_mask"], mlm_probability=0.3,
                            word_ids=word_ids, generator=torch.Generator().manual_seed(0))
    selected = labels != IGNORE_INDEX
    words = selected_words = 0
    for row in range(len(texts)):
        for word in set(word_ids[row].tolist()) - {-1}:
            pieces = selected[row][word_ids[row] == word]
            assert pieces.all() or not pieces.any()  # a word is masked whole or not at all
            words += 1
            selected_words += bool(pieces.all())
    assert within_4_sigma(selected_words, words, 0.3)  # the draw is per word, not per piece
    assert not selected[batch["special_tokens_mask"].bool()].any()


def test_static_masks_repeat_and_dynamic_masks_change():
    ids, special = corpus_batch(rows=8, length=64)
    examples = list(range(100, 108))

    def masks(masker, epoch):
        return masker(ids, examples, epoch, special_tokens_mask=special)[1]

    static = Masker(VOCAB, MASK, dynamic=False)
    assert torch.equal(masks(static, 0), masks(static, 5))
    dynamic = Masker(VOCAB, MASK)
    assert torch.equal(masks(dynamic, 3), masks(Masker(VOCAB, MASK), 3))  # reproducible
    assert not torch.equal(masks(dynamic, 0), masks(dynamic, 1))
    dupes = Masker(VOCAB, MASK, dynamic=False, duplicates=3)
    assert torch.equal(masks(dupes, 1), masks(dupes, 4)) and not torch.equal(masks(dupes, 0), masks(dupes, 1))
    # an example's mask does not depend on the batch it is in
    alone = Masker(VOCAB, MASK)(ids[2:3], [102], 7, special_tokens_mask=special[2:3])[1]
    assert torch.equal(alone[0], masks(dynamic, 7)[2])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"mlm_probability": 1.5}, ValueError, r"mlm_probability must lie in \[0, 1\], got 1.5"),
    ({"mask_replace_prob": -0.1}, ValueError, r"mask_replace_prob must lie in \[0, 1\]"),
    ({"mask_replace_prob": 0.8, "random_replace_prob": 0.3}, ValueError,
     r"mask_replace_prob \+ random_replace_prob must be at most 1 .* 0.8 \+ 0.3"),
    ({"mask_token_id": 5000}, ValueError, r"mask_token_id must be an int in \[0, vocab_size=1000\), got 5000"),
    ({"vocab_size": 0}, ValueError, "vocab_size must be a positive int, got 0"),
    ({"special_tokens_mask": torch.zeros(2, 3, dtype=torch.bool)}, ValueError,
     r"special_tokens_mask must have the shape of input_ids \(2, 4\), got \(2, 3\)"),
    ({"input_ids": torch.rand(2, 4)}, TypeError, "input_ids must hold integers"),
    ({"input_ids": torch.tensor([[1, 2, 3, 4000], [0, 0, 0, 0]])}, ValueError,
     r"input_ids must lie in \[0, vocab_size=1000\), got values in \[0, 4000\]"),
])
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    arguments = {"input_ids": torch.ones(2, 4, dtype=torch.long), "vocab_size": VOCAB, "mask_token_id": MASK, **kwargs}
    with pytest.raises(error, match=match):
        mask_tokens(arguments.pop("input_ids"), **arguments)


def test_masker_bad_arguments():
    with pytest.raises(ValueError, match="duplicates=3 only applies to static masking"):
        Masker(VOCAB, MASK, duplicates=3)
    with pytest.raises(ValueError, match="example_ids must name one example per row: 2 rows, got 1 ids"):
        Masker(VOCAB, MASK)(torch.ones(2, 4, dtype=torch.long), [0], 0)
    with pytest.raises(ValueError, match="epoch must be an int >= 0, got -1"):
        Masker(VOCAB, MASK)(torch.ones(1, 4, dtype=torch.long), [0], -1)
    with pytest.raises(ValueError, match=r"mask_token_id must be an int in \[0, vocab_size=1000\), got 1000"):
        Masker(VOCAB, VOCAB)
    with pytest.raises(TypeError, match=r"dynamic must be a bool \(True or False\), got str 'no'"):
        Masker(VOCAB, MASK, dynamic="no")


_MASKS_IN_A_FRESH_PROCESS = """
import sys, torch
from ctxlib.objectives.masking import Masker
masker = Masker(1000, 4, dynamic=False, seed=int(sys.argv[1]))
print(masker(torch.arange(10, 74).view(2, 32), [5, 9], epoch=0)[1].tolist())
"""


def test_static_masks_are_the_same_under_any_pythonhashseed():
    # Each example's generator is seeded from hash((seed, example, round)): for ints, hash() is the
    # same in every process. Before, a str seed ('book') hashed differently under each
    # PYTHONHASHSEED, so "static" masks changed from run to run; now a seed must be an int.
    outputs = set()
    for hash_seed in ("0", "1", "12345"):
        result = subprocess.run([sys.executable, "-c", _MASKS_IN_A_FRESH_PROCESS, "7"], capture_output=True, text=True,
                                env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1 and "-100" in outputs.pop()
    with pytest.raises(TypeError, match="seed must be an int, got str 'book'"):
        Masker(VOCAB, MASK, seed="book")


def test_masking_counts_add_up_and_carry_the_binomial_moments():
    ids, special = corpus_batch(rows=100)
    probabilities = {"mlm_probability": 0.2, "mask_replace_prob": 0.7, "random_replace_prob": 0.2}
    inputs, labels = mask_tokens(ids, vocab_size=VOCAB, mask_token_id=MASK, special_tokens_mask=special,
                                 generator=torch.Generator().manual_seed(3), **probabilities)
    counts = masking_counts(ids, inputs, labels, special, mask_token_id=MASK, **probabilities)
    selected = int((labels != IGNORE_INDEX).sum())
    assert counts.selected == selected and sum(counts.outcomes.values()) == selected
    assert counts.outcomes["[MASK]"] == int((inputs == MASK).sum())  # originals are never MASK here
    assert counts.expected["unchanged"] == pytest.approx(0.1 * selected)
    assert counts.sd["random"] == pytest.approx(math.sqrt(selected * 0.2 * 0.8))
    assert counts.selection_expected == pytest.approx(0.2 * counts.eligible)
