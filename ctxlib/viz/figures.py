"""Matplotlib figures the chapters share. Each function draws on axes it is given or makes.

Colours come from one fixed palette and each group also gets its own marker, so the figures
read in greyscale and for colour-blind readers.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes

from ctxlib.analysis.attention_scaling import ScalingStudy
from ctxlib.analysis.attention_views import HeadStatistics
from ctxlib.analysis.polysemy import PolysemyStudy, checked_study
from ctxlib.analysis.probe import Separation
from ctxlib.objectives.masking import MaskingCounts

from ctxlib.viz.palette import MARKERS, PALETTE


def scatter_groups(ax: Axes, points: np.ndarray, labels: Sequence[str], legend: dict[str, str] | None = None,
                   title: str = "") -> None:
    """Points coloured and shaped by label; ``legend`` maps a label to its legend text."""
    labels = np.asarray(labels)
    for i, label in enumerate(dict.fromkeys(labels)):
        chosen = labels == label
        ax.scatter(*points[chosen].T, s=36, alpha=0.8, color=PALETTE[i % len(PALETTE)],
                   marker=MARKERS[i % len(MARKERS)], edgecolors="white", linewidths=0.5,
                   label=(legend or {}).get(label, label))
    if np.ptp(points) == 0:
        # Autoscaling would blow a single point up into the whole panel; say what it is instead.
        ax.set_xlim(-1, 1)
        ax.set_ylim(-1, 1)
        ax.annotate(f"all {len(points)} occurrences\nshare one vector", (0, 0), xytext=(0, -0.55),
                    ha="center", color="0.3")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)


def plot_separation(ax: Axes, separation: Separation, highlight: str | None = None, title: str = "") -> None:
    """Silhouette and leave-one-out 1-NN accuracy against depth, with the 1-NN chance level."""
    x = np.arange(len(separation.layer_names))
    ax.plot(x, separation.nn_accuracy, "-o", color=PALETTE[0], label="1-NN sense accuracy")
    ax.plot(x, separation.silhouette, "-s", color=PALETTE[1], label="silhouette")
    ax.axhline(separation.chance, color="grey", linestyle=":", linewidth=1, label="1-NN chance")
    if highlight is not None:
        ax.axvline(separation.layer_names.index(highlight), color="grey", alpha=0.3, linewidth=8)
    ax.set_xticks(x, [name.replace("layer ", "") for name in separation.layer_names])
    ax.set_xlabel("layer (static row, then 0 = embeddings … L)")
    ax.set_ylim(min(-0.1, min(separation.silhouette) - 0.05), 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)


def new_figure(ncols: int, nrows: int = 1, width: float = 4.2, height: float = 3.6,
               margins: dict[str, float] | None = None) -> tuple[plt.Figure, np.ndarray]:
    """A grid of axes. Constrained layout by default; fixed ``margins`` (``subplots_adjust``
    arguments) for figures a widget redraws, since constrained layout doubles the draw time."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout=None if margins else "constrained")
    if margins:
        fig.subplots_adjust(**margins)
    return fig, axes


