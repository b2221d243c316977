"""BERT (Devlin et al. 2019) from the equations of notes §3 and §4, in plain PyTorch.

Module and parameter names follow Hugging Face's ``modeling_bert.py`` one to one
(``embeddings.word_embeddings``, ``encoder.layer.3.attention.self.query``, ``cls.predictions``),
so a Hugging Face BERT checkpoint loads as it is and what ctxlib saves loads in
``transformers``. The forward pass reads like the notes:

* eq 3.2  input = token + position + segment embeddings, then LayerNorm (``BertEmbeddings``)
* eqs 4.1–4.5  multi-head self-attention (``ctxlib.layers.attention``), then W_O, Add & LayerNorm
* post-LN feed-forward blocks with exact (erf) GELU (``BertLayer``)
* eq 4.7  the MLM head; eqs 3.3/4.8 the NSP head; eq 4.6 their summed loss (``BertForPreTraining``)
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from ctxlib._checks import (check_bool, check_choice, check_index_tensor, check_positive_int, check_positive_real,
                            check_probability, check_same_shape, check_values_below)
from ctxlib.layers.attention import MultiHeadSelfAttention, causal_bias, padding_bias
from ctxlib.models import hf_format
from ctxlib.objectives.masking import IGNORE_INDEX

# Checkpoint entries that are buffers or tied copies, not parameters of their own.
_DERIVED_KEYS = ("embeddings.position_ids", "cls.predictions.decoder.bias")
# How positions enter: BERT's learned table added to the input, or RoPE (Su et al. 2021,
# ``ctxlib.layers.positions``): no table, queries and keys rotated by their positions instead.
POSITION_EMBEDDING_TYPES = ("absolute", "rotary")


@dataclass
class BertConfig:
    """BERT's hyperparameters, with Hugging Face's field names; validated on construction."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02
    hidden_act: str = "gelu"
    pad_token_id: int = 0
    # ALBERT's two savings (Lan et al. 2020), both off in BERT. ``embedding_size``: the token,
    # position and segment tables are this narrow and a linear map widens their sum to
    # ``hidden_size`` (ELECTRA-small uses it too). ``share_layers``: one block's weights serve
    # every layer.
    embedding_size: int | None = None
    share_layers: bool = False
    position_embedding_type: str = "absolute"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            check_positive_int(name, getattr(self, name))
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                f"{self.num_attention_heads}: each head gets d_k = hidden_size / num_attention_heads "
                "dimensions (eq 4.5), which must be a whole number"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            check_probability(name, getattr(self, name), allow_one=False)
        for name in ("layer_norm_eps", "initializer_range"):
            check_positive_real(name, getattr(self, name))
        if self.embedding_size is not None:
            check_positive_int("embedding_size", self.embedding_size)
        check_bool("share_layers", self.share_layers)
        check_choice("position_embedding_type", self.position_embedding_type, POSITION_EMBEDDING_TYPES)
        # BERT uses the exact erf GELU; the tanh approximation would silently change every output.
        check_choice("hidden_act", self.hidden_act, ["gelu"])
        if isinstance(self.pad_token_id, bool) or not isinstance(self.pad_token_id, int) \
                or not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id must be an int in [0, vocab_size={self.vocab_size}), "
                             f"got {self.pad_token_id!r}")

    @property
    def embedding_width(self) -> int:
        """Width of the embedding tables, ``embedding_size`` if factorised, else ``hidden_size``."""
        return self.embedding_size or self.hidden_size

    @property
    def head_dim(self) -> int:
        """d_k = d_v = d_model / h (notes §4.2)."""
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> BertConfig:
        """Read a Hugging Face ``config.json`` dict; settings ctxlib does not implement are errors."""
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        check_choice("model_type", config.get("model_type", "bert"), ["bert"])
        for flag in ("is_decoder", "add_cross_attention"):
            if config.get(flag):
                raise ValueError(f"{flag}=True is not supported: ctxlib's BertModel is an encoder")
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in config.items() if key in names})

    def to_dict(self) -> dict[str, Any]:
        config = dataclasses.asdict(self)
        # A plain BERT's config.json carries no ALBERT fields, so transformers reads it as BERT.
        for name, off in (("embedding_size", None), ("share_layers", False)):
            if config[name] == off:
                del config[name]
        return {"model_type": "bert", **config}


