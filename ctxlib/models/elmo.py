"""ELMo (Peters et al. 2018) from notes §2, in plain PyTorch, loading the original weights.

The architecture, as the errata correct the notes' diagram:

* a context-independent **token layer**: each word's UTF-8 bytes, embedded and run through
  convolutions of several widths, max-pooled over the word, then highway layers and a linear
  projection (``CharCNN``). Any string gets a vector: there is no out-of-vocabulary word.
* **two separate** L-layer LSTM stacks, one reading left to right and one right to left
  (``BiLM``). They share only the token layer and the softmax (eqs 2.1–2.3). Each LSTM cell
  projects its state down to ``projection_dim`` and clips cell and output; a residual
  connection adds layer 1's output to layer 2's.
* layer j's representation is ``[h→_{t,j}; h←_{t,j}]``; layer 0 is the token layer, doubled to
  the same width. ``Elmo`` returns all L + 1 of them; ``ScalarMix`` (eq 2.5) mixes them.

A model built here starts as bilm-tf's ``training.py`` starts one (each module's
``reset_parameters``): characters U(−1, 1); convolutions U(±0.05) under ReLU, N(0, 1/(width·dim))
under tanh; highway and projection weights N(0, 1/fan_in) with the highway gate's bias at −2 (so
each layer starts by passing its input through); LSTM kernels Glorot-uniform with zero biases but
the forget gate's at 1 (TensorFlow's ``forget_bias``); the softmax N(0, 1/projection_dim).

``Elmo.from_allennlp`` reads the bilm-tf / AllenNLP files (``options.json`` and an hdf5 weight
file), so the released 93.6M-parameter model loads as well as the small one the book trains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ctxlib._checks import (check_bool, check_choice, check_id, check_index_tensor, check_nonnegative_int,
                            check_positive_int, check_positive_real, check_real, check_token_lists, check_values_below)
from ctxlib._files import as_path, read_text
from ctxlib.layers.scalar_mix import ScalarMix
from ctxlib.objectives.masking import IGNORE_INDEX

__all__ = ["ElmoConfig", "CharCNN", "Highway", "ProjectedLSTM", "BiLM", "Elmo", "ScalarMix",
           "batch_to_ids", "word_to_char_ids", "remove_sentence_boundaries"]

# Character ids of the original ELMo: bytes 0-255, then five markers; every id is shifted by
# one so that 0 can mean "no character here" (padding of a batch).
MAX_CHARACTERS = 50
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260
# bilm-tf's starting biases: TensorFlow's LSTMCell(forget_bias=1.0) and the highway's b_carry.
FORGET_BIAS = 1.0
HIGHWAY_GATE_BIAS = -2.0


def _marker_word(character: int) -> list[int]:
    ids = [PAD_CHAR] * MAX_CHARACTERS
    ids[0], ids[1], ids[2] = BOW_CHAR, character, EOW_CHAR
    return [c + 1 for c in ids]


BOS_IDS = _marker_word(BOS_CHAR)  # the sentence-start token <S>
EOS_IDS = _marker_word(EOS_CHAR)  # the sentence-end token </S>


def word_to_char_ids(word: str) -> list[int]:
    """A word's 50 character ids: begin-of-word, its UTF-8 bytes (at most 48), end-of-word, padding."""
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__} {word!r}")
    if not word:
        raise ValueError("word must not be empty: an empty token has no characters to encode")
    encoded = word.encode("utf-8", "ignore")[: MAX_CHARACTERS - 2]
    ids = [PAD_CHAR] * MAX_CHARACTERS
    ids[0] = BOW_CHAR
    ids[1:len(encoded) + 1] = encoded
    ids[len(encoded) + 1] = EOW_CHAR
    return [c + 1 for c in ids]


