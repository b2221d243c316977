"""A biLM written as bilm-tf / AllenNLP write ELMo, and read back."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from ctxlib.models.allennlp_format import OPTIONS_FILE, WEIGHTS_FILE, options_of, read_allennlp, write_allennlp
from ctxlib.models.elmo import BiLM, Elmo, ElmoConfig, batch_to_ids

FIXTURE = Path(__file__).parent / "fixtures" / "allennlp-elmo"


def _datasets(path: Path) -> dict[str, np.ndarray]:
    found = {}
    with h5py.File(path, "r") as h5:
        h5.visititems(lambda name, item: found.__setitem__(name, item[...]) if isinstance(item, h5py.Dataset) else None)
    return found


def test_writing_allennlps_fixture_back_gives_the_file_allennlp_shipped(tmp_path):
    elmo = Elmo.from_allennlp(FIXTURE / "options.json", FIXTURE / "lm_weights.hdf5")
    write_allennlp(elmo.bilm, tmp_path)
    theirs, ours = _datasets(FIXTURE / "lm_weights.hdf5"), _datasets(tmp_path / WEIGHTS_FILE)
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype and ours[name].shape == value.shape, name
        if name.endswith("/B"):  # the forget bias, added on reading and taken off here: float32 rounding
            np.testing.assert_allclose(ours[name], value, rtol=0, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(ours[name], value, err_msg=name)
    options = json.loads((FIXTURE / "options.json").read_text())
    assert ElmoConfig.from_options(json.loads((tmp_path / OPTIONS_FILE).read_text())) == ElmoConfig.from_options(options)


def test_a_trained_from_scratch_bilm_round_trips_with_its_softmax(tmp_path):
    torch.manual_seed(0)
    config = ElmoConfig(filters=((1, 8), (2, 8)), n_highway=1, projection_dim=16, cell_size=32, n_layers=2,
                        cell_clip=None, proj_clip=None, vocab_size=7)
    bilm = BiLM(config)
    with torch.no_grad():  # move every parameter off its start, so a dropped or mis-ordered tensor shows
        for parameter in bilm.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.1)
    words = ["<S>", "</S>", "<UNK>", "the", "bank", "river", "money"]
    write_allennlp(bilm, tmp_path, words)
    elmo, vocabulary = read_allennlp(tmp_path)
    assert vocabulary == words and elmo.config == bilm.config
    ids = batch_to_ids([["the", "river", "bank"], ["money"]])
    word_ids = torch.tensor([[3, 5, 4], [6, -100, -100]])
    bilm.eval()
    for ours, theirs in zip(bilm(ids).layers, elmo.bilm(ids).layers):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    torch.testing.assert_close(torch.stack(bilm.lm_loss(ids, word_ids, 0, 1)),
                               torch.stack(elmo.bilm.lm_loss(ids, word_ids, 0, 1)), rtol=0, atol=1e-5)
    assert options_of(config)["n_tokens_vocab"] == 7


def test_bad_input_is_named(tmp_path):
    config = ElmoConfig(filters=((1, 8),), n_highway=1, projection_dim=8, cell_size=16, n_layers=1, vocab_size=3)
    with pytest.raises(ValueError, match=r"vocabulary must list the softmax's 3 words"):
        write_allennlp(BiLM(config), tmp_path, ["a", "b"])
    with pytest.raises(ValueError, match=r"this biLM has no softmax"):
        write_allennlp(BiLM(ElmoConfig(filters=((1, 8),), n_highway=1, projection_dim=8, cell_size=16, n_layers=1)),
                       tmp_path, ["a"])
    with pytest.raises(TypeError, match=r"bilm must be a BiLM, got Elmo"):
        write_allennlp(Elmo(config), tmp_path)
    assert not (tmp_path / WEIGHTS_FILE).exists()  # nothing written before the arguments were checked