def plot_mix_trajectories(trajectories: dict, title: str = "") -> plt.Figure:
    """One panel per task: each layer's weight ``softmax(w)_j`` and the held-out accuracy
    (dotted) against the training step, and γ (dashed, right axis). ``trajectories`` maps a task
    name to a ``ctxlib.analysis.scalar_mix_probe.MixTrajectory``."""
    fig, axes = new_figure(len(trajectories), width=4.6, height=3.3,
                           margins={"left": 0.07, "right": 0.93, "bottom": 0.16, "top": 0.84, "wspace": 0.35})
    for ax, (task, trajectory) in zip(axes[0], trajectories.items()):
        steps = np.arange(len(trajectory.gamma))
        for j, name in enumerate(trajectory.layer_names):
            ax.plot(steps, trajectory.weights[:, j], color=PALETTE[j % len(PALETTE)], label=f"s_{j} ({name})")
        ax.plot(trajectory.accuracy_steps, trajectory.accuracy_curve, ":", color="0.35", label="held-out accuracy")
        ax.set_ylim(0, 1)
        ax.set_xlabel("step")
        ax.set_ylabel("softmax(w)_j")
        accuracy = "" if np.isnan(trajectory.accuracy) else f", held-out accuracy {trajectory.accuracy:.0%}"
        ax.set_title(f"{task}{accuracy}")
        ax.grid(alpha=0.3)
        twin = ax.twinx()
        twin.plot(steps, trajectory.gamma, "k--", linewidth=1, label="γ")
        twin.set_ylabel("γ")
        lines = ax.get_lines() + twin.get_lines()
        ax.legend(lines, [line.get_label() for line in lines], loc="upper left")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_masking(counts: MaskingCounts, title: str = "") -> plt.Figure:
    """Left: what became of the selected tokens, observed against the binomial expectation
    (± 2 sd). Right: the share of all non-special positions the model sees in each state."""
    fig, axes = new_figure(2, width=4.4, height=3.2,
                           margins={"left": 0.12, "right": 0.97, "bottom": 0.3, "top": 0.8, "wspace": 0.3})
    left, right = axes[0]
    names = list(counts.outcomes)
    left.bar(names, [counts.outcomes[n] for n in names], color=PALETTE[:3], alpha=0.8, label="observed")
    left.errorbar(names, [counts.expected[n] for n in names], yerr=[2 * counts.sd[n] for n in names],
                  fmt="o", color="black", capsize=4, label="expected ± 2 sd")
    left.set_ylabel("selected tokens")
    left.set_title(f"{counts.selected:,} of {counts.eligible:,} selected\n"
                   f"(expected {counts.selection_expected:,.0f} ± {counts.selection_sd:.0f})")
    left.legend()
    shares = {"not predicted": (counts.eligible - counts.selected) / counts.eligible,
              **{f"predicted, {n}": counts.outcomes[n] / counts.eligible for n in names}}
    start = 0.0
    for colour, (name, share) in zip(("#dddddd", *PALETTE[:3]), shares.items()):
        right.barh([0], [share], left=start, color=colour, label=f"{name}: {share:.1%}")
        start += share
    right.set_xlim(0, 1)
    right.set_yticks([])
    right.set_xlabel("share of the input positions")
    right.set_title("what the model sees")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_scaling(study: ScalingStudy) -> plt.Figure:
    """Variance of q·k, the largest softmax weight and the softmax's gradient norm against d_k,
    unscaled and scaled by √d_k (eq 4.2)."""
    fig, axes = new_figure(3, width=3.4, height=3.0)
    titles = {"variance": "variance of the scores", "max_weight": "largest softmax weight",
              "jacobian_norm": "‖∂softmax/∂scores‖ (gradient that passes)"}
    for ax, (name, title) in zip(axes[0], titles.items()):
        for colour, (scaling, values) in zip(PALETTE, getattr(study, name).items()):
            ax.plot(study.d_k, values, "o-", color=colour, label=scaling)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0][0].set_yscale("log", base=2)
    axes[0][1].axhline(1 / study.keys, color="grey", ls=":", label=f"uniform (1/{study.keys})")
    axes[0][1].legend()
    return fig


def plot_attention(ax: Axes, probs: np.ndarray | torch.Tensor, tokens: Sequence[str], title: str = "") -> None:
    """A ``[T, T]`` attention map: row = query, column = key, darker = more weight."""
    probs = np.asarray(probs)
    ax.imshow(probs, cmap="Blues", vmin=0, vmax=max(float(probs.max()), 1e-9))
    ax.set_xticks(range(len(tokens)), tokens, rotation=90)
    ax.set_yticks(range(len(tokens)), tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)