def batch_to_ids(sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """Character ids ``[B, T, 50]`` for a batch of tokenised sentences, zero-padded to the longest."""
    check_token_lists("sentences", sentences)
    ids = torch.zeros(len(sentences), max(map(len, sentences)), MAX_CHARACTERS, dtype=torch.long)
    for i, sentence in enumerate(sentences):
        ids[i, :len(sentence)] = torch.tensor([word_to_char_ids(w) for w in sentence])
    return ids


def add_sentence_boundaries(char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Put <S> before and </S> after each sentence: ``[B, T, 50]`` → ``[B, T+2, 50]`` and its mask.

    Padding words (all-zero characters) may only follow a sentence's last word: a gap inside a
    sentence would put </S> on the gap and hide the words after it."""
    words = (char_ids > 0).any(-1)
    lengths = words.sum(-1)
    gaps = words[:, 1:] & ~words[:, :-1]  # a real word right after a padding word
    if bool(gaps.any()):
        row, column = (int(i) for i in gaps.nonzero()[0])
        raise ValueError(f"char_ids row {row} has a padding word (all-zero characters) at position {column} before "
                         "a real word: padding may only follow a sentence's last word (batch_to_ids never makes one)")
    batch, length, _ = char_ids.shape
    out = char_ids.new_zeros(batch, length + 2, MAX_CHARACTERS)
    out[:, 1:-1] = char_ids
    out[:, 0] = torch.tensor(BOS_IDS, device=char_ids.device)
    out[torch.arange(batch, device=char_ids.device), lengths + 1] = torch.tensor(EOS_IDS, device=char_ids.device)
    return out, (out > 0).any(-1)


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the <S> and </S> positions again: ``[B, T+2, H]`` → ``[B, T, H]`` and its mask."""
    lengths = mask.sum(-1) - 2
    keep = torch.arange(tensor.size(1) - 2, device=tensor.device)[None] < lengths[:, None]
    return tensor[:, 1:-1] * keep.unsqueeze(-1), keep


@dataclass
class ElmoConfig:
    """ELMo's hyperparameters; field names follow bilm-tf's ``options.json``.

    The defaults are the released "original" ELMo (93.6M parameters without its softmax).
    ``vocab_size`` sizes the shared softmax of the language-model heads; 0 means no heads.
    """

    char_embedding_dim: int = 16
    filters: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
    n_highway: int = 2
    n_characters: int = 262
    activation: str = "relu"
    projection_dim: int = 512
    cell_size: int = 4096
    n_layers: int = 2
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True
    vocab_size: int = 0

    def __post_init__(self) -> None:
        for name in ("char_embedding_dim", "n_characters", "projection_dim", "cell_size", "n_layers"):
            check_positive_int(name, getattr(self, name))
        check_nonnegative_int("n_highway", self.n_highway)
        check_choice("activation", self.activation, ["relu", "tanh"])
        if isinstance(self.filters, (str, bytes)) or not isinstance(self.filters, Sequence) or not self.filters \
                or not all(isinstance(f, Sequence) and len(f) == 2 for f in self.filters):
            raise ValueError(f"filters must be a non-empty list of (width, count) pairs, got {self.filters!r}")
        self.filters = tuple((check_positive_int("filter width", w), check_positive_int("filter count", n))
                             for w, n in self.filters)
        for name in ("cell_clip", "proj_clip"):
            if getattr(self, name) is not None:
                check_positive_real(name, getattr(self, name))
        check_bool("use_skip_connections", self.use_skip_connections)
        check_nonnegative_int("vocab_size", self.vocab_size)  # 0: no LM heads

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @classmethod
    def from_options(cls, options: dict) -> ElmoConfig:
        """Read bilm-tf's ``options.json`` structure; a missing entry is named."""
        try:
            cnn, lstm = options["char_cnn"], options["lstm"]
            if cnn.get("max_characters_per_token", MAX_CHARACTERS) != MAX_CHARACTERS:
                raise ValueError(f"max_characters_per_token must be {MAX_CHARACTERS}, "
                                 f"got {cnn['max_characters_per_token']}")
            return cls(
                char_embedding_dim=cnn["embedding"]["dim"], filters=tuple(map(tuple, cnn["filters"])),
                n_highway=cnn["n_highway"], n_characters=cnn["n_characters"], activation=cnn["activation"],
                projection_dim=lstm["projection_dim"], cell_size=lstm["dim"], n_layers=lstm["n_layers"],
                cell_clip=lstm.get("cell_clip"), proj_clip=lstm.get("proj_clip"),
                use_skip_connections=lstm.get("use_skip_connections", True),
            )
        except KeyError as missing:
            raise ValueError(f"options lack the entry {missing.args[0]!r}: bilm-tf's options.json has 'char_cnn' "
                             "(embedding.dim, filters, n_highway, n_characters, activation) and 'lstm' "
                             "(projection_dim, dim, n_layers)") from None


class Highway(nn.Module):
    """Highway layers (Srivastava et al. 2015): ``y = t ⊙ f(W_H x + b_H) + (1 − t) ⊙ x`` with the
    transform gate ``t = σ(W_T x + b_T)``; with t → 0 a layer passes its input through."""

    def __init__(self, dim: int, num_layers: int, activation: str = "relu") -> None:
        super().__init__()
        self.transform = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_layers))
        self.gate = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_layers))
        self.activation = F.relu if activation == "relu" else torch.tanh
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """bilm-tf's start: both weights N(0, 1/dim), the transform's bias 0, the gate's −2, so
        t = σ(−2) ≈ 0.12 and a new layer passes 88% of its input through (its ``b_carry``)."""
        for transform, gate in zip(self.transform, self.gate):
            for linear in (transform, gate):
                nn.init.normal_(linear.weight, std=linear.in_features ** -0.5)
            nn.init.zeros_(transform.bias)
            nn.init.constant_(gate.bias, HIGHWAY_GATE_BIAS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for transform, gate in zip(self.transform, self.gate):
            t = torch.sigmoid(gate(x))
            x = t * self.activation(transform(x)) + (1 - t) * x
        return x


class CharCNN(nn.Module):
    """The token layer: characters → convolutions → max over the word → highway → projection."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.char_embedding = nn.Embedding(config.n_characters, config.char_embedding_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(config.char_embedding_dim, count, kernel_size=width) for width, count in config.filters
        )
        self.activation = F.relu if config.activation == "relu" else torch.tanh
        self.highway = Highway(config.n_filters, config.n_highway, "relu")
        self.projection = nn.Linear(config.n_filters, config.projection_dim)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """bilm-tf's start of the token layer (the highway starts itself, ``Highway``)."""
        nn.init.uniform_(self.char_embedding.weight, -1.0, 1.0)
        self.char_embedding.weight[0].zero_()  # AllenNLP's padding row: "no character here"
        for conv in self.convolutions:
            if self.activation is F.relu:  # Kim et al. (2016)'s ±0.05, as bilm-tf
                nn.init.uniform_(conv.weight, -0.05, 0.05)
            else:
                width, dim = conv.kernel_size[0], conv.in_channels
                nn.init.normal_(conv.weight, std=(width * dim) ** -0.5)
            nn.init.zeros_(conv.bias)
        nn.init.normal_(self.projection.weight, std=self.projection.in_features ** -0.5)
        nn.init.zeros_(self.projection.bias)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """``[B, T, 50]`` character ids → ``[B, T, projection_dim]`` token vectors."""
        batch, length, chars = char_ids.shape
        # A word's vector depends on its characters only: compute it once per distinct word
        # in the batch (about half the tokens of running text), then copy it to each use.
        words, position = torch.unique(char_ids.reshape(-1, chars), dim=0, return_inverse=True)
        x = self.char_embedding(words).transpose(1, 2)  # [words, dim, 50]
        # Max over positions: a filter fires if its n-gram occurs anywhere in the word.
        pooled = [self.activation(conv(x).max(dim=-1).values) for conv in self.convolutions]
        vectors = self.projection(self.highway(torch.cat(pooled, dim=-1)))
        return vectors.index_select(0, position).view(batch, length, -1)


class ProjectedLSTM(nn.Module):
    """One LSTM layer with a projected, clipped state: bilm-tf's ``LSTMCell(num_proj=...)``.

    Per step: ``[i, f, g, o] = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh``;
    ``c_t = clip(σ(f) c_{t-1} + σ(i) tanh(g))``; ``h_t = clip(W_hr (σ(o) tanh(c_t)))``.

    The parameters live in a ``torch.nn.LSTM(proj_size=...)``, whose fused kernel is the fast
    path; it has no clipping, so an explicit step loop runs whenever a clip value is set.
    ``reverse=True`` reads each sequence from its last real token to its first.
    """

    def __init__(self, input_size: int, cell_size: int, projection_dim: int,
                 cell_clip: float | None = None, proj_clip: float | None = None, reverse: bool = False,
                 forget_bias: float = FORGET_BIAS) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size, cell_size, proj_size=projection_dim, batch_first=True)
        self.cell_clip, self.proj_clip, self.reverse = cell_clip, proj_clip, reverse
        self.forget_bias = float(check_real("forget_bias", forget_bias))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """TensorFlow's ``LSTMCell`` as bilm-tf builds it: one Glorot-uniform kernel over
        ``[x; h]`` → 4 gates (PyTorch splits it into ``weight_ih`` and ``weight_hh``), a Glorot-uniform
        projection, zero biases, and the forget gate's bias at ``forget_bias`` (1, as TensorFlow's
        ``LSTMCell(forget_bias=1.0)``, after Gers et al. 2000 and Jozefowicz et al. 2015), which
        TensorFlow adds at run time and PyTorch's LSTM starts at 0: a new cell keeps σ(1) ≈ 73% of
        its memory per step instead of half."""
        lstm = self.lstm
        gates, cell = lstm.weight_ih_l0.shape[0], lstm.hidden_size
        fan_in = lstm.input_size + lstm.proj_size
        bound = (6.0 / (fan_in + gates)) ** 0.5
        nn.init.uniform_(lstm.weight_ih_l0, -bound, bound)
        nn.init.uniform_(lstm.weight_hh_l0, -bound, bound)
        projection_bound = (6.0 / (cell + lstm.proj_size)) ** 0.5
        nn.init.uniform_(lstm.weight_hr_l0, -projection_bound, projection_bound)
        nn.init.zeros_(lstm.bias_ih_l0)
        nn.init.zeros_(lstm.bias_hh_l0)
        lstm.bias_ih_l0[cell:2 * cell] = self.forget_bias  # PyTorch's gate order is (i, f, g, o)

    @property
    def clipped(self) -> bool:
        return bool(self.cell_clip) or bool(self.proj_clip)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None,
                exact: bool | None = None) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``x`` ``[B, T, in]``, real lengths ``[B]``; returns ``[B, T, proj]`` (zeros past each
        length) and the final ``(h, c)``, each ``[B, ·]``. ``exact`` forces the step loop."""
        if self.reverse:
            x = _reverse_padded(x, lengths)
        if state is None:
            state = (x.new_zeros(x.size(0), self.lstm.proj_size), x.new_zeros(x.size(0), self.lstm.hidden_size))
        run_exact = self.clipped if exact is None else exact
        out, final = (self._steps if run_exact else self._fused)(x, lengths, state)
        return (_reverse_padded(out, lengths) if self.reverse else out), final

    def _fused(self, x, lengths, state):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed, (state[0][None].contiguous(), state[1][None].contiguous()))
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out, (h[0], c[0])

    def _steps(self, x, lengths, state):
        lstm = self.lstm
        h, c = state
        # The input projection of every step at once; only the recurrence is sequential.
        projected = F.linear(x, lstm.weight_ih_l0, lstm.bias_ih_l0)
        outputs = []
        for t in range(x.size(1)):
            gates = projected[:, t] + F.linear(h, lstm.weight_hh_l0, lstm.bias_hh_l0)
            i, f, g, o = gates.chunk(4, dim=-1)
            c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            if self.cell_clip:
                c_new = c_new.clamp(-self.cell_clip, self.cell_clip)
            h_new = F.linear(torch.sigmoid(o) * torch.tanh(c_new), lstm.weight_hr_l0)
            if self.proj_clip:
                h_new = h_new.clamp(-self.proj_clip, self.proj_clip)
            # Sequences that have ended keep their state and output zeros, as packing does.
            active = (t < lengths).unsqueeze(-1)
            h, c = torch.where(active, h_new, h), torch.where(active, c_new, c)
            outputs.append(h_new * active)
        return torch.stack(outputs, dim=1), (h, c)


def _reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence within its own length; padding stays at the end."""
    positions = torch.arange(x.size(1), device=x.device)[None]
    index = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
    return x.gather(1, index.unsqueeze(-1).expand_as(x))


