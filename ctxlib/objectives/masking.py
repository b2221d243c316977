"""BERT's masked-language-model corruption (notes §3.2 and §3.4).

Each eligible token is *selected* with probability ``p`` (15%); the model must predict every
selected token. Of the selected, 80% are replaced by ``[MASK]``, 10% by a random token and 10%
are left unchanged (Devlin et al. 2019, §3.1 and Appendix C.2): since ``[MASK]`` never occurs
at fine-tuning time, the model must not learn that only ``[MASK]`` positions matter, and the
unchanged 10% bias its representation of every token towards the token actually there.

``mask_tokens`` draws its random numbers in the same order as
``transformers.DataCollatorForLanguageModeling``, so with the same generator state both give
the same masks (tested). ``word_ids`` turns on whole-word masking: a word is selected as a
whole, with all its WordPiece pieces. ``Masker`` adds the choice between static masking (one
mask per example, fixed once, as BERT's data pipeline did with ``dupe_factor`` copies) and
dynamic masking (a fresh mask every epoch, as RoBERTa does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ctxlib._checks import (check_bool, check_index_tensor, check_nonnegative_int, check_positive_int, check_probability,
                            check_same_shape)

IGNORE_INDEX = -100  # label of every position the MLM loss skips (cross-entropy's ignore_index)


def _check_ratios(mlm_probability: float, mask_replace_prob: float, random_replace_prob: float) -> None:
    check_probability("mlm_probability", mlm_probability)
    check_probability("mask_replace_prob", mask_replace_prob)
    check_probability("random_replace_prob", random_replace_prob)
    if mask_replace_prob + random_replace_prob > 1 + 1e-12:
        raise ValueError(
            f"mask_replace_prob + random_replace_prob must be at most 1 (the rest is kept unchanged), "
            f"got {mask_replace_prob} + {random_replace_prob} = {mask_replace_prob + random_replace_prob}"
        )


def _check_mask_token_id(mask_token_id: object, vocab_size: int) -> None:
    if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int) or not 0 <= mask_token_id < vocab_size:
        raise ValueError(f"mask_token_id must be an int in [0, vocab_size={vocab_size}), got {mask_token_id!r}")


def word_starts(word_ids: torch.Tensor) -> torch.Tensor:
    """``[B, T]``: True at the first piece of each word. ``word_ids`` numbers the words of each
    sequence (a fast tokenizer's ``word_ids()``), -1 at special tokens and padding."""
    previous = torch.nn.functional.pad(word_ids[:, :-1], (1, 0), value=-1)
    return (word_ids >= 0) & (word_ids != previous)


def mask_tokens(
    input_ids: torch.Tensor,
    *,
    vocab_size: int,
    mask_token_id: int,
    special_tokens_mask: torch.Tensor | None = None,
    mlm_probability: float = 0.15,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    word_ids: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Corrupt ``input_ids`` ``[B, T]`` for MLM; returns ``(inputs, labels)``.

    ``labels`` holds the original id at every selected position and ``IGNORE_INDEX`` elsewhere.
    ``special_tokens_mask`` (True or 1 at [CLS], [SEP], padding) marks tokens never selected;
    without it every token is eligible. With ``word_ids`` (see ``word_starts``) each word is
    selected with probability ``mlm_probability`` and then masked in all its pieces; the
    80/10/10 choice is still made per piece, as in BERT's whole-word-masking release. The
    input tensor is not modified.
    """
    input_ids = check_index_tensor("input_ids", input_ids, ndim=2)
    check_positive_int("vocab_size", vocab_size)
    _check_mask_token_id(mask_token_id, vocab_size)
    _check_ratios(mlm_probability, mask_replace_prob, random_replace_prob)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab_size):
        raise ValueError(f"input_ids must lie in [0, vocab_size={vocab_size}), got values in "
                         f"[{int(input_ids.min())}, {int(input_ids.max())}]")
    if special_tokens_mask is None:
        special = torch.zeros_like(input_ids, dtype=torch.bool)
    else:
        check_same_shape("special_tokens_mask", special_tokens_mask, "input_ids", input_ids)
        special = special_tokens_mask.bool()

    labels = input_ids.clone()
    inputs = input_ids.clone()
    # The draws are made where the generator lives (a CPU generator for GPU inputs too), then
    # moved to the input's device.
    device = generator.device if generator is not None else input_ids.device

    def draw(probability: torch.Tensor | float) -> torch.Tensor:
        if not isinstance(probability, torch.Tensor):
            probability = torch.full(labels.shape, probability, device=device)
        return torch.bernoulli(probability, generator=generator).bool().to(input_ids.device)

    probability = torch.full(labels.shape, mlm_probability, device=device)
    if word_ids is None:
        probability.masked_fill_(special.to(device), 0.0)
        selected = draw(probability)
    else:
        word_ids = check_index_tensor("word_ids", word_ids, ndim=2)
        check_same_shape("word_ids", word_ids, "input_ids", input_ids)
        # Draw once per word (at its first piece), then spread the draw to all its pieces.
        probability.masked_fill_((~word_starts(word_ids) | special).to(device), 0.0)
        first_selected = draw(probability)
        same_word = (word_ids[:, :, None] == word_ids[:, None, :]) & (word_ids >= 0)[:, :, None]
        selected = (same_word & first_selected[:, None, :]).any(-1) & ~special
    labels[~selected] = IGNORE_INDEX

    replaced = draw(mask_replace_prob) & selected
    inputs[replaced] = mask_token_id
    if mask_replace_prob == 1 or random_replace_prob == 0:
        return inputs, labels
    # Of the selected tokens not replaced by [MASK], the share that gets a random token.
    random_share = random_replace_prob / (1 - mask_replace_prob)
    randomised = draw(random_share) & selected & ~replaced
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long, generator=generator,
                                 device=device).to(input_ids.device)
    inputs[randomised] = random_words[randomised]
    return inputs, labels


class Masker:
    """MLM masks for a data set whose examples have fixed indices, static or dynamic.

    Example ``i`` in epoch ``e`` is masked with a generator seeded from ``(seed, i, e)`` when
    ``dynamic`` (a new mask every epoch, RoBERTa) and from ``(seed, i, e mod duplicates)``
    otherwise (``duplicates`` fixed masks, cycled; BERT's pipeline wrote ``dupe_factor = 10``
    masked copies of its data once). Either way the masks are reproducible.
    """

    def __init__(self, vocab_size: int, mask_token_id: int, *, dynamic: bool = True, duplicates: int = 1,
                 seed: int = 0, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1) -> None:
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("duplicates", duplicates)
        check_bool("dynamic", dynamic)
        # An int seed: the per-example generator is seeded from hash((seed, example, round)),
        # which for ints is the same in every process; a str's hash changes with PYTHONHASHSEED.
        check_nonnegative_int("seed", seed)
        _check_mask_token_id(mask_token_id, vocab_size)
        _check_ratios(mlm_probability, mask_replace_prob, random_replace_prob)
        if dynamic and duplicates != 1:
            raise ValueError(f"duplicates={duplicates} only applies to static masking; dynamic masking draws "
                             "a fresh mask every epoch")
        self.vocab_size, self.mask_token_id = vocab_size, mask_token_id
        self.dynamic, self.duplicates, self.seed = dynamic, duplicates, seed
        self.probabilities = {"mlm_probability": mlm_probability, "mask_replace_prob": mask_replace_prob,
                              "random_replace_prob": random_replace_prob}

    def __call__(self, input_ids: torch.Tensor, example_ids: Sequence[int], epoch: int,
                 special_tokens_mask: torch.Tensor | None = None,
                 word_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Mask a batch ``[B, T]`` whose rows are the examples ``example_ids``."""
        input_ids = check_index_tensor("input_ids", input_ids, ndim=2)
        if len(example_ids) != input_ids.shape[0]:
            raise ValueError(f"example_ids must name one example per row: {input_ids.shape[0]} rows, "
                             f"got {len(example_ids)} ids")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
        round_ = epoch if self.dynamic else epoch % self.duplicates
        for example in example_ids:  # int("7") or int(2.7) would silently name another example
            check_nonnegative_int("example id", example)
        rows = []
        for row, example in enumerate(example_ids):
            generator = torch.Generator().manual_seed(hash((self.seed, example, round_)) % 2**63)
            rows.append(mask_tokens(
                input_ids[row:row + 1], vocab_size=self.vocab_size, mask_token_id=self.mask_token_id,
                special_tokens_mask=None if special_tokens_mask is None else special_tokens_mask[row:row + 1],
                word_ids=None if word_ids is None else word_ids[row:row + 1], generator=generator,
                **self.probabilities))
        return torch.cat([r[0] for r in rows]), torch.cat([r[1] for r in rows])


@dataclass(frozen=True)
class MaskingCounts:
    """What one masking of a batch did, against its binomial expectation.

    ``outcomes`` counts the selected tokens that became [MASK], a random token or stayed
    unchanged (a random draw that equals the original counts as unchanged: it is what the model
    sees); ``expected`` and ``sd`` are each count's binomial mean and standard deviation given
    the number selected, and ``selection_*`` those of the number selected.
    """

    eligible: int
    selected: int
    positions: int
    outcomes: dict[str, int]
    expected: dict[str, float]
    sd: dict[str, float]
    selection_expected: float
    selection_sd: float


def masking_counts(input_ids: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor,
                   special_tokens_mask: torch.Tensor, mlm_probability: float, mask_replace_prob: float,
                   random_replace_prob: float, mask_token_id: int) -> MaskingCounts:
    """Count what ``mask_tokens`` did to ``input_ids`` (giving ``inputs``, ``labels``)."""
    selected = labels != IGNORE_INDEX
    eligible = int((~special_tokens_mask.bool()).sum())
    n = int(selected.sum())
    # A random token is [MASK] itself with probability 1/V: negligible, so this split is exact
    # up to that, for any vocabulary of realistic size.
    became_mask = selected & (inputs == mask_token_id)
    kept = selected & (inputs == input_ids)
    outcomes = {"[MASK]": int(became_mask.sum()), "random": int((selected & ~became_mask & ~kept).sum()),
                "unchanged": int(kept.sum())}
    # max(0, ...): 1 - 0.7 - 0.3 is -5.6e-17 in floating point, and its sd would be sqrt(< 0).
    shares = {"[MASK]": mask_replace_prob, "random": random_replace_prob,
              "unchanged": max(0.0, 1 - mask_replace_prob - random_replace_prob)}
    return MaskingCounts(
        eligible, n, int(input_ids.numel()), outcomes,
        {k: n * s for k, s in shares.items()},
        {k: math.sqrt(n * s * (1 - s)) for k, s in shares.items()},
        eligible * mlm_probability, math.sqrt(eligible * mlm_probability * (1 - mlm_probability)),
    )
