"""Position information for attention (notes §4.4): sinusoidal, rotary (RoPE) and ALiBi.

Self-attention by itself is blind to order: permuting the tokens permutes its outputs. BERT adds
a learned vector per position (``BertEmbeddings.position_embeddings``, 512 rows: past them there
is nothing to look up, and ctxlib raises a clear error). The alternatives here:

* **sinusoidal** (Vaswani et al. 2017, §3.5): fixed vectors, defined for any position;
* **RoPE** (Su et al. 2021): rotate each pair of query/key coordinates by an angle proportional
  to the position, so that ``q_m · k_n`` depends on ``m - n`` only: relative position, encoded by
  rotation. It does not, by itself, extrapolate well past the trained length (errata, §4.4);
* **ALiBi** (Press et al. 2022): no position vectors at all; each head adds ``-m_h · |i - j|`` to
  its attention scores, a linear penalty on distance, designed to extrapolate.
"""

from __future__ import annotations

import math

import torch

from ctxlib._checks import check_bool, check_positive_int, check_positive_real


def _check_even(name: str, value: int) -> int:
    check_positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (coordinates are used in pairs), got {value}")
    return value


def sinusoidal_positions(length: int, dim: int, base: float = 10000.0,
                         device: torch.device | str | None = None) -> torch.Tensor:
    """``[length, dim]``: ``PE[p, 2i] = sin(p / base^{2i/dim})``, ``PE[p, 2i+1] = cos(...)``."""
    check_positive_int("length", length)
    _check_even("dim", dim)
    angles = (torch.arange(length, dtype=torch.float64, device=device)[:, None]
              * rope_frequencies(dim, base, device)[None, :])
    table = torch.empty(length, dim, dtype=torch.float64, device=device)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table.float()


def rope_frequencies(dim: int, base: float = 10000.0, device: torch.device | str | None = None) -> torch.Tensor:
    """``θ_i = base^{-2i/dim}`` for ``i = 0 .. dim/2 - 1``: one angular speed per coordinate pair."""
    _check_even("dim", dim)
    check_positive_real("base", base)
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotate coordinate pairs ``(x_{2i}, x_{2i+1})`` of ``x`` ``[..., T, d]`` by ``p · θ_i``.

    ``positions`` ``[T]`` defaults to ``0 .. T-1``. Applied to queries and keys, it makes every
    score ``q_m · k_n`` a function of ``m - n`` (a rotation by ``mθ`` then ``nθ`` leaves the angle
    ``(m - n)θ`` between them), and leaves vector norms unchanged.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor [..., T, d], got {type(x).__name__}")
    if x.dim() < 2:
        raise ValueError(f"x must have at least 2 dimensions [..., T, d] (positions, then coordinates), "
                         f"got shape {tuple(x.shape)}")
    length, dim = x.shape[-2], _check_even("x.shape[-1]", x.shape[-1])
    if positions is None:
        positions = torch.arange(length, device=x.device)
    if not isinstance(positions, torch.Tensor) or positions.shape != (length,):
        raise ValueError(f"positions must be a tensor of shape ({length},) to match x's T, "
                         f"got {tuple(getattr(positions, 'shape', ())) or type(positions).__name__}")
    angles = positions.to(x.device, torch.float64)[:, None] * rope_frequencies(dim, base, x.device)[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.empty_like(x)
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def alibi_slopes(num_heads: int, device: torch.device | str | None = None) -> torch.Tensor:
    """ALiBi's head slopes ``m_h``: the geometric sequence ``2^{-8/n}, 2^{-16/n}, ...`` for
    ``n`` heads a power of 2; otherwise the slopes of the next lower power of 2 followed by every
    other slope of the next higher one (Press et al.'s rule)."""
    check_positive_int("num_heads", num_heads)

    def geometric(n: int) -> list[float]:
        start = 2 ** (-8 / n)
        return [start ** (h + 1) for h in range(n)]

    lower = 2 ** math.floor(math.log2(num_heads))
    slopes = geometric(lower)
    if lower < num_heads:
        slopes += geometric(2 * lower)[0::2][: num_heads - lower]
    return torch.tensor(slopes, device=device)


def alibi_bias(num_heads: int, length: int, causal: bool = False,
               device: torch.device | str | None = None) -> torch.Tensor:
    """``[num_heads, length, length]`` additive score bias ``-m_h · |i - j|`` (query i, key j).

    Press et al. define ALiBi for causal language models, where only ``j ≤ i`` is attended;
    with ``causal=True`` the future is masked with ``-inf``. The bidirectional form, for an
    encoder, penalises distance in both directions.
    """
    check_positive_int("length", length)
    check_bool("causal", causal)
    position = torch.arange(length, device=device)
    distance = (position[:, None] - position[None, :]).abs().float()
    bias = -alibi_slopes(num_heads, device)[:, None, None] * distance
    if causal:
        bias = bias.masked_fill(position[None, :] > position[:, None], float("-inf"))
    return bias
