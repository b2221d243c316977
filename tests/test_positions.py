"""Positions (§4.4): sinusoidal values, RoPE's relative-position property, ALiBi's slopes and bias."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlib.layers.positions import alibi_bias, alibi_slopes, apply_rope, rope_frequencies, sinusoidal_positions


def test_sinusoidal_values_and_shift_by_rotation():
    table = sinusoidal_positions(50, 8)
    for p, i in [(0, 0), (7, 1), (49, 3)]:
        angle = p / 10000 ** (2 * i / 8)
        assert table[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
        assert table[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    # PE[p + k] is a fixed rotation of PE[p] in each pair: relative offsets are linear maps
    k, theta = 5, rope_frequencies(8)
    sin_p, cos_p = table[:-k, 0::2].double(), table[:-k, 1::2].double()
    shifted_sin = sin_p * torch.cos(k * theta) + cos_p * torch.sin(k * theta)
    torch.testing.assert_close(shifted_sin.float(), table[k:, 0::2], atol=1e-5, rtol=0)


def test_rope_scores_depend_only_on_the_offset():
    torch.manual_seed(0)
    q, k = torch.randn(2, 16, dtype=torch.float64), torch.randn(2, 16, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        positions = torch.tensor([m, n])
        rq, rk = apply_rope(q, positions), apply_rope(k, positions)
        return float(rq[0] @ rk[1])

    for m, n in [(0, 3), (10, 4), (100, 97)]:
        for shift in (1, 17, 500):
            assert score(m + shift, n + shift) == pytest.approx(score(m, n), rel=1e-9, abs=1e-9)
    assert score(3, 3) == pytest.approx(float(q[0] @ k[1]), rel=1e-9)  # offset 0: no rotation left
    assert score(0, 3) != pytest.approx(score(0, 4), rel=1e-3)  # and the offset does matter
    x = torch.randn(3, 4, 20, 16)
    torch.testing.assert_close(apply_rope(x).norm(dim=-1), x.norm(dim=-1))  # a rotation keeps norms


def test_alibi_slopes_follow_press_et_al():
    assert alibi_slopes(8).tolist() == pytest.approx([2.0 ** -h for h in range(1, 9)])
    # 12 heads: the 8-head slopes, then every other slope of the 16-head sequence
    expected = [2.0 ** -h for h in range(1, 9)] + [2.0 ** -(h / 2) for h in (1, 3, 5, 7)]
    assert alibi_slopes(12).tolist() == pytest.approx(expected)


def test_alibi_bias_penalises_distance_linearly():
    bias = alibi_bias(4, 6)
    slopes = alibi_slopes(4)
    assert bias.shape == (4, 6, 6)
    assert bias[2, 1, 4] == pytest.approx(-3 * float(slopes[2])) and torch.equal(bias, bias.transpose(1, 2))
    assert (bias.diagonal(dim1=1, dim2=2) == 0).all()
    causal = alibi_bias(4, 6, causal=True)
    assert torch.isinf(causal[:, 0, 1:]).all() and torch.equal(causal[:, 3, :4], bias[:, 3, :4])


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="dim must be even .* got 7"):
        sinusoidal_positions(4, 7)
    with pytest.raises(ValueError, match=r"positions must be a tensor of shape \(5,\) to match x's T, got \(4,\)"):
        apply_rope(torch.randn(5, 8), torch.arange(4))
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        apply_rope(torch.ones(5, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        alibi_slopes(0)
