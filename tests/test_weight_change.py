import copy

import pytest
import torch
from torch import nn

from ctxlib.analysis.weight_change import relative_change


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 2))


def test_scaling_every_matrix_by_one_plus_c_gives_c():
    before = _model()
    after = copy.deepcopy(before)
    with torch.no_grad():
        for name, p in after.named_parameters():
            if p.dim() == 2:
                p.mul_(1.25)
    # The embedding is 2-D too; skip nothing, and every compared matrix moved by a quarter of itself.
    assert relative_change(after, before, skip="no such name") == pytest.approx(0.25)
    assert relative_change(before, before) == 0.0


def test_skipped_and_one_dimensional_weights_do_not_count():
    before = _model()
    after = copy.deepcopy(before)
    with torch.no_grad():
        after[0].weight.add_(100.0)  # the embedding, skipped by name
        after[1].bias.add_(100.0)    # a bias: 1-D
        after[2].weight.add_(100.0)  # a LayerNorm gain: 1-D
    assert relative_change(after, before, skip="0.weight") == 0.0


def test_a_single_changed_matrix_by_hand():
    before = _model()
    after = copy.deepcopy(before)
    with torch.no_grad():
        after[3].weight.zero_()
    matrices = [before[1].weight.detach(), before[3].weight.detach()]
    expected = matrices[1].norm() / torch.cat([m.flatten() for m in matrices]).norm()
    assert relative_change(after, before, skip="0.weight") == pytest.approx(float(expected))


def test_bad_inputs_are_named():
    before = _model()
    with pytest.raises(TypeError, match="after must be a torch.nn.Module"):
        relative_change(before.state_dict(), before)
    with pytest.raises(ValueError, match="same architecture"):
        relative_change(nn.Linear(4, 3), before, skip="no such name")
    with pytest.raises(ValueError, match="no 2-D weights"):
        relative_change(nn.LayerNorm(3), nn.LayerNorm(3))
    zero = nn.Linear(2, 2)
    nn.init.zeros_(zero.weight)
    with pytest.raises(ValueError, match="all zero"):
        relative_change(zero, zero)
