"""ctxlib's ``BertModel`` as an ONNX graph, int8-quantised, for encoding text in a browser.

Chapter 1's polysemy explorer encodes a sentence the reader types with ``onnxruntime-web``. The
graph is exported from ctxlib's own ``BertModel`` by ``torch.export`` (no second implementation
of BERT), with the batch and the sequence length left free, and returns every layer a word
occurrence has in ``ctxlib.analysis.occurrences`` in the same order (``layer_names``): the
static row of the word-embedding table, the embedding output (eq 3.2) and each encoder block's
output. Then the weights are stored as int8 (``quantize_int8``): all-MiniLM-L6-v2 goes from
91 MB to 23 MB, and every token's vector at every layer keeps a cosine above 0.998 with ctxlib's.

Why weights only: onnxruntime's dynamic quantisation also rounds each layer's *input* to 8 bits
on every call, and on MiniLM the error grows with depth: the lowest per-token cosine with
ctxlib's top layer, over 22 sentences, is 0.89 with one scale per tensor, 0.98 with one scale
per output channel, and 0.989 when the feed-forward output matrices stay float32 (34 MB).

This needs no special path in the model: ``BertModel`` branches on shapes and flags only, never
on the values of its inputs (see ``validate_inputs`` and its attention-mask handling).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch import nn

from ctxlib._checks import check_positive_int
from ctxlib._files import as_path, atomic_path
from ctxlib._modes import evaluating
from ctxlib.models.bert import BertModel

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "layers"
# onnxruntime-web 1.2x runs every opset up to 21; 20 is the newest with LayerNormalization and Gelu.
OPSET = 20


class AllLayers(nn.Module):
    """``(input_ids, attention_mask) -> [L+2, B, T, H]``: the static row, the embedding output and
    each encoder layer, as ``ctxlib.analysis.occurrences.layer_names`` orders them."""

    def __init__(self, model: BertModel) -> None:
        super().__init__()
        if not isinstance(model, BertModel):
            raise TypeError(f"model must be a ctxlib BertModel, got {type(model).__name__}")
        if model.config.embedding_size is not None:
            raise ValueError(f"model has embedding_size={model.config.embedding_size} != hidden_size="
                             f"{model.config.hidden_size}: its static rows and hidden states differ in "
                             "width and cannot be stacked into one output")
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        static = self.model.embeddings.word_embeddings(input_ids)
        return torch.stack([static, *out.hidden_states])


def export_fp32(model: BertModel, path: str | Path) -> Path:
    """Write ``AllLayers(model)`` as a float32 ONNX graph (one file, weights inside)."""
    path = as_path("path", path)
    wrapped = AllLayers(model)
    # A two-sentence example of unequal lengths; any other shape works on the exported graph.
    attention_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    input_ids = torch.arange(1, 9).view(2, 4) % model.config.vocab_size
    batch = torch.export.Dim("batch")
    length = torch.export.Dim("sequence", max=model.config.max_position_embeddings)
    dynamic = ({0: batch, 1: length}, {0: batch, 1: length})
    # Dropout off: the graph is for inference; the caller's model keeps its own mode.
    with evaluating(wrapped), warnings.catch_warnings():
        # The exporter's notes (unused axis names, deprecations inside torch) are not ours to fix.
        warnings.simplefilter("ignore")
        program = torch.onnx.export(wrapped, (input_ids, attention_mask), dynamo=True, opset_version=OPSET,
                                    input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME],
                                    dynamic_shapes=dynamic, verbose=False)
    graph = program.model_proto
    onnx.checker.check_model(graph, full_check=True)
    with atomic_path(path) as temporary:
        onnx.save_model(graph, temporary)
    return path


def quantize_int8(source: str | Path, target: str | Path, *, min_elements: int = 65_536) -> Path:
    """Store the large weight matrices of a float32 graph as int8: symmetric, one scale per
    output channel (a ``MatMul``/``Gemm`` weight's output unit, an embedding table's row), ``w ≈ s·q`` with
    ``q ∈ [-127, 127]``, restored by a ``DequantizeLinear`` node. The computation stays float32;
    only the file shrinks. Tables under ``min_elements`` entries (segment embeddings, biases,
    LayerNorm) stay float32: they cost little and rounding them buys nothing."""
    source, target = as_path("source", source), as_path("target", target)
    if not source.is_file():
        raise ValueError(f"source={str(source)!r} is not a file")
    check_positive_int("min_elements", min_elements)
    graph = onnx.load(source)
    # For each tensor, the axes along which its readers take output channels (None: not a weight).
    axes: dict[str, set[int | None]] = {}
    for node in graph.graph.node:
        transposed = any(a.name == "transB" and a.i for a in node.attribute)
        for position, name in enumerate(node.input):
            axis = {("MatMul", 1): 1, ("Gemm", 1): 0 if transposed else 1, ("Gather", 0): 0}.get((node.op_type, position))
            axes.setdefault(name, set()).add(axis)
    kept, quantized, dequantize = [], [], []
    for tensor in graph.graph.initializer:
        weight = numpy_helper.to_array(tensor)
        readers = axes.get(tensor.name, {None})
        axis = next(iter(readers)) if len(readers) == 1 else None
        if axis is None or weight.ndim != 2 or weight.size < min_elements or weight.dtype != np.float32:
            kept.append(tensor)
            continue
        scale = np.abs(weight).max(axis=1 - axis) / 127.0
        scale[scale == 0] = 1.0  # an all-zero channel: any scale restores it exactly
        q = np.rint(weight / np.expand_dims(scale, 1 - axis)).clip(-127, 127).astype(np.int8)
        names = [f"{tensor.name}_int8", f"{tensor.name}_scale", f"{tensor.name}_zero_point"]
        quantized += [numpy_helper.from_array(q, names[0]), numpy_helper.from_array(scale.astype(np.float32), names[1]),
                      numpy_helper.from_array(np.zeros(len(scale), np.int8), names[2])]
        # The restored weight keeps the original name, so the nodes that read it are unchanged.
        dequantize.append(helper.make_node("DequantizeLinear", names, [tensor.name], axis=axis,
                                           name=f"{tensor.name}_dequantize"))
    if not dequantize:
        raise ValueError(f"source={str(source)!r} has no MatMul/Gemm weight or embedding table of at least "
                         f"{min_elements} entries to quantise")
    del graph.graph.initializer[:]
    graph.graph.initializer.extend(kept + quantized)
    nodes = dequantize + list(graph.graph.node)
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    onnx.checker.check_model(graph, full_check=True)
    with atomic_path(target) as temporary:
        onnx.save_model(graph, temporary)
    return target


def export_int8(model: BertModel, path: str | Path) -> Path:
    """``export_fp32`` then ``quantize_int8``: the file the browser loads."""
    path = as_path("path", path)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = export_fp32(model, Path(scratch) / "model-fp32.onnx")
        return quantize_int8(fp32, path)
