"""How a fine-tuning run starts from the pretrained model (notes §5.1): a task head on MiniLM's
encoder, every weight first drawn from BERT's initialisation under the run's seed, then the
encoder's replaced by MiniLM's. Its own module, so that a recipe using it (fine-tuning on a task,
MiniLM on NSP) is keyed in the training cache on this code and not on the other recipe's."""

from __future__ import annotations

import torch

from ctxlib.models.pretrained import minilm
from ctxlib.training.loop import seeded


def start_from(model: torch.nn.Module, seed: int, pretrained: bool = True) -> torch.nn.Module:
    """Initialise ``model`` (a ctxlib head model, its encoder ``model.bert`` MiniLM-shaped) as a
    fine-tuning run starts: every weight from BERT's initialisation under ``seed``, then, if
    ``pretrained``, the encoder's from MiniLM; the word embeddings frozen. Returns ``model``."""
    with seeded(seed):  # the head's (and, for a random encoder, the encoder's) initialisation
        model.apply(model._init_module)
    if pretrained:
        model.bert.load_state_dict(minilm(shared=True)[0].state_dict())  # copies the values
    # Word embeddings stay as they start: a few hundred sentences show ~1,500 of the 30,522
    # WordPieces, and AdamW's decoupled decay would shrink every row at each step regardless.
    # It also makes a step ~40% cheaper.
    model.bert.embeddings.word_embeddings.requires_grad_(False)
    return model
