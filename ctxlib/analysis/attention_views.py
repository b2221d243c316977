"""Looking at attention (notes §4.1–4.2): bertviz's views offline, and per-head statistics.

bertviz (Vig 2019) draws its head and model views with d3, jQuery and require.js, which its
HTML loads from cdnjs. The book's pages may not reach a CDN, so ``bertviz_view`` asks bertviz
for the HTML and points those URLs at the copies in ``book/_static/vendor`` (relative to a
chapter page in ``book/``). An unknown CDN URL is an error, so a new bertviz version cannot
silently put the network back.

``head_statistics`` measures what Clark et al. (2019) measured for BERT's heads: how spread
out each head's attention is (entropy), and how much of it goes to ``[CLS]``, to ``[SEP]``, to
the previous and the next token, and to punctuation.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ctxlib._checks import check_choice, check_texts
from ctxlib._modes import evaluating

BERTVIZ_CDN_TO_VENDOR = {
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js": "../_static/vendor/requirejs/require.js",
    "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min": "../_static/vendor/d3/d3.min",
    "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min": "../_static/vendor/jquery/jquery.min",
}
VIEWS = ("head", "model")


def offline_html(html: str) -> str:
    """bertviz's HTML with every CDN URL replaced by the vendored copy."""
    for cdn, local in BERTVIZ_CDN_TO_VENDOR.items():
        html = html.replace(cdn, local)
    # Quoted URLs are the ones a browser fetches (src="...", require.js paths); bertviz also
    # credits tensor2tensor in a comment, which loads nothing.
    leftover = re.findall(r"[\"'](https?://[^\"']+)[\"']", html)
    if leftover:
        raise ValueError(f"bertviz's HTML loads {sorted(set(leftover))}, which BERTVIZ_CDN_TO_VENDOR does not map "
                         "to a vendored file: vendor it (tools/vendor_js.sh) and add it to the map")
    return html


def bertviz_view(kind: str, attentions: Sequence[torch.Tensor], tokens: Sequence[str],
                 sentence_b_start: int | None = None):
    """bertviz's ``head_view`` or ``model_view`` as an ``IPython.display.HTML`` that needs no
    network. ``attentions``: one ``[1, heads, T, T]`` tensor per layer (``output_attentions``)."""
    import bertviz
    from IPython.display import HTML

    check_choice("kind", kind, VIEWS)
    view = bertviz.head_view if kind == "head" else bertviz.model_view
    # bertviz writes each weight as a float's repr, ~20 characters, five times over for a
    # sentence pair; 3 decimals draw the same lines and cut chapter 4's page from 2.7 MB to ~0.6 MB.
    # (Rounded in float64: a float32 0.123 would print as 0.12300000339746475.)
    shown = tuple(attention.detach().double().round(decimals=3) for attention in attentions)
    html = view(shown, list(tokens), sentence_b_start, html_action="return").data
    return HTML(offline_html(html))


@dataclass(frozen=True)
class HeadStatistics:
    """Per layer and head (arrays ``[L, heads]``), averaged over all real query tokens:
    attention entropy in bits and the attention mass on each kind of key."""

    entropy: np.ndarray
    mass: dict[str, np.ndarray]


def _is_punctuation(token: str) -> bool:
    return len(token) > 0 and all(c in string.punctuation for c in token)


@torch.no_grad()
def head_statistics(model, tokenizer, sentences: Sequence[str], batch_size: int = 32) -> HeadStatistics:
    """Clark et al.'s statistics for every head of ``model`` (a ``ctxlib.models.bert.BertModel``)."""
    check_texts("sentences", sentences)
    with evaluating(model):
        return _head_statistics(model, tokenizer, sentences, batch_size)


def _head_statistics(model, tokenizer, sentences: Sequence[str], batch_size: int) -> HeadStatistics:
    totals: dict[str, torch.Tensor] = {}
    entropy_total, queries = None, 0
    for first in range(0, len(sentences), batch_size):
        batch = tokenizer(list(sentences[first:first + batch_size]), padding=True, return_tensors="pt")
        probs = torch.stack(model(**batch, output_attentions=True).attentions, dim=1)  # [B, L, H, T, T]
        real = batch["attention_mask"].bool()
        ids = batch["input_ids"]
        length = ids.shape[1]
        position = torch.arange(length)
        punctuation = torch.tensor([[_is_punctuation(t) for t in tokenizer.convert_ids_to_tokens(row)] for row in ids])
        keys = {
            "[CLS]": (ids == tokenizer.cls_token_id)[:, None, :].expand(-1, length, -1),
            "[SEP]": (ids == tokenizer.sep_token_id)[:, None, :].expand(-1, length, -1),
            "previous token": (position[None, :] == position[:, None] - 1).expand(len(ids), -1, -1),
            "next token": (position[None, :] == position[:, None] + 1).expand(len(ids), -1, -1),
            "punctuation": punctuation[:, None, :].expand(-1, length, -1),
        }
        for name, where in keys.items():
            mass = (probs * where[:, None, None].float()).sum(-1)  # [B, L, H, T]
            totals[name] = totals.get(name, 0) + (mass * real[:, None, None]).sum((0, 3))
        entropy = -(probs * probs.clamp_min(1e-12).log2()).sum(-1)
        entropy_total = (0 if entropy_total is None else entropy_total) + (entropy * real[:, None, None]).sum((0, 3))
        queries += int(real.sum())
    return HeadStatistics((entropy_total / queries).numpy(), {k: (v / queries).numpy() for k, v in totals.items()})