def plot_head_statistics(stats: HeadStatistics) -> plt.Figure:
    """One ``[layer × head]`` grid per statistic of Clark et al. (2019)."""
    panels = {"entropy (bits)": stats.entropy, **{f"mass on {k}": v for k, v in stats.mass.items()}}
    fig, axes = new_figure(3, nrows=2, width=3.3, height=2.6)
    for ax, (name, values) in zip(axes.flat, panels.items()):
        image = ax.imshow(values, cmap="viridis", aspect="auto")
        ax.set_title(name)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        # Numbered from 1, as the text names "layer 1, head 3".
        ax.set_xticks(range(values.shape[1]), [str(i + 1) for i in range(values.shape[1])])
        ax.set_yticks(range(values.shape[0]), [str(i + 1) for i in range(values.shape[0])])
        fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


# The explorer's figure is redrawn on every move; fixed margins keep that under 200 ms.
_EXPLORER_MARGINS = {"left": 0.02, "right": 0.99, "bottom": 0.27, "top": 0.92, "wspace": 0.1}


def draw_polysemy(study: PolysemyStudy, word: str = "bank", layer: str | None = None, method: str = "PCA") -> plt.Figure:
    """The explorer's picture: occurrences of ``word`` at ``layer`` projected to 2-D and
    coloured by sense, beside both separation scores against depth."""
    layer = checked_study(study).check(word, layer, method)
    entry = study.by_word[word]
    fig, axes = new_figure(2, width=4.6, height=4.2, margins=_EXPLORER_MARGINS)
    index = entry.separation.layer_names.index(layer)
    legend = {sense: f"{sense}: {gloss}" for sense, gloss in entry.glosses.items()}
    scatter_groups(axes[0, 0], study.projection(word, layer, method), entry.labels, legend,
                   title=f"“{word}”, {layer}, {method}: silhouette "
                         f"{entry.separation.silhouette[index]:.2f}, 1-NN {entry.separation.nn_accuracy[index]:.0%}")
    axes[0, 0].legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False)
    plot_separation(axes[0, 1], entry.separation, highlight=layer, title=f"“{word}”: sense separation by depth")
    axes[0, 1].legend(loc="lower right")
    return fig

def draw_polysemy_layers(study: PolysemyStudy, word: str = "bank", method: str = "PCA") -> plt.Figure:
    """One panel per layer for ``word``: the senses pulling apart with depth."""
    study.check(word, study.layer_names[0], method)
    entry = study.by_word[word]
    cols = 4
    rows = -(-len(study.layer_names) // cols)
    fig, axes = new_figure(cols, rows, width=2.6, height=2.4)
    for ax, layer, sil, acc in zip(axes.flat, study.layer_names, entry.separation.silhouette,
                                   entry.separation.nn_accuracy):
        scatter_groups(ax, study.projection(word, layer, method), entry.labels,
                       title=f"{layer}\nsil {sil:.2f} · 1-NN {acc:.0%}")
    for ax in axes.flat[len(study.layer_names):]:
        ax.axis("off")
    # Below the panels: inside the first one it covered its note ("all N occurrences share one vector").
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncol=len(set(entry.labels)))
    return fig

def draw_polysemy_words(study: PolysemyStudy) -> plt.Figure:
    """1-NN sense accuracy and silhouette against depth, one line per word."""
    fig, axes = new_figure(2, width=5.0)
    x = np.arange(len(study.layer_names))
    for word in study.words:
        sep = study.by_word[word].separation
        axes[0, 0].plot(x, sep.nn_accuracy, "-o", markersize=3, label=word)
        axes[0, 1].plot(x, sep.silhouette, "-o", markersize=3, label=word)
    for ax, name in zip(axes[0], ("leave-one-out 1-NN sense accuracy", "silhouette (cosine)")):
        ax.set_xticks(x, [n.replace("layer ", "") for n in study.layer_names])
        ax.set_xlabel("layer (static row, then 0 = embeddings … 6)")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
    # Below the panels, clear of the curves (inside, ten words covered the highest one).
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=5)
    return fig
