"""ELECTRA: replaced-token detection (Clark et al. 2020; notes §7.2, eqs 7.1–7.2).

A small *generator*, a BERT masked language model, fills the masked positions of a sentence
with tokens sampled from its predictions. A *discriminator*, a BERT with a one-logit head on
every token, then says of each token of the corrupted sentence whether it is the original or a
replacement. The discriminator is the model kept for downstream use. Because it learns from
every position and not only the 15% that are masked, it learns more per step than BERT's MLM.

* eq 7.1, the generator's loss, is BERT's MLM loss on the masked positions (eq 3.1);
* eq 7.2 as corrected by the errata: the discriminator's loss is a binary cross-entropy over
  every real (non-padding) position,
  ``−Σ_t [1(x̂_t ≠ x_t) log D(x̂, t) + 1(x̂_t = x_t) log(1 − D(x̂, t))]``, averaged, where
  ``D(x̂, t)`` is the probability that token t was replaced (the book's convention and the
  released code's; Clark et al. write D for "original", which swaps D and 1 − D). A sampled token that happens to
  equal the original counts as original;
* the total is ``L_MLM + λ L_Disc`` with λ = 50. No gradient flows through the sampling: the
  generator is trained by its MLM loss alone, not adversarially.

The generator shares the discriminator's embeddings (the token, position and segment tables and
their LayerNorm), as in the paper. It may be shallower (``generator_layers``) and narrower
(``generator_hidden_size``; the paper's is 1/4 to 1/2 of the discriminator's width): a narrower
generator reads the shared tables through a projection of its own, as in Clark et al.'s code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ctxlib._checks import as_bool_mask, check_index_tensor, check_positive_real, check_same_shape
from ctxlib.models.bert import BertConfig, BertLMPredictionHead, BertModel, BertPreTrainedModel, mlm_cross_entropy
from ctxlib.objectives.masking import IGNORE_INDEX

DISCRIMINATOR_WEIGHT = 50.0  # λ of Clark et al. 2020, §3


def sample_replacements(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row of ``logits`` ``[N, V]``, drawn from ``softmax(logits)``, with no gradient
    (the sample is discrete; ELECTRA does not backpropagate through it)."""
    with torch.no_grad():
        probabilities = logits.detach().float().softmax(-1)
        return torch.multinomial(probabilities, 1, generator=generator).squeeze(-1)


def replaced_token_labels(original: torch.Tensor, corrupted: torch.Tensor) -> torch.Tensor:
    """Eq 7.2's targets: 1.0 where the corrupted token differs from the original, else 0.0.
    A replacement that equals the original is labelled original, as in the paper."""
    check_same_shape("corrupted", corrupted, "original", original)
    return (corrupted != original).float()


