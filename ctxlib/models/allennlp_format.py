"""Writing a biLM as bilm-tf and AllenNLP write ELMo: ``options.json`` and an hdf5 weight file.

The inverse of ``Elmo.from_allennlp`` / ``load_bilm_tf_weights`` (``ctxlib.models.elmo``), tensor
by tensor: TensorFlow's ``x W`` layout (weights transposed), the LSTM's gate blocks in TF's
(i, g, f, o) order, the forget bias TensorFlow adds at run time taken back out of the stored
bias, and the character table without its padding row. A file written here is read by
``Elmo.from_allennlp`` and by AllenNLP's ``Elmo`` alike; ``tests/test_allennlp_format.py`` writes
AllenNLP's own fixture back and compares every tensor with the file AllenNLP shipped.

bilm-tf's weight dump holds no softmax (a task reads the representations only). A checkpoint the
book ships is also scored as a language model, so when the biLM has its softmax it is stored in
a ``softmax`` group (``W`` ``[V, projection_dim]``, ``b`` ``[V]``, bilm-tf's own names and layout)
with the vocabulary beside it (``vocab.txt``, one word per line, as bilm-tf's vocabulary files);
readers that do not know the group ignore it (``read_softmax`` loads it).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ctxlib._files import as_path, atomic_path, write_text_atomically
from ctxlib.models.elmo import FORGET_BIAS, MAX_CHARACTERS, BiLM, Elmo, ElmoConfig, load_bilm_tf_weights

__all__ = ["OPTIONS_FILE", "WEIGHTS_FILE", "VOCABULARY_FILE", "options_of", "write_allennlp", "read_allennlp", "read_softmax",
           "read_vocabulary"]

OPTIONS_FILE = "options.json"
WEIGHTS_FILE = "weights.hdf5"
VOCABULARY_FILE = "vocab.txt"


def options_of(config: ElmoConfig) -> dict:
    """bilm-tf's ``options.json`` for ``config`` (``ElmoConfig.from_options`` reads it back)."""
    if not isinstance(config, ElmoConfig):
        raise TypeError(f"config must be an ElmoConfig, got {type(config).__name__}")
    return {
        "char_cnn": {"activation": config.activation, "embedding": {"dim": config.char_embedding_dim},
                     "filters": [list(f) for f in config.filters], "max_characters_per_token": MAX_CHARACTERS,
                     "n_characters": config.n_characters, "n_highway": config.n_highway},
        "lstm": {"cell_clip": config.cell_clip, "dim": config.cell_size, "n_layers": config.n_layers,
                 "proj_clip": config.proj_clip, "projection_dim": config.projection_dim,
                 "use_skip_connections": config.use_skip_connections},
        **({"n_tokens_vocab": config.vocab_size} if config.vocab_size else {}),
    }


def _tf_gate_order(n: int) -> torch.Tensor:
    """Rows of PyTorch's (i, f, g, o) blocks in TensorFlow's (i, g, f, o) order (its own inverse)."""
    return torch.cat([torch.arange(0, n), torch.arange(2 * n, 3 * n), torch.arange(n, 2 * n), torch.arange(3 * n, 4 * n)])


def _tensors(bilm: BiLM) -> dict[str, torch.Tensor]:
    """Every tensor of the weight file, by its hdf5 path, in bilm-tf's layout."""
    config, cnn = bilm.config, bilm.token_layer
    out = {"char_embed": cnn.char_embedding.weight[1:]}
    for i, conv in enumerate(cnn.convolutions):
        out[f"CNN/W_cnn_{i}"] = conv.weight.permute(2, 1, 0)[None]  # [out, in, w] → [1, w, in, out]
        out[f"CNN/b_cnn_{i}"] = conv.bias
    for k in range(config.n_highway):
        out[f"CNN_high_{k}/W_carry"] = cnn.highway.gate[k].weight.T
        out[f"CNN_high_{k}/b_carry"] = cnn.highway.gate[k].bias
        out[f"CNN_high_{k}/W_transform"] = cnn.highway.transform[k].weight.T
        out[f"CNN_high_{k}/b_transform"] = cnn.highway.transform[k].bias
    out["CNN_proj/W_proj"] = cnn.projection.weight.T
    out["CNN_proj/b_proj"] = cnn.projection.bias
    n = config.cell_size
    order = _tf_gate_order(n)
    for direction, stack in enumerate((bilm.forward_layers, bilm.backward_layers)):
        for j, layer in enumerate(stack):
            lstm, cell = layer.lstm, f"RNN_{direction}/RNN/MultiRNNCell/Cell{j}/LSTMCell"
            out[f"{cell}/W_0"] = torch.cat([lstm.weight_ih_l0, lstm.weight_hh_l0], dim=1)[order].T
            bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0)[order].clone()
            bias[2 * n:3 * n] -= FORGET_BIAS  # TensorFlow adds it back at run time
            out[f"{cell}/B"] = bias
            out[f"{cell}/W_P_0"] = lstm.weight_hr_l0.T
    if bilm.softmax is not None:
        out["softmax/W"] = bilm.softmax.weight
        out["softmax/b"] = bilm.softmax.bias
    return out


