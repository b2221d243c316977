"""ScalarMix: a learned weighted sum of a model's layers (eq 2.5, corrected by the errata).

    v_t = γ Σ_{j=0}^{L} s_j h_{t,j},   s = softmax(w)

Layer j = 0 is ELMo's context-independent token layer, so a 2-layer biLM mixes three layers,
not two as the notes' eq 2.5 writes. ``w`` and ``γ`` are the only trained parameters; they let
a downstream task pick the layers it needs (Peters et al. 2018, §3.2). The same module mixes
BERT's hidden states in the feature-based chapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import check_positive_int


class ScalarMix(nn.Module):
    """Eq 2.5: ``γ Σ_j softmax(w)_j h_j`` over ``num_layers`` tensors of one shape.

    With ``layer_norm=True`` each layer is first normalised over all its unmasked elements
    (one mean and variance per layer and batch, as in AllenNLP), which Peters et al. found
    helps when the layers' scales differ.
    """

    def __init__(self, num_layers: int, layer_norm: bool = False, initial_weights: Sequence[float] | None = None) -> None:
        super().__init__()
        self.num_layers = check_positive_int("num_layers", num_layers)
        if initial_weights is None:
            initial_weights = [0.0] * num_layers
        if len(initial_weights) != num_layers:
            raise ValueError(f"initial_weights must have num_layers={num_layers} entries, got {len(initial_weights)}")
        self.layer_norm = layer_norm
        self.scalar_parameters = nn.Parameter(torch.tensor(list(initial_weights), dtype=torch.float32))
        self.gamma = nn.Parameter(torch.tensor(1.0))

    def weights(self) -> torch.Tensor:
        """``s = softmax(w)``: the normalised layer weights of eq 2.5."""
        return self.scalar_parameters.softmax(dim=0)

    def forward(self, layers: Sequence[torch.Tensor], mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mix ``layers`` (each ``[B, T, H]``); ``mask`` ``[B, T]`` is needed with layer norm."""
        if len(layers) != self.num_layers:
            raise ValueError(f"layers must hold num_layers={self.num_layers} tensors, got {len(layers)}: "
                             "an L-layer ELMo has L + 1 layers, the token layer included")
        shapes = {tuple(layer.shape) for layer in layers}
        if len(shapes) != 1:
            raise ValueError(f"layers must all have one shape, got {sorted(shapes)}")
        if self.layer_norm:
            if mask is None:
                raise ValueError("mask is required when layer_norm=True: padding must not enter the statistics")
            layers = [_masked_layer_norm(layer, mask) for layer in layers]
        weights = self.weights()
        return self.gamma * sum(weight * layer for weight, layer in zip(weights, layers))


def _masked_layer_norm(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    keep = mask.to(tensor.dtype).unsqueeze(-1)
    count = keep.sum() * tensor.size(-1)
    mean = (tensor * keep).sum() / count
    variance = (((tensor - mean) * keep) ** 2).sum() / count
    return (tensor - mean) / torch.sqrt(variance + 1e-12)


@dataclass
class MixTrajectory:
    """How a ScalarMix learned: ``weights[i]`` is ``softmax(w)`` and ``gamma[i]`` is γ before
    step i (the last row after training); ``accuracy`` is held-out, of the mix + linear head."""

    layer_names: tuple[str, ...]
    weights: np.ndarray
    gamma: np.ndarray
    accuracy: float


class MixClassifier(nn.Module):
    """Eq 2.5's ``v_t`` fed to a linear classifier: the smallest downstream task model."""

    def __init__(self, num_layers: int, dim: int, num_classes: int) -> None:
        super().__init__()
        self.mix = ScalarMix(num_layers)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(list(layers)))


def fit_scalar_mix(
    train_layers: torch.Tensor, train_labels: Sequence[object],
    test_layers: torch.Tensor, test_labels: Sequence[object],
    layer_names: Sequence[str], steps: int = 300, lr: float = 0.02, batch_size: int = 256, seed: int = 0,
    on_step: Callable[[int, MixTrajectory], None] | None = None, every: int = 25,
) -> MixTrajectory:
    """Train ``s = softmax(w)``, γ and a linear head on frozen ``[L+1, N, H]`` layers.

    The layers' vectors never change; only L + 3 numbers per class and the head do, so the
    learned ``s`` says which layers the task draws on. ``on_step(step, trajectory_so_far)`` is
    called every ``every`` steps (a widget redraws there).
    """
    from ctxlib.train import TrainConfig, fit

    classes = sorted(set(train_labels))
    index = {label: i for i, label in enumerate(classes)}
    y_train = torch.tensor([index[label] for label in train_labels])
    unknown = set(test_labels) - set(classes)
    if unknown:
        raise ValueError(f"test_labels has labels the training set never shows: {sorted(unknown)[:5]}")
    y_test = torch.tensor([index[label] for label in test_labels])
    torch.manual_seed(seed)
    model = MixClassifier(train_layers.shape[0], train_layers.shape[-1], len(classes))
    generator = torch.Generator().manual_seed(seed)
    weights, gammas = [], []

    def snapshot() -> MixTrajectory:
        return MixTrajectory(tuple(layer_names), np.array(weights), np.array(gammas), float("nan"))

    def batches():
        while True:
            chosen = torch.randint(train_layers.shape[1], (batch_size,), generator=generator)
            yield train_layers[:, chosen], y_train[chosen]

    def loss_fn(net: MixClassifier, batch) -> torch.Tensor:
        weights.append(net.mix.weights().detach().numpy().copy())
        gammas.append(float(net.mix.gamma.detach()))
        if on_step is not None and (len(weights) - 1) % every == 0:
            on_step(len(weights) - 1, snapshot())
        layers, labels = batch
        return F.cross_entropy(net(layers), labels)

    fit(model, batches(), loss_fn, TrainConfig(steps=steps, lr=lr, weight_decay=0.0, warmup_fraction=0.0,
                                               progress=False, seed=seed))
    weights.append(model.mix.weights().detach().numpy().copy())
    gammas.append(float(model.mix.gamma.detach()))
    with torch.no_grad():
        accuracy = float((model(test_layers).argmax(-1) == y_test).float().mean())
    return MixTrajectory(tuple(layer_names), np.array(weights), np.array(gammas), accuracy)