def discriminator_loss(logits: torch.Tensor, replaced: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Eq 7.2, corrected: the mean binary cross-entropy of "replaced" over every real position.
    ``logits`` ``[B, T]`` are the discriminator's scores for "replaced"; ``replaced`` its 0/1
    targets; ``attention_mask`` (1 = real token) keeps padding out of the mean."""
    check_same_shape("replaced", replaced, "logits", logits)
    losses = F.binary_cross_entropy_with_logits(logits.float(), replaced.float(), reduction="none")
    if attention_mask is None:
        return losses.mean()
    real = as_bool_mask("attention_mask", attention_mask, logits.shape)
    if not bool(real.any()):
        raise ValueError("attention_mask marks no real token: the loss, a mean over real tokens, is undefined")
    return losses[real].mean()


class ElectraDiscriminatorHead(nn.Module):
    """Dense, GELU, then one logit per token: "is this token a replacement?"."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(F.gelu(self.dense(hidden))).squeeze(-1)


@dataclass
class ElectraOutput:
    """The losses (eq 7.1, eq 7.2 and the weighted total), the corrupted input the discriminator
    saw, its targets and its logits ``[B, T]``."""

    loss: torch.Tensor
    mlm_loss: torch.Tensor
    discriminator_loss: torch.Tensor
    corrupted_ids: torch.Tensor
    replaced: torch.Tensor
    discriminator_logits: torch.Tensor


class Electra(BertPreTrainedModel):
    """Generator and discriminator, trained together on ``L_MLM + λ L_Disc`` (eq 7.1 plus λ
    times eq 7.2).

    The generator has ``generator_layers`` blocks of width ``generator_hidden_size`` (default:
    the discriminator's width), with ``4 ×`` that width in its feed-forward layer and heads of the
    discriminator's head size. Both models read the same embedding tables. After pretraining,
    ``discriminator`` is an ordinary ``BertModel`` for probing or fine-tuning.
    """

    def __init__(self, config: BertConfig, generator_layers: int = 1, generator_hidden_size: int | None = None,
                 discriminator_weight: float = DISCRIMINATOR_WEIGHT) -> None:
        super().__init__()
        if isinstance(generator_layers, bool) or not isinstance(generator_layers, int) \
                or not 1 <= generator_layers <= config.num_hidden_layers:
            raise ValueError(f"generator_layers must be an int in [1, num_hidden_layers={config.num_hidden_layers}] "
                             f"(the generator is the smaller model), got {generator_layers!r}")
        self.config = config
        self.discriminator_weight = check_positive_real("discriminator_weight", discriminator_weight)
        self.discriminator = BertModel(config, pooler=False)
        self.discriminator_head = ElectraDiscriminatorHead(config)
        generator_config = self._generator_config(config, generator_layers, generator_hidden_size)
        self.generator = BertModel(generator_config, pooler=False)
        self.generator_head = BertLMPredictionHead(generator_config)
        self.apply(self._init_module)
        # Shared embeddings (Clark et al. §3.2): the generator reads the discriminator's tables and
        # LayerNorm; a projection to a different width stays its own.
        shared, reader = self.discriminator.embeddings, self.generator.embeddings
        for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm"):
            setattr(reader, name, getattr(shared, name))
        self.generator_head.decoder.weight = shared.word_embeddings.weight
        self._generator_options = {"generator_layers": generator_layers, "generator_hidden_size": generator_hidden_size,
                                   "discriminator_weight": self.discriminator_weight}

    _SHARED = ("word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight",
               "LayerNorm.weight", "LayerNorm.bias")

    def tied_keys(self) -> tuple[str, ...]:
        """The generator's views of the discriminator's embedding tables: saved once, under
        ``discriminator.embeddings``."""
        return (*(f"generator.embeddings.{name}" for name in self._SHARED), "generator_head.decoder.weight")

    def hf_config(self) -> dict[str, Any]:
        return dict(self._generator_options)

    @classmethod
    def options_from_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {name: config[name] for name in ("generator_layers", "generator_hidden_size", "discriminator_weight")
                if name in config}

    @staticmethod
    def _generator_config(config: BertConfig, layers: int, hidden_size: int | None) -> BertConfig:
        """The generator's shape: as Clark et al.'s code scales it, with the discriminator's
        embedding width, so a narrower generator gets a projection from the shared tables."""
        head_size = config.head_dim
        if hidden_size is not None and (isinstance(hidden_size, bool) or not isinstance(hidden_size, int)
                                        or not 1 <= hidden_size <= config.hidden_size or hidden_size % head_size):
            raise ValueError(f"generator_hidden_size must be a multiple of the head size {head_size} in "
                             f"[{head_size}, hidden_size={config.hidden_size}], got {hidden_size!r}")
        if hidden_size is None or hidden_size == config.hidden_size:
            return BertConfig(**{**config.__dict__, "num_hidden_layers": layers})
        return BertConfig(**{**config.__dict__, "num_hidden_layers": layers, "hidden_size": hidden_size,
                             "intermediate_size": 4 * hidden_size, "num_attention_heads": hidden_size // head_size,
                             "embedding_size": config.embedding_width})

    def forward(self, input_ids: torch.Tensor, *, labels: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, generator: torch.Generator | None = None) -> ElectraOutput:
        """``input_ids`` are masked as for BERT (``ctxlib.objectives.masking.mask_tokens``) and ``labels`` hold
        the originals at the masked positions, ``IGNORE_INDEX`` elsewhere. The generator predicts the masked
        tokens (eq 7.1); samples from it replace them; the discriminator labels every token of
        the result (eq 7.2). ``generator`` seeds the sampling."""
        check_index_tensor("labels", labels, ndim=2)
        check_same_shape("labels", labels, "input_ids", input_ids)
        masked = labels != IGNORE_INDEX
        if not masked.any():
            raise ValueError(f"labels mark no masked position (all are {IGNORE_INDEX}): there is nothing to replace")
        hidden = self.generator(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        logits = self.generator_head(hidden[masked])
        mlm_loss = mlm_cross_entropy(logits, labels[masked])
        original = torch.where(masked, labels, input_ids)
        corrupted = original.clone()
        corrupted[masked] = sample_replacements(logits, generator)
        replaced = replaced_token_labels(original, corrupted)
        hidden = self.discriminator(corrupted, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        scores = self.discriminator_head(hidden)
        disc_loss = discriminator_loss(scores, replaced, attention_mask)
        return ElectraOutput(mlm_loss + self.discriminator_weight * disc_loss, mlm_loss, disc_loss, corrupted,
                             replaced, scores)
