"""Shared fixtures: the bundled MiniLM, loaded once per test session; a temporary cache."""

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


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ctxbook-cache")


@pytest.fixture(autouse=True)
def _cache_in_tmp(_session_cache, monkeypatch):
    """Tests never write into the real cache ($CTXBOOK_CACHE or ~/.cache/ctxbook): everything
    they train or tokenize goes to one temporary folder per session (a test may set its own)."""
    monkeypatch.setenv("CTXBOOK_CACHE", str(_session_cache))
