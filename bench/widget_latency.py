"""How fast the explorers react: time from a control change to the new PNG.

Setting a control's value runs the same observer a reader's click runs, synchronously, so the
time of the assignment is the widget's reaction time in the kernel (the browser then swaps one
image). Prints the median per kind of change and its ratio to the 200 ms budget. t-SNE is
timed twice: cold (the projection computed on the spot) and warm (after the explorer's
background pre-computation, which is what a reader normally meets). The masking explorer is
timed on the 2,000 sentences chapter 3 gives it; the attention-head and √d_k explorers on
chapter 4's inputs. The live form is what is timed (``form="live"``, whatever
CTXBOOK_EXPLORERS says); ``--static`` also times what each static form costs the book's build
(seconds to compute everything its controls reach) and weighs it (bytes it adds to the page).

    python bench/widget_latency.py [--repeats 5] [--static]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import matplotlib

matplotlib.use("Agg")

from ctxlib.analysis.layer_probes import probe_tasks  # noqa: E402
from ctxlib.analysis.occurrences import elmo_word_vectors  # noqa: E402
from ctxlib.analysis.polysemy import PolysemyStudy  # noqa: E402
from ctxlib.data.corpus import load_corpus  # noqa: E402
from ctxlib.models.pretrained import minilm  # noqa: E402
from ctxlib.studies.elmo_pretraining import book_elmo  # noqa: E402
from ctxlib.viz.widgets import (  # noqa: E402
    attention_explorer,
    masking_explorer,
    polysemy_explorer,
    scalar_mix_explorer,
    scaling_explorer,
)

BUDGET_S = 0.2


def timed(assign) -> float:
    start = time.perf_counter()
    assign()
    return time.perf_counter() - start


def set_value(control, value):
    return lambda: setattr(control, "value", value)


def report(name: str, results: dict[str, list[float]]) -> None:
    print(f"{name} reaction times, median of n changes (budget {BUDGET_S * 1e3:.0f} ms)")
    for kind, values in results.items():
        median = statistics.median(values)
        print(f"  {kind:22s} n={len(values):2d} {median * 1e3:6.0f} ms   ratio to budget {median / BUDGET_S:.2f}")


def masking_times(repeats: int) -> dict[str, list[float]]:
    _, tokenizer = minilm()
    sentences = [" ".join(s.tokens) for s in load_corpus().heldout[:2000]]
    box = masking_explorer(tokenizer, sentences, form="live")
    p_box, mask_box, _random_box, button = box.children[0].children
    values = itertools.cycle([0.1, 0.2, 0.3, 0.15])
    shares = itertools.cycle([0.5, 0.7, 0.8, 0.6])
    return {"p slider": [timed(set_value(p_box, next(values))) for _ in range(repeats * 2)],
            "[MASK] slider": [timed(set_value(mask_box, next(shares))) for _ in range(repeats * 2)],
            "resample": [timed(lambda: button.click()) for _ in range(repeats * 2)]}


def attention_times(repeats: int) -> dict[str, list[float]]:
    model, tokenizer = minilm()
    heads = attention_explorer(model, tokenizer, "She sat on the bank.", "The river was high.", form="live")
    layer_box, head_box = heads.children[0].children
    layers, head_numbers = itertools.cycle([2, 4, 6, 1]), itertools.cycle([3, 7, 12, 1])
    (d_k_box, _image) = scaling_explorer(form="live").children
    widths = itertools.cycle([16, 256, 1024, 64])
    return {"head explorer, layer": [timed(set_value(layer_box, next(layers))) for _ in range(repeats * 2)],
            "head explorer, head": [timed(set_value(head_box, next(head_numbers))) for _ in range(repeats * 2)],
            "sqrt(d_k) explorer": [timed(set_value(d_k_box, next(widths))) for _ in range(repeats * 2)]}


def polysemy_times(repeats: int) -> dict[str, list[float]]:
    study = PolysemyStudy(*minilm())
    # Fill the cache first, so the explorer's background thread finds nothing to do and does
    # not compete with the timed redraws; the cold case clears the cache explicitly.
    study.precompute_projections()
    box = polysemy_explorer(study, form="live")
    (word_box, method_box), layer_box = box.children[0].children, box.children[1]
    layers = itertools.cycle(study.layer_names[1:])
    words = itertools.cycle(study.words)
    results: dict[str, list[float]] = {}
    # Cold t-SNE first, before the background thread has filled the cache for these layers.
    study.projection.cache_clear()
    word_box.value = "bank"
    method_box.value = "PCA"
    results["t-SNE, cold"] = []
    for layer in study.layer_names[1:1 + repeats]:
        layer_box.value = layer
        study.projection.cache_clear()
        results["t-SNE, cold"].append(timed(set_value(method_box, "t-SNE")))
        method_box.value = "PCA"
    study.precompute_projections()
    for method in ("PCA", "t-SNE"):
        method_box.value = method
        results[f"layer slider, {method}"] = [timed(set_value(layer_box, next(layers))) for _ in range(repeats * 2)]
        results[f"word menu, {method}"] = [timed(set_value(word_box, next(words))) for _ in range(repeats * 2)]
    return results


def static_costs() -> None:
    """Build time and page bytes of each explorer's static form, on the chapters' inputs (the
    polysemy study and ELMo's tasks are built first and not counted: the chapters have them)."""
    model, tokenizer = minilm()
    study = PolysemyStudy(model, tokenizer)
    corpus = load_corpus()
    elmo, _, _ = book_elmo()
    tasks = probe_tasks(lambda s: elmo_word_vectors(elmo, s), corpus)
    sentences = [" ".join(s.tokens) for s in corpus.heldout[:2000]]
    builds = {
        "polysemy (ch.1)": lambda: polysemy_explorer(study, "bank", "layer 6", "PCA", form="static"),
        "s_j learning (ch.2)": lambda: scalar_mix_explorer(tasks, steps=300, lr=0.02, form="static"),
        "masking (ch.3)": lambda: masking_explorer(tokenizer, sentences, form="static"),
        "sqrt(d_k) (ch.4)": lambda: scaling_explorer(d_k=256, form="static"),
        "attention heads (ch.4)": lambda: attention_explorer(model, tokenizer, "She sat on the bank.",
                                                             "The river was high.", form="static"),
    }
    print("static forms: build time (s) and bytes added to the page's HTML")
    for name, build in builds.items():
        start = time.perf_counter()
        explorer = build()
        seconds = time.perf_counter() - start
        print(f"  {name:24s} {seconds:6.1f} s  {len(explorer._repr_html_().encode()):>9,d} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--static", action="store_true", help="also time and weigh the static forms")
    args = parser.parse_args()
    report("polysemy explorer", polysemy_times(args.repeats))
    report("masking explorer", masking_times(args.repeats))
    report("attention explorers", attention_times(args.repeats))
    if args.static:
        static_costs()


if __name__ == "__main__":
    main()