@dataclass
class BertOutput:
    """What ``BertModel`` returns; ``hidden_states`` and ``attentions`` only when asked for.

    ``hidden_states``: L+1 tensors ``[B, T, H]``, the embedding output first. Where
    ``attention_mask`` marks padding, the encoder layers' vectors there are 0 (they mean nothing).
    ``attentions``: L tensors ``[B, heads, T, T]``, after the softmax (bertviz's input).
    """

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class BertPreTrainingOutput:
    """What ``BertForPreTraining`` returns; the losses are ``None`` without labels."""

    prediction_logits: torch.Tensor
    seq_relationship_logits: torch.Tensor
    loss: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


def init_bert_module(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation of one module, as transformers' ``BertPreTrainedModel._init_weights``
    and Google's ``modeling.py`` (truncated there, plain here, as in transformers): every linear
    layer and embedding table, the position table included, from N(0, ``std``); zero biases and
    padding rows; LayerNorm at weight 1, bias 0. ``model.apply(partial(init_bert_module, std=...))``
    starts any model built from BERT's parts (ELECTRA, the heads, §4.4's position LMs) the same way."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.Embedding) and module.padding_idx is not None:
        with torch.no_grad():
            module.weight[module.padding_idx].zero_()
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


class BertEmbeddings(nn.Module):
    """Eq 3.2: ``e_t = e_tok + e_pos + e_seg``, then LayerNorm and dropout; with a factorised
    ``embedding_size`` (ALBERT, ELECTRA-small), then a linear map to ``hidden_size``."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        width = config.embedding_width
        self.word_embeddings = nn.Embedding(config.vocab_size, width, padding_idx=config.pad_token_id)
        rotary = config.position_embedding_type == "rotary"  # positions enter in attention instead
        self.position_embeddings = None if rotary else nn.Embedding(config.max_position_embeddings, width)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, width)
        self.LayerNorm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.projection = nn.Linear(width, config.hidden_size) if config.embedding_size is not None else None

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        summed = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        if self.position_embeddings is not None:
            summed = summed + self.position_embeddings(torch.arange(input_ids.size(1), device=input_ids.device))
        embedded = self.dropout(self.LayerNorm(summed))
        return embedded if self.projection is None else self.projection(embedded)


class BertAddNorm(nn.Module):
    """A projection back to ``d_model``, dropout, then Add & LayerNorm (post-LN).

    It closes both sub-layers of a block: after attention its ``dense`` is W_O of eq 4.4
    (``h·d_v → d_model``; checkpoints call it ``attention.output``), after the feed-forward
    network it contracts ``intermediate_size → d_model`` (``output``).
    """

    def __init__(self, in_features: int, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    """Sub-layer 1 of a block: MultiHead(H) (eq 4.4), Add & LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = MultiHeadSelfAttention(config.hidden_size, config.num_attention_heads,
                                           config.attention_probs_dropout_prob,
                                           rotary=config.position_embedding_type == "rotary")
        self.output = BertAddNorm(config.hidden_size, config)

    def forward(
        self, hidden: torch.Tensor, bias: torch.Tensor | None, need_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        heads, probs = self.self(hidden, bias, need_weights)
        return self.output(heads, hidden), probs


class BertIntermediate(nn.Module):
    """The feed-forward network's expansion ``d_model → intermediate_size`` with exact GELU."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(hidden))


class BertLayer(nn.Module):
    """One post-LN Transformer encoder block (notes §3.5): attention, Add & LN, FFN, Add & LN."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertAddNorm(config.intermediate_size, config)

    def forward(
        self, hidden: torch.Tensor, bias: torch.Tensor | None, need_weights: bool,
        real: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``real`` (``[B, T]`` bool) marks the tokens that are not padding, when a mask was given."""
        attended, probs = self.attention(hidden, bias, need_weights)
        if real is None:
            return self.output(self.intermediate(attended), attended), probs
        # The feed-forward network acts on each token alone, so padding can skip it: the
        # biggest matmuls of the block then run on real tokens only. Padding rows become 0.
        tokens = attended[real]
        out = attended.new_zeros(attended.shape)
        out[real] = self.output(self.intermediate(tokens), tokens)
        return out, probs


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        if config.share_layers:  # ALBERT: the same block, applied num_hidden_layers times
            self.layer = nn.ModuleList([BertLayer(config)] * config.num_hidden_layers)
        else:
            self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))


class BertPooler(nn.Module):
    """``tanh(W h_[CLS] + b)``: the sentence vector the NSP and classification heads read."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden[:, 0]))


def _few(keys: list[str]) -> str:
    """How many ``keys`` there are and the first few, for an error message."""
    return f"{len(keys)} tensor(s), e.g. {keys[:3]}"


class BertPreTrainedModel(nn.Module):
    """Initialisation and the Hugging Face directory format, shared by every BERT model.

    ``base_prefix`` is where the encoder sits in this model's state dict ("" for ``BertModel``,
    "bert." for models with heads), so either kind of checkpoint loads into either kind of model.
    """

    base_prefix: ClassVar[str] = ""
    config: BertConfig

    def _init_module(self, module: nn.Module) -> None:
        """BERT's initialisation of one module (``init_bert_module``) at this config's range."""
        init_bert_module(module, self.config.initializer_range)

    def tied_keys(self) -> tuple[str, ...]:
        """State-dict entries that alias another parameter and are not written to disk."""
        return ()

    def _checkpoint_keys(self, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Move a checkpoint's encoder entries under this model's ``base_prefix``."""
        has_prefix = any(key.startswith("bert.") for key in state_dict)
        renamed = {}
        for key, value in state_dict.items():
            if key.endswith(_DERIVED_KEYS):
                continue
            base = key.removeprefix("bert.") if has_prefix else key
            if not has_prefix or key.startswith("bert."):
                renamed[self.base_prefix + base] = value
            else:
                renamed[key] = value  # a head of a BertForPreTraining checkpoint
        return renamed

    def hf_config(self) -> dict[str, Any]:
        """Entries beyond ``BertConfig`` that ``transformers`` needs to rebuild this model."""
        return {}

    @classmethod
    def options_from_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """The constructor options a ``config.json`` holds for this class (what ``hf_config`` wrote)."""
        return {}

    @classmethod
    def from_pretrained(cls, path: str | Path, **head_options: Any) -> Self:
        """Load a Hugging Face BERT directory: ``config.json`` and ``model.safetensors`` or
        ``pytorch_model.bin``, written by ``BertModel``, ``BertForPreTraining`` or a task model.
        The head's options come from ``config.json`` (``num_labels`` of a classifier);
        ``head_options`` given here go to the constructor in their place.

        Heads absent from the checkpoint keep their fresh initialisation, with a warning, and a
        head of another task that the checkpoint holds is ignored, with a warning. Everything else
        that does not fit is an error naming the file and the tensors, raised before a weight is
        loaded: a missing encoder weight, a module the checkpoint holds only in part, a tensor of
        another shape than ``config.json`` implies, a tensor in one of this model's parts that it
        has no place for (an encoder layer more than ``num_hidden_layers``). Each would leave a
        model that runs and is silently wrong.
        """
        raw = hf_format.read_config(path)
        try:
            config = BertConfig.from_dict(raw)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{hf_format.config_file(path)}: {error}") from None
        weights = hf_format.weights_file(path)  # a directory without weights fails before a model is built
        model = cls(config, **{**cls.options_from_config(raw), **head_options})
        state = model._checkpoint_keys(hf_format.read_state_dict(path))
        shapes = {key: tuple(value.shape) for key, value in model.state_dict().items()}
        expected = set(shapes) - set(model.tied_keys())
        missing = sorted(expected - set(state))
        parts = {name for name, _ in model.named_children()}
        # The checkpoint's tensors in parts this model has (its encoder, its head) must all fit;
        # others belong to a head this model lacks. A model without BERT's pretraining heads skips
        # a pretraining checkpoint's (cls.*) by design, without a warning.
        unexpected = sorted(key for key in set(state) - set(shapes) if "cls" in parts or not key.startswith("cls."))
        misplaced = [key for key in unexpected if key.split(".")[0] in parts]
        foreign = [key for key in unexpected if key not in misplaced]
        encoder_missing = [key for key in missing if key.startswith(model.base_prefix)]
        if encoder_missing:
            held = f"; it holds tensors this {cls.__name__} does not have, {_few(unexpected)}" if unexpected else ""
            raise ValueError(f"{weights}: lacks {len(encoder_missing)} encoder weight(s) that config.json implies, "
                             f"e.g. {encoder_missing[:3]}{held}: another model's weights, or a config.json of "
                             "another size?")
        wrong = [key for key in sorted(expected & set(state)) if tuple(state[key].shape) != shapes[key]]
        if wrong:
            raise ValueError(f"{weights}: {wrong[0]} has shape {tuple(state[wrong[0]].shape)}, but config.json (and "
                             f"any head option given) makes it {shapes[wrong[0]]} in this {cls.__name__}; "
                             f"{len(wrong)} weight(s) disagree: the weights and the config do not belong together")
        if misplaced:
            raise ValueError(f"{weights}: holds tensors this {cls.__name__} has no place for (config.json: "
                             f"num_hidden_layers={config.num_hidden_layers}), {_few(misplaced)}: the weights and "
                             "the config do not belong together")
        # A module the checkpoint holds part of is not a fresh head: it would mix saved and random weights.
        partial = sorted({key.rpartition(".")[0] for key in missing} & {key.rpartition(".")[0] for key in state})
        if partial:
            lacking = [key for key in missing if key.rpartition(".")[0] == partial[0]]
            raise ValueError(f"{weights}: holds part of {partial[0]} but lacks {len(lacking)} of its tensor(s), "
                             f"e.g. {lacking[:3]}: the file is incomplete")
        if missing:
            warnings.warn(f"{cls.__name__}.from_pretrained: no weights for {missing} in {weights}; "
                          "they keep their random initialisation", stacklevel=2)
        if foreign:
            warnings.warn(f"{cls.__name__}.from_pretrained: ignored unknown weights {foreign[:5]} "
                          f"in {weights}", stacklevel=2)
        model.load_state_dict({key: value for key, value in state.items() if key in expected}, strict=False)
        return model.eval()

    def save_pretrained(self, path: str | Path) -> Path:
        """Write a directory that ``transformers`` (and ``from_pretrained``) load."""
        config = self.config
        if config.embedding_size is not None or config.share_layers or config.position_embedding_type != "absolute":
            raise ValueError("save_pretrained writes a Hugging Face BERT, which has no factorised embeddings, shared "
                             f"layers or RoPE; this model has embedding_size={config.embedding_size}, "
                             f"share_layers={config.share_layers}, position_embedding_type="
                             f"{config.position_embedding_type!r}. Save its state_dict with torch.save instead")
        config = {**self.config.to_dict(), **self.hf_config(), "architectures": [type(self).__name__]}
        if self.tied_keys():
            config["tie_word_embeddings"] = True
        tied = set(self.tied_keys())
        state = {key: value for key, value in self.state_dict().items() if key not in tied}
        return hf_format.write(path, config, state)


def validate_inputs(
    config: BertConfig,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    token_type_ids: torch.Tensor | None,
) -> None:
    """Reject what BERT cannot encode, naming the argument, the value and the limit.

    Types and shapes are checked always. The values (ids in range, a 0/1 mask with a token in
    every row) are checked only when the model runs eagerly: a graph being captured for export
    (``torch.export``, ``torch.jit.trace``) has symbols, not values, and a Python ``if`` on them
    would either fail or bake the example's answer into the graph. The exported graph keeps its
    own guard: an out-of-range id fails its embedding lookup (ONNX ``Gather``)."""
    check_index_tensor("input_ids", input_ids, ndim=2)
    batch, length = input_ids.shape
    if batch == 0 or length == 0:
        raise ValueError(f"input_ids is an empty batch (shape {tuple(input_ids.shape)}); "
                         "give at least one sequence of at least one token")
    if config.position_embedding_type == "absolute" and length > config.max_position_embeddings:
        raise ValueError(
            f"input_ids has sequence length {length} > max_position_embeddings="
            f"{config.max_position_embeddings}: BERT's learned absolute position table has no row "
            "past its last position and cannot extrapolate; truncate or split the text into windows"
        )
    for name, ids in (("attention_mask", attention_mask), ("token_type_ids", token_type_ids)):
        if ids is not None:
            check_index_tensor(name, ids, ndim=2)
            check_same_shape(name, ids, "input_ids", input_ids)
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        return
    check_values_below("input_ids", input_ids, config.vocab_size, "vocab_size")
    if attention_mask is not None:
        check_values_below("attention_mask", attention_mask, 2, "2 (a 0/1 mask)")
        empty = ~attention_mask.bool().any(dim=1)
        if bool(empty.any()):
            raise ValueError(f"attention_mask row {int(empty.nonzero()[0])} is all zeros: "
                             "that sequence has no token to attend to")
    if token_type_ids is not None:
        check_values_below("token_type_ids", token_type_ids, config.type_vocab_size, "type_vocab_size")


class BertModel(BertPreTrainedModel):
    """The BERT encoder: embeddings (eq 3.2), L encoder blocks, pooler. Row t of
    ``last_hidden_state`` is eq 3.5's output vector ``H_t^(L)``. ``pooler=False`` leaves the
    pooler out (ELECTRA has none); ``pooler_output`` is then None."""

    def __init__(self, config: BertConfig, pooler: bool = True) -> None:
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
        if not isinstance(pooler, bool):
            raise TypeError(f"pooler must be a bool, got {type(pooler).__name__} {pooler!r}")
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if pooler else None
        self.apply(self._init_module)
        # Gradient checkpointing of the encoder blocks while training (TrainConfig turns it on).
        self.gradient_checkpointing = False

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        causal: bool = False,
    ) -> BertOutput:
        """``causal=True`` hides from each token every token after it, as a left-to-right
        (GPT-style) decoder's mask does (notes §7.3); BERT itself is trained without it."""
        for name, flag in (("output_attentions", output_attentions), ("output_hidden_states", output_hidden_states),
                           ("causal", causal)):
            check_bool(name, flag)  # causal="no" would be truthy: a silently causal model
        validate_inputs(self.config, input_ids, attention_mask, token_type_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden = self.embeddings(input_ids, token_type_ids)
        # A given mask is always applied, padded or not: the graph then depends on the inputs'
        # shapes only, never on their values, so an exported graph keeps the mask as an input.
        real = None if attention_mask is None else attention_mask.bool()
        bias = None if real is None else padding_bias(attention_mask, hidden.dtype)
        if causal:
            future = causal_bias(input_ids.size(1), hidden.dtype, hidden.device)
            # Both biases may hide a key; clamping keeps the sum finite (min + min overflows to -inf).
            bias = future if bias is None else (bias + future).clamp(min=torch.finfo(hidden.dtype).min)
        hidden_states, attentions = [hidden], []
        checkpointing = self.gradient_checkpointing and self.training and torch.is_grad_enabled()
        for block in self.encoder.layer:
            if checkpointing:
                # Keep only each block's input; its activations are recomputed in the backward
                # pass: memory for one block instead of L, at the cost of a second forward.
                hidden, probs = torch.utils.checkpoint.checkpoint(block, hidden, bias, output_attentions, real,
                                                                  use_reentrant=False)
            else:
                hidden, probs = block(hidden, bias, output_attentions, real)
            hidden_states.append(hidden)
            attentions.append(probs)
        return BertOutput(
            last_hidden_state=hidden,
            pooler_output=None if self.pooler is None else self.pooler(hidden),
            hidden_states=tuple(hidden_states) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
        )


class BertPredictionHeadTransform(nn.Module):
    """Dense, GELU, LayerNorm: the step before the vocabulary projection that eq 4.7 omits."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        # To the embedding width, so the decoder can be the (possibly narrower) embedding table.
        self.dense = nn.Linear(config.hidden_size, config.embedding_width)
        self.LayerNorm = nn.LayerNorm(config.embedding_width, eps=config.layer_norm_eps)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(F.gelu(self.dense(hidden)))


class BertLMPredictionHead(nn.Module):
    """Eq 4.7's logits, corrected (errata §4.3): ``transform(H_t) Eᵀ + b``, with the decoder ``E``
    tied to the input word embeddings and an output bias per vocabulary entry."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.embedding_width, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(hidden)) + self.bias


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        # Eq 3.3: P(IsNext | A, B) from the pooled [CLS] vector; index 0 is IsNext.
        self.seq_relationship = nn.Linear(config.hidden_size, 2)


class BertForPreTraining(BertPreTrainedModel):
    """BERT with its two pretraining heads; the loss is eq 4.6, ``L = L_MLM + L_NSP``, with
    ``L_NSP`` the cross-entropy of the true IsNext/NotNext label (eq 3.4, written out as eq 4.8)."""

    base_prefix = "bert."

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.bert = BertModel(config)
        self.config = config
        self.cls = BertPreTrainingHeads(config)
        self.cls.apply(self._init_module)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def tied_keys(self) -> tuple[str, ...]:
        return ("cls.predictions.decoder.weight",)

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        next_sentence_label: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        masked_only: bool = False,
        causal: bool = False,
    ) -> BertPreTrainingOutput:
        """``labels``: ``[B, T]`` original ids at masked positions (eq 3.1's set M), ``IGNORE_INDEX``
        elsewhere.
        ``next_sentence_label``: ``[B]``, 0 = B follows A (IsNext), 1 = B is a random sentence.

        With ``masked_only`` (which needs ``labels``), ``prediction_logits`` is ``[|M|, V]``, the
        rows of the masked positions in order: the vocabulary projection, the largest matmul of
        a small model, then runs on 15% of the tokens, as in BERT's own pretraining code
        (``masked_lm_positions``). The loss is the same. ``causal`` goes to ``BertModel``."""
        check_bool("masked_only", masked_only)
        out = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states, causal=causal)
        if labels is not None:
            check_index_tensor("labels", labels, ndim=2)
            check_same_shape("labels", labels, "input_ids", input_ids)
        if masked_only:
            if labels is None:
                raise ValueError("masked_only=True needs labels: they say which positions are masked")
            masked = labels != IGNORE_INDEX
            logits = self.cls.predictions(out.last_hidden_state[masked])
            labels = labels[masked]
        else:
            logits = self.cls.predictions(out.last_hidden_state)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)
        mlm_loss = nsp_loss = loss = None
        if labels is not None:
            mlm_loss = mlm_cross_entropy(logits, labels)
        if next_sentence_label is not None:
            check_index_tensor("next_sentence_label", next_sentence_label, ndim=1)
            if next_sentence_label.shape[0] != input_ids.shape[0]:
                raise ValueError(f"next_sentence_label must have one entry per sequence "
                                 f"({input_ids.shape[0]}), got {next_sentence_label.shape[0]}")
            check_values_below("next_sentence_label", next_sentence_label, 2, "2 (IsNext=0, NotNext=1)")
            nsp_loss = F.cross_entropy(nsp_logits, next_sentence_label)  # eq 4.8
        if mlm_loss is not None and nsp_loss is not None:
            loss = mlm_loss + nsp_loss  # eq 4.6
        else:
            loss = mlm_loss if mlm_loss is not None else nsp_loss
        return BertPreTrainingOutput(logits, nsp_logits, loss, mlm_loss, nsp_loss,
                                     out.hidden_states, out.attentions)


def mlm_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq 3.1 / 4.7: the mean negative log-likelihood of the original token over the masked set M
    (positions whose label is not ``IGNORE_INDEX``)."""
    vocab = logits.size(-1)
    selected = labels[labels != IGNORE_INDEX]
    if selected.numel() == 0:
        raise ValueError(f"labels mark no masked position (all are {IGNORE_INDEX}): the MLM loss, a mean over "
                         "the masked set M, is undefined; mask at least one token")
    check_values_below("labels (at masked positions)", selected, vocab, "vocab_size")
    return F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=IGNORE_INDEX)
