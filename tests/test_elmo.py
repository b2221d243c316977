"""ctxlib.models.elmo against AllenNLP's reference ELMo, and the pieces against hand computations."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from ctxlib.models.elmo import (BOS_IDS, EOS_IDS, BiLM, Elmo, ElmoConfig, ScalarMix, _reverse_padded, batch_to_ids,
                                remove_sentence_boundaries, word_to_char_ids)
from ctxlib.objectives.masking import IGNORE_INDEX

FIXTURE = Path(__file__).parent / "fixtures" / "allennlp-elmo"


@pytest.fixture(scope="module")
def reference_elmo() -> Elmo:
    return Elmo.from_allennlp(FIXTURE / "options.json", FIXTURE / "lm_weights.hdf5")


@torch.no_grad()
def test_reproduces_allennlp_top_layer_for_all_30_sentences(reference_elmo):
    """AllenNLP's test computed the expected embeddings with its stateful LSTMs, three
    sentences a batch, batch i = the i-th sentence of each of the three lists, each batch
    starting from the states the previous one ended in; the test replays exactly that."""
    sentences = json.loads((FIXTURE / "sentences.json").read_text())
    expected = []
    for k in range(3):
        with h5py.File(FIXTURE / f"lm_embeddings_{k}.hdf5", "r") as file:
            expected.append([np.concatenate([file[str(i)][0], file[str(i)][1]], axis=-1) for i in range(10)])
    state, worst, checked = None, 0.0, 0
    for i in range(10):
        batch = [sentences[k][i].split() for k in range(3)]
        out = reference_elmo.bilm(batch_to_ids(batch), state=state)
        state = out.state
        top, mask = remove_sentence_boundaries(out.layers[2], out.mask)
        assert mask.sum(-1).tolist() == [len(s) for s in batch]
        for k in range(3):
            worst = max(worst, float(np.abs(top[k, :len(batch[k])].numpy() - expected[k][i]).max()))
            checked += 1
    assert checked == 30
    assert worst < 1e-5, f"max abs error {worst:.2e}"


@torch.no_grad()
def test_fused_lstm_and_exact_cell_agree_where_clipping_does_not_bind(reference_elmo):
    sentences = [s.split() for s in json.loads((FIXTURE / "sentences.json").read_text())[0][:4]]
    ids = batch_to_ids(sentences)
    for stack in (reference_elmo.bilm.forward_layers, reference_elmo.bilm.backward_layers):
        for layer in stack:
            layer.cell_clip = layer.proj_clip = None
    try:
        fused = reference_elmo(ids, exact=False)
        exact = reference_elmo(ids, exact=True)
    finally:
        for stack in (reference_elmo.bilm.forward_layers, reference_elmo.bilm.backward_layers):
            for layer in stack:
                layer.cell_clip = layer.proj_clip = 3.0
    for a, b in zip(fused.layers, exact.layers):
        assert (a - b).abs().max() < 1e-5


def test_elmo_layers_shape_and_token_layer():
    torch.manual_seed(0)
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4), (2, 8)), projection_dim=6, cell_size=10)
    elmo = Elmo(config).eval()
    out = elmo(batch_to_ids([["Hello", "world", "!"], ["Hi"]]))
    assert len(out.layers) == config.n_layers + 1 == 3
    assert all(layer.shape == (2, 3, 12) for layer in out.layers)
    assert out.mask.tolist() == [[True, True, True], [True, False, False]]
    # Layer 0 is the token vector twice; padding positions are zero in every layer.
    torch.testing.assert_close(out.layers[0][..., :6], out.layers[0][..., 6:])
    assert all(layer[1, 1:].abs().max() == 0 for layer in out.layers)
    assert out.concatenated().shape == (2, 3, 36)  # eq 2.4 with the token layer


def test_character_ids():
    ids = word_to_char_ids("bank")
    assert len(ids) == 50
    assert ids[:6] == [259, 99, 98, 111, 108, 260]  # BOW, b a n k (bytes + 1), EOW
    assert set(ids[6:]) == {261}  # padding character
    assert word_to_char_ids("café")[1:6] == [c + 1 for c in "café".encode()]  # UTF-8 bytes
    long = word_to_char_ids("x" * 60)
    assert long[49] == 260 and long[1:49] == [121] * 48  # truncated to 48 bytes
    assert BOS_IDS[:3] == [259, 257, 260] and EOS_IDS[:3] == [259, 258, 260]
    batch = batch_to_ids([["a", "b"], ["c"]])
    assert batch.shape == (2, 2, 50) and batch[1, 1].abs().sum() == 0


def test_reverse_padded_reverses_within_each_length():
    x = torch.arange(8.0).view(2, 4, 1)
    out = _reverse_padded(x, torch.tensor([4, 2]))
    assert out[..., 0].tolist() == [[3, 2, 1, 0], [5, 4, 6, 7]]


def test_scalar_mix_is_eq_2_5():
    torch.manual_seed(1)
    mix = ScalarMix(3)
    with torch.no_grad():
        mix.scalar_parameters.copy_(torch.tensor([0.5, -1.0, 2.0]))
        mix.gamma.fill_(1.7)
    layers = [torch.randn(2, 4, 5) for _ in range(3)]
    s = torch.softmax(torch.tensor([0.5, -1.0, 2.0]), 0)
    torch.testing.assert_close(mix(layers), 1.7 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2]))
    assert mix.weights().sum().item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"layers must hold num_layers=3 tensors, got 2: an L-layer ELMo has L \+ 1"):
        mix(layers[:2])
    with pytest.raises(ValueError, match=r"mask is required when layer_norm=True"):
        ScalarMix(3, layer_norm=True)(layers)


def test_scalar_mix_layer_norm_ignores_padding():
    mix = ScalarMix(1, layer_norm=True)
    x = torch.randn(1, 3, 4)
    mask = torch.tensor([[1, 1, 0]])
    with_junk = x.clone()
    with_junk[0, 2] = 1e3
    torch.testing.assert_close(mix([x], mask)[:, :2], mix([with_junk], mask)[:, :2])
    normed = mix([x], mask)[:, :2]
    assert normed.mean().abs() < 1e-5 and normed.std(unbiased=False).sub(1).abs() < 1e-4


def test_lm_loss_by_hand():  # eqs 2.1-2.3
    torch.manual_seed(2)
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4), (2, 4)), projection_dim=6, cell_size=8, vocab_size=7)
    bilm = BiLM(config).eval()
    ids = batch_to_ids([["x", "y"], ["z", "y", "x"]])
    words = torch.tensor([[3, 4, IGNORE_INDEX], [5, 4, 3]])
    fwd, bwd = bilm.lm_loss(ids, words, bos_id=1, eos_id=2)
    top = bilm(ids).layers[-1]
    nll_f, nll_b, count = 0.0, 0.0, 0
    for row, targets in enumerate(([1, 3, 4, 2], [1, 5, 4, 3, 2])):  # <S> w_1..w_T </S>
        logp_f = bilm.softmax(top[row, :, :6]).log_softmax(-1)
        logp_b = bilm.softmax(top[row, :, 6:]).log_softmax(-1)
        for t in range(1, len(targets)):
            nll_f -= logp_f[t - 1, targets[t]]  # h→ at t-1 predicts the word at t
            nll_b -= logp_b[t, targets[t - 1]]  # h← at t predicts the word at t-1
            count += 1
    torch.testing.assert_close(fwd, nll_f / count)
    torch.testing.assert_close(bwd, nll_b / count)


def test_bad_input(reference_elmo):
    with pytest.raises(TypeError, match=r"sentences must be a list of token lists"):
        batch_to_ids("The bank .")
    with pytest.raises(ValueError, match=r"sentences\[1\] is empty"):
        batch_to_ids([["a"], []])
    with pytest.raises(TypeError, match=r"sentences\[0\] must be a list of tokens, got str"):
        batch_to_ids(["a b"])
    with pytest.raises(ValueError, match=r"word must not be empty"):
        batch_to_ids([["a", ""]])
    with pytest.raises(ValueError, match=r"char_ids must have shape \[B >= 1, T, 50\], got \(1, 2, 49\)"):
        reference_elmo(torch.zeros(1, 2, 49, dtype=torch.long))
    with pytest.raises(ValueError, match=r"char_ids must lie in \[0, n_characters=262\)"):
        reference_elmo(torch.full((1, 2, 50), 300))
    with pytest.raises(ValueError, match=r"activation must be one of"):
        ElmoConfig(activation="gelu")
    with pytest.raises(TypeError, match=r"takes 2 positional arguments"):  # keyword-only after char_ids
        reference_elmo(batch_to_ids([["a"]]), True)


@pytest.mark.parametrize(("fields", "error", "pattern"), [
    ({"n_highway": -1}, ValueError, r"n_highway must be an int >= 0, got -1"),
    ({"cell_clip": float("nan")}, ValueError, r"cell_clip must be finite, got nan"),
    ({"proj_clip": -3.0}, ValueError, r"proj_clip must be > 0, got -3.0"),
    ({"use_skip_connections": "no"}, TypeError, r"use_skip_connections must be a bool \(True or False\), got str 'no'"),
    ({"filters": ((2.5, 32),)}, TypeError, r"filter width must be an int, got float 2.5"),
    ({"filters": ()}, ValueError, r"filters must be a non-empty list of \(width, count\) pairs"),
    ({"vocab_size": -1}, ValueError, r"vocab_size must be an int >= 0, got -1"),
    ({"projection_dim": 0}, ValueError, r"projection_dim must be a positive int, got 0"),
])
def test_bad_configs_are_named(fields, error, pattern):
    with pytest.raises(error, match=pattern):
        ElmoConfig(**fields)


def test_a_padding_word_inside_a_sentence_is_an_error_not_a_lost_word():
    # Before: </S> went to position (number of real words) + 1, over the sentence's last word.
    torch.manual_seed(0)
    bilm = BiLM(ElmoConfig(char_embedding_dim=4, filters=((1, 4),), projection_dim=6, cell_size=8)).eval()
    ids = batch_to_ids([["a", "b", "c"]])
    gapped = ids.clone()
    gapped[0, 1] = 0
    with pytest.raises(ValueError, match=r"char_ids row 0 has a padding word .* at position 1 before a real word"):
        bilm(gapped)
    trailing = torch.cat([ids, torch.zeros(1, 2, 50, dtype=torch.long)], dim=1)  # padding at the end is fine
    torch.testing.assert_close(bilm(trailing).layers[-1][:, :5], bilm(ids).layers[-1])


@torch.no_grad()
def test_elmo_word_vectors_are_the_layers_in_reading_order(reference_elmo):
    from ctxlib.analysis.occurrences import elmo_word_vectors

    sentences = [["The", "bank", "."], ["A", "long", "river", "bank", "!"]]
    words = elmo_word_vectors(reference_elmo, sentences, batch_size=1)
    assert words.layer_names == ("layer 0", "layer 1", "layer 2")
    assert words.vectors.shape == (3, 8, 32)
    together = reference_elmo(batch_to_ids(sentences))
    torch.testing.assert_close(words.vectors[:, 3:], torch.stack(together.layers)[:, 1, :5], atol=1e-6, rtol=1e-5)


def test_fit_scalar_mix_finds_the_informative_layer():
    from ctxlib.analysis.scalar_mix_probe import fit_scalar_mix

    generator = torch.Generator().manual_seed(0)
    n, dim = 1200, 8
    labels = torch.randint(0, 3, (n,), generator=generator)
    noise = lambda: torch.randn(n, dim, generator=generator)
    informative = noise() * 0.3 + torch.nn.functional.one_hot(labels, dim).float() * 2
    layers = torch.stack([noise(), informative, noise()])  # only layer 1 knows the label
    result = fit_scalar_mix(layers[:, :900], labels[:900].tolist(), layers[:, 900:], labels[900:].tolist(),
                            ["layer 0", "layer 1", "layer 2"], steps=200, lr=0.05)
    assert result.weights.shape == (201, 3) and result.gamma.shape == (201,)
    assert np.allclose(result.weights[0], 1 / 3)  # softmax of w = 0
    assert result.weights[-1].argmax() == 1 and result.weights[-1][1] > 0.6
    assert result.accuracy > 0.9


def test_scalar_mix_explorer_retrains_and_redraws():
    import matplotlib

    matplotlib.use("Agg")
    from ctxlib.analysis.layer_probes import TokenTask
    from ctxlib.viz.widgets import scalar_mix_explorer

    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (300,), generator=generator)
    layers = torch.stack([torch.randn(300, 8, generator=generator),
                          torch.nn.functional.one_hot(labels, 8).float() + 0.1 * torch.randn(300, 8, generator=generator)])
    words = tuple(f"w{i}" for i in range(300))
    task = TokenTask("toy", ("layer 0", "layer 1"), layers[:, :200], tuple(labels[:200].tolist()),
                     layers[:, 200:], tuple(labels[200:].tolist()), words[:200], words[200:])
    box = scalar_mix_explorer({"toy": task}, steps=50)
    (lr_box, _steps, button), image = box.children[0].children, box.children[1]
    before = bytes(image.value)
    lr_box.value = 0.1
    button.click()
    assert bytes(image.value) != before and bytes(image.value).startswith(b"\x89PNG")


def test_lm_loss_rejects_word_ids_that_disagree_with_the_characters():
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4),), projection_dim=6, cell_size=8, vocab_size=7)
    bilm = BiLM(config)
    ids = batch_to_ids([["x", "y"], ["z"]])
    with pytest.raises(ValueError, match=r"word_ids must be -100 exactly where char_ids is padding"):
        bilm.lm_loss(ids, torch.tensor([[3, 4], [5, 6]]), bos_id=1, eos_id=2)


def test_released_elmo_has_the_published_parameter_count():
    # Peters et al.'s released "original" ELMo: 93.6M parameters, as bilm-tf counts them.
    with torch.device("meta"):
        released = BiLM(ElmoConfig())
    assert abs(released.representation_parameters() / 93.6e6 - 1) < 0.005
    with_softmax = BiLM(ElmoConfig(char_embedding_dim=4, filters=((1, 4),), projection_dim=6, cell_size=8, vocab_size=7))
    total = sum(p.numel() for p in with_softmax.parameters())
    # the softmax (7 × 6 + 7) and one bias of 4 × 8 per LSTM layer (4 layers) are left out
    assert with_softmax.representation_parameters() == total - (7 * 6 + 7) - 4 * 4 * 8


def test_from_allennlp_names_the_file_that_is_wrong(tmp_path):
    options = json.loads((FIXTURE / "options.json").read_text())
    weights = FIXTURE / "lm_weights.hdf5"
    broken = tmp_path / "options.json"
    broken.write_text(json.dumps(options)[:-10])
    with pytest.raises(ValueError, match=r"options.json: not valid JSON"):
        Elmo.from_allennlp(broken, weights)
    broken.write_text(json.dumps({"char_cnn": options["char_cnn"]}))
    with pytest.raises(ValueError, match=r"options.json: options lack the entry 'lstm'"):  # before: KeyError
        Elmo.from_allennlp(broken, weights)
    wider = json.loads(json.dumps(options))
    wider["lstm"]["projection_dim"] *= 2
    broken.write_text(json.dumps(wider))
    with pytest.raises(ValueError, match=r"lm_weights.hdf5: a tensor's shape does not match the options"):
        Elmo.from_allennlp(broken, weights)  # before: RuntimeError from copy_
    not_hdf5 = tmp_path / "weights.hdf5"
    not_hdf5.write_bytes(b"not an hdf5 file")
    with pytest.raises(ValueError, match=r"weights.hdf5: cannot be read as an HDF5 weight file"):
        Elmo.from_allennlp(FIXTURE / "options.json", not_hdf5)
    empty = tmp_path / "empty.hdf5"
    h5py.File(empty, "w").close()
    with pytest.raises(ValueError, match=r"empty.hdf5: lacks a tensor bilm-tf writes"):
        Elmo.from_allennlp(FIXTURE / "options.json", empty)
