"""A linear-chain conditional random field over tag sequences (notes §5.2: BERT + CRF for NER).

For emissions ``E`` ``[T, C]`` (a score per position and tag, from the encoder) and a tag path
``y``, the score is ``s(y) = start[y_1] + Σ_t E[t, y_t] + Σ_{t>1} A[y_{t-1}, y_t] + end[y_T]``
and ``P(y | x) = exp s(y) / Z``. ``log Z`` sums over all C^T paths with the forward algorithm in
O(T·C²); Viterbi finds the best path with the same recursion, max instead of log-sum-exp. The
transitions A let the model learn that I-PER never follows B-LOC, which a per-token softmax
cannot express.
"""

from __future__ import annotations

import torch
from torch import nn

from ctxlib._checks import as_bool_mask, check_finite, check_index_tensor, check_positive_int


class LinearChainCRF(nn.Module):
    """Transition scores ``A[i, j]`` (tag i then tag j), start and end scores; batches are
    ``[B, T, C]`` emissions with a ``[B, T]`` mask whose ones form a prefix of each row."""

    def __init__(self, num_tags: int) -> None:
        super().__init__()
        self.num_tags = check_positive_int("num_tags", num_tags)
        self.transitions = nn.Parameter(torch.zeros(num_tags, num_tags))
        self.start = nn.Parameter(torch.zeros(num_tags))
        self.end = nn.Parameter(torch.zeros(num_tags))

    def _check(self, emissions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if not isinstance(emissions, torch.Tensor) or emissions.dim() != 3 or emissions.shape[-1] != self.num_tags \
                or 0 in emissions.shape[:2]:
            raise ValueError(f"emissions must be a tensor of shape [B >= 1, T >= 1, num_tags={self.num_tags}], got "
                             f"{tuple(getattr(emissions, 'shape', ())) or type(emissions).__name__}")
        check_finite("emissions", emissions)
        if mask is None:
            return torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        mask = as_bool_mask("mask", mask, emissions.shape[:2])
        if not mask[:, 0].all():
            raise ValueError("mask must mark each sequence's first position: every sequence needs a token")
        if (mask[:, 1:] & ~mask[:, :-1]).any():
            raise ValueError("mask must be a prefix of ones per row (padding only at the end)")
        return mask

    def score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``s(y)`` of the given paths ``tags`` ``[B, T]``: ``[B]``."""
        mask = self._check(emissions, mask)
        tags = check_index_tensor("tags", tags, ndim=2)
        if tags.shape != mask.shape:
            raise ValueError(f"tags must have shape {tuple(mask.shape)}, got {tuple(tags.shape)}")
        valid = tags[mask]
        if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= self.num_tags):
            raise ValueError(f"tags must lie in [0, num_tags={self.num_tags}) where mask is set, got values in "
                             f"[{int(valid.min())}, {int(valid.max())}]")
        tags = tags.clamp(0, self.num_tags - 1)  # padding positions are masked out below
        emitted = emissions.gather(-1, tags[..., None]).squeeze(-1)
        moved = self.transitions[tags[:, :-1], tags[:, 1:]]
        last = tags.gather(1, (mask.sum(1) - 1)[:, None]).squeeze(1)
        return (self.start[tags[:, 0]] + (emitted * mask).sum(1) + (moved * mask[:, 1:]).sum(1) + self.end[last])

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``log Z`` by the forward algorithm: ``[B]``."""
        mask = self._check(emissions, mask)
        alpha = self.start + emissions[:, 0]                                  # [B, C]
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha[:, :, None] + self.transitions + emissions[:, t, None, :], dim=1)
            alpha = torch.where(mask[:, t, None], step, alpha)                # padding: carry alpha over
        return torch.logsumexp(alpha + self.end, dim=-1)

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean negative log-likelihood ``log Z − s(y)`` over the batch (the training loss)."""
        return (self.log_partition(emissions, mask) - self.score(emissions, tags, mask)).mean()

    @torch.no_grad()
    def viterbi(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> list[list[int]]:
        """The highest-scoring path of each sequence, as many tags as its mask has ones."""
        mask = self._check(emissions, mask)
        delta = self.start + emissions[:, 0]
        back = []
        for t in range(1, emissions.shape[1]):
            scores = delta[:, :, None] + self.transitions                     # [B, from, to]
            best, index = scores.max(dim=1)
            back.append(index)
            delta = torch.where(mask[:, t, None], best + emissions[:, t], delta)
        delta = delta + self.end
        paths = []
        for row, length in enumerate(mask.sum(1).tolist()):
            tag = int(delta[row].argmax())
            path = [tag]
            for t in range(length - 1, 0, -1):
                tag = int(back[t - 1][row, tag])
                path.append(tag)
            paths.append(path[::-1])
        return paths
