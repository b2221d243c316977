"""ctxlib's BertModel exported to ONNX (ctxlib.models.onnx_export) computes what ctxlib computes:
exactly in float32 at any batch size, length and padding, and to a cosine of at least 0.99 per
token at every layer once its weights are int8; and the typed sentence, placed from the int8
graph's output, lands where ctxlib places it, on the sense ctxlib names."""

from __future__ import annotations

import base64

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper

from ctxlib.analysis.occurrences import layer_names, piece_mask
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.projection import pca_axes
from ctxlib.analysis.typed_sentence import (EXAMPLE_LAYER, EXAMPLE_SENTENCES, cosines, find_typed_word, nearest_sense,
                                            place_sentence, sense_centroids, typed_sentence_data)
from ctxlib.data import senses
from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.models.onnx_export import AllLayers, INPUT_NAMES, OUTPUT_NAME, export_fp32, export_int8, quantize_int8
from ctxlib.models.pretrained import minilm

MIN_COSINE = 0.99


def _session(path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run(session: ort.InferenceSession, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> np.ndarray:
    return session.run([OUTPUT_NAME], {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})[0]


@torch.no_grad()
def _ctxlib_layers(model: BertModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> np.ndarray:
    return AllLayers(model)(input_ids, attention_mask).numpy()


# --------------------------------------------------------------------------------------------
# A small random BERT: the graph is exact, for shapes and padding it was not exported with.

@pytest.fixture(scope="module")
def small(tmp_path_factory):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=40)
    model = BertModel(config).eval()
    folder = tmp_path_factory.mktemp("small")
    fp32 = export_fp32(model, folder / "fp32.onnx")
    return model, fp32, quantize_int8(fp32, folder / "int8.onnx", min_elements=1000)


def test_export_keeps_the_mask_and_every_length(small) -> None:
    """Exported with a [2, 4] example, the graph takes a [3, 23] padded batch and a [1, 40]
    sentence: the mask stays an input, and every real token matches ctxlib to 1e-5. (A trace of
    the old model baked its no-padding shortcut: the mask input vanished, max |Δ| 1.6.)"""
    model, fp32, _ = small
    session = _session(fp32)
    assert [i.name for i in session.get_inputs()] == list(INPUT_NAMES)
    generator = torch.Generator().manual_seed(1)
    lengths = [(3, 23, [23, 9, 1]), (1, 40, [40])]
    for batch, length, real in lengths:
        input_ids = torch.randint(1, 97, (batch, length), generator=generator)
        attention_mask = (torch.arange(length)[None] < torch.tensor(real)[:, None]).long()
        got, want = _run(session, input_ids, attention_mask), _ctxlib_layers(model, input_ids, attention_mask)
        assert got.shape == want.shape == (2 + 2, batch, length, 32)
        keep = attention_mask.bool().numpy()
        assert np.abs(got[:, keep] - want[:, keep]).max() < 1e-5


def test_int8_weights_round_each_channel_to_the_nearest_step(small) -> None:
    """Each quantised weight is q·s with q in [-127, 127], within s/2 of the float32 weight, and
    every channel that is not all zeros uses its full range (its largest |w| maps to ±127)."""
    _, fp32, int8 = small
    original = {t.name: numpy_helper.to_array(t) for t in onnx.load(fp32).graph.initializer}
    stored = {t.name: numpy_helper.to_array(t) for t in onnx.load(int8).graph.initializer}
    dequantize = [n for n in onnx.load(int8).graph.node if n.op_type == "DequantizeLinear"]
    assert len(dequantize) == 2 + 2 * 6  # word and position tables; Q, K, V, W_O and the two FFN matrices per layer
    for node in dequantize:
        q, scale = stored[node.input[0]], stored[node.input[1]]
        axis = next(a.i for a in node.attribute if a.name == "axis")
        weight = original[node.output[0]]
        s = np.expand_dims(scale, 1 - axis)
        assert q.dtype == np.int8 and np.abs(q).max() <= 127
        assert np.all(np.abs(q * s - weight) <= s / 2 + 1e-7)
        used = np.abs(weight).max(axis=1 - axis) > 0  # the [PAD] row is all zeros, and stays so
        assert np.all(np.abs(q).max(axis=1 - axis)[used] == 127) and not np.any(np.take(q, np.flatnonzero(~used), axis))


def test_export_rejects_what_it_cannot_export(tmp_path) -> None:
    with pytest.raises(TypeError, match="model must be a ctxlib BertModel"):
        AllLayers(torch.nn.Linear(2, 2))
    factorised = BertModel(BertConfig(vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=32, embedding_size=8))
    with pytest.raises(ValueError, match="embedding_size=8"):
        AllLayers(factorised)
    with pytest.raises(ValueError, match="is not a file"):
        quantize_int8(tmp_path / "missing.onnx", tmp_path / "out.onnx")


# --------------------------------------------------------------------------------------------
# MiniLM, int8: what the browser runs.

@pytest.fixture(scope="module")
def minilm_int8(tmp_path_factory):
    model, tokenizer = minilm()
    path = export_int8(model, tmp_path_factory.mktemp("minilm") / "minilm-int8.onnx")
    return model, tokenizer, _session(path), path


def _twenty_sentences() -> list[str]:
    """The page's examples, every 40th sense sentence, and lengths from one word to a paragraph."""
    data = [s.text for word in senses.sense_words() for s in senses.load_sense_sentences(word)]
    long = ("After the storm had passed and the water in the river had risen far above its usual level, "
            "the families who lived along the low bank gathered what they could carry, crossed the old "
            "stone bridge in the dark, and waited on the hill until the morning light showed how much "
            "of the village was still standing.")
    texts = [text for text, _, _ in EXAMPLE_SENTENCES] + data[::40]
    return texts + ["bank", "Bank holiday!", " ".join(data[100:103]), long]


def test_int8_minilm_agrees_with_ctxlib_on_every_token_and_layer(minilm_int8) -> None:
    model, tokenizer, session, path = minilm_int8
    texts = _twenty_sentences()
    lengths = [len(tokenizer(t)["input_ids"]) for t in texts]
    assert len(texts) == 20 and min(lengths) <= 3 and max(lengths) >= 60, lengths
    assert path.stat().st_size < 26e6  # what the page downloads: int8 weights, not float32 (91 MB)
    worst = np.ones(len(layer_names(model)))
    for text in texts:  # one sentence at a time, as the browser runs it
        enc = tokenizer([text], return_tensors="pt")
        got = _run(session, enc["input_ids"], enc["attention_mask"])[:, 0]
        want = _ctxlib_layers(model, enc["input_ids"], enc["attention_mask"])[:, 0]
        cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
        worst = np.minimum(worst, cos.min(axis=1))
    print(f"min per-token cosine, int8 ONNX vs ctxlib, by layer {layer_names(model)}: {np.round(worst, 4)}")
    assert worst.min() >= MIN_COSINE, dict(zip(layer_names(model), worst))
    # The same sentences as one padded batch: the graph's dynamic batch and its mask.
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    batch = _run(session, enc["input_ids"], enc["attention_mask"])
    for row, text in enumerate(texts):
        alone = tokenizer([text], return_tensors="pt")
        single = _run(session, alone["input_ids"], alone["attention_mask"])[:, 0]
        assert np.abs(batch[:, row, :single.shape[1]] - single).max() < 1e-3


@pytest.fixture(scope="module")
def study(minilm_int8):
    model, tokenizer, _, _ = minilm_int8
    return PolysemyStudy(model, tokenizer)


def test_typed_sentence_from_the_int8_graph_lands_where_ctxlib_puts_it(minilm_int8, study) -> None:
    """The browser's computation, in Python: the int8 graph's layers, pooled over the word's
    pieces, projected and compared with the centroids, give ctxlib's point (within 5% of the
    word's spread on the plane) and ctxlib's nearest sense at every encoder layer; at the
    example layer that sense is the one a reader would name."""
    model, tokenizer, session, _ = minilm_int8
    for text, word, sense in EXAMPLE_SENTENCES:
        placed = place_sentence(model, tokenizer, study, text)
        assert placed.occurrence.word == word
        assert placed.at(EXAMPLE_LAYER)[1] == sense, (text, placed.nearest)
        enc = tokenizer([text], return_offsets_mapping=True, return_tensors="pt")
        pieces = piece_mask(enc["offset_mapping"][0], placed.occurrence).numpy()
        layers = _run(session, enc["input_ids"], enc["attention_mask"])[:, 0]
        for index, name in enumerate(study.layer_names):
            vector = layers[index, pieces].mean(axis=0).astype(np.float64)
            spread = np.ptp(study.projection(word, name, "PCA"), axis=0).max()
            point = placed.points[index]
            from_graph = pca_axes(study.by_word[word].occurrences.layer(name)).project(vector[None])[0]
            assert np.abs(from_graph - point).max() <= 0.05 * max(spread, 1e-12), (text, name)
            names, centroids = sense_centroids(study, word, name)
            assert nearest_sense(names, cosines(vector, centroids)) == placed.nearest[index], (text, name)


def test_the_page_data_reproduces_the_explorer_points_and_centroids(study) -> None:
    """Decoded as the page decodes it (base64 little-endian float32), the data puts every
    occurrence of the explorer where the explorer draws it, and holds ctxlib's centroids."""
    data = typed_sentence_data(study)
    assert data["layers"] == list(study.layer_names) and list(data["words"]) == list(study.words)
    decode = lambda text, *shape: np.frombuffer(base64.b64decode(text), dtype="<f4").reshape(shape)  # noqa: E731
    dim = data["dim"]
    for word, entry in data["words"].items():
        for name, layer in entry["layers"].items():
            vectors = study.by_word[word].occurrences.layer(name).double().numpy()
            mean, components = decode(layer["mean"], dim), decode(layer["components"], 2, dim)
            points = study.projection(word, name, "PCA")
            assert np.abs((vectors - mean) @ components.T - points).max() <= 1e-4 * max(np.abs(points).max(), 1.0)
            senses, centroids = sense_centroids(study, word, name)
            assert entry["senses"] == list(senses)
            assert np.array_equal(decode(layer["centroids"], len(senses), dim), centroids.astype("<f4"))


def test_typed_word_is_found_or_named_as_missing() -> None:
    words = ("bank", "bat", "run")
    assert find_typed_word("The Bank lent us money.", words).word == "bank"
    assert find_typed_word("A bat flew over the bank.", words).word == "bat"  # the first in the text
    assert find_typed_word("A bat flew over the bank.", words, prefer="bank").word == "bank"
    with pytest.raises(ValueError, match="uses none of the explorer's words"):
        find_typed_word("The bankers ran home.", words)
    with pytest.raises(ValueError, match="exactly once"):
        find_typed_word("The bank by the bank.", words)
    with pytest.raises(TypeError, match="text must be a str"):
        find_typed_word(None, words)


def test_a_wordnet_key_is_found_by_its_lemma() -> None:
    words = ("bank.n", "order.n", "run.v")
    found = find_typed_word("She put her books in order at the bank.", words)
    assert (found.word, found.text[found.start:found.end]) == ("order.n", "order")
    assert find_typed_word("She put her books in order at the bank.", words, prefer="bank.n").word == "bank.n"
    with pytest.raises(ValueError, match="uses none of the explorer's words"):
        find_typed_word("The banks were closed.", words)
