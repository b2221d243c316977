"""Weight files that do not belong to the model they are read into or written over (issue 32):
BERT's Hugging Face directories, ELMo's bilm-tf files, and the biLM's LM loss arguments."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest
import torch
from safetensors.torch import save_file

from ctxlib.models import hf_format
from ctxlib.models.allennlp_format import WEIGHTS_FILE, read_allennlp, write_allennlp
from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.models.elmo import BiLM, Elmo, ElmoConfig, batch_to_ids, load_bilm_tf_weights
from ctxlib.models.heads import BertForSequenceClassification

FIXTURE = Path(__file__).parent / "fixtures" / "allennlp-elmo"
CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _bert(layers: int = 2, seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    return BertModel(BertConfig(**{**CONFIG.__dict__, "num_hidden_layers": layers})).eval()


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# --- BERT: save_pretrained over another model's files -------------------------------------------

def test_save_pretrained_replaces_every_weight_file_of_the_model_it_overwrites(tmp_path, monkeypatch):
    old = {"pytorch_model.bin": b"old single file", "model-00001-of-00002.safetensors": b"old shard",
           "model-00002-of-00002.safetensors": b"old shard", "model.safetensors.index.json": b"{}",
           "pytorch_model-00001-of-00001.bin": b"old shard", "pytorch_model.bin.index.json": b"{}"}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "vocab.txt").write_text("[PAD]\n")  # not a weight file: a save leaves it alone
    model = _bert()
    # A save that fails while writing the weights removes nothing and leaves no partial file.
    monkeypatch.setattr(hf_format, "save_file", lambda *args, **kwargs: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*old, "vocab.txt"])
    monkeypatch.undo()
    model.save_pretrained(tmp_path)
    # Before: model.safetensors and config.json were written beside the old model's six files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    assert _same_weights(BertModel.from_pretrained(tmp_path), model)


# --- BERT: from_pretrained on weights that do not fit config.json -------------------------------

def test_from_pretrained_refuses_encoder_layers_the_config_does_not_have(tmp_path):
    _bert(layers=4).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 2}))
    # Before: a warning, and a model holding the first two of the four layers.
    with pytest.raises(ValueError, match=r"model.safetensors: holds tensors this BertModel has no place for "
                                         r"\(config.json: num_hidden_layers=2\), 32 tensor\(s\), e.g. "
                                         r"\['encoder.layer.2.attention.output.LayerNorm.bias', "):
        BertModel.from_pretrained(tmp_path)


def test_from_pretrained_names_the_count_of_missing_encoder_weights(tmp_path):
    _bert(layers=2).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
    # Before: "lacks encoder weights, e.g. [...]", without how many.
    with pytest.raises(ValueError, match=r"model.safetensors: lacks 16 encoder weight\(s\) that config.json implies, "
                                         r"e.g. \['encoder.layer.2.attention"):
        BertModel.from_pretrained(tmp_path)


def test_from_pretrained_refuses_a_head_that_the_checkpoint_holds_only_in_part(tmp_path):
    BertForSequenceClassification(CONFIG, num_labels=3).save_pretrained(tmp_path)
    state = hf_format.read_state_dict(tmp_path)
    del state["classifier.bias"]
    save_file(state, tmp_path / "model.safetensors")
    # Before: a warning, and a classifier with the saved weight and a random bias.
    with pytest.raises(ValueError, match=r"model.safetensors: holds part of classifier but lacks 1 of its "
                                         r"tensor\(s\), e.g. \['classifier.bias'\]"):
        BertForSequenceClassification.from_pretrained(tmp_path)
    # A head the checkpoint has none of is new, and says so (an encoder under a fresh head).
    state = {key: value for key, value in state.items() if not key.startswith("classifier.")}
    save_file(state, tmp_path / "model.safetensors")
    with pytest.warns(UserWarning, match=r"no weights for \['classifier.bias', 'classifier.weight'\]"):
        BertForSequenceClassification.from_pretrained(tmp_path)


def test_from_pretrained_names_another_models_weights(tmp_path):
    _bert().save_pretrained(tmp_path)
    gpt2_like = {f"h.{i}.attn.c_attn.weight": torch.zeros(16, 48) for i in range(3)}
    save_file({"wte.weight": torch.zeros(50, 16), **gpt2_like}, tmp_path / "model.safetensors")
    # Before: "lacks encoder weights, e.g. [...]", silent about what the file holds instead.
    with pytest.raises(ValueError, match=r"lacks 39 encoder weight\(s\) .* it holds tensors this BertModel does "
                                         r"not have, 4 tensor\(s\), e.g. \['h.0.attn.c_attn.weight', "
                                         r".*another model's weights"):
        BertModel.from_pretrained(tmp_path)


def test_from_pretrained_names_a_sharded_checkpoint_it_cannot_read(tmp_path):
    _bert().save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").rename(tmp_path / "model-00001-of-00001.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    # Before: "holds none of ['model.safetensors', 'pytorch_model.bin']", as if it held no weights.
    with pytest.raises(FileNotFoundError, match=r"holds a sharded checkpoint \(model.safetensors.index.json\)"):
        BertModel.from_pretrained(tmp_path)


# --- ELMo: options that do not match the hdf5 ---------------------------------------------------

def _options(tmp_path: Path, section: str, name: str, value) -> Path:
    options = json.loads((FIXTURE / "options.json").read_text())
    options[section][name] = value
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    return path


@pytest.mark.parametrize(("section", "name", "value", "message"), [
    # Before: these two loaded part of the file and said nothing.
    ("char_cnn", "n_highway", 1, r"char_cnn.n_highway=1, but the file holds 2 highway layers \(CNN_high_k\)"),
    ("lstm", "n_layers", 1, r"lstm.n_layers=1, but the file holds 2 LSTM layers \(RNN_0/RNN/MultiRNNCell/Cellj\)"),
    # Before: "lacks a tensor bilm-tf writes (\"Unable to ... 'Cell2'\")", not naming the option.
    ("lstm", "n_layers", 3, r"lstm.n_layers=3, but the file holds 2 LSTM layers"),
    ("char_cnn", "n_highway", 3, r"char_cnn.n_highway=3, but the file holds 2 highway layers"),
    ("char_cnn", "filters", [[1, 4], [2, 8], [3, 16], [4, 32]],
     r"char_cnn.filters lists 4 convolutions, but the file holds 5 \(CNN/W_cnn_i\)"),
])
def test_from_allennlp_compares_the_layer_counts_with_the_file(tmp_path, section, name, value, message):
    with pytest.raises(ValueError, match=r"lm_weights.hdf5: the options declare " + message):
        Elmo.from_allennlp(_options(tmp_path, section, name, value), FIXTURE / "lm_weights.hdf5")


def test_from_allennlp_names_the_tensor_whose_shape_differs(tmp_path):
    # Before: IndexError from the LSTM's gate reordering, a traceback naming no file.
    with pytest.raises(ValueError, match=r"lm_weights.hdf5: a tensor's shape does not match the options: "
                                         r"RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0 is \(32, 256\) in the file, "
                                         r"the options make it \(32, 512\); 12 tensor\(s\) differ"):
        Elmo.from_allennlp(_options(tmp_path, "lstm", "dim", 128), FIXTURE / "lm_weights.hdf5")


def test_load_bilm_tf_weights_changes_nothing_when_a_shape_differs():
    options = json.loads((FIXTURE / "options.json").read_text())
    options["lstm"]["projection_dim"] *= 2
    torch.manual_seed(0)
    bilm = BiLM(ElmoConfig.from_options(options))
    before = {key: value.clone() for key, value in bilm.state_dict().items()}
    with pytest.raises(ValueError, match=r"CNN_proj/W_proj is \(124, 16\) in the file, "
                                         r"the options make it \(124, 32\)"):
        load_bilm_tf_weights(bilm, FIXTURE / "lm_weights.hdf5")
    # Before: the character table and the convolutions had been overwritten when the projection failed.
    assert all(torch.equal(before[key], value) for key, value in bilm.state_dict().items())


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("make", "error", "message"), [
    # Before: ValueError "cannot be read as an HDF5 weight file (Unable to open file ...)".
    (lambda d: d / "missing.hdf5", FileNotFoundError, r"weight_file='.*missing.hdf5' does not exist"),
    (lambda d: _written(d / "empty.hdf5", b""), ValueError,
     r"empty.hdf5: cannot be read as an HDF5 weight file: it is empty \(0 bytes\)"),
    (lambda d: FIXTURE / "options.json", ValueError,
     r"options.json: cannot be read as an HDF5 weight file: it is JSON text; did you pass the options file"),
])
def test_a_weight_file_that_is_not_one_is_named(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        Elmo.from_allennlp(FIXTURE / "options.json", make(tmp_path))


def test_from_allennlp_names_swapped_arguments(tmp_path):
    # Before: "lm_weights.hdf5: not UTF-8 text (byte 0x89 at offset 0); save the file as UTF-8".
    with pytest.raises(ValueError, match=r"lm_weights.hdf5: options_file is an HDF5 file, not bilm-tf's options.json; "
                                         r"did you swap options_file and weight_file\?"):
        Elmo.from_allennlp(FIXTURE / "lm_weights.hdf5", FIXTURE / "options.json")
    # Before: FileNotFoundError "[Errno 2] No such file or directory", naming no argument.
    with pytest.raises(FileNotFoundError, match=r"options_file='.*nowhere.json' does not exist"):
        Elmo.from_allennlp(tmp_path / "nowhere.json", FIXTURE / "lm_weights.hdf5")


def test_read_allennlp_refuses_a_softmax_bias_of_another_shape(tmp_path):
    config = ElmoConfig(filters=((1, 8),), n_highway=1, projection_dim=8, cell_size=16, n_layers=1, vocab_size=3)
    write_allennlp(BiLM(config), tmp_path, ["<S>", "</S>", "bank"])
    with h5py.File(tmp_path / WEIGHTS_FILE, "r+") as h5:
        del h5["softmax/b"]
        h5.create_dataset("softmax/b", data=[0.5])
    # Before: the one value was broadcast over the three biases.
    with pytest.raises(ValueError, match=r"weights.hdf5: softmax b is \(1,\), the biLM's is \(3,\)"):
        read_allennlp(tmp_path)


# --- the biLM's LM loss -------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "error", "message"), [
    # Before: </S> at -100 was silently ignored, so the forward LM never predicted the end.
    ({"eos_id": -100}, ValueError, r"eos_id must lie in \[0, vocab_size\) = \[0, 7\), got -100"),
    ({"eos_id": 7}, ValueError, r"eos_id must lie in \[0, vocab_size\) = \[0, 7\), got 7"),  # before: IndexError
    ({"eos_id": 2.0}, TypeError, r"eos_id must be an int .* got float 2.0"),  # before: truncated to 2
    ({"bos_id": True}, TypeError, r"bos_id must be an int .* got bool True"),  # before: read as 1
    ({"word_ids": torch.tensor([[3, 9], [5, -100]])}, ValueError,  # before: IndexError
     r"word_ids \(at real words\) must lie in \[0, vocab_size\) = \[0, 7\), got 9"),
    ({"word_ids": torch.tensor([[3, -5], [5, -100]])}, ValueError, r"word_ids \(at real words\) .* got -5"),
    ({"char_ids": [[1, 2]]}, TypeError, r"char_ids must be a torch.Tensor"),  # before: AttributeError
])
def test_lm_loss_validates_its_arguments(change, error, message):
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4),), projection_dim=6, cell_size=8, vocab_size=7)
    bilm = BiLM(config)
    arguments = {"char_ids": batch_to_ids([["x", "y"], ["z"]]), "word_ids": torch.tensor([[3, 4], [5, -100]]),
                 "bos_id": 1, "eos_id": 2}
    bilm.lm_loss(**arguments)  # the unchanged arguments are valid
    with pytest.raises(error, match=message):
        bilm.lm_loss(**{**arguments, **change})
