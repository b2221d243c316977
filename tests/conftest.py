"""Shared fixtures: the bundled MiniLM, loaded once per test session."""

from __future__ import annotations

import pytest
import torch

from ctxlib.models.pretrained import minilm, minilm_path


@pytest.fixture(scope="session")
def minilm_pair():
    """ctxlib's MiniLM and its tokenizer."""
    return minilm()


@pytest.fixture(scope="session")
def hf_minilm():
    """The reference: transformers' own BertModel on the same weights, eager attention."""
    transformers = pytest.importorskip("transformers")
    return transformers.BertModel.from_pretrained(minilm_path(), attn_implementation="eager").eval()


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
