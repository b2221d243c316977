"""Sense separation layer by layer: the analysis behind Chapter 1's polysemy explorer.

For each ambiguous word of ``ctxlib.senses`` it gathers every occurrence's vectors at every
layer (``ctxlib.occurrences``), scores how well the layers separate the senses
(``ctxlib.probe``) and draws the picture (``ctxlib.viz``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import matplotlib.pyplot as plt
import numpy as np

from ctxlib import senses as sense_data
from ctxlib._checks import check_choice
from ctxlib.bert import BertModel
from ctxlib.occurrences import OccurrenceVectors, occurrence_vectors
from ctxlib.probe import Separation, separation_by_layer
from ctxlib.viz import PROJECTIONS, new_figure, plot_separation, project_2d, scatter_groups

# The explorer's figure is redrawn on every move; fixed margins keep that under 200 ms.
_EXPLORER_MARGINS = {"left": 0.02, "right": 0.99, "bottom": 0.27, "top": 0.92, "wspace": 0.1}


@dataclass(frozen=True)
class WordSenses:
    """One word's occurrences: their vectors at every layer, their sense labels, the scores."""

    word: str
    glosses: dict[str, str]
    labels: tuple[str, ...]
    texts: tuple[str, ...]
    occurrences: OccurrenceVectors
    separation: Separation


class PolysemyStudy:
    """All sense words encoded by one model; projections are computed once and kept."""

    def __init__(self, model: BertModel, tokenizer, words: Sequence[str] | None = None) -> None:
        self.words = tuple(words) if words is not None else sense_data.sense_words()
        spans = [s for word in self.words for s in sense_data.load_sense_sentences(word)]
        # One pass over all sentences: batching across words is what makes this fast.
        vectors = occurrence_vectors(model, tokenizer, spans)
        self.layer_names = vectors.layer_names
        self.by_word: dict[str, WordSenses] = {}
        for word in self.words:
            chosen = [i for i, s in enumerate(spans) if s.word == word]
            occ = OccurrenceVectors(vectors.layer_names, vectors.vectors[:, chosen])
            labels = tuple(spans[i].sense for i in chosen)
            self.by_word[word] = WordSenses(
                word=word, glosses=sense_data.senses(word), labels=labels,
                texts=tuple(spans[i].text for i in chosen), occurrences=occ,
                separation=separation_by_layer(occ.vectors, labels, occ.layer_names),
            )
        self._projection = cache(self._project)

    def _project(self, word: str, layer: str, method: str) -> np.ndarray:
        return project_2d(self.by_word[word].occurrences.layer(layer), method)

    def precompute_projections(self) -> None:
        """Fill the projection cache for every word, layer and method."""
        for word in self.words:
            for layer in self.layer_names:
                for method in PROJECTIONS:
                    self._projection(word, layer, method)

    def check(self, word: str, layer: str, method: str) -> None:
        check_choice("word", word, self.words)
        check_choice("layer", layer, self.layer_names)
        check_choice("method", method, PROJECTIONS)

    def draw(self, word: str = "bank", layer: str | None = None, method: str = "PCA") -> plt.Figure:
        """The explorer's picture: occurrences of ``word`` at ``layer`` projected to 2-D and
        coloured by sense, beside both separation scores against depth."""
        layer = layer or self.layer_names[-1]
        self.check(word, layer, method)
        entry = self.by_word[word]
        fig, axes = new_figure(2, width=4.6, height=4.2, margins=_EXPLORER_MARGINS)
        index = entry.separation.layer_names.index(layer)
        legend = {sense: f"{sense}: {gloss}" for sense, gloss in entry.glosses.items()}
        scatter_groups(axes[0, 0], self._projection(word, layer, method), entry.labels, legend,
                       title=f"“{word}”, {layer}, {method}: silhouette "
                             f"{entry.separation.silhouette[index]:.2f}, 1-NN {entry.separation.nn_accuracy[index]:.0%}")
        axes[0, 0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False)
        plot_separation(axes[0, 1], entry.separation, highlight=layer, title=f"“{word}”: sense separation by depth")
        axes[0, 1].legend(fontsize=7, loc="lower right")
        return fig

    def draw_layers(self, word: str = "bank", method: str = "PCA") -> plt.Figure:
        """One panel per layer for ``word``: the senses pulling apart with depth."""
        self.check(word, self.layer_names[0], method)
        entry = self.by_word[word]
        cols = 4
        rows = -(-len(self.layer_names) // cols)
        fig, axes = new_figure(cols, rows, width=2.6, height=2.4)
        for ax, layer, sil, acc in zip(axes.flat, self.layer_names, entry.separation.silhouette,
                                       entry.separation.nn_accuracy):
            scatter_groups(ax, self._projection(word, layer, method), entry.labels,
                           title=f"{layer}\nsil {sil:.2f} · 1-NN {acc:.0%}")
        for ax in axes.flat[len(self.layer_names):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7, loc="lower left")
        return fig

    def draw_all_words(self) -> plt.Figure:
        """1-NN sense accuracy and silhouette against depth, one line per word."""
        fig, axes = new_figure(2, width=5.0)
        x = np.arange(len(self.layer_names))
        for word in self.words:
            sep = self.by_word[word].separation
            axes[0, 0].plot(x, sep.nn_accuracy, "-o", markersize=3, label=word)
            axes[0, 1].plot(x, sep.silhouette, "-o", markersize=3, label=word)
        for ax, name in zip(axes[0], ("leave-one-out 1-NN sense accuracy", "silhouette (cosine)")):
            ax.set_xticks(x, [n.replace("layer ", "") for n in self.layer_names])
            ax.set_xlabel("layer (static row, then 0 = embeddings … 6)")
            ax.set_title(name, fontsize=10)
            ax.grid(alpha=0.3)
        axes[0, 1].legend(fontsize=7, ncol=2)
        return fig
