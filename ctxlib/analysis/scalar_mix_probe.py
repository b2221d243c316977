"""Learning ScalarMix's layer weights s_j on frozen layers (eq 2.5): which layers a task draws on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import check_positive_int
from ctxlib.layers.scalar_mix import ScalarMix
from ctxlib.training.loop import TrainConfig, fit, seeded


@dataclass
class MixTrajectory:
    """How a ScalarMix learned: ``weights[i]`` is ``softmax(w)`` and ``gamma[i]`` is γ before
    step i (the last row after training); ``accuracy`` is held-out, of the mix + linear head,
    after training, and ``accuracy_curve[k]`` the same before step ``accuracy_steps[k]``."""

    layer_names: tuple[str, ...]
    weights: np.ndarray
    gamma: np.ndarray
    accuracy: float
    accuracy_steps: np.ndarray
    accuracy_curve: np.ndarray


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
    learned ``s`` says which layers the task draws on. Every ``every`` steps the held-out
    accuracy is measured (``accuracy_curve``) and ``on_step(step, trajectory_so_far)`` is called
    (a widget redraws there).
    """

    check_positive_int("every", every)
    classes = sorted(set(train_labels))
    index = {label: i for i, label in enumerate(classes)}
    y_train = torch.tensor([index[label] for label in train_labels])
    unknown = set(test_labels) - set(classes)
    if unknown:
        raise ValueError(f"test_labels has labels the training set never shows: {sorted(unknown)[:5]}")
    y_test = torch.tensor([index[label] for label in test_labels])
    with seeded(seed):
        model = MixClassifier(train_layers.shape[0], train_layers.shape[-1], len(classes))
    generator = torch.Generator().manual_seed(seed)
    weights, gammas, measured_steps, measured = [], [], [], []

    def held_out_accuracy(net: MixClassifier) -> float:
        with torch.no_grad():
            return float((net(test_layers).argmax(-1) == y_test).float().mean())

    def snapshot(accuracy: float = float("nan")) -> MixTrajectory:
        return MixTrajectory(tuple(layer_names), np.array(weights), np.array(gammas), accuracy,
                             np.array(measured_steps, dtype=int), np.array(measured))

    def batches():
        while True:
            chosen = torch.randint(train_layers.shape[1], (batch_size,), generator=generator)
            yield train_layers[:, chosen], y_train[chosen]

    def loss_fn(net: MixClassifier, batch) -> torch.Tensor:
        weights.append(net.mix.weights().detach().numpy().copy())
        gammas.append(float(net.mix.gamma.detach()))
        if (len(weights) - 1) % every == 0:
            measured_steps.append(len(weights) - 1)
            measured.append(held_out_accuracy(net))
            if on_step is not None:
                on_step(len(weights) - 1, snapshot())
        layers, labels = batch
        return F.cross_entropy(net(layers), labels)

    fit(model, batches(), loss_fn, TrainConfig(steps=steps, lr=lr, weight_decay=0.0, warmup_fraction=0.0,
                                               progress=False, seed=seed))
    weights.append(model.mix.weights().detach().numpy().copy())
    gammas.append(float(model.mix.gamma.detach()))
    accuracy = held_out_accuracy(model)
    if measured_steps[-1] != steps:
        measured_steps.append(steps)
        measured.append(accuracy)
    return snapshot(accuracy)

