"""Scaled dot-product and multi-head self-attention (notes §4.1–4.2).

Two paths compute the same function. The explicit path spells out eqs 4.2–4.3 and returns the
attention probabilities, which the book plots and bertviz draws. The fast path hands the whole
computation to ``torch.nn.functional.scaled_dot_product_attention``, which fuses it and never
materialises the probabilities; it is taken whenever nobody asked for them.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import check_bool
from ctxlib.layers.positions import apply_rope


def padding_bias(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Turn a ``[B, T]`` 0/1 key mask into an additive ``[B, 1, 1, T]`` score bias.

    Masked keys get the most negative finite value rather than ``-inf`` so that softmax stays
    finite in every dtype; ``exp`` of it underflows to exactly 0.
    """
    keep = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - keep) * torch.finfo(dtype).min


def causal_bias(length: int, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> torch.Tensor:
    """``[1, 1, T, T]`` score bias that hides every key after the query (left-to-right models)."""
    future = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(length, length, dtype=dtype, device=device).masked_fill(future, torch.finfo(dtype).min)[None, None]


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    bias: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention with its probabilities: eq 4.2 ``A = softmax(QKᵀ/√d_k)`` and eq 4.3 ``O = AV``.

    Shapes are ``[..., T, d_k]`` for ``q``/``k`` and ``[..., T, d_v]`` for ``v``; ``bias`` is
    added to the scores before the softmax (padding, causal or ALiBi biases). Returns ``(O, A)``
    with ``A`` taken after the softmax and before dropout.
    """
    # Dividing by √d_k keeps the scores' variance near 1 whatever d_k is (see Chapter 4).
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if bias is not None:
        scores = scores + bias
    probs = scores.softmax(dim=-1)
    weights = probs if dropout is None else dropout(probs)
    return weights @ v, probs


class MultiHeadSelfAttention(nn.Module):
    """The h attention heads of eq 4.5 and their concatenation, the inside of eq 4.4.

    ``query``, ``key`` and ``value`` hold the h per-head projections of eq 4.1 side by side
    (``W_Q = [W_Q^1 ... W_Q^h]``, each ``d_model × d_k``), so one matmul serves all heads. The
    output projection ``W_O ∈ R^{h·d_v × d_model}`` of eq 4.4 lives in the module that follows,
    as in BERT checkpoints (``attention.output.dense``), so weights load without renaming.
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout_prob: float = 0.0, *, rotary: bool = False) -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(
                f"hidden_size={hidden_size} is not divisible by num_attention_heads={num_heads}: "
                "each head needs d_k = hidden_size / num_attention_heads (eq 4.5)"
            )
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout_prob)
        # RoPE (ctxlib.layers.positions): rotate queries and keys by their positions before scoring.
        # Off in BERT, which adds learned position vectors to its input instead. Fixed here, at
        # construction (BertConfig.position_embedding_type), so it is saved with the model's config.
        self.rotary = check_bool("rotary", rotary)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, T, h·d_k]`` → ``[B, h, T, d_k]``."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        hidden: torch.Tensor,
        bias: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Concat(head_1..head_h) as ``[B, T, h·d_v]``, and the ``[B, h, T, T]`` probabilities
        when ``need_weights`` (otherwise ``None``, and the fused fast path runs)."""
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        if self.rotary:
            q, k = apply_rope(q), apply_rope(k)
        if need_weights:
            context, probs = scaled_dot_product_attention(q, k, v, bias, self.dropout)
        else:
            p = self.dropout.p if self.training else 0.0
            context, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p), None
        batch, _, length, _ = context.shape
        return context.transpose(1, 2).reshape(batch, length, -1), probs
