"""ipywidgets explorers. Each wraps a ctxlib drawing function: the figure at the default
setting is drawn when the widget is built, so the executed page keeps it as a static image;
moving a control redraws it (in Binder, Colab or a local kernel).

The figure travels as an ``ipywidgets.Image`` holding PNG bytes: its state is all the static
page needs to show it, and replacing ``value`` is the cheapest update a widget has.
"""

from __future__ import annotations

import html
import io
import threading
from collections.abc import Callable, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from ctxlib.analysis.attention_scaling import SCALINGS, attention_scores
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.projection import PROJECTIONS
from ctxlib.analysis.scalar_mix_probe import fit_scalar_mix
from ctxlib.objectives.masking import mask_tokens, masking_counts
from ctxlib.viz.figures import draw_polysemy, new_figure, plot_attention, plot_masking, plot_mix_trajectories

# At 80 dpi and the fastest zlib level, drawing and encoding a two-panel figure takes ~0.1 s.
WIDGET_DPI = 80


def figure_png(figure: plt.Figure, dpi: int = WIDGET_DPI) -> bytes:
    """Render and close ``figure``; closing keeps pyplot from showing it again."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    plt.close(figure)
    return buffer.getvalue()


def figure_widget(draw: Callable[[], plt.Figure]) -> tuple[widgets.Image, Callable[[], None]]:
    """An image widget showing ``draw()``, and the function that redraws it."""
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))

    def redraw() -> None:
        image.value = figure_png(draw())

    redraw()
    return image, redraw


def polysemy_explorer(study: PolysemyStudy, word: str = "bank", layer: str | None = None,
                      method: str = "PCA") -> widgets.VBox:
    """Pick a word, a layer (the static row, then the embedding output and every encoder layer)
    and a 2-D projection; see the occurrences coloured by sense and the scores against depth."""
    layer = layer or study.layer_names[-1]
    study.check(word, layer, method)
    wide = {"description_width": "initial"}
    word_box = widgets.Dropdown(options=study.words, value=word, description="word", style=wide,
                                layout=widgets.Layout(width="180px"))
    layer_box = widgets.SelectionSlider(options=study.layer_names, value=layer, description="layer",
                                        continuous_update=False, style=wide, layout=widgets.Layout(width="420px"))
    method_box = widgets.ToggleButtons(options=PROJECTIONS, value=method, description="projection", style=wide)
    image, redraw = figure_widget(lambda: draw_polysemy(study, word_box.value, layer_box.value, method_box.value))
    for control in (word_box, layer_box, method_box):
        control.observe(lambda _change: redraw(), names="value")
    # t-SNE takes ~0.2 s per picture; computing them all while the reader looks keeps each
    # later move to a redraw.
    threading.Thread(target=study.precompute_projections, daemon=True).start()
    return widgets.VBox([widgets.HBox([word_box, method_box]), layer_box, image])


def scalar_mix_explorer(tasks: dict, steps: int = 300, lr: float = 0.02) -> widgets.VBox:
    """Train eq 2.5's ``s_j`` and γ for each task (``ctxlib.analysis.layer_probes.TokenTask``) side by
    side, and watch them move: "train" reruns with the chosen learning rate and steps,
    redrawing every 25 steps. Built with one run at the defaults, whose figure the page keeps."""

    lr_box = widgets.FloatLogSlider(value=lr, base=10, min=-3, max=-0.5, step=0.25, description="learning rate",
                                    style={"description_width": "initial"}, continuous_update=False)
    steps_box = widgets.IntSlider(value=steps, min=50, max=1000, step=50, description="steps",
                                  style={"description_width": "initial"}, continuous_update=False)
    button = widgets.Button(description="train", icon="play")
    current: dict = {}

    def train_all(redraw: Callable[[], None] | None) -> None:
        for name, task in tasks.items():
            def show(_step: int, partial, name=name) -> None:
                current[name] = partial
                if redraw is not None:
                    redraw()
            current[name] = fit_scalar_mix(task.train_layers, task.train_labels, task.test_layers, task.test_labels,
                                           task.layer_names, steps=steps_box.value, lr=lr_box.value,
                                           on_step=show if redraw is not None else None)

    train_all(None)
    image, redraw = figure_widget(lambda: plot_mix_trajectories(dict(current)))
    button.on_click(lambda _button: (train_all(redraw), redraw()))
    return widgets.VBox([widgets.HBox([lr_box, steps_box, button]), image])


def _masked_html(tokenizer, original: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> str:
    """One sentence as the model sees it: [MASK] in red, a random token in orange (the
    original struck through beside it), a selected but unchanged token underlined in green."""
    pieces = []
    for was, now, label in zip(original.tolist(), inputs.tolist(), labels.tolist()):
        if was in tokenizer.all_special_ids:
            continue
        token = html.escape(tokenizer.convert_ids_to_tokens(now))
        if label == -100:
            pieces.append(token)
        elif now == tokenizer.mask_token_id:
            pieces.append(f'<b style="color:#c0392b">{token}</b>')
        elif now != was:
            old = html.escape(tokenizer.convert_ids_to_tokens(was))
            pieces.append(f'<span style="color:#d35400"><s>{old}</s> {token}</span>')
        else:
            pieces.append(f'<u style="color:#1e8449">{token}</u>')
    return " ".join(pieces)


def masking_explorer(tokenizer, sentences: Sequence[str], mlm_probability: float = 0.15,
                     mask_replace_prob: float = 0.8, random_replace_prob: float = 0.1, shown: int = 4,
                     seed: int = 0) -> widgets.VBox:
    """Sliders for the selection probability and the [MASK] / random split (the rest is kept);
    shows ``shown`` masked sentences and the counts over all ``sentences`` against the binomial
    expectation. "resample" draws new masks."""

    batch = tokenizer(list(sentences), padding=True, return_special_tokens_mask=True, return_tensors="pt")
    ids, special = batch["input_ids"], batch["special_tokens_mask"].bool()
    wide = {"description_width": "initial"}
    p_box = widgets.FloatSlider(value=mlm_probability, min=0.01, max=0.5, step=0.01, description="selection p",
                                style=wide, continuous_update=False)
    mask_box = widgets.FloatSlider(value=mask_replace_prob, min=0, max=1, step=0.05, description="→ [MASK]",
                                   style=wide, continuous_update=False)
    random_box = widgets.FloatSlider(value=random_replace_prob, min=0, max=1, step=0.05, description="→ random",
                                     style=wide, continuous_update=False)
    button = widgets.Button(description="resample", icon="refresh")
    text = widgets.HTML()
    state = {"seed": seed}

    def draw() -> plt.Figure:
        probabilities = {"mlm_probability": p_box.value, "mask_replace_prob": mask_box.value,
                         "random_replace_prob": random_box.value}
        inputs, labels = mask_tokens(ids, vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
                                     special_tokens_mask=special, generator=torch.Generator().manual_seed(state["seed"]),
                                     **probabilities)
        text.value = "<br>".join(_masked_html(tokenizer, ids[i], inputs[i], labels[i]) for i in range(shown))
        counts = masking_counts(ids, inputs, labels, special, mask_token_id=tokenizer.mask_token_id, **probabilities)
        keep = 1 - mask_box.value - random_box.value
        return plot_masking(counts, title=f"p = {p_box.value:.2f}; of the selected: {mask_box.value:.0%} [MASK], "
                                          f"{random_box.value:.0%} random, {keep:.0%} unchanged")

    image, redraw = figure_widget(draw)

    def resample(_button) -> None:
        state["seed"] += 1
        redraw()

    def on_change(change) -> None:
        # The shares must sum to at most 1: the slider just moved wins, the other gives way
        # (its own change event is then ignored, so the figure is drawn once).
        if state.get("adjusting"):
            return
        other = {mask_box: random_box, random_box: mask_box}.get(change["owner"])
        if other is not None and mask_box.value + random_box.value > 1:
            state["adjusting"] = True
            other.value = round(1 - change["new"], 2)
            state["adjusting"] = False
        redraw()

    for control in (p_box, mask_box, random_box):
        control.observe(on_change, names="value")
    button.on_click(resample)
    return widgets.VBox([widgets.HBox([p_box, mask_box, random_box, button]), text, image])


def scaling_explorer(d_k: int = 64, keys: int = 16, seed: int = 0) -> widgets.VBox:
    """Pick d_k; see one random query's softmax weights over ``keys`` keys, without and with
    eq 4.2's division by √d_k."""

    box = widgets.SelectionSlider(options=[2 ** i for i in range(1, 13)], value=d_k, description="d_k",
                                  continuous_update=False)

    def draw() -> plt.Figure:
        scores = attention_scores(box.value, keys, 1, torch.Generator().manual_seed(seed))
        fig, axes = new_figure(2, width=4.0, height=2.6,
                               margins={"left": 0.1, "right": 0.97, "bottom": 0.2, "top": 0.82, "wspace": 0.3})
        for ax, scaling in zip(axes[0], SCALINGS):
            weights = scores[scaling][0].softmax(-1).numpy()
            ax.bar(range(keys), weights, color="#0072B2")
            ax.set_ylim(0, 1)
            ax.set_xlabel("key")
            ax.set_title(f"{scaling}: largest weight {weights.max():.2f}", fontsize=9)
        axes[0][0].set_ylabel("softmax weight")
        fig.suptitle(f"d_k = {box.value}", fontsize=10)
        return fig

    image, redraw = figure_widget(draw)
    box.observe(lambda _change: redraw(), names="value")
    return widgets.VBox([box, image])


def attention_explorer(model, tokenizer, text: str, text_pair: str | None = None) -> widgets.VBox:
    """Layer and head selectors over ``model``'s attention maps for one input (computed once)."""

    encoded = tokenizer(text, text_pair, return_tensors="pt")
    with torch.no_grad():
        attentions = model(**encoded, output_attentions=True).attentions
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    layer_box = widgets.IntSlider(value=1, min=1, max=len(attentions), description="layer", continuous_update=False)
    head_box = widgets.IntSlider(value=1, min=1, max=attentions[0].shape[1], description="head",
                                 continuous_update=False)

    def draw() -> plt.Figure:
        fig, axes = new_figure(1, width=5.2, height=5.0,
                               margins={"left": 0.2, "right": 0.97, "bottom": 0.2, "top": 0.93})
        probs = attentions[layer_box.value - 1][0, head_box.value - 1]
        plot_attention(axes[0][0], probs, tokens, title=f"layer {layer_box.value}, head {head_box.value}")
        return fig

    image, redraw = figure_widget(draw)
    for control in (layer_box, head_box):
        control.observe(lambda _change: redraw(), names="value")
    return widgets.VBox([widgets.HBox([layer_box, head_box]), image])