@dataclass
class BiLMOutput:
    """``layers``: L+1 tensors ``[B, T+2, 2·proj]`` with sentence boundaries, layer 0 the token
    layer doubled; ``mask`` ``[B, T+2]``; ``state``: per direction and layer the final ``(h, c)``."""

    layers: list[torch.Tensor]
    mask: torch.Tensor
    state: dict[str, list[tuple[torch.Tensor, torch.Tensor]]]


class BiLM(nn.Module):
    """The bidirectional language model of eqs 2.1–2.3: a shared token layer, two separate
    LSTM stacks, and (when ``vocab_size`` > 0) a softmax over words shared by both directions."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.config = config
        self.token_layer = CharCNN(config)

        def stack(reverse: bool) -> nn.ModuleList:
            return nn.ModuleList(
                ProjectedLSTM(config.projection_dim, config.cell_size, config.projection_dim,
                              config.cell_clip, config.proj_clip, reverse)
                for _ in range(config.n_layers)
            )

        self.forward_layers = stack(reverse=False)
        self.backward_layers = stack(reverse=True)
        self.softmax = nn.Linear(config.projection_dim, config.vocab_size) if config.vocab_size else None
        if self.softmax is not None:  # bilm-tf: N(0, 1/projection_dim), zero bias
            nn.init.normal_(self.softmax.weight, std=config.projection_dim ** -0.5)
            nn.init.zeros_(self.softmax.bias)

    def forward(self, char_ids: torch.Tensor, *, state: dict | None = None, exact: bool | None = None) -> BiLMOutput:
        """Run both directions over ``[B, T, 50]`` character ids (boundaries are added here).
        ``state`` (a previous output's ``state``) continues from where another batch ended,
        as bilm-tf's stateful LSTMs do between consecutive batches."""
        check_index_tensor("char_ids", char_ids, ndim=3)
        if char_ids.size(-1) != MAX_CHARACTERS or char_ids.size(0) == 0:
            raise ValueError(f"char_ids must have shape [B >= 1, T, {MAX_CHARACTERS}], got {tuple(char_ids.shape)}")
        if int(char_ids.max()) >= self.config.n_characters or int(char_ids.min()) < 0:
            raise ValueError(f"char_ids must lie in [0, n_characters={self.config.n_characters}), "
                             f"got values in [{int(char_ids.min())}, {int(char_ids.max())}]")
        ids, mask = add_sentence_boundaries(char_ids)
        lengths = mask.sum(-1)
        tokens = self.token_layer(ids) * mask.unsqueeze(-1)
        layers = [torch.cat([tokens, tokens], dim=-1)]
        final: dict[str, list] = {"forward": [], "backward": []}
        inputs = {"forward": tokens, "backward": tokens}
        for j in range(self.config.n_layers):
            outputs = {}
            for direction, stack in (("forward", self.forward_layers), ("backward", self.backward_layers)):
                previous = None if state is None else state[direction][j]
                out, final_state = stack[j](inputs[direction], lengths, previous, exact)
                if j > 0 and self.config.use_skip_connections:
                    out = out + inputs[direction]  # the residual connection of layer 2
                outputs[direction] = out
                final[direction].append(final_state)
            layers.append(torch.cat([outputs["forward"], outputs["backward"]], dim=-1))
            inputs = outputs
        return BiLMOutput(layers, mask, final)

    def representation_parameters(self) -> int:
        """Parameters as bilm-tf counts them (the 93.6M of the released ELMo): without the LM
        softmax, and with one bias per LSTM layer, where PyTorch keeps two (b_ih and b_hh)
        whose sum is all that matters."""
        softmax = sum(p.numel() for p in self.softmax.parameters()) if self.softmax is not None else 0
        redundant = sum(layer.lstm.bias_ih_l0.numel() for stack in (self.forward_layers, self.backward_layers)
                        for layer in stack)
        return sum(p.numel() for p in self.parameters()) - softmax - redundant

    def lm_loss(self, char_ids: torch.Tensor, word_ids: torch.Tensor, bos_id: int, eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The negative of eq 2.3's log-likelihood, per direction and averaged over tokens:
        the forward LM predicts each next word from ``h→`` (eq 2.1), the backward LM each
        previous word from ``h←`` (eq 2.2), through the one shared softmax.

        ``word_ids`` ``[B, T]`` are the sentence's words in the softmax vocabulary, ``IGNORE_INDEX`` at
        padding; ``bos_id``/``eos_id`` are the vocabulary's <S> and </S>.
        Returns ``(forward_nll, backward_nll)``; their exponentials are the perplexities.
        """
        if self.softmax is None:
            raise ValueError("this BiLM has no softmax (vocab_size=0): it cannot compute an LM loss")
        # Checked before the model runs. An id outside the softmax would fail deep in the cross-
        # entropy, or, as IGNORE_INDEX, silently drop every </S> (or <S>) from the loss.
        vocab = self.softmax.out_features
        check_index_tensor("char_ids", char_ids, ndim=3)
        check_index_tensor("word_ids", word_ids, ndim=2)
        if word_ids.shape != char_ids.shape[:2]:
            raise ValueError(f"word_ids must have shape {tuple(char_ids.shape[:2])}, got {tuple(word_ids.shape)}")
        check_id("bos_id", bos_id, vocab, "vocab_size")
        check_id("eos_id", eos_id, vocab, "vocab_size")
        # The sentence lengths come from the characters; the word ids must agree with them.
        words = (char_ids > 0).any(-1)
        if not torch.equal(word_ids != IGNORE_INDEX, words):
            raise ValueError(f"word_ids must be {IGNORE_INDEX} exactly where char_ids is padding (all-zero characters)")
        check_values_below("word_ids (at real words)", word_ids[words], vocab, "vocab_size")
        out = self.forward(char_ids)
        top = out.layers[-1]
        p = self.config.projection_dim
        batch, length = word_ids.shape
        lengths = words.sum(-1)
        # Targets over the T+2 positions: forward at t predicts position t+1, backward t-1.
        padded = word_ids.new_full((batch, length + 2), IGNORE_INDEX)
        padded[:, 1:-1] = word_ids
        padded[:, 0] = bos_id
        padded[torch.arange(batch, device=word_ids.device), lengths + 1] = eos_id
        forward_targets = padded[:, 1:]
        # The backward LM reads from a position only if that position is real, not padding.
        backward_targets = padded[:, :-1].masked_fill(~out.mask[:, 1:], IGNORE_INDEX)
        # The softmax runs only where there is a word to predict: padding costs nothing.
        forward_rows, backward_rows = forward_targets != IGNORE_INDEX, backward_targets != IGNORE_INDEX
        forward_nll = F.cross_entropy(self.softmax(top[:, :-1, :p][forward_rows]), forward_targets[forward_rows])
        backward_nll = F.cross_entropy(self.softmax(top[:, 1:, p:][backward_rows]), backward_targets[backward_rows])
        return forward_nll, backward_nll


@dataclass
class ElmoOutput:
    """``layers``: L+1 tensors ``[B, T, 2·proj]``, sentence boundaries removed, layer 0 the token
    layer; ``mask`` ``[B, T]``. ``concatenated()`` is eq 2.4's stack of every layer."""

    layers: list[torch.Tensor]
    mask: torch.Tensor

    def concatenated(self) -> torch.Tensor:
        """Eq 2.4 (with the token layer): ``[h_{t,0}; h_{t,1}; ...; h_{t,L}]``."""
        return torch.cat(self.layers, dim=-1)


class Elmo(nn.Module):
    """ELMo's representations: the biLM's L+1 layers for each word, boundaries removed."""

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.bilm = BiLM(config)

    @property
    def config(self) -> ElmoConfig:
        return self.bilm.config

    def forward(self, char_ids: torch.Tensor, *, exact: bool | None = None) -> ElmoOutput:
        out = self.bilm(char_ids, exact=exact)
        layers, mask = [], None
        for layer in out.layers:
            stripped, mask = remove_sentence_boundaries(layer, out.mask)
            layers.append(stripped)
        return ElmoOutput(layers, mask)

    @classmethod
    def from_allennlp(cls, options_file: str | Path, weight_file: str | Path) -> Self:
        """Load bilm-tf / AllenNLP ELMo files: ``options.json`` and the hdf5 weights. A file that
        cannot be read, or does not match the other, is an error naming it."""
        import h5py

        options_file = as_path("options_file", options_file)
        if not options_file.is_file():
            raise FileNotFoundError(f"options_file={str(options_file)!r} does not exist (or is not a file): "
                                    "give bilm-tf's options.json")
        # Read as text, the hdf5 would fail as "not UTF-8", which says nothing of the real mistake.
        if h5py.is_hdf5(options_file):
            raise ValueError(f"{options_file}: options_file is an HDF5 file, not bilm-tf's options.json; "
                             "did you swap options_file and weight_file?")
        try:
            config = ElmoConfig.from_options(json.loads(read_text(options_file)))
        except json.JSONDecodeError as error:
            raise ValueError(f"{options_file}: not valid JSON ({error})") from None
        except (TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"{options_file}: {error}") from None
        model = cls(config)
        load_bilm_tf_weights(model.bilm, weight_file)
        return model.eval()


@torch.no_grad()
def load_bilm_tf_weights(bilm: BiLM, weight_file: str | Path) -> None:
    """Copy bilm-tf's hdf5 tensors into ``bilm``, translating TensorFlow's conventions:
    ``x W`` weights are transposed; the LSTM's gate blocks come as (i, g, f, o) where PyTorch
    wants (i, f, g, o); TensorFlow adds 1 to the forget-gate bias at run time, here it is
    folded into the bias; the char table gets the padding row 0 in front.

    The file is compared with ``bilm`` first, layer counts and every shape, and an error names
    what differs; only a file that fits is copied, so a mismatch leaves ``bilm`` as it was."""
    if not isinstance(bilm, BiLM):
        raise TypeError(f"bilm must be a BiLM, got {type(bilm).__name__}")
    weight_file = as_path("weight_file", weight_file)
    with _open_weight_file(weight_file) as h5:
        _check_bilm_tf_file(bilm, h5, weight_file)
        _copy_bilm_tf_tensors(bilm, h5)


def _open_weight_file(weight_file: Path):
    """``weight_file`` opened for reading, or an error saying what the file is instead."""
    import h5py

    if not weight_file.is_file():
        raise FileNotFoundError(f"weight_file={str(weight_file)!r} does not exist (or is not a file): "
                                "give bilm-tf's hdf5 weight file")
    unreadable = f"{weight_file}: cannot be read as an HDF5 weight file"
    if weight_file.stat().st_size == 0:
        raise ValueError(f"{unreadable}: it is empty (0 bytes); weight_file must be bilm-tf's hdf5 weights")
    if not h5py.is_hdf5(weight_file):
        with open(weight_file, "rb") as file:
            looks_like_json = file.read(4096).lstrip().startswith(b"{")
        hint = "it is JSON text; did you pass the options file as weight_file?" if looks_like_json else \
            "it is not an HDF5 file (no HDF5 signature); weight_file must be bilm-tf's hdf5 weights"
        raise ValueError(f"{unreadable}: {hint}")
    try:
        return h5py.File(weight_file, "r")
    except OSError as error:
        raise ValueError(f"{unreadable} ({error})") from None


def _cell_path(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def _bilm_tf_shapes(bilm: BiLM) -> dict[str, tuple[int, ...]]:
    """The shape of every dataset ``_copy_bilm_tf_tensors`` reads into ``bilm``, by hdf5 path, in
    TensorFlow's layout: what the file must hold, known before a byte of it is read."""
    cnn = bilm.token_layer
    shapes = {"char_embed": (cnn.char_embedding.num_embeddings - 1, cnn.char_embedding.embedding_dim)}
    for i, conv in enumerate(cnn.convolutions):
        out_channels, in_channels, width = conv.weight.shape
        shapes[f"CNN/W_cnn_{i}"] = (1, width, in_channels, out_channels)
        shapes[f"CNN/b_cnn_{i}"] = (out_channels,)
    linears = [(f"CNN_high_{k}/{{}}_carry", gate) for k, gate in enumerate(cnn.highway.gate)]
    linears += [(f"CNN_high_{k}/{{}}_transform", transform) for k, transform in enumerate(cnn.highway.transform)]
    linears.append(("CNN_proj/{}_proj", cnn.projection))
    for name, linear in linears:  # x W + b: W is the transposed weight
        shapes[name.format("W")] = (linear.in_features, linear.out_features)
        shapes[name.format("b")] = (linear.out_features,)
    for direction, stack in enumerate((bilm.forward_layers, bilm.backward_layers)):
        for j, layer in enumerate(stack):
            lstm, cell = layer.lstm, _cell_path(direction, j)
            shapes[f"{cell}/W_0"] = (lstm.input_size + lstm.proj_size, 4 * lstm.hidden_size)  # [x; h] → 4 gates
            shapes[f"{cell}/B"] = (4 * lstm.hidden_size,)
            shapes[f"{cell}/W_P_0"] = (lstm.hidden_size, lstm.proj_size)
    return shapes


def _few(names: Sequence[str]) -> str:
    """A few of ``names`` and how many there are, for an error message."""
    return f"{len(names)} tensor(s), e.g. {list(names[:3])}"


def _check_bilm_tf_file(bilm: BiLM, h5, weight_file: Path) -> None:
    """Raise unless ``h5`` holds exactly the layers of ``bilm`` at its shapes. Layer counts are
    compared first: with fewer highway or LSTM layers (or filters) in the options than in the
    file, every tensor read would fit and part of the file would load without a word."""
    import h5py

    found: dict[str, tuple[int, ...]] = {}
    h5.visititems(lambda name, item: found.__setitem__(name, item.shape) if isinstance(item, h5py.Dataset) else None)
    shapes = _bilm_tf_shapes(bilm)
    if not found.keys() & shapes.keys():
        raise ValueError(f"{weight_file}: lacks a tensor bilm-tf writes (none of {list(shapes)[:3]} ...; it holds "
                         f"{_few(sorted(found))}); is it an ELMo weight file?")
    config = bilm.config

    def held(pattern: str) -> int:
        return len({match[1] for name in found if (match := re.fullmatch(pattern, name))})

    # (what the options declare, its count, what the file holds, its count)
    counts = [(f"char_cnn.filters lists {len(config.filters)} convolutions", len(config.filters),
               "the file holds {} (CNN/W_cnn_i)", held(r"CNN/W_cnn_(\d+)")),
              (f"char_cnn.n_highway={config.n_highway}", config.n_highway,
               "the file holds {} highway layers (CNN_high_k)", held(r"CNN_high_(\d+)/.*"))]
    counts += [(f"lstm.n_layers={config.n_layers}", config.n_layers,
                f"the file holds {{}} LSTM layers (RNN_{direction}/RNN/MultiRNNCell/Cellj)",
                held(rf"RNN_{direction}/RNN/MultiRNNCell/Cell(\d+)/.*")) for direction in (0, 1)]
    for declared, count, holds, found_count in counts:
        if count != found_count:
            raise ValueError(f"{weight_file}: the options declare {declared}, but {holds.format(found_count)}: "
                             "the options and the weights do not belong together")
    missing = sorted(shapes.keys() - found.keys())
    if missing:
        raise ValueError(f"{weight_file}: lacks a tensor bilm-tf writes, {_few(missing)}; is it an ELMo weight file?")
    wrong = [name for name in shapes if found[name] != shapes[name]]
    if wrong:
        raise ValueError(f"{weight_file}: a tensor's shape does not match the options: {wrong[0]} is "
                         f"{found[wrong[0]]} in the file, the options make it {shapes[wrong[0]]}; "
                         f"{len(wrong)} tensor(s) differ")


def _copy_bilm_tf_tensors(bilm: BiLM, h5) -> None:
    config = bilm.config

    def tensor(array) -> torch.Tensor:
        return torch.from_numpy(array[...]).float()

    cnn = bilm.token_layer
    cnn.char_embedding.weight[1:] = tensor(h5["char_embed"])
    cnn.char_embedding.weight[0] = 0
    for i, conv in enumerate(cnn.convolutions):
        conv.weight.copy_(tensor(h5["CNN"][f"W_cnn_{i}"])[0].permute(2, 1, 0))  # [1, w, in, out] → [out, in, w]
        conv.bias.copy_(tensor(h5["CNN"][f"b_cnn_{i}"]))
    for k in range(config.n_highway):
        group = h5[f"CNN_high_{k}"]
        # bilm-tf names the transform gate "carry": t = σ(x W_carry + b_carry).
        cnn.highway.gate[k].weight.copy_(tensor(group["W_carry"]).T)
        cnn.highway.gate[k].bias.copy_(tensor(group["b_carry"]))
        cnn.highway.transform[k].weight.copy_(tensor(group["W_transform"]).T)
        cnn.highway.transform[k].bias.copy_(tensor(group["b_transform"]))
    cnn.projection.weight.copy_(tensor(h5["CNN_proj"]["W_proj"]).T)
    cnn.projection.bias.copy_(tensor(h5["CNN_proj"]["b_proj"]))
    for direction, stack in enumerate((bilm.forward_layers, bilm.backward_layers)):
        for j, layer in enumerate(stack):
            cell = h5[_cell_path(direction, j)]
            n = config.cell_size
            order = torch.cat([torch.arange(0, n), torch.arange(2 * n, 3 * n),
                               torch.arange(n, 2 * n), torch.arange(3 * n, 4 * n)])
            weight = tensor(cell["W_0"]).T[order]  # [4n, input + proj]
            bias = tensor(cell["B"])
            bias[2 * n:3 * n] += FORGET_BIAS  # TensorFlow's forget_bias, in TF's (i, g, f, o) layout
            lstm = layer.lstm
            lstm.weight_ih_l0.copy_(weight[:, :lstm.input_size])
            lstm.weight_hh_l0.copy_(weight[:, lstm.input_size:])
            lstm.bias_ih_l0.zero_()
            lstm.bias_hh_l0.copy_(bias[order])
            lstm.weight_hr_l0.copy_(tensor(cell["W_P_0"]).T)
