"""An explorer in a static page: a Vega view whose controls act with no kernel.

Each explorer of ``ctxlib.viz.widgets`` has two forms, built from one computation:

* **live** (an ipywidgets box): in a kernel (Binder, Colab, a local Jupyter) every control has
  its full range and moving it recomputes: the ScalarMix explorer's *train* button trains.
* **static** (a ``StaticExplorer``): for the rendered book, where no kernel runs. Everything the
  controls can reach is computed when the page is built, written into the page as JSON, and
  drawn by Vega (``book/_static/vendor/vega``); the controls are HTML inputs bound to Vega
  signals, so moving one redraws at once, in the browser. Where the live range is continuous
  (a learning rate, a masking share) the static form offers a grid of it, and says so.

Which form a chapter cell shows is decided by the environment, not by the cell: the book's
build (``tools/book.sh``) sets ``CTXBOOK_EXPLORERS=static``; a reader's kernel does not, and
gets the live form from the same line of code. The alternatives were worse: a cell that built
both forms would pay for the live one at build time and leave ipywidgets state in the page (the
page then loads the 3.6 MB widget manager to show controls that do nothing), and a second,
hidden cell per explorer would show the reader code that differs from what the page ran.
``form="live"`` or ``form="static"`` overrides the environment for one call.

Why Vega, written directly, and not Vega-Lite through Altair: the page's weight and the build's
time. A book page with nothing interactive already loads ~4.0 MB (the theme's icon font script
1.5 MB, MathJax 1.2 MB) of the 5 MB a page may weigh; Vega alone adds 0.52 MB, Vega-Lite and
vega-embed would add 0.31 MB more, or a Vega-Lite compiler at build time (vl-convert, a 33 MB
wheel whose first compile costs ~0.7 s per chapter, plus ~0.35 s to import Altair), in a book
whose cold build is within a minute of its 10-minute budget.

The page: ``StaticExplorer`` renders as ``<div class="ctx-explorer" data-explorer=NAME>``
holding its Vega spec and its data (columnar, floats rounded to what a figure can show) in one
``<script type="application/json">``. ``book/_ext/explorer_assets.py`` adds ``vega.min.js``
and ``ctx-explorers.js`` to the pages that have one; ``ctx-explorers.js`` turns the columns
into Vega's rows, mounts the view and exposes it (``element.ctxExplorer``) for the browser
test, which moves every control and compares what is drawn with this JSON.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ctxlib._checks import check_choice

FORMS = ("live", "static")
FORM_VARIABLE = "CTXBOOK_EXPLORERS"
VEGA_SCHEMA = "https://vega.github.io/schema/vega/v6.json"  # an identifier; nothing fetches it
# Colour-blind-safe palette and marker shapes, the same as ctxlib.viz.figures' (PALETTE, MARKERS).
SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross")


def explorer_form(form: str | None = None) -> str:
    """``form`` if given, else ``$CTXBOOK_EXPLORERS`` (unset: "live")."""
    if form is not None:
        return check_choice("form", form, FORMS)
    value = os.environ.get(FORM_VARIABLE, "") or "live"
    if value not in FORMS:
        raise ValueError(f"the environment variable {FORM_VARIABLE} must be one of {list(FORMS)} or unset, "
                         f"got {value!r}")
    return value


def rounded(values: Iterable[float] | np.ndarray, significant: int = 4) -> list[float]:
    """Floats to ``significant`` digits: the page carries what a figure resolves, not 17 digits."""
    out = []
    for value in np.asarray(values, dtype=np.float64).ravel().tolist():
        if not math.isfinite(value):
            raise ValueError(f"a static explorer's data must be finite, got {value}")
        out.append(float(f"{value:.{significant}g}"))
    return out


def columns(**named: Sequence[object]) -> dict[str, list]:
    """A dataset as equal-length columns (the page's format; ctx-explorers.js makes rows)."""
    lengths = {name: len(values) for name, values in named.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"a dataset's columns must have one length, got {lengths}")
    return {name: list(values) for name, values in named.items()}


def bound(name: str, value: object, input_: dict, description: str | None = None) -> dict:
    """A Vega signal bound to an HTML input (``input_``: Vega's bind, e.g. {"input": "range", ...})."""
    return {"name": name, "value": value, "bind": {**input_, "name": description or name}}


def vega_spec(width: int, height: int, signals: list[dict], data: list[dict], marks: list[dict],
              scales: Sequence[dict] = (), legends: Sequence[dict] = (), **extra: object) -> dict:
    """A top-level Vega spec with the book's defaults (SVG-friendly padding, no background)."""
    return {"$schema": VEGA_SCHEMA, "width": width, "height": height, "padding": 5, "autosize": "pad",
            "signals": signals, "data": data, "scales": list(scales), "legends": list(legends), "marks": marks,
            **extra}


@dataclass
class StaticExplorer:
    """An explorer's static form: a Vega ``spec`` whose named data sets take their rows from
    ``datasets`` (columnar) in the page; ``meta`` is anything else its page script or the
    browser test needs (the grid, names). ``slots`` are class names of empty ``<div>``s put
    in the controls for another script to fill (the typed-sentence box). ``lazy`` holds data a
    page script fetches on first use (the typed sentence's PCA planes and centroids): each is a
    ``<script class="ctx-explorer-lazy" data-name=NAME>``, which the book's build moves out of
    the page into a file (``book/_ext/browser_model.py``), so the page does not carry it."""

    name: str
    spec: dict
    datasets: dict[str, dict[str, list]]
    meta: dict = field(default_factory=dict)
    slots: tuple[str, ...] = ()
    lazy: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        named = {entry["name"] for entry in self.spec.get("data", [])}
        unknown = set(self.datasets) - named
        if unknown:
            raise ValueError(f"datasets {sorted(unknown)} are not data sets of the spec ({sorted(named)})")

    def payload(self) -> dict:
        return {"name": self.name, "spec": self.spec, "datasets": self.datasets, "meta": self.meta}

    def to_json(self, value: object = None) -> str:
        """``value`` (default: the payload) as JSON that can sit inside a ``<script>``."""
        text = json.dumps(self.payload() if value is None else value, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False)
        # Inside <script>, "</" would end the element early.
        return text.replace("</", "<\\/")

    def _repr_html_(self) -> str:
        text = self.to_json()
        ident = f"ctx-{self.name}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"
        slots = "".join(f'<div class="{html.escape(slot)}"></div>' for slot in self.slots)
        lazy = "".join(f'<script type="application/json" class="ctx-explorer-lazy" data-name="{html.escape(name)}">'
                       f'{self.to_json(value)}</script>' for name, value in self.lazy.items())
        return (f'<div class="ctx-explorer" id="{ident}" data-explorer="{html.escape(self.name)}">'
                # A form of its own: the browser groups radio buttons by name within a form, and Vega names
                # them after their signal, so two explorers on one page would share "layer" otherwise.
                # onsubmit: Enter in a control must not submit (and reload) the page.
                f'<div class="ctx-explorer-controls"><form class="ctx-explorer-bindings" onsubmit="return false">'
                f'</form>{slots}</div>'
                f'<div class="ctx-explorer-view"></div>'
                f'<script type="application/json" class="ctx-explorer-payload">{text}</script>{lazy}</div>')

    def __repr__(self) -> str:
        sizes = {name: len(next(iter(cols.values()), [])) for name, cols in self.datasets.items()}
        return f"StaticExplorer({self.name!r}, rows per data set {sizes}, {len(self.to_json()):,} bytes)"
