"""The book's explorers, each in two forms computed by one function (see ``ctxlib.viz.static_view``).

* **live**, in a kernel (Binder, Colab, local): an ipywidgets box; every control keeps its full
  range and recomputes, and the figure travels as an ``ipywidgets.Image`` of PNG bytes (its
  state is all a saved notebook needs to show it, and replacing ``value`` is the cheapest update
  a widget has).
* **static**, in the rendered book (``CTXBOOK_EXPLORERS=static``, set by ``tools/book.sh``):
  everything the controls can reach is computed at build time by the same code the live form
  runs, and drawn in the page by Vega (``ctxlib.viz.static_explorers``). Where a live control is
  continuous the static form covers a grid of it, and the chapter says which.

``form="live"``/``"static"`` chooses for one call. Arguments outside what the controls allow are
rejected (``ValueError`` naming the argument, the value and the range), never clamped.
"""

from __future__ import annotations

import html
import io
import math
import threading
from collections.abc import Callable, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch

from ctxlib._checks import check_choice, check_in_range, check_positive_int, check_texts
from ctxlib._modes import evaluating
from ctxlib._threads import one_thread
from ctxlib.analysis.attention_scaling import SCALINGS, attention_scores
from ctxlib.analysis.polysemy import PolysemyStudy, checked_study
from ctxlib.analysis.projection import PROJECTIONS
from ctxlib.analysis.scalar_mix_probe import MixTrajectory, fit_scalar_mix
from ctxlib.analysis.typed_sentence import typed_sentence_data
from ctxlib.objectives.masking import mask_tokens, masking_counts
from ctxlib.viz.figures import draw_polysemy, new_figure, plot_attention, plot_masking, plot_mix_trajectories
from ctxlib.viz.static_explorers import (
    attention_static,
    masking_static,
    polysemy_static,
    scalar_mix_static,
    scaling_static,
)
from ctxlib.viz.static_view import StaticExplorer, explorer_form, rounded

# At 80 dpi and the fastest zlib level, drawing and encoding a two-panel figure takes ~0.1 s.
WIDGET_DPI = 80

# The live controls' ranges (what an argument must lie in) and the static forms' grids.
SCALING_D_KS = tuple(2 ** i for i in range(1, 13))
MIX_LR_RANGE = (1e-3, 10 ** -0.5)
MIX_STEPS_RANGE = (50, 1000)
MIX_GRID_LRS = (0.002, 0.02, 0.2)
MIX_GRID_STEPS = (100, 300)  # the grid is 6 runs × 2 tasks, 2,400 steps: ~8 s at build time
MIX_POINTS = 50  # the static s_j explorer shows each run at every 2% of its steps
MASK_P_RANGE = (0.01, 0.5)
MASK_GRID_P = tuple(round(0.05 * i, 2) for i in range(1, 11))
MASK_GRID_SHARES = tuple(round(0.1 * i, 1) for i in range(11))


def check_on_grid(name: str, value: float, grid: Sequence[float]) -> None:
    """The static form can show only what it computed: its starting setting must be a grid point."""
    if not any(math.isclose(value, point, abs_tol=1e-9) for point in grid):
        raise ValueError(f"{name}={value!r} is not on the static explorer's grid {list(grid)}; "
                         "choose a grid value, or form='live' for the full range")


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


# --------------------------------------------------------------------------------------------
# polysemy (chapter 1)


def polysemy_data(study: PolysemyStudy) -> dict[str, dict[str, list]]:
    """Every word × layer × projection's 2-D points and every layer's scores, as columns:
    ``occurrences`` (occ, word, sense, text), ``senses`` (word, sense, gloss), ``points`` (occ,
    layer and method indices, x, y) and ``scores`` (word, layer index, silhouette, nn_accuracy,
    chance). The points are ``study.projection``'s, the ones the live figure draws."""
    occ: dict[str, list] = {"occ": [], "word": [], "sense": [], "text": []}
    senses: dict[str, list] = {"word": [], "sense": [], "gloss": []}
    points: dict[str, list] = {"occ": [], "layer": [], "method": [], "x": [], "y": []}
    scores: dict[str, list] = {"word": [], "layer": [], "silhouette": [], "nn_accuracy": [], "chance": []}
    for word in study.words:
        entry = study.by_word[word]
        first = len(occ["occ"])
        for i, (label, text) in enumerate(zip(entry.labels, entry.texts)):
            for key, value in zip(occ, (first + i, word, label, text)):
                occ[key].append(value)
        for sense, gloss in entry.glosses.items():
            for key, value in zip(senses, (word, sense, gloss)):
                senses[key].append(value)
        for li, layer in enumerate(study.layer_names):
            for mi, method in enumerate(PROJECTIONS):
                xy = study.projection(word, layer, method)
                points["occ"] += range(first, first + len(xy))
                points["layer"] += [li] * len(xy)
                points["method"] += [mi] * len(xy)
                points["x"] += rounded(xy[:, 0])
                points["y"] += rounded(xy[:, 1])
            sep = entry.separation
            for key, value in zip(scores, (word, li, *rounded([sep.silhouette[li], sep.nn_accuracy[li], sep.chance]))):
                scores[key].append(value)
    return {"occurrences": occ, "senses": senses, "points": points, "scores": scores}


