"""The explorers' static forms: Vega specs over data computed when the page was built.

One function per explorer of ``ctxlib.viz.widgets``, which computes the data (the same
computation its live form runs) and hands it here; these functions only lay the data out for
the page and say how Vega draws it. Controls are Vega signals bound to HTML inputs
(``ctxlib.viz.static_view.bound``); every data set is filtered by the signals, so each control
changes what is drawn. Mark names (``points``, ``bars``, ``cells``, ...) are what the browser
test (``tests/browser/test_explorers.py``) reads back from Vega's scenegraph.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ctxlib.viz.figures import PALETTE
from ctxlib.viz.static_view import SHAPES, StaticExplorer, bound, columns, rounded, vega_spec

FONT = {"font": "sans-serif"}
TITLE = {"fontSize": 12, "fontWeight": "bold", **FONT}


def _text(name: str, x: float | dict, y: float, text: dict, size: int = 11, **encode: object) -> dict:
    """A text mark with one line, its content a Vega expression (``text``)."""
    return {"type": "text", "name": name, "encode": {"update": {
        "x": x if isinstance(x, dict) else {"value": x}, "y": {"value": y}, "text": text,
        "fontSize": {"value": size}, "font": {"value": FONT["font"]}, **encode}}}


def _axis(orient: str, scale: str, title: str = "", **options: object) -> dict:
    return {"orient": orient, "scale": scale, "title": title, "labelFontSize": 10, "titleFontSize": 10, **options}


# --------------------------------------------------------------------------------------------
# √d_k (chapter 4)


def scaling_static(d_ks: Sequence[int], keys: int, weights: dict[int, dict[str, np.ndarray]],
                   scalings: Sequence[str], d_k: int) -> StaticExplorer:
    """One query's softmax weights over ``keys`` keys for every ``d_k`` of the slider, unscaled
    and scaled (``weights[d_k][scaling]``, ``[keys]``); the slider moves over log₂ d_k."""
    rows = [(d, s, key, w) for d in d_ks for s, name in enumerate(scalings)
            for key, w in enumerate(weights[d][name])]
    data = columns(d_k=[r[0] for r in rows], scaling=[r[1] for r in rows], key=[r[2] for r in rows],
                   weight=rounded([r[3] for r in rows]))
    exponents = [int(np.log2(d)) for d in d_ks]
    panel, gap = 300, 50
    signals = [
        bound("log2_d_k", int(np.log2(d_k)), {"input": "range", "min": min(exponents), "max": max(exponents), "step": 1},
              "log₂ d_k"),
        {"name": "d_k", "update": "pow(2, log2_d_k)"},
    ]
    panel_marks = [
        {"type": "rect", "name": "bars", "from": {"data": "panel"}, "encode": {"update": {
            "x": {"scale": "key", "field": "key"}, "width": {"scale": "key", "band": 1},
            "y": {"scale": "weight", "field": "weight"}, "y2": {"scale": "weight", "value": 0},
            "fill": {"value": PALETTE[0]}}}},
        {"type": "text", "name": "panel-title", "from": {"data": "panel-max"}, "encode": {"update": {
            "x": {"value": panel / 2}, "y": {"value": -8}, "align": {"value": "center"}, "fontSize": {"value": 11},
            "text": {"signal": f"{list(scalings)!r}[datum.scaling] + ': largest weight ' + format(datum.largest, '.2f')"}}}},
    ]
    group = {
        "type": "group", "name": "panels",
        "from": {"facet": {"data": "shown", "name": "panel", "groupby": "scaling"}},
        "encode": {"update": {"x": {"signal": f"datum.scaling * {panel + gap}"}, "y": {"value": 30},
                              "width": {"value": panel}, "height": {"value": 180}}},
        "data": [{"name": "panel-max", "source": "panel",
                  "transform": [{"type": "aggregate", "groupby": ["scaling"], "fields": ["weight"], "ops": ["max"],
                                 "as": ["largest"]}]}],
        "scales": [{"name": "key", "type": "band", "domain": {"data": "panel", "field": "key"}, "range": [0, panel],
                    "padding": 0.1}],
        "axes": [_axis("bottom", "key", "key", labelOverlap=True),
                 _axis("left", "weight", "softmax weight", tickCount=5)],
        "marks": panel_marks,
    }
    spec = vega_spec(
        2 * panel + gap, 240, signals,
        data=[{"name": "weights"},
              {"name": "shown", "source": "weights", "transform": [{"type": "filter", "expr": "datum.d_k == d_k"}]}],
        scales=[{"name": "weight", "type": "linear", "domain": [0, 1], "range": [180, 0]}],
        marks=[_text("title", (2 * panel + gap) / 2, 0, {"signal": "'d_k = ' + d_k"}, 12, align={"value": "center"},
                     baseline={"value": "top"}, fontWeight={"value": "bold"}), group])
    return StaticExplorer("scaling", spec, {"weights": data}, meta={"d_k": list(d_ks), "scalings": list(scalings)})


# --------------------------------------------------------------------------------------------
# attention heads (chapter 4)


def attention_static(probs: np.ndarray, tokens: Sequence[str], layer: int = 1, head: int = 1) -> StaticExplorer:
    """Every layer × head of one input: ``probs`` ``[L, H, T, T]`` (row = query, column = key);
    two sliders pick the layer and the head (numbered from 1, as the text names them)."""
    n_layers, n_heads, length, _ = probs.shape
    maps = columns(layer=[l + 1 for l in range(n_layers) for _ in range(n_heads)],
                   head=[h + 1 for _ in range(n_layers) for h in range(n_heads)],
                   p=[rounded(probs[l, h], 3) for l in range(n_layers) for h in range(n_heads)])
    cells = columns(q=[q for q in range(length) for _ in range(length)], k=[k for _ in range(length) for k in range(length)])
    side = 360
    signals = [bound("layer", layer, {"input": "range", "min": 1, "max": n_layers, "step": 1}),
               bound("head", head, {"input": "range", "min": 1, "max": n_heads, "step": 1}),
               {"name": "tokens", "value": list(tokens)},
               {"name": "probs", "update": "data('current').length ? data('current')[0].p : []"}]
    spec = vega_spec(
        side, side, signals,
        data=[{"name": "maps"},
              {"name": "current", "source": "maps", "transform": [
                  {"type": "filter", "expr": "datum.layer == layer && datum.head == head"}]},
              {"name": "cells", "transform": [{"type": "formula", "as": "p", "expr": f"probs[datum.q * {length} + datum.k]"}]}],
        scales=[{"name": "key", "type": "band", "domain": list(range(length)), "range": "width"},
                {"name": "query", "type": "band", "domain": list(range(length)), "range": "height"},
                {"name": "colour", "type": "linear", "domain": {"data": "cells", "field": "p"}, "zero": True,
                 "range": {"scheme": "blues"}}],
        axes=[_axis("bottom", "key", "key (attended to)", labelAngle=-90, labelAlign="right", labelBaseline="middle",
                    encode={"labels": {"update": {"text": {"signal": "tokens[datum.value]"}}}}),
              _axis("left", "query", "query", encode={"labels": {"update": {"text": {"signal": "tokens[datum.value]"}}}})],
        legends=[{"fill": "colour", "title": "weight", "type": "gradient", "titleFontSize": 10}],
        marks=[{"type": "rect", "name": "heat", "from": {"data": "cells"}, "encode": {"update": {
                   "x": {"scale": "key", "field": "k"}, "width": {"scale": "key", "band": 1},
                   "y": {"scale": "query", "field": "q"}, "height": {"scale": "query", "band": 1},
                   "fill": {"scale": "colour", "field": "p"},
                   "tooltip": {"signal": "tokens[datum.q] + ' → ' + tokens[datum.k] + ': ' + format(datum.p, '.3f')"}}}},
               _text("title", side / 2, -10, {"signal": "'layer ' + layer + ', head ' + head"}, 12,
                     align={"value": "center"}, fontWeight={"value": "bold"})])
    return StaticExplorer("attention", spec, {"maps": maps, "cells": cells},
                          meta={"tokens": list(tokens), "layers": n_layers, "heads": n_heads})


# --------------------------------------------------------------------------------------------
# polysemy (chapter 1)

# A five-pointed star in Vega's unit symbol coordinates: a typed sentence, unlike any sense.
STAR = "M0,-1L0.24,-0.33L0.95,-0.31L0.38,0.12L0.59,0.81L0,0.4L-0.59,0.81L-0.38,0.12L-0.95,-0.31L-0.24,-0.33Z"


def polysemy_static(words: Sequence[str], layers: Sequence[str], methods: Sequence[str],
                    occurrences: dict[str, list], senses: dict[str, list], points: dict[str, list],
                    scores: dict[str, list], word: str, layer: str, method: str) -> StaticExplorer:
    """Word × layer × projection: the occurrences' 2-D points (``points``: occ, layer and method
    indices, x, y) coloured by sense, beside both separation scores against depth (``scores``).
    ``occurrences`` (occ, word, sense, text) and ``senses`` (word, sense, gloss) are looked up.
    An empty data set ``typed`` takes points placed by a script in the page (a sentence the
    reader types: word, layer and method by name, x, y, text, sense), drawn as black stars."""
    side, gap = 320, 80
    signals = [
        bound("word", word, {"input": "select", "options": list(words)}),
        bound("layer", layer, {"input": "radio", "options": list(layers)}),
        bound("method", method, {"input": "radio", "options": list(methods)}, "projection"),
        {"name": "layers", "value": list(layers)}, {"name": "methods", "value": list(methods)},
        {"name": "layer_index", "update": "indexof(layers, layer)"},
        {"name": "method_index", "update": "indexof(methods, method)"},
        {"name": "score_low", "update": "min(-0.1, data('word-extent')[0].low - 0.05)"},
    ]
    sense_key = {"type": "formula", "as": "key", "expr": "datum.word + '|' + datum.sense"}
    data = [
        {"name": "occurrences"},
        {"name": "senses", "transform": [sense_key, {"type": "formula", "as": "label",
                                                      "expr": "datum.sense + ': ' + datum.gloss"}]},
        {"name": "points"}, {"name": "scores"}, {"name": "typed", "values": []},
        {"name": "word-senses", "source": "senses", "transform": [{"type": "filter", "expr": "datum.word == word"}]},
        {"name": "shown", "source": "points", "transform": [
            {"type": "filter", "expr": "datum.layer == layer_index && datum.method == method_index"},
            {"type": "lookup", "from": "occurrences", "key": "occ", "fields": ["occ"], "values": ["word", "sense", "text"]},
            {"type": "filter", "expr": "datum.word == word"}, sense_key,
            {"type": "lookup", "from": "senses", "key": "key", "fields": ["key"], "values": ["label"]}]},
        {"name": "typed-shown", "source": "typed", "transform": [
            {"type": "filter", "expr": "datum.word == word && datum.layer == layer && datum.method == method"}]},
        {"name": "spread", "source": "shown", "transform": [
            {"type": "aggregate", "fields": ["x", "x", "y", "y"], "ops": ["min", "max", "min", "max"],
             "as": ["x0", "x1", "y0", "y1"]},
            {"type": "filter", "expr": "datum.x0 == datum.x1 && datum.y0 == datum.y1"}]},
        {"name": "word-scores", "source": "scores", "transform": [{"type": "filter", "expr": "datum.word == word"}]},
        {"name": "word-extent", "source": "word-scores", "transform": [
            {"type": "aggregate", "fields": ["silhouette"], "ops": ["min"], "as": ["low"]}]},
        {"name": "current-score", "source": "word-scores", "transform": [
            {"type": "filter", "expr": "datum.layer == layer_index"}]},
    ]
    both = lambda axis: {"fields": [{"data": "shown", "field": axis}, {"data": "typed-shown", "field": axis}]}  # noqa: E731
    scatter = {
        "type": "group", "name": "scatter", "encode": {"update": {
            "x": {"value": 0}, "y": {"value": 34}, "width": {"value": side}, "height": {"value": side},
            "stroke": {"value": "#ddd"}}},
        "scales": [{"name": "x", "type": "linear", "domain": both("x"), "range": [10, side - 10], "zero": False, "nice": False},
                   {"name": "y", "type": "linear", "domain": both("y"), "range": [side - 10, 10], "zero": False, "nice": False}],
        "marks": [
            {"type": "symbol", "name": "dots", "from": {"data": "shown"}, "encode": {"update": {
                "x": {"scale": "x", "field": "x"}, "y": {"scale": "y", "field": "y"},
                "fill": {"scale": "colour", "field": "label"}, "shape": {"scale": "shape", "field": "label"},
                "size": {"value": 60}, "opacity": {"value": 0.85}, "stroke": {"value": "white"}, "strokeWidth": {"value": 0.5},
                "tooltip": {"signal": "{sense: datum.sense, sentence: datum.text}"}}}},
            {"type": "symbol", "name": "typed-star", "from": {"data": "typed-shown"}, "encode": {"update": {
                "x": {"scale": "x", "field": "x"}, "y": {"scale": "y", "field": "y"}, "shape": {"value": STAR},
                "size": {"value": 260}, "fill": {"value": "black"}, "stroke": {"value": "white"},
                "tooltip": {"signal": "{sentence: datum.text, 'nearest sense': datum.sense}"}}}},
            {"type": "text", "name": "one-vector", "from": {"data": "spread"}, "encode": {"update": {
                "x": {"value": side / 2}, "y": {"value": side / 2 + 40}, "align": {"value": "center"},
                "fill": {"value": "#555"}, "fontSize": {"value": 11},
                "text": {"signal": "'all ' + length(data('shown')) + ' occurrences share one vector'"}}}},
        ],
    }
    depth = {
        "type": "group", "name": "depth", "encode": {"update": {
            "x": {"value": side + gap}, "y": {"value": 34}, "width": {"value": side}, "height": {"value": side}}},
        "scales": [{"name": "depth", "type": "point", "domain": list(range(len(layers))), "range": [0, side], "padding": 0.5},
                   {"name": "score", "type": "linear", "domain": {"signal": "[score_low, 1.02]"}, "range": [side, 0],
                    "zero": False, "nice": False}],
        "axes": [_axis("bottom", "depth", "layer (static row, then 0 = embeddings … L)", encode={"labels": {"update": {
                     "text": {"signal": "replace(layers[datum.value], 'layer ', '')"}}}}),
                 _axis("left", "score", "", grid=True, gridOpacity=0.3)],
        "marks": [
            {"type": "rect", "name": "highlight", "encode": {"update": {
                "xc": {"scale": "depth", "signal": "layer_index"}, "width": {"value": 16},
                "y": {"value": 0}, "y2": {"value": side}, "fill": {"value": "#bbb"}, "opacity": {"value": 0.35}}}},
            {"type": "rule", "name": "chance", "from": {"data": "current-score"}, "encode": {"update": {
                "x": {"value": 0}, "x2": {"value": side}, "y": {"scale": "score", "field": "chance"},
                "stroke": {"value": "grey"}, "strokeDash": {"value": [2, 2]}}}},
            *[mark for field, colour, shape in (("nn_accuracy", PALETTE[0], "circle"), ("silhouette", PALETTE[1], "square"))
              for mark in (
                  {"type": "line", "name": f"{field}-line", "from": {"data": "word-scores"}, "encode": {"update": {
                      "x": {"scale": "depth", "field": "layer"}, "y": {"scale": "score", "field": field},
                      "stroke": {"value": colour}, "strokeWidth": {"value": 1.5}}}},
                  {"type": "symbol", "name": f"{field}-points", "from": {"data": "word-scores"}, "encode": {"update": {
                      "x": {"scale": "depth", "field": "layer"}, "y": {"scale": "score", "field": field},
                      "shape": {"value": shape}, "fill": {"value": colour}, "size": {"value": 30},
                      "tooltip": {"signal": f"format(datum.{field}, '.2f')"}}}})],
        ],
        "legends": [{"stroke": "measure", "orient": "bottom-right", "symbolType": "stroke"}],
    }
    spec = vega_spec(
        2 * side + gap, side + 40, signals, data,
        scales=[{"name": "colour", "type": "ordinal", "domain": {"data": "word-senses", "field": "label"},
                 "range": list(PALETTE)},
                {"name": "shape", "type": "ordinal", "domain": {"data": "word-senses", "field": "label"},
                 "range": list(SHAPES)},
                {"name": "measure", "type": "ordinal", "domain": ["1-NN sense accuracy", "silhouette", "1-NN chance"],
                 "range": [PALETTE[0], PALETTE[1], "grey"]}],
        legends=[{"fill": "colour", "shape": "shape", "orient": "bottom", "direction": "vertical", "labelFontSize": 10,
                  "labelLimit": 2 * side}],
        marks=[
            {"type": "text", "name": "title", "from": {"data": "current-score"}, "encode": {"update": {
                "x": {"value": side / 2}, "y": {"value": 14}, "align": {"value": "center"}, **{
                    k: {"value": v} for k, v in TITLE.items()},
                "text": {"signal": "'“' + word + '”, ' + layer + ', ' + method + ': silhouette ' "
                                   "+ format(datum.silhouette, '.2f') + ', 1-NN ' + format(datum.nn_accuracy, '.0%')"}}}},
            _text("depth-title", side + gap + side / 2, 14, {"signal": "'“' + word + '”: sense separation by depth'"}, 12,
                  align={"value": "center"}, fontWeight={"value": "bold"}),
            scatter, depth])
    return StaticExplorer(
        "polysemy", spec,
        {"occurrences": occurrences, "senses": senses, "points": points, "scores": scores},
        meta={"words": list(words), "layers": list(layers), "methods": list(methods)}, slots=("typed-sentence",))


# --------------------------------------------------------------------------------------------
# ScalarMix's s_j learning (chapter 2)


def scalar_mix_static(tasks: Sequence[str], layer_names: Sequence[str], learning_rates: Sequence[float],
                      step_counts: Sequence[int], progress: dict[str, list], lr: float, steps: int,
                      points: int) -> StaticExplorer:
    """The runs of a grid of learning rates × numbers of steps, one panel per task: ``s_j``
    (``s0`` … ``sL``), γ and the held-out accuracy at ``points`` + 1 evenly spaced moments of each
    run (``progress``: lr, steps, task indices, pct, step, gamma, accuracy, s0 …); a slider
    moves through the run (its % of training)."""
    # Two panels and their axes within the page's column (~690 px): wider, the page shrinks the
    # drawing and its 10 px text falls below 9 px (tests/browser/test_explorers.py).
    panel, gap, height = 255, 80, 220
    fields = [f"s{j}" for j in range(len(layer_names))]
    labels = [f"s_{j} ({name})" for j, name in enumerate(layer_names)]
    signals = [
        bound("lr", lr, {"input": "select", "options": list(learning_rates)}, "learning rate"),
        bound("steps", steps, {"input": "radio", "options": list(step_counts)}),
        bound("progress", 100, {"input": "range", "min": 0, "max": 100, "step": 100 // points}, "training progress (%)"),
        {"name": "tasks", "value": list(tasks)}, {"name": "labels", "value": labels},
    ]
    inner = {
        "type": "group", "name": "panels",
        "from": {"facet": {"data": "run", "name": "task-run", "groupby": "task"}},
        "encode": {"update": {"x": {"signal": f"datum.task * {panel + gap}"}, "y": {"value": 30},
                              "width": {"value": panel}, "height": {"value": height}}},
        "data": [
            {"name": "so-far", "source": "task-run", "transform": [{"type": "filter", "expr": "datum.pct <= progress"}]},
            {"name": "weights", "source": "so-far", "transform": [
                {"type": "fold", "fields": fields, "as": ["layer", "weight"]},
                {"type": "formula", "as": "label", "expr": f"labels[indexof({fields!r}, datum.layer)]"}]},
            {"name": "now", "source": "so-far", "transform": [{"type": "filter", "expr": "datum.pct == progress"}]},
        ],
        "scales": [{"name": "step", "type": "linear", "domain": {"data": "task-run", "field": "step"}, "range": [0, panel]},
                   {"name": "gamma", "type": "linear", "domain": {"data": "task-run", "field": "gamma"}, "range": [height, 0],
                    "zero": False, "nice": True}],
        "axes": [_axis("bottom", "step", "step", tickCount=5), _axis("left", "share", "softmax(w)_j, accuracy", grid=True,
                                                                      gridOpacity=0.3),
                 _axis("right", "gamma", "γ", tickCount=5)],
        "marks": [
            {"type": "group", "name": "weight-lines", "from": {"facet": {"data": "weights", "name": "one-layer",
                                                                        "groupby": "label"}},
             "marks": [{"type": "line", "name": "weight", "from": {"data": "one-layer"}, "encode": {"update": {
                 "x": {"scale": "step", "field": "step"}, "y": {"scale": "share", "field": "weight"},
                 "stroke": {"scale": "series", "field": "label"}, "strokeWidth": {"value": 1.8}}}}]},
            {"type": "line", "name": "gamma-line", "from": {"data": "so-far"}, "encode": {"update": {
                "x": {"scale": "step", "field": "step"}, "y": {"scale": "gamma", "field": "gamma"},
                "stroke": {"value": "black"}, "strokeDash": {"value": [5, 3]}, "strokeWidth": {"value": 1}}}},
            {"type": "line", "name": "accuracy-line", "from": {"data": "so-far"}, "encode": {"update": {
                "x": {"scale": "step", "field": "step"}, "y": {"scale": "share", "field": "accuracy"},
                "stroke": {"value": "#595959"}, "strokeDash": {"value": [1, 2]}, "strokeWidth": {"value": 1.5}}}},
            {"type": "text", "name": "panel-title", "from": {"data": "now"}, "encode": {"update": {
                "x": {"value": panel / 2}, "y": {"value": -10}, "align": {"value": "center"}, "fontSize": {"value": 11},
                "fontWeight": {"value": "bold"},
                "text": {"signal": "tasks[datum.task] + ': held-out accuracy ' + format(datum.accuracy, '.0%') "
                                   "+ ' at step ' + datum.step + ' of ' + datum.steps"}}}},
        ],
    }
    spec = vega_spec(
        2 * panel + gap, height + 40, signals,
        data=[{"name": "progress"},
              {"name": "run", "source": "progress", "transform": [
                  {"type": "filter", "expr": "datum.lr == lr && datum.steps == steps"}]}],
        scales=[{"name": "share", "type": "linear", "domain": [0, 1], "range": [height, 0]},
                {"name": "series", "type": "ordinal", "domain": labels, "range": list(PALETTE)},
                {"name": "style", "type": "ordinal", "domain": ["γ (right axis)", "held-out accuracy"],
                 "range": ["black", "#595959"]}],
        legends=[{"stroke": "series", "orient": "bottom", "direction": "horizontal", "labelFontSize": 10,
                  "symbolType": "stroke"},
                 {"stroke": "style", "orient": "bottom", "direction": "horizontal", "labelFontSize": 10,
                  "symbolType": "stroke", "encode": {"symbols": {"update": {"strokeDash": {
                      "signal": "datum.value == 'γ (right axis)' ? [5, 3] : [1, 2]"}}}}}],
        marks=[inner])
    return StaticExplorer("scalar_mix", spec, {"progress": progress},
                          meta={"tasks": list(tasks), "layers": list(layer_names), "learning_rates": list(learning_rates),
                                "steps": list(step_counts), "points": points})


# --------------------------------------------------------------------------------------------
# BERT's masking (chapter 3)


def masking_static(settings: dict[str, list], outcomes: dict[str, list], sentences: Sequence[Sequence[str]],
                   codes: Sequence[str], random: Sequence[dict[int, str]], grid: dict[str, list],
                   start: dict[str, float]) -> StaticExplorer:
    """The selection probability × [MASK] share × random share grid: ``settings`` (index, p,
    mask, random, eligible, selected, selection_expected, selection_sd) and ``outcomes``
    (setting, outcome 0-2 = [MASK], random, unchanged, 3 = not selected; observed, expected, sd)
    for the figure, and
    per setting the sample sentences' codes (one character per token of ``sentences``) and
    random replacements, which ctx-explorers.js writes out as text."""
    panel, gap, height = 300, 90, 170
    names = ["[MASK]", "random", "unchanged"]
    step = lambda values: round(values[1] - values[0], 4) if len(values) > 1 else 1  # noqa: E731
    signals = [
        bound("p", start["p"], {"input": "range", "min": grid["p"][0], "max": grid["p"][-1], "step": step(grid["p"])},
              "selection p"),
        bound("mask", start["mask"], {"input": "range", "min": 0, "max": 1, "step": step(grid["share"])}, "→ [MASK]"),
        bound("random", start["random"], {"input": "range", "min": 0, "max": 1, "step": step(grid["share"])}, "→ random"),
        {"name": "outcome_names", "value": names},
        {"name": "setting", "update": "data('current').length ? data('current')[0].index : -1"},
        {"name": "eligible", "update": "data('current').length ? data('current')[0].eligible : 1"},
    ]
    same = lambda field, signal: f"round(datum.{field} * 100) == round({signal} * 100)"  # noqa: E731
    shares_colours = ["#dddddd", *PALETTE[:3]]
    spec = vega_spec(
        2 * panel + gap, height + 110, signals,
        data=[{"name": "settings"}, {"name": "outcomes"},
              {"name": "current", "source": "settings", "transform": [{"type": "filter", "expr": " && ".join(
                  [same("p", "p"), same("mask", "mask"), same("random", "random")])}]},
              {"name": "current-all", "source": "outcomes", "transform": [{"type": "filter", "expr": "datum.setting == setting"}]},
              {"name": "current-outcomes", "source": "current-all", "transform": [
                  {"type": "filter", "expr": "datum.outcome < 3"},
                  {"type": "formula", "as": "name", "expr": "outcome_names[datum.outcome]"},
                  {"type": "formula", "as": "low", "expr": "datum.expected - 2 * datum.sd"},
                  {"type": "formula", "as": "high", "expr": "datum.expected + 2 * datum.sd"}]},
              {"name": "shares", "source": "current-all", "transform": [
                  {"type": "formula", "as": "share", "expr": "datum.observed / eligible"},
                  {"type": "formula", "as": "part_index", "expr": "(datum.outcome + 1) % 4"},
                  {"type": "stack", "field": "share", "sort": {"field": "part_index"}, "as": ["s0", "s1"]},
                  {"type": "formula", "as": "label", "expr": "['not predicted', 'predicted, [MASK]', 'predicted, random', "
                                                             "'predicted, unchanged'][datum.part_index] + ': ' "
                                                             "+ format(datum.share, '.1%')"}]}],
        scales=[{"name": "outcome", "type": "band", "domain": names, "range": [0, panel], "padding": 0.3},
                {"name": "count", "type": "linear", "domain": {"fields": [{"data": "current-outcomes", "field": "high"},
                                                                          {"data": "current-outcomes", "field": "observed"}]},
                 "range": [height, 0], "zero": True, "nice": True},
                {"name": "share", "type": "linear", "domain": [0, 1], "range": [0, panel]},
                {"name": "part", "type": "ordinal", "domain": [0, 1, 2, 3], "range": shares_colours}],
        marks=[
            {"type": "text", "name": "title", "from": {"data": "current"}, "encode": {"update": {
                "x": {"value": panel + gap / 2}, "y": {"value": 0}, "align": {"value": "center"}, "baseline": {"value": "top"},
                **{k: {"value": v} for k, v in TITLE.items()},
                "text": {"signal": "'p = ' + format(p, '.2f') + '; of the selected: ' + format(mask, '.0%') + ' [MASK], ' "
                                   "+ format(random, '.0%') + ' random, ' + format(1 - mask - random, '.0%') + ' unchanged'"}}}},
            {"type": "group", "name": "counts", "encode": {"update": {
                "x": {"value": 0}, "y": {"value": 55}, "width": {"value": panel}, "height": {"value": height}}},
             "axes": [_axis("bottom", "outcome"), _axis("left", "count", "selected tokens", tickCount=5)],
             "marks": [
                 {"type": "rect", "name": "observed", "from": {"data": "current-outcomes"}, "encode": {"update": {
                     "x": {"scale": "outcome", "field": "name"}, "width": {"scale": "outcome", "band": 1},
                     "y": {"scale": "count", "field": "observed"}, "y2": {"scale": "count", "value": 0},
                     "fill": {"scale": "part", "signal": "datum.outcome + 1"}, "opacity": {"value": 0.8},
                     "tooltip": {"signal": "{observed: datum.observed, expected: format(datum.expected, '.1f'), "
                                           "sd: format(datum.sd, '.1f')}"}}}},
                 {"type": "rule", "name": "expected", "from": {"data": "current-outcomes"}, "encode": {"update": {
                     "x": {"scale": "outcome", "field": "name", "band": 0.5},
                     "y": {"scale": "count", "field": "low"}, "y2": {"scale": "count", "field": "high"},
                     "stroke": {"value": "black"}, "strokeWidth": {"value": 1.5}}}},
                 {"type": "symbol", "name": "expected-mean", "from": {"data": "current-outcomes"}, "encode": {"update": {
                     "x": {"scale": "outcome", "field": "name", "band": 0.5}, "y": {"scale": "count", "field": "expected"},
                     "fill": {"value": "black"}, "size": {"value": 30}}}},
                 {"type": "text", "name": "selected", "from": {"data": "current"}, "encode": {"update": {
                     "x": {"value": panel / 2}, "y": {"value": -22}, "align": {"value": "center"}, "fontSize": {"value": 10},
                     "text": {"signal": "[format(datum.selected, ',') + ' of ' + format(datum.eligible, ',') + ' selected', "
                                        "'(expected ' + format(datum.selection_expected, ',.0f') + ' ± ' "
                                        "+ format(datum.selection_sd, '.0f') + '); bars observed, black: expected ± 2 sd']"}}}},
             ]},
            {"type": "group", "name": "what-the-model-sees", "encode": {"update": {
                "x": {"value": panel + gap}, "y": {"value": 55}, "width": {"value": panel}, "height": {"value": 30}}},
             "axes": [_axis("bottom", "share", "share of the input positions", format="%")],
             "marks": [
                 {"type": "rect", "name": "share-bars", "from": {"data": "shares"}, "encode": {"update": {
                     "x": {"scale": "share", "field": "s0"}, "x2": {"scale": "share", "field": "s1"},
                     "y": {"value": 0}, "height": {"value": 30}, "fill": {"scale": "part", "field": "part_index"},
                     "tooltip": {"signal": "datum.label"}}}},
                 {"type": "text", "name": "share-labels", "from": {"data": "shares"}, "encode": {"update": {
                     "x": {"value": 0}, "y": {"signal": "80 + 15 * datum.part_index"}, "fontSize": {"value": 10},
                     "text": {"field": "label"}}}},
                 {"type": "symbol", "name": "share-keys", "from": {"data": "shares"}, "encode": {"update": {
                     "x": {"value": -8}, "y": {"signal": "76 + 15 * datum.part_index"}, "shape": {"value": "square"},
                     "fill": {"scale": "part", "field": "part_index"}, "size": {"value": 60}}}},
                 {"type": "text", "name": "sees-title", "encode": {"update": {
                     "x": {"value": panel / 2}, "y": {"value": -22}, "align": {"value": "center"}, "fontSize": {"value": 10},
                     "text": {"value": "what the model sees"}}}},
             ]},
        ])
    return StaticExplorer("masking", spec, {"settings": settings, "outcomes": outcomes},
                          meta={"sentences": [list(s) for s in sentences], "codes": list(codes),
                                "random": [{str(k): v for k, v in r.items()} for r in random], "grid": grid})
