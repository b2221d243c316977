"""How fast the polysemy explorer reacts: time from a control change to the new PNG.

Setting a control's value runs the same observer a reader's click runs, synchronously, so the
time of the assignment is the widget's reaction time in the kernel (the browser then swaps one
image). Prints the median per kind of change and its ratio to the 200 ms budget. t-SNE is
timed twice: cold (the projection computed on the spot) and warm (after the explorer's
background pre-computation, which is what a reader normally meets).

    python bench/widget_latency.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import matplotlib

matplotlib.use("Agg")

from ctxlib.polysemy import PolysemyStudy  # noqa: E402
from ctxlib.pretrained import minilm  # noqa: E402
from ctxlib.widgets import polysemy_explorer  # noqa: E402

BUDGET_S = 0.2


def timed(assign) -> float:
    start = time.perf_counter()
    assign()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    study = PolysemyStudy(*minilm())
    # Fill the cache first, so the explorer's background thread finds nothing to do and does
    # not compete with the timed redraws; the cold case clears the cache explicitly.
    study.precompute_projections()
    box = polysemy_explorer(study)
    (word_box, method_box), layer_box = box.children[0].children, box.children[1]
    layers = itertools.cycle(study.layer_names[1:])
    words = itertools.cycle(study.words)
    results: dict[str, list[float]] = {}

    def set_value(control, value):
        return lambda: setattr(control, "value", value)

    # Cold t-SNE first, before the background thread has filled the cache for these layers.
    study._projection.cache_clear()
    word_box.value = "bank"
    method_box.value = "PCA"
    results["t-SNE, cold"] = []
    for layer in study.layer_names[1:1 + args.repeats]:
        layer_box.value = layer
        study._projection.cache_clear()
        results["t-SNE, cold"].append(timed(set_value(method_box, "t-SNE")))
        method_box.value = "PCA"
    study.precompute_projections()
    for method in ("PCA", "t-SNE"):
        method_box.value = method
        results[f"layer slider, {method}"] = [timed(set_value(layer_box, next(layers))) for _ in range(args.repeats * 2)]
        results[f"word menu, {method}"] = [timed(set_value(word_box, next(words))) for _ in range(args.repeats * 2)]
    print(f"polysemy explorer reaction times, median of {args.repeats * 2} changes (budget {BUDGET_S * 1e3:.0f} ms)")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:22s} {median * 1e3:6.0f} ms   ratio to budget {median / BUDGET_S:.2f}")


if __name__ == "__main__":
    main()