def polysemy_explorer(study: PolysemyStudy, word: str = "bank", layer: str | None = None,
                      method: str = "PCA", form: str | None = None) -> widgets.VBox | StaticExplorer:
    """Pick a word, a layer (the static row, then the embedding output and every encoder layer)
    and a 2-D projection; see the occurrences coloured by sense and the scores against depth."""
    layer = checked_study(study).check(word, layer, method)
    if explorer_form(form) == "static":
        explorer = polysemy_static(study.words, study.layer_names, PROJECTIONS, **polysemy_data(study),
                                   word=word, layer=layer, method=method)
        # What the page needs to place a sentence the reader types (book/_static/typed_sentence.js).
        explorer.lazy["typed-sentence"] = typed_sentence_data(study)
        return explorer
    wide = {"description_width": "initial"}
    word_box = widgets.Dropdown(options=study.words, value=word, description="word", style=wide,
                                layout=widgets.Layout(width="180px"))
    layer_box = widgets.SelectionSlider(options=study.layer_names, value=layer, description="layer",
                                        continuous_update=False, style=wide, layout=widgets.Layout(width="420px"))
    method_box = widgets.ToggleButtons(options=PROJECTIONS, value=method, description="projection", style=wide)
    image, redraw = figure_widget(lambda: draw_polysemy(study, word_box.value, layer_box.value, method_box.value))
    for control in (word_box, layer_box, method_box):
        control.observe(lambda _change: redraw(), names="value")
    # t-SNE takes ~0.05 s per picture; computing them all while the reader looks keeps each
    # later move to a redraw. Not a daemon: one still inside t-SNE when the interpreter exits
    # aborts it (exit status 134); exit waits the few seconds instead.
    threading.Thread(target=study.precompute_projections, daemon=False).start()
    return widgets.VBox([widgets.HBox([word_box, method_box]), layer_box, image])


# --------------------------------------------------------------------------------------------
# ScalarMix's s_j (chapter 2)


def train_mixes(tasks: dict, steps: int, lr: float, every: int = 25,
                on_step: Callable[[str, MixTrajectory], None] | None = None) -> dict[str, MixTrajectory]:
    """Eq 2.5's ``s_j`` and γ trained for each task (``ctxlib.analysis.layer_probes.TokenTask``)."""
    runs = {}
    for name, task in tasks.items():
        hook = None if on_step is None else (lambda _step, partial, name=name: on_step(name, partial))
        runs[name] = fit_scalar_mix(task.train_layers, task.train_labels, task.test_layers, task.test_labels,
                                    task.layer_names, steps=steps, lr=lr, every=every, on_step=hook)
    return runs


