"""ELMo's limitations, measured (notes §2.6): sequential cost and memory over distance.

Two small encoders of about the same size read the same token sequences:

* ``"BiLSTM"``: one forward and one backward ``ProjectedLSTM`` layer, as in ELMo;
* ``"self-attention"``: a 2-layer BERT encoder (``ctxlib.models.bert``).

``forward_seconds`` times one forward pass as the sequence grows: the LSTM's T steps run one
after another, attention's run at once. ``recall_accuracy`` trains each encoder on a synthetic
task whose answer sits T tokens away from where it must be read out: the first token is a key
(one of two), the rest is noise, and the label is the key, predicted from the last position. The
noise is drawn from the same ids as the keys, so the key is told apart by its position alone:
attention cannot find it by what it is, only by where it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import check_choice, check_positive_int, check_real
from ctxlib.models.bert import BertConfig, BertModel, init_bert_module
from ctxlib.models.elmo import FORGET_BIAS, ProjectedLSTM
from ctxlib.training.cache import cached_training
from ctxlib.training.loop import History, TrainConfig, fit, seeded

ENCODERS = ("BiLSTM", "self-attention")
VOCAB = 16  # ids 1 and 2 are the keys, 1..15 the noise; 0 is unused (BERT's padding id)
DIM = 64


class RecallModel(nn.Module):
    """An encoder and a linear read-out of its last position. ``forget_bias`` starts the
    BiLSTM's forget gates (bilm-tf's 1 by default; PyTorch's ``nn.LSTM`` starts them at 0)."""

    def __init__(self, kind: str, max_length: int, forget_bias: float = FORGET_BIAS) -> None:
        super().__init__()
        self.kind = check_choice("kind", kind, ENCODERS)
        if kind == "BiLSTM":
            self.embed = nn.Embedding(VOCAB, DIM)
            self.forward_lstm = ProjectedLSTM(DIM, 2 * DIM, DIM, forget_bias=forget_bias)
            self.backward_lstm = ProjectedLSTM(DIM, 2 * DIM, DIM, reverse=True, forget_bias=forget_bias)
        else:
            self.encoder = BertModel(BertConfig(vocab_size=VOCAB, hidden_size=DIM, num_hidden_layers=2,
                                                num_attention_heads=4, intermediate_size=2 * DIM,
                                                max_position_embeddings=max_length, type_vocab_size=1,
                                                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
        self.readout = nn.Linear(2 * DIM if kind == "BiLSTM" else DIM, 2)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Each arm starts as its reference starts it. The BiLSTM as bilm-tf: its LSTMs start
        themselves (``ProjectedLSTM``: forget-gate bias 1), the word table Glorot-uniform (TensorFlow's
        default for bilm-tf's word embedding), the read-out as bilm-tf's softmax, N(0, 1/fan_in). The
        attention arm as BERT: its encoder starts itself, the read-out from N(0, 0.02)."""
        if self.kind == "BiLSTM":
            nn.init.xavier_uniform_(self.embed.weight)
            nn.init.normal_(self.readout.weight, std=self.readout.in_features ** -0.5)
            nn.init.zeros_(self.readout.bias)
        else:
            init_bert_module(self.readout, self.encoder.config.initializer_range)

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        if self.kind == "BiLSTM":
            x = self.embed(ids)
            lengths = torch.full((ids.size(0),), ids.size(1))
            forward, _ = self.forward_lstm(x, lengths)
            backward, _ = self.backward_lstm(x, lengths)
            return torch.cat([forward, backward], dim=-1)
        return self.encoder(ids).last_hidden_state

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.readout(self.encode(ids)[:, -1])


def recall_batches(length: int, batch_size: int, seed: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless batches of ``(ids [B, length], key [B])``: the key token first, noise after it. The
    noise includes the key ids, so only the position says which token is the key."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        keys = torch.randint(0, 2, (batch_size,), generator=generator)
        ids = torch.randint(1, VOCAB, (batch_size, length), generator=generator)
        ids[:, 0] = keys + 1
        yield ids, keys


def recall_accuracy(kind: str, length: int, steps: int = 300, batch_size: int = 32, seed: int = 0,
                    forget_bias: float = FORGET_BIAS) -> float:
    """Train ``kind`` on the recall task at distance ``length`` (or read it back from the cache:
    §2.6 and §3.7 both measure distance 64); held-out accuracy (chance 0.5). ``forget_bias``
    starts the BiLSTM's forget gates (``RecallModel``)."""
    check_choice("kind", kind, ENCODERS)
    check_positive_int("length", length)
    check_real("forget_bias", forget_bias)

    def build() -> RecallModel:
        with seeded(seed):
            return RecallModel(kind, max_length=length, forget_bias=forget_bias)

    def train(model: RecallModel) -> History:
        return fit(model, recall_batches(length, batch_size, seed), lambda m, b: F.cross_entropy(m(b[0]), b[1]),
                   TrainConfig(steps=steps, lr=3e-3, weight_decay=0.0, warmup_fraction=0.1, progress=False,
                               seed=seed))

    key = {"kind": kind, "length": length, "steps": steps, "batch_size": batch_size, "seed": seed,
           "forget_bias": float(forget_bias)}
    model, _ = cached_training(f"recall-{kind}-{length}", key, build, train)
    ids, keys = next(recall_batches(length, 512, seed + 1))
    with torch.no_grad():
        return float((model(ids).argmax(-1) == keys).float().mean())


@torch.no_grad()
def median_seconds(run: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of ``run()`` without gradients, after one untimed warm-up call."""
    check_positive_int("repeats", repeats)
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def forward_seconds(kind: str, length: int, batch_size: int = 8, repeats: int = 3) -> float:
    """Median wall time of one forward pass of an untrained ``kind`` encoder over ``length`` tokens."""
    model = RecallModel(kind, max_length=length).eval()
    ids = torch.randint(3, VOCAB, (batch_size, length))
    return median_seconds(lambda: model.encode(ids), repeats)
