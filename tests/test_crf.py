"""The linear-chain CRF against brute-force enumeration of every tag path."""

from __future__ import annotations

import itertools

import pytest
import torch

from ctxlib.layers.crf import LinearChainCRF


def random_crf(num_tags: int, seed: int) -> LinearChainCRF:
    torch.manual_seed(seed)
    crf = LinearChainCRF(num_tags)
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.normal_()
    return crf


def brute_force(crf: LinearChainCRF, emissions: torch.Tensor, length: int) -> tuple[torch.Tensor, list[int]]:
    """log Z and the best path of one sequence, by scoring all C^length paths."""
    scores, paths = [], list(itertools.product(range(crf.num_tags), repeat=length))
    for path in paths:
        s = crf.start[path[0]] + crf.end[path[-1]] + sum(emissions[t, y] for t, y in enumerate(path))
        s = s + sum(crf.transitions[a, b] for a, b in zip(path, path[1:]))
        scores.append(s)
    scores = torch.stack(scores)
    return torch.logsumexp(scores, 0), list(paths[int(scores.argmax())])


@pytest.mark.parametrize("seed", range(5))
def test_forward_algorithm_viterbi_and_score_equal_enumeration_with_padding(seed):
    crf = random_crf(num_tags=3, seed=seed)
    lengths = [4, 2, 1]
    emissions = torch.randn(3, 4, 3)
    mask = torch.tensor([[t < n for t in range(4)] for n in lengths])
    tags = torch.randint(0, 3, (3, 4))
    log_z = crf.log_partition(emissions, mask)
    best = crf.viterbi(emissions, mask)
    scores = crf.score(emissions, tags, mask)
    for row, n in enumerate(lengths):
        expected_z, expected_path = brute_force(crf, emissions[row], n)
        torch.testing.assert_close(log_z[row], expected_z)
        assert best[row] == expected_path
        path = tags[row, :n].tolist()
        by_hand = (crf.start[path[0]] + crf.end[path[-1]] + sum(emissions[row, t, y] for t, y in enumerate(path))
                   + sum(crf.transitions[a, b] for a, b in zip(path, path[1:])))
        torch.testing.assert_close(scores[row], by_hand)
    # a probability distribution: exp(s(y) - log Z) over all paths of row 1 sums to 1
    total = sum(torch.exp(crf.score(emissions[1:2, :2], torch.tensor([p]), None) - log_z[1])
                for p in itertools.product(range(3), repeat=2))
    torch.testing.assert_close(total, torch.ones(1))


def test_nll_is_positive_and_training_learns_a_transition_rule():
    # Tag 1 never follows tag 0 in the data; after training it is the least likely move from 0.
    torch.manual_seed(0)
    crf = LinearChainCRF(3)
    tags = torch.tensor([[0, 0, 2, 1], [2, 1, 1, 0], [0, 2, 2, 1]])
    emissions = torch.zeros(3, 4, 3)
    optimiser = torch.optim.Adam(crf.parameters(), lr=0.1)
    for _ in range(100):
        loss = crf.nll(emissions, tags)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert crf.transitions[0, 1] < min(crf.transitions[0, 0], crf.transitions[0, 2]) - 1


@pytest.mark.parametrize("seed", range(3))
def test_log_likelihood_and_viterbi_equal_pytorch_crf(seed):
    """pytorch-crf (Kurniawan's torchcrf, a well-kept reference) has the same parameters: start,
    end and transitions[i, j] for tag i followed by tag j."""
    torchcrf = pytest.importorskip("torchcrf")
    ours = random_crf(num_tags=5, seed=seed)
    theirs = torchcrf.CRF(5, batch_first=True)
    with torch.no_grad():
        theirs.start_transitions.copy_(ours.start)
        theirs.end_transitions.copy_(ours.end)
        theirs.transitions.copy_(ours.transitions)
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(6, 9, 5, generator=generator)
    lengths = torch.tensor([9, 7, 1, 4, 9, 2])
    mask = torch.arange(9)[None, :] < lengths[:, None]
    tags = torch.randint(0, 5, (6, 9), generator=generator)
    torch.testing.assert_close(ours.nll(emissions, tags, mask), -theirs(emissions, tags, mask, reduction="mean"))
    torch.testing.assert_close(ours.log_partition(emissions, mask) - ours.score(emissions, tags, mask),
                               -theirs(emissions, tags, mask, reduction="none"))
    assert ours.viterbi(emissions, mask) == theirs.decode(emissions, mask)


def test_bad_inputs_are_clear_errors():
    crf = LinearChainCRF(3)
    with pytest.raises(ValueError, match=r"emissions must be a tensor of shape \[B >= 1, T >= 1, num_tags=3\], got \(2, 4, 5\)"):
        crf.log_partition(torch.zeros(2, 4, 5))
    with pytest.raises(ValueError, match="mask must be a prefix of ones"):
        crf.log_partition(torch.zeros(1, 3, 3), torch.tensor([[1, 0, 1]]))
    with pytest.raises(ValueError, match="mask must mark each sequence's first position"):
        crf.viterbi(torch.zeros(1, 3, 3), torch.tensor([[0, 0, 0]]))
    with pytest.raises(ValueError, match=r"tags must lie in \[0, num_tags=3\)"):
        crf.score(torch.zeros(1, 2, 3), torch.tensor([[0, 3]]))
    with pytest.raises(ValueError, match="num_tags must be a positive int"):
        LinearChainCRF(0)
    with pytest.raises(ValueError, match=r"emissions holds 1 NaN or infinite value\(s\)"):
        crf.viterbi(torch.tensor([[[0.0, float("nan"), 0.0]]]))
    with pytest.raises(ValueError, match=r"emissions must be a tensor of shape \[B >= 1, T >= 1"):
        crf.nll(torch.zeros(0, 2, 3), torch.zeros(0, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"mask must hold only 0 and 1"):
        crf.viterbi(torch.zeros(1, 2, 3), torch.tensor([[1, 2]]))
