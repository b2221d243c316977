"""Length extrapolation (notes §4.4): train on short sequences, evaluate on longer ones.

Five small left-to-right language models that differ only in how they know positions:
a learned absolute table (as BERT, sized for the longest evaluation, so that its rows past the
training length exist but were never trained), sinusoidal vectors added to the input, RoPE,
ALiBi, and nothing at all (a causal mask alone leaks some order). Each is trained on windows
of ``train_length`` words of the book's corpus and scored by its mean next-word loss on
held-out windows of 1×, 2× and 4× that length (Press et al. 2022 measure ALiBi the same way).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import check_choice, check_index_tensor, check_positive_int
from ctxlib.data.corpus import Corpus
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.layers.attention import causal_bias
from ctxlib.layers.positions import alibi_bias, sinusoidal_positions
from ctxlib.models.bert import BertConfig, BertLayer, init_bert_module
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded

SCHEMES = ("learned", "sinusoidal", "RoPE", "ALiBi", "none")


class PositionalLM(nn.Module):
    """Word embeddings (+ position vectors), post-LN ``BertLayer`` blocks with a causal mask,
    and a softmax over the vocabulary; ``scheme`` says how positions enter (``SCHEMES``)."""

    def __init__(self, scheme: str, vocab_size: int, max_length: int, hidden: int = 64, layers: int = 2,
                 heads: int = 2, intermediate: int = 256) -> None:
        super().__init__()
        self.scheme = check_choice("scheme", scheme, SCHEMES)
        self.max_length = check_positive_int("max_length", max_length)
        self.heads = heads
        config = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=intermediate, max_position_embeddings=max_length,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                            position_embedding_type="rotary" if scheme == "RoPE" else "absolute")
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.positions = nn.Embedding(max_length, hidden) if scheme == "learned" else None
        self.norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab_size)
        # Every scheme starts as BERT starts (the position table too: N(0, 0.02), not PyTorch's
        # N(0, 1), which would hand the learned table positions 50 times louder than BERT's).
        self.apply(partial(init_bert_module, std=config.initializer_range))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-word logits ``[B, T, V]`` for ``ids`` ``[B, T]``, T at most ``max_length``."""
        length = check_index_tensor("ids", ids, ndim=2).shape[1]
        if length > self.max_length:
            raise ValueError(f"ids has length {length} > max_length={self.max_length}")
        x = self.embedding(ids)
        if self.scheme == "learned":
            x = x + self.positions(torch.arange(length, device=ids.device))
        elif self.scheme == "sinusoidal":
            x = x + sinusoidal_positions(length, x.shape[-1], device=ids.device)
        x = self.norm(x)
        bias = (alibi_bias(self.heads, length, causal=True, device=ids.device)[None] if self.scheme == "ALiBi"
                else causal_bias(length, device=ids.device))
        for layer in self.layers:
            x, _ = layer(x, bias, need_weights=False)
        return self.head(x)


def word_stream(sentences: Sequence[Sequence[str]], vocab: Vocabulary) -> torch.Tensor:
    """All sentences in order as one id sequence, each followed by ``</S>``."""
    ids = [vocab.id(t) for s in sentences for t in (*s, "</S>")]
    return torch.tensor(ids)


def windows(stream: torch.Tensor, length: int, batch_size: int, seed: int) -> Iterator[torch.Tensor]:
    """Endless batches ``[B, length + 1]`` of random windows (inputs and next-word targets)."""
    rng = random.Random(seed)
    while True:
        starts = [rng.randrange(len(stream) - length - 1) for _ in range(batch_size)]
        yield torch.stack([stream[s:s + length + 1] for s in starts])


def lm_loss(model: PositionalLM, batch: torch.Tensor) -> torch.Tensor:
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())


@dataclass(frozen=True)
class Extrapolation:
    """Held-out mean next-word loss per scheme and evaluation length, and the training length."""

    train_length: int
    lengths: tuple[int, ...]
    loss: dict[str, list[float]]


EXTRAPOLATION_TRAINING = TrainConfig(steps=300, lr=2e-3, weight_decay=0.01, warmup_fraction=0.1,
                                     description="position LM")


@torch.no_grad()
def heldout_loss(model: PositionalLM, stream: torch.Tensor, length: int, count: int = 48) -> float:
    """Mean next-word loss over ``count`` non-overlapping held-out windows of ``length`` words."""
    model.eval()
    count = min(count, len(stream) // (length + 1))
    if count == 0:
        raise ValueError(f"the held-out stream has {len(stream)} words, fewer than one window of {length + 1}")
    batch = torch.stack([stream[i * (length + 1):(i + 1) * (length + 1)] for i in range(count)])
    return float(lm_loss(model, batch))


def extrapolation_study(corpus: Corpus, schemes: Sequence[str] = SCHEMES, train_length: int = 32,
                        factors: Sequence[int] = (1, 2, 4), training: TrainConfig = EXTRAPOLATION_TRAINING,
                        batch_size: int = 32) -> Extrapolation:
    """Train one model per scheme on ``train_length`` windows (cached) and score each at
    ``train_length × factor`` words."""
    vocab = Vocabulary(corpus.vocabulary(min_count=2))
    train, heldout = (word_stream([s.tokens for s in split], vocab) for split in (corpus.train, corpus.heldout))
    lengths = tuple(train_length * f for f in factors)
    losses = {}
    for scheme in schemes:
        def build(scheme=scheme) -> PositionalLM:
            with seeded(training.seed):
                return PositionalLM(scheme, len(vocab), max(lengths))

        def train_model(model: PositionalLM) -> History:
            return fit(model, windows(train, train_length, batch_size, training.seed), lm_loss, training)

        key = {"scheme": scheme, "training": training, "train_length": train_length, "batch": batch_size,
               "max_length": max(lengths), "vocabulary": vocab.tokens, "stream": train}
        model, _ = cached_training(f"position-lm-{scheme}", key, build, train_model)
        losses[scheme] = [heldout_loss(model, heldout, n) for n in lengths]
    return Extrapolation(train_length, lengths, losses)
