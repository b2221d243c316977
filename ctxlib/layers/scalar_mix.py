"""ScalarMix: a learned weighted sum of a model's layers (eq 2.5, corrected by the errata).

    v_t = γ Σ_{j=0}^{L} s_j h_{t,j},   s = softmax(w)

Layer j = 0 is ELMo's context-independent token layer, so a 2-layer biLM mixes three layers,
not two as the notes' eq 2.5 writes. ``w`` and ``γ`` are the only trained parameters; they let
a downstream task pick the layers it needs (Peters et al. 2018, §3.2). The same module mixes
BERT's hidden states in the feature-based chapters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ctxlib._checks import as_bool_mask, check_bool, check_positive_int, check_real


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
        for i, weight in enumerate(initial_weights):
            check_real(f"initial_weights[{i}]", weight)
        self.layer_norm = check_bool("layer_norm", layer_norm)
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
        if not all(isinstance(layer, torch.Tensor) and layer.is_floating_point() for layer in layers):
            raise TypeError("layers must be floating-point tensors, got "
                            f"{sorted({type(layer).__name__ for layer in layers})}")
        shapes = {tuple(layer.shape) for layer in layers}
        if len(shapes) != 1:
            raise ValueError(f"layers must all have one shape, got {sorted(shapes)}")
        if self.layer_norm:
            if mask is None:
                raise ValueError("mask is required when layer_norm=True: padding must not enter the statistics")
            mask = as_bool_mask("mask", mask, layers[0].shape[:-1])
            layers = [_masked_layer_norm(layer, mask) for layer in layers]
        elif mask is not None:
            # Without layer norm nothing reads the mask: a caller who passes one expects padding
            # handled, and would get the padded positions mixed like the rest.
            raise ValueError("mask is read only with layer_norm=True (it keeps padding out of the layer-norm "
                             "statistics); without layer norm the mix is per position: pass mask=None")
        weights = self.weights()
        return self.gamma * sum(weight * layer for weight, layer in zip(weights, layers))


def _masked_layer_norm(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    keep = mask.to(tensor.dtype).unsqueeze(-1)
    count = keep.sum() * tensor.size(-1)
    mean = (tensor * keep).sum() / count
    variance = (((tensor - mean) * keep) ** 2).sum() / count
    return (tensor - mean) / torch.sqrt(variance + 1e-12)