@torch.no_grad()
def write_allennlp(bilm: BiLM, directory: str | Path, vocabulary: list[str] | None = None) -> Path:
    """Write ``bilm`` into ``directory`` as ``options.json`` + ``weights.hdf5`` (+ ``vocab.txt``
    when it has a softmax, whose rows ``vocabulary`` names). Each file is written atomically."""
    import h5py

    if not isinstance(bilm, BiLM):
        raise TypeError(f"bilm must be a BiLM, got {type(bilm).__name__}")
    directory = as_path("directory", directory)
    if bilm.softmax is not None:
        if not isinstance(vocabulary, list) or len(vocabulary) != bilm.softmax.out_features \
                or not all(isinstance(w, str) and w and "\n" not in w for w in vocabulary):
            raise ValueError(f"vocabulary must list the softmax's {bilm.softmax.out_features} words (non-empty "
                             f"strings without line breaks), got {type(vocabulary).__name__} of "
                             f"{len(vocabulary) if isinstance(vocabulary, list) else 'no'} entries")
    elif vocabulary is not None:
        raise ValueError("vocabulary names softmax rows, but this biLM has no softmax (vocab_size=0)")
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / WEIGHTS_FILE) as temporary, h5py.File(temporary, "w") as h5:
        for name, tensor in _tensors(bilm).items():
            h5.create_dataset(name, data=tensor.detach().float().contiguous().cpu().numpy())
    write_text_atomically(directory / OPTIONS_FILE, json.dumps(options_of(bilm.config), indent=2) + "\n")
    if vocabulary is not None:
        write_text_atomically(directory / VOCABULARY_FILE, "\n".join(vocabulary) + "\n")
    return directory


def read_vocabulary(directory: str | Path) -> list[str]:
    """The softmax's words, as ``write_allennlp`` wrote them."""
    return (as_path("directory", directory) / VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")[:-1]


@torch.no_grad()
def read_softmax(bilm: BiLM, weight_file: str | Path) -> None:
    """Load the ``softmax`` group ``write_allennlp`` adds into ``bilm.softmax``."""
    import h5py

    if bilm.softmax is None:
        raise ValueError("bilm has no softmax to load into: build it with vocab_size = the vocabulary's size")
    with h5py.File(as_path("weight_file", weight_file), "r") as h5:
        if "softmax" not in h5:
            raise ValueError(f"{weight_file}: holds no softmax group (a bilm-tf dump has none)")
        weight, bias = (torch.from_numpy(h5["softmax"][name][...]) for name in ("W", "b"))
    # Both compared: copy_ would broadcast a one-entry bias over the whole vocabulary without a word.
    for name, value, target in (("W", weight, bilm.softmax.weight), ("b", bias, bilm.softmax.bias)):
        if value.shape != target.shape:
            raise ValueError(f"{weight_file}: softmax {name} is {tuple(value.shape)}, "
                             f"the biLM's is {tuple(target.shape)}")
    bilm.softmax.weight.copy_(weight)
    bilm.softmax.bias.copy_(bias)


def read_allennlp(directory: str | Path) -> tuple[Elmo, list[str] | None]:
    """An ``Elmo`` from a directory ``write_allennlp`` wrote, its softmax loaded where the directory
    holds one, with the softmax's words (None without)."""
    from dataclasses import asdict

    directory = as_path("directory", directory)
    vocabulary = read_vocabulary(directory) if (directory / VOCABULARY_FILE).is_file() else None
    config = ElmoConfig.from_options(json.loads((directory / OPTIONS_FILE).read_text(encoding="utf-8")))
    if vocabulary is not None:
        config = ElmoConfig(**{**asdict(config), "vocab_size": len(vocabulary)})
    elmo = Elmo(config)
    load_bilm_tf_weights(elmo.bilm, directory / WEIGHTS_FILE)
    if vocabulary is not None:
        read_softmax(elmo.bilm, directory / WEIGHTS_FILE)
    return elmo.eval(), vocabulary