def scalar_mix_data(tasks: dict, learning_rates: Sequence[float], step_counts: Sequence[int],
                    points: int = MIX_POINTS) -> dict[str, list]:
    """Every run of the grid, each seen at ``points`` + 1 evenly spaced moments: columns lr,
    steps, task (index), pct, step, gamma, accuracy and s0 … sL."""
    layer_count = len(next(iter(tasks.values())).layer_names)
    table: dict[str, list] = {key: [] for key in ("lr", "steps", "task", "pct", "step", "gamma", "accuracy",
                                                  *(f"s{j}" for j in range(layer_count)))}
    runs = {}
    # Each step is a few small matrix products (300 steps: 1.0 s of CPU on one thread).
    with one_thread():
        for lr in learning_rates:
            for steps in step_counts:
                if steps % points:
                    raise ValueError(f"step_counts must be multiples of points={points}, got {steps}")
                runs[lr, steps] = train_mixes(tasks, steps, lr, every=steps // points)
    for (lr, steps), by_task in runs.items():
        for t, run in enumerate(by_task.values()):
            at = run.accuracy_steps
            table["lr"] += [lr] * len(at)
            table["steps"] += [steps] * len(at)
            table["task"] += [t] * len(at)
            table["pct"] += [round(100 * s / steps) for s in at]
            table["step"] += [int(s) for s in at]
            table["gamma"] += rounded(run.gamma[at])
            table["accuracy"] += rounded(run.accuracy_curve)
            for j in range(layer_count):
                table[f"s{j}"] += rounded(run.weights[at, j])
    return table


def scalar_mix_explorer(tasks: dict, steps: int = 300, lr: float = 0.02,
                        form: str | None = None) -> widgets.VBox | StaticExplorer:
    """Train eq 2.5's ``s_j`` and γ for each task (``ctxlib.analysis.layer_probes.TokenTask``) side by
    side, and watch them move with the held-out accuracy. Live: "train" reruns with the chosen
    learning rate and steps, redrawing every 25 steps. Static: every run of the grid
    ``MIX_GRID_LRS`` × ``MIX_GRID_STEPS``, with a slider through training."""
    check_positive_int("steps", steps)
    check_in_range("steps", steps, *MIX_STEPS_RANGE)
    check_in_range("lr", lr, *MIX_LR_RANGE)
    if not tasks:
        raise ValueError("tasks is empty: give at least one TokenTask")
    if explorer_form(form) == "static":
        check_on_grid("lr", lr, MIX_GRID_LRS)
        check_on_grid("steps", steps, MIX_GRID_STEPS)
        return scalar_mix_static(list(tasks), next(iter(tasks.values())).layer_names, MIX_GRID_LRS, MIX_GRID_STEPS,
                                 scalar_mix_data(tasks, MIX_GRID_LRS, MIX_GRID_STEPS), lr, steps, MIX_POINTS)
    lr_box = widgets.FloatLogSlider(value=lr, base=10, min=math.log10(MIX_LR_RANGE[0]), max=math.log10(MIX_LR_RANGE[1]),
                                    step=0.25, description="learning rate", style={"description_width": "initial"},
                                    continuous_update=False)
    steps_box = widgets.IntSlider(value=steps, min=MIX_STEPS_RANGE[0], max=MIX_STEPS_RANGE[1], step=50,
                                  description="steps", style={"description_width": "initial"}, continuous_update=False)
    button = widgets.Button(description="train", icon="play")
    current: dict = train_mixes(tasks, steps, lr)
    image, redraw = figure_widget(lambda: plot_mix_trajectories(dict(current)))

    def train(_button) -> None:
        def show(name: str, partial: MixTrajectory) -> None:
            current[name] = partial
            redraw()
        current.update(train_mixes(tasks, steps_box.value, lr_box.value, on_step=show))
        redraw()

    button.on_click(train)
    return widgets.VBox([widgets.HBox([lr_box, steps_box, button]), image])


# --------------------------------------------------------------------------------------------
# masking (chapter 3)


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


class MaskingSetup:
    """The sentences tokenised once; ``draw(p, mask, random, seed)`` masks them all, as the
    explorer shows them (both forms call it)."""

    def __init__(self, tokenizer, sentences: Sequence[str]) -> None:
        check_texts("sentences", sentences)
        self.tokenizer = tokenizer
        batch = tokenizer(list(sentences), padding=True, return_special_tokens_mask=True, return_tensors="pt")
        self.ids, self.special = batch["input_ids"], batch["special_tokens_mask"].bool()

    def draw(self, p: float, mask: float, random: float, seed: int):
        probabilities = {"mlm_probability": p, "mask_replace_prob": mask, "random_replace_prob": random}
        inputs, labels = mask_tokens(self.ids, vocab_size=len(self.tokenizer), mask_token_id=self.tokenizer.mask_token_id,
                                     special_tokens_mask=self.special, generator=torch.Generator().manual_seed(seed),
                                     **probabilities)
        counts = masking_counts(self.ids, inputs, labels, self.special, mask_token_id=self.tokenizer.mask_token_id,
                                **probabilities)
        return inputs, labels, counts


def masking_data(setup: MaskingSetup, shown: int, seed: int) -> dict:
    """Every grid point, drawn with ``seed`` as the live form's first draw: the counts
    (``settings``; ``outcomes`` 0-2 as ``masking_counts``, 3 the positions not selected) and the first ``shown`` sentences' tokens coded ("." not
    selected, "M" [MASK], "R" random, "K" kept), with each random replacement (a draw of 2,000
    sentences: 2.3 ms of CPU on one thread)."""
    tok = setup.tokenizer
    real = [[(k, t) for k, t in enumerate(setup.ids[i].tolist()) if t not in tok.all_special_ids] for i in range(shown)]
    settings: dict[str, list] = {key: [] for key in ("index", "p", "mask", "random", "eligible", "selected",
                                                     "selection_expected", "selection_sd")}
    outcomes: dict[str, list] = {key: [] for key in ("setting", "outcome", "observed", "expected", "sd")}
    codes, random_tokens = [], []
    grid = [(p, mask, random) for p in MASK_GRID_P for mask in MASK_GRID_SHARES
            for random in MASK_GRID_SHARES if mask + random <= 1 + 1e-9]
    with one_thread():
        draws = [setup.draw(p, mask, random, seed) for p, mask, random in grid]
    for index, ((p, mask, random), (inputs, labels, counts)) in enumerate(zip(grid, draws)):
        row = (index, p, mask, random, counts.eligible, counts.selected,
               *rounded([counts.selection_expected, counts.selection_sd]))
        for key, value in zip(settings, row):
            settings[key].append(value)
        for o, name in enumerate(counts.outcomes):
            for key, value in zip(outcomes, (index, o, counts.outcomes[name],
                                             *rounded([counts.expected[name], counts.sd[name]]))):
                outcomes[key].append(value)
        # Outcome 3, the positions not selected, completes "what the model sees".
        for key, value in zip(outcomes, (index, 3, counts.eligible - counts.selected,
                                         *rounded([counts.eligible - counts.selection_expected, counts.selection_sd]))):
            outcomes[key].append(value)
        code, replaced, position = [], {}, 0
        for i, sentence in enumerate(real):
            now_row, label_row = inputs[i].tolist(), labels[i].tolist()
            for k, was in sentence:
                if label_row[k] == -100:
                    code.append(".")
                elif now_row[k] == tok.mask_token_id:
                    code.append("M")
                elif now_row[k] != was:
                    code.append("R")
                    replaced[position] = tok.convert_ids_to_tokens(now_row[k])
                else:
                    code.append("K")
                position += 1
        codes.append("".join(code))
        random_tokens.append(replaced)
    sentences = [tok.convert_ids_to_tokens([t for _, t in sentence]) for sentence in real]
    return {"settings": settings, "outcomes": outcomes, "sentences": sentences, "codes": codes, "random": random_tokens}


def masking_explorer(tokenizer, sentences: Sequence[str], mlm_probability: float = 0.15,
                     mask_replace_prob: float = 0.8, random_replace_prob: float = 0.1, shown: int = 4,
                     seed: int = 0, form: str | None = None) -> widgets.VBox | StaticExplorer:
    """Sliders for the selection probability and the [MASK] / random split (the rest is kept);
    shows ``shown`` masked sentences and the counts over all ``sentences`` against the binomial
    expectation. Live: "resample" draws new masks. Static: the grid ``MASK_GRID_P`` ×
    ``MASK_GRID_SHARES`` × ``MASK_GRID_SHARES`` (660 points), each the live form's first draw."""
    check_in_range("mlm_probability", mlm_probability, *MASK_P_RANGE)
    check_in_range("mask_replace_prob", mask_replace_prob, 0, 1)
    check_in_range("random_replace_prob", random_replace_prob, 0, 1)
    if mask_replace_prob + random_replace_prob > 1 + 1e-9:
        raise ValueError(f"mask_replace_prob + random_replace_prob must be at most 1 (the rest is kept unchanged), "
                         f"got {mask_replace_prob} + {random_replace_prob}")
    check_positive_int("shown", shown)
    check_texts("sentences", sentences)
    if shown > len(sentences):
        raise ValueError(f"shown must be at most len(sentences) = {len(sentences)}, got {shown}")
    setup = MaskingSetup(tokenizer, sentences)
    if explorer_form(form) == "static":
        check_on_grid("mlm_probability", mlm_probability, MASK_GRID_P)
        check_on_grid("mask_replace_prob", mask_replace_prob, MASK_GRID_SHARES)
        check_on_grid("random_replace_prob", random_replace_prob, MASK_GRID_SHARES)
        data = masking_data(setup, shown, seed)
        grid = {"p": list(MASK_GRID_P), "share": list(MASK_GRID_SHARES)}
        return masking_static(data["settings"], data["outcomes"], data["sentences"], data["codes"], data["random"],
                              grid, {"p": mlm_probability, "mask": mask_replace_prob, "random": random_replace_prob})
    wide = {"description_width": "initial"}
    p_box = widgets.FloatSlider(value=mlm_probability, min=MASK_P_RANGE[0], max=MASK_P_RANGE[1], step=0.01,
                                description="selection p", style=wide, continuous_update=False)
    mask_box = widgets.FloatSlider(value=mask_replace_prob, min=0, max=1, step=0.05, description="→ [MASK]",
                                   style=wide, continuous_update=False)
    random_box = widgets.FloatSlider(value=random_replace_prob, min=0, max=1, step=0.05, description="→ random",
                                     style=wide, continuous_update=False)
    button = widgets.Button(description="resample", icon="refresh")
    text = widgets.HTML()
    state = {"seed": seed}

    def draw() -> plt.Figure:
        inputs, labels, counts = setup.draw(p_box.value, mask_box.value, random_box.value, state["seed"])
        text.value = "<br>".join(_masked_html(tokenizer, setup.ids[i], inputs[i], labels[i]) for i in range(shown))
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


# --------------------------------------------------------------------------------------------
# √d_k and attention heads (chapter 4)


def query_weights(d_k: int, keys: int, seed: int) -> dict[str, np.ndarray]:
    """One random query's softmax weights over ``keys`` keys, unscaled and scaled (eq 4.2)."""
    scores = attention_scores(d_k, keys, 1, torch.Generator().manual_seed(seed))
    return {scaling: scores[scaling][0].softmax(-1).numpy() for scaling in SCALINGS}


def scaling_explorer(d_k: int = 64, keys: int = 16, seed: int = 0,
                     form: str | None = None) -> widgets.VBox | StaticExplorer:
    """Pick d_k; see one random query's softmax weights over ``keys`` keys, without and with
    eq 4.2's division by √d_k."""
    check_choice("d_k", d_k, SCALING_D_KS)
    check_positive_int("keys", keys)
    if explorer_form(form) == "static":
        return scaling_static(SCALING_D_KS, keys, {d: query_weights(d, keys, seed) for d in SCALING_D_KS}, SCALINGS, d_k)
    box = widgets.SelectionSlider(options=SCALING_D_KS, value=d_k, description="d_k", continuous_update=False)

    def draw() -> plt.Figure:
        weights = query_weights(box.value, keys, seed)
        fig, axes = new_figure(2, width=4.0, height=2.6,
                               margins={"left": 0.1, "right": 0.97, "bottom": 0.2, "top": 0.82, "wspace": 0.3})
        for ax, scaling in zip(axes[0], SCALINGS):
            ax.bar(range(keys), weights[scaling], color="#0072B2")
            ax.set_ylim(0, 1)
            ax.set_xlabel("key")
            ax.set_title(f"{scaling}: largest weight {weights[scaling].max():.2f}")
        axes[0][0].set_ylabel("softmax weight")
        fig.suptitle(f"d_k = {box.value}", fontsize=10)
        return fig

    image, redraw = figure_widget(draw)
    box.observe(lambda _change: redraw(), names="value")
    return widgets.VBox([box, image])


def attention_explorer(model, tokenizer, text: str, text_pair: str | None = None, layer: int = 1, head: int = 1,
                       form: str | None = None) -> widgets.VBox | StaticExplorer:
    """Layer and head selectors over ``model``'s attention maps for one input (computed once)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    encoded = tokenizer(text, text_pair, return_tensors="pt")
    with torch.no_grad(), evaluating(model):
        attentions = model(**encoded, output_attentions=True).attentions
    check_in_range("layer", layer, 1, len(attentions))
    check_in_range("head", head, 1, attentions[0].shape[1])
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    if explorer_form(form) == "static":
        return attention_static(torch.stack([a[0] for a in attentions]).numpy(), tokens, layer, head)
    layer_box = widgets.IntSlider(value=layer, min=1, max=len(attentions), description="layer", continuous_update=False)
    head_box = widgets.IntSlider(value=head, min=1, max=attentions[0].shape[1], description="head",
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
