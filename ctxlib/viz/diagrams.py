"""Diagrams of the book's models and of the book itself, drawn with matplotlib from code.

Each function returns a ``Figure`` made of labelled boxes and arrows; nothing is a hand-edited
image, so a change of a model's shape is a change of an argument. The colours are those of
``ctxlib.viz.palette.PALETTE``: blue for what is learned per token, orange for what is shared,
green for outputs and losses. The module imports matplotlib only, so a page that draws a
diagram and nothing else starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ctxlib.viz.palette import PALETTE

# Light fills of the palette's first three colours, for box backgrounds.
FILL = {"token": "#d6e6f4", "shared": "#fbe0cf", "output": "#d0ede4", "plain": "#f2f2f2", "path": "#fff1c7"}
EDGE = {"token": PALETTE[0], "shared": PALETTE[1], "output": PALETTE[2], "plain": "0.45", "path": PALETTE[4]}


def _canvas(width: float, height: float, xlim: tuple[float, float], ylim: tuple[float, float]) -> tuple[plt.Figure, Axes]:
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("auto")
    ax.axis("off")
    return fig, ax


def _box(ax: Axes, x: float, y: float, w: float, h: float, text: str, kind: str = "plain",
         fontsize: float = 8.5, weight: str = "normal", linewidth: float = 1.0) -> tuple[float, float, float, float]:
    """A rounded box centred on (x, y); returns its (left, bottom, right, top)."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.0,rounding_size=0.06",
                                facecolor=FILL[kind], edgecolor=EDGE[kind], linewidth=linewidth))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, fontweight=weight)
    return x - w / 2, y - h / 2, x + w / 2, y + h / 2


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], color: str = "0.3",
           style: str = "-|>", curve: float = 0.0, linewidth: float = 1.0, linestyle: str = "-") -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=9, color=color, linewidth=linewidth,
                                 linestyle=linestyle, connectionstyle=f"arc3,rad={curve}", shrinkA=1, shrinkB=1))


@dataclass(frozen=True)
class Page:
    """A page of the book on the learning path: its section number as the page's title shows
    it, a short title, its file (without ``.md``) and the pages whose results or ideas it uses."""

    number: str
    title: str
    file: str
    needs: tuple[str, ...] = ()

    @property
    def chapter(self) -> str:
        return self.number.split(".")[0]


# The book's pages in reading order. tests/test_diagrams.py checks them against _toc.yml and
# that every page needs only pages before it, so a new page must be placed here.
BOOK_PATH: tuple[Page, ...] = (
    Page("1", "static vectors and polysemy", "01_polysemy"),
    Page("2.1–2.3", "ELMo's biLM", "02_elmo", ("1",)),
    Page("2.4", "ELMo's layers", "02b_elmo_layers", ("2.1–2.3",)),
    Page("2.5", "ELMo in a task model", "02c_elmo_downstream", ("2.4",)),
    Page("2.6", "ELMo's limits", "02d_elmo_limits", ("2.1–2.3",)),
    Page("3.1–3.4", "masking, input, NSP", "03_bert", ("2.1–2.3",)),
    Page("3.5–3.7", "the encoder; vs ELMo", "03b_bert_vs_elmo", ("3.1–3.4", "2.6")),
    Page("4", "attention, positions", "04_attention", ("3.5–3.7",)),
    Page("5.1", "pretrain, then fine-tune", "05_finetuning", ("3.1–3.4",)),
    Page("5.2", "fine-tuning per task", "05b_finetuning_choices", ("5.1", "2.5")),
    Page("6.1", "the [MASK] mismatch", "06_training_problems", ("3.1–3.4", "2.4")),
    Page("6.1 (NSP)", "what NSP learns", "06a_nsp", ("3.1–3.4",)),
    Page("6.1 (cont.)", "dynamic masking", "06b_dynamic_masking", ("6.1",)),
    Page("6.2", "divergence, AdamW, bf16", "06c_convergence", ("5.1",)),
    Page("6.3", "hyperparameters", "06d_finetuning_hyperparameters", ("5.1",)),
    Page("6.4", "memory and compute", "06e_memory", ("3.5–3.7", "6.2")),
    Page("7.1", "the family", "07_bert_family", ("3.5–3.7",)),
    Page("7.2", "ELECTRA", "07b_electra", ("6.1",)),
    Page("7.3", "from BERT to GPT", "07c_bert_to_gpt", ("4",)),
    Page("8", "every formula, any time", "08_formulas"),
    Page("9", "what each model gave", "09_summary", ("5.1", "7.1")),
)
CHAPTER_TITLES = {"1": "Static vectors", "2": "ELMo", "3": "BERT", "4": "BERT's mathematics",
                  "5": "Fine-tuning", "6": "Training problems", "7": "The BERT family",
                  "8": "Formula reference", "9": "Summary"}
# The pages a reader in a hurry reads: the idea, one model of each kind, how BERT computes,
# and what pretraining buys.
SHORT_PATH: tuple[str, ...] = ("1", "2.1–2.3", "3.1–3.4", "3.5–3.7", "4", "5.1", "9")


def chapter_dependencies(pages: Sequence[Page] = BOOK_PATH) -> dict[str, set[str]]:
    """Which chapters each chapter builds on, with the edges implied by others removed (the
    transitive reduction): if 6 needs 5 and 5 needs 3, "6 needs 3" is not listed."""
    numbers = {page.number: page for page in pages}
    unknown = sorted({need for page in pages for need in page.needs} - set(numbers))
    if unknown:
        raise ValueError(f"pages must only need pages among them, got unknown {unknown}")
    direct: dict[str, set[str]] = {page.chapter: set() for page in pages}
    for page in pages:
        direct[page.chapter] |= {numbers[need].chapter for need in page.needs} - {page.chapter}

    def reachable(chapter: str) -> set[str]:
        seen, todo = set(), list(direct[chapter])
        while todo:
            c = todo.pop()
            if c not in seen:
                seen.add(c)
                todo += direct[c]
        return seen

    return {c: {d for d in needs if not any(d in reachable(e) for e in needs - {d})} for c, needs in direct.items()}


def draw_learning_path(pages: Sequence[Page] = BOOK_PATH, short_path: Sequence[str] = SHORT_PATH) -> plt.Figure:
    """One box per chapter listing its pages, top to bottom in the order they can be read, an
    arrow from each chapter to the chapters that build on it; the pages of the short path are
    bold and their chapters' boxes yellow."""
    unknown = sorted(set(short_path) - {page.number for page in pages})
    if unknown:
        raise ValueError(f"short_path must only name pages in pages, got unknown {unknown}")
    needs = chapter_dependencies(pages)
    depth: dict[str, int] = {}
    for chapter in needs:  # pages come in reading order, so a chapter's needs are placed first
        depth[chapter] = 1 + max((depth[d] for d in needs[chapter]), default=-1)
    first = next(iter(needs))
    standalone = [c for c in needs if c != first and not needs[c] and not any(c in n for n in needs.values())]
    levels: dict[int, list[str]] = {}
    for chapter in needs:
        if chapter not in standalone:
            levels.setdefault(depth[chapter], []).append(chapter)
    lines = {c: [p for p in pages if p.chapter == c] for c in needs}
    height = {c: 0.42 + 0.24 * (len(lines[c]) if len(lines[c]) > 1 or lines[c][0].number != c else 1) for c in needs}
    width, across = 3.3, 3.6
    x: dict[str, float] = {}
    y: dict[str, float] = {}
    top = 0.0
    for level, chapters in sorted(levels.items()):
        tallest = max(height[c] for c in chapters)
        for i, chapter in enumerate(chapters):
            if len(chapters) == 1 and needs[chapter]:
                x[chapter] = sum(x[d] for d in needs[chapter]) / len(needs[chapter])
            else:
                x[chapter] = across * (i - (len(chapters) - 1) / 2)
            y[chapter] = top - height[chapter] / 2
        top -= tallest + 0.45
    for chapter in standalone:  # a reference page, beside the last level
        last = min(y, key=y.get)
        x[chapter], y[chapter] = x[last] + across, y[last]
    left_edge, right_edge = min(x.values()) - width / 2 - 0.1, max(x.values()) + width / 2 + 0.1
    fig, ax = _canvas(7.4, 0.85 * -top + 0.4, (left_edge, right_edge), (top + 0.3, 0.55))
    on_path = set(short_path)
    on = {c: any(p.number in on_path for p in lines[c]) for c in needs}
    for chapter, chapter_needs in needs.items():
        for need in chapter_needs:
            bold = on[chapter] and on[need]
            _arrow(ax, (x[need], y[need] - height[need] / 2), (x[chapter], y[chapter] + height[chapter] / 2),
                   color=EDGE["path"] if bold else "0.55", linewidth=2.0 if bold else 1.0)
    for chapter in x:
        kind = "path" if on[chapter] else "plain"
        left, bottom, right, box_top = _box(ax, x[chapter], y[chapter], width, height[chapter], "", kind,
                                            linewidth=1.6 if kind == "path" else 0.8)
        ax.text(x[chapter], box_top - 0.08, f"{chapter}. {CHAPTER_TITLES.get(chapter, '')}", ha="center", va="top",
                fontsize=9, fontweight="bold")
        if len(lines[chapter]) > 1 or lines[chapter][0].number != chapter:
            for i, page in enumerate(lines[chapter]):
                ax.text(left + 0.12, box_top - 0.36 - 0.24 * i, f"{page.number}  {page.title}", ha="left", va="top",
                        fontsize=8, fontweight="bold" if page.number in on_path else "normal")
        else:
            ax.text(x[chapter], box_top - 0.36, lines[chapter][0].title, ha="center", va="top", fontsize=8)
    ax.text(left_edge + 0.1, 0.35, "yellow boxes, bold pages and arrows:\nthe short path for a reader in a hurry",
            fontsize=8, color="0.3", va="top")
    return fig


def draw_elmo(words: Sequence[str] = ("the", "river", "bank"), layers: int = 2) -> plt.Figure:
    """ELMo's biLM (§2.3): one character-CNN token layer and one softmax, both shared by two
    separate LSTM stacks, a forward one (arrows →) and a backward one (arrows ←). At position t
    the forward stack predicts word t+1 and the backward stack word t−1."""
    if not words or layers < 1:
        raise ValueError(f"words must be non-empty and layers >= 1, got {len(words)} words and layers={layers}")
    T, gap, rise = len(words), 2.9, 1.0
    top = rise * (layers + 1)
    fig, ax = _canvas(7.6, 1.9 + 0.85 * (layers + 1), (-2.6, gap * (T - 1) + 1.4), (-1.75, top + 0.45))
    forward, backward = (-0.55, +0.2), (+0.55, -0.2)  # offsets of the two stacks' cells
    for t, word in enumerate(words):
        x = gap * t
        ax.text(x, -0.75, word, ha="center", va="center", fontsize=9.5, style="italic")
        _arrow(ax, (x, -0.6), (x, -0.2))
        _box(ax, x, 0.0, 2.2, 0.38, f"char CNN → $\\mathbf{{x}}_{t + 1}$", "shared", fontsize=8)
        for j in range(1, layers + 1):
            for (dx, dy), mark in ((forward, "\\rightarrow"), (backward, "\\leftarrow")):
                y = rise * j + dy
                _box(ax, x + dx, y, 1.0, 0.34, f"$\\overset{{{mark}}}{{\\mathbf{{h}}}}_{{{t + 1},{j}}}$", "token", fontsize=9)
                below = (x + dx * 0.6, 0.19) if j == 1 else (x + dx, rise * (j - 1) + dy + 0.17)
                _arrow(ax, below, (x + dx, y - 0.17))
        after = words[t + 1] if t + 1 < T else "</S>"
        before = words[t - 1] if t > 0 else "<S>"
        _box(ax, x, top, 2.5, 0.42, f"softmax $\\mathbf{{W}}_o$:  → {after}   ← {before}", "output", fontsize=7.5)
        for dx, dy in (forward, backward):
            _arrow(ax, (x + dx, rise * layers + dy + 0.17), (x + dx, top - 0.21))
    for j in range(1, layers + 1):
        for t in range(T - 1):
            x0, x1 = gap * t, gap * (t + 1)
            _arrow(ax, (x0 + forward[0] + 0.5, rise * j + forward[1]), (x1 + forward[0] - 0.5, rise * j + forward[1]),
                   color=EDGE["token"], linewidth=1.3)
            _arrow(ax, (x1 + backward[0] - 0.5, rise * j + backward[1]), (x0 + backward[0] + 0.5, rise * j + backward[1]),
                   color=EDGE["token"], linewidth=1.3)
        ax.text(-1.8, rise * j, f"LSTM\nlayer {j}", ha="center", va="center", fontsize=8, color=EDGE["token"])
    ax.text(-1.8, 0.0, "layer 0:\none char CNN,\nshared", ha="center", va="center", fontsize=8, color=EDGE["shared"])
    ax.text(-1.8, top, "one softmax,\nshared", ha="center", va="center", fontsize=8, color=EDGE["output"])
    ax.text(gap * (T - 1) / 2, -1.15,
            "upper cell of a pair: the forward stack (reads →); lower cell: the backward stack (reads ←)\n"
            "layer $j$ of word $t$: $\\mathbf{h}_{t,j} = [\\overrightarrow{\\mathbf{h}}_{t,j}; \\overleftarrow{\\mathbf{h}}_{t,j}]$"
            + ("; layer 2 adds layer 1's output (residual)" if layers > 1 else ""),
            ha="center", va="top", fontsize=7.5, color="0.3")
    return fig


def draw_bert_input(tokens: Sequence[str], segments: Sequence[int]) -> plt.Figure:
    """Eq 3.2 for one input: under each token its token, segment and position embeddings, summed
    (then a LayerNorm), as in Devlin et al.'s Figure 2."""
    if len(segments) != len(tokens):
        raise ValueError(f"segments must have one entry per token ({len(tokens)}), got {len(segments)}")
    if not tokens:
        raise ValueError("tokens is empty: give at least one token")
    if set(segments) - {0, 1}:
        raise ValueError(f"segments must be 0 (A) or 1 (B), got {sorted(set(segments))}")
    n = len(tokens)
    fig, ax = _canvas(min(1.0 + 0.48 * n, 7.6), 2.8, (-1.9, n - 0.4), (-0.45, 4.45))
    rows = [(3.6, "input", None), (2.7, "token", "token"), (1.8, "segment", "shared"), (0.9, "position", "output")]
    for y, name, _ in rows:
        ax.text(-1.0, y, name if name == "input" else f"{name}\nembedding", ha="right", va="center", fontsize=8)
    ax.text(-1.0, 0.0, "sum, then\nLayerNorm", ha="right", va="center", fontsize=8, fontweight="bold")
    for i, (token, segment) in enumerate(zip(tokens, segments)):
        ax.text(i, 3.6, token, ha="center", va="center", fontsize=7.5, family="monospace")
        short = token if len(token) <= 7 else token[:6] + "…"
        _box(ax, i, 2.7, 0.9, 0.5, f"$\\mathbf{{e}}_{{\\mathrm{{{_tex_escape(short)}}}}}$", "token", fontsize=7.5)
        _box(ax, i, 1.8, 0.9, 0.5, f"$\\mathbf{{e}}_{{\\mathrm{{seg}},{'A' if segment == 0 else 'B'}}}$", "shared", fontsize=7.5)
        _box(ax, i, 0.9, 0.9, 0.5, f"$\\mathbf{{e}}_{{\\mathrm{{pos}},{i}}}$", "output", fontsize=7.5)
        for y in (2.25, 1.35, 0.45):
            ax.text(i, y, "+" if y > 0.5 else "=", ha="center", va="center", fontsize=9, color="0.35")
        _box(ax, i, 0.0, 0.9, 0.45, f"$\\mathbf{{e}}_{{{i}}}$", "plain", fontsize=7.5)
    return fig


def _tex_escape(text: str) -> str:
    """A token as upright mathtext: escape what mathtext would read as commands."""
    out = []
    for char in text:
        if char in "#$%&_{}":
            out.append("\\" + char)
        elif char in "[]":
            out.append(char)
        elif char == " ":
            out.append("\\ ")
        else:
            out.append(char)
    return "".join(out)


def draw_encoder_block(d_model: int = 768, d_ff: int = 3072, heads: int = 12, layers: int = 12) -> plt.Figure:
    """One post-LN Transformer encoder block (§3.5): multi-head self-attention, Add & LayerNorm,
    the feed-forward network, Add & LayerNorm; the residual connections drawn beside the flow."""
    fig, ax = _canvas(5.6, 5.4, (-3.2, 3.4), (-0.6, 7.4))
    steps = [
        (0.0, f"input $\\mathbf{{H}}^{{(l-1)}}$  ($T \\times d_{{\\mathrm{{model}}}}$, $d_{{\\mathrm{{model}}}}$ = {d_model})",
         "plain", 4.2),
        (1.3, f"multi-head self-attention, $h$ = {heads} (eqs 4.1–4.5)", "token", 4.2),
        (2.5, "Add & LayerNorm", "shared", 2.6),
        (3.8, f"feed-forward: Linear({d_model} → {d_ff}), GELU,\nLinear({d_ff} → {d_model}), applied to each token",
         "token", 4.2),
        (5.1, "Add & LayerNorm", "shared", 2.6),
        (6.3, "output $\\mathbf{H}^{(l)}$: the next block's input", "output", 4.2),
    ]
    for (y, text, kind, width), (y_next, *_) in zip(steps, steps[1:] + [(None,)]):
        _box(ax, 0.0, y, width, 0.62 if "\n" in text else 0.5, text, kind, fontsize=8)
        if y_next is not None:
            _arrow(ax, (0.0, y + (0.31 if "\n" in text else 0.25)), (0.0, y_next - (0.31 if y_next == 3.8 else 0.25)))
    for start, end in ((0.0, 2.5), (2.5, 5.1)):  # the residual connections, around each sub-layer
        _arrow(ax, (2.15, start + 0.05), (1.35, end), color=PALETTE[3], curve=0.45, linestyle="--")
    ax.text(2.95, 1.25, "residual", fontsize=7.5, color=PALETTE[3], rotation=90, va="center")
    ax.text(2.95, 3.8, "residual", fontsize=7.5, color=PALETTE[3], rotation=90, va="center")
    ax.text(-3.1, 3.1, f"× {layers} blocks", fontsize=10, fontweight="bold", va="center", color="0.35")
    ax.text(0.0, 7.1, "post-LN: the LayerNorm comes after each residual addition", ha="center", fontsize=8,
            color="0.35")
    return fig


def draw_electra(original: Sequence[str] = ("the", "chef", "cooked", "the", "meal"),
                 masked: Sequence[int] = (0, 2), sampled: Sequence[str] = ("the", "ate")) -> plt.Figure:
    """Replaced-token detection (§7.2), after Clark et al.'s Figure 1: some positions are masked,
    a small generator (an MLM) samples a token for each, and the discriminator labels every
    token of the result original or replaced. A sample equal to the original counts as original."""
    if len(sampled) != len(masked):
        raise ValueError(f"sampled must have one token per masked position ({len(masked)}), got {len(sampled)}")
    if any(not 0 <= i < len(original) for i in masked):
        raise ValueError(f"masked must hold positions in [0, {len(original)}), got {list(masked)}")
    corrupted = list(original)
    for i, token in zip(masked, sampled):
        corrupted[i] = token
    n = len(original)
    fig, ax = _canvas(7.6, 2.9, (-0.6, 4 * 2.35 + 1.0), (-0.5, n * 0.5 + 0.35))
    columns = [("input", list(original)), ("masked", ["[MASK]" if i in masked else w for i, w in enumerate(original)]),
               ("sampled", corrupted),
               ("discriminator says", ["replaced" if c != o else "original" for c, o in zip(corrupted, original)])]
    x_of = [0.4, 3.05, 5.7, 8.6]
    for (title, tokens), x in zip(columns, x_of):
        ax.text(x, n * 0.5 + 0.1, title, ha="center", fontsize=8.5, fontweight="bold")
        for i, token in enumerate(tokens):
            y = (n - 1 - i) * 0.5
            kind = "plain"
            if title == "masked" and i in masked:
                kind = "shared"
            if title == "sampled" and i in masked:
                kind = "token"
            if title == "discriminator says":
                kind = "shared" if token == "replaced" else "output"
            _box(ax, x, y, 1.1, 0.38, token, kind, fontsize=8)
    mid = (n - 1) * 0.25
    _box(ax, 1.73, mid, 0.5, 1.0, "mask\n15%", "plain", fontsize=7.5)
    _box(ax, 4.37, mid, 0.75, 1.6, "generator\n(small\nMLM,\neq 7.1)", "token", fontsize=7.5)
    _box(ax, 7.15, mid, 0.85, 1.6, "discrimi-\nnator\n(eq 7.2)", "output", fontsize=7.5)
    for a, b in ((1.0, 1.45), (2.0, 2.45), (3.65, 3.98), (4.76, 5.12), (6.3, 6.7), (7.6, 8.02)):
        _arrow(ax, (a, mid), (b, mid))
    note = [f"“{s}” at {i + 1}: {'= original' if s == original[i] else 'replaced'}" for i, s in zip(masked, sampled)]
    ax.text(5.7, -0.45, "; ".join(note), ha="center", fontsize=7.5, color="0.35")
    return fig


# Where each numbered equation acts: one chain of boxes per model, each box with the equations
# it computes. tests/test_diagrams.py checks that every equation of ctxlib.equations is placed.
EQUATION_MAP: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    ("static vectors", (("word → its table row", ("1.1",)),)),
    ("ELMo", (("characters → char CNN", ()), ("two LSTM\nlanguage models", ("2.1", "2.2", "2.3")),
              ("layers h_t,j stacked", ("2.4",)), ("task's mix v_t", ("2.5",)), ("task model input", ("2.6",)))),
    ("BERT", (("WordPieces → embeddings", ("3.2",)), ("L blocks of attention", ("4.1", "4.2", "4.3", "4.4", "4.5")),
              ("output vectors H_t", ("3.5",)), ("MLM head and loss", ("3.1", "4.7")),
              ("pooler, NSP head\nand loss", ("3.3", "3.4", "4.8")), ("pretraining loss", ("4.6", "5.1")))),
    ("fine-tuning", (("pretrained encoder", ("5.1",)), ("task head on\n[CLS] or tokens", ("3.6",)),
                     ("all weights trained", ("5.2",)))),
    ("ELECTRA", (("mask 15%", ()), ("generator\n(small MLM)", ("7.1",)), ("sampled replacements", ()),
                 ("discriminator,\nevery token", ("7.2",)))),
)


def _equation_label(numbers: Sequence[str]) -> str:
    """"eq 2.5", or "eqs 4.1–4.5" for a run of consecutive numbers of one chapter."""
    if len(numbers) == 1:
        return f"eq {numbers[0]}"
    chapters = {n.split(".")[0] for n in numbers}
    minors = [int(n.split(".")[1]) for n in numbers]
    if len(chapters) == 1 and minors == list(range(minors[0], minors[0] + len(minors))):
        return f"eqs {numbers[0]}–{numbers[-1]}"
    return "eqs " + ", ".join(numbers)


def draw_equation_map(rows=EQUATION_MAP) -> plt.Figure:
    """One column per model: its computation as a chain of boxes from top to bottom, each
    labelled with the numbers of the equations it computes, so the formula reference can say
    where each equation acts."""
    depth = max(len(chain) for _, chain in rows)
    fig, ax = _canvas(7.4, 0.62 * depth + 0.7, (-1.0, 2.0 * len(rows) - 1.0), (-0.85 * depth + 0.35, 0.75))
    for column, (model, chain) in enumerate(rows):
        x = 2.0 * column
        ax.text(x, 0.55, model, ha="center", va="center", fontsize=9, fontweight="bold")
        for k, (text, numbers) in enumerate(chain):
            y = -0.85 * k
            label = text.replace(" → ", "\n→ ") + ("\n" + _equation_label(numbers) if numbers else "")
            _box(ax, x, y, 1.85, 0.66, label, "token" if numbers else "plain", fontsize=7.5)
            if k:
                _arrow(ax, (x, y + 0.85 - 0.33), (x, y + 0.33))
    return fig


@dataclass(frozen=True)
class Milestone:
    """A model on the timeline: its name, when its paper appeared (year + month / 12), its
    family, and the bibliography key of that paper."""

    name: str
    when: float
    family: str
    cite: str


# When each paper first appeared (the arXiv or report date, month precision).
MILESTONES: tuple[Milestone, ...] = (
    Milestone("word2vec", 2013 + 0 / 12, "static vectors", "mikolov2013"),
    Milestone("GloVe", 2014 + 9 / 12, "static vectors", "pennington2014"),
    Milestone("multi-sense vectors", 2014 + 9 / 12, "static vectors", "neelakantan2014"),
    Milestone("ULMFiT", 2018 + 0 / 12, "LSTM language models", "howard2018"),
    Milestone("ELMo", 2018 + 1 / 12, "LSTM language models", "peters2018"),
    Milestone("GPT-1", 2018 + 5 / 12, "decoders (left to right)", "radford2018"),
    Milestone("BERT", 2018 + 9 / 12, "encoders (both sides)", "devlin2019"),
    Milestone("GPT-2", 2019 + 1 / 12, "decoders (left to right)", "radford2019"),
    Milestone("RoBERTa", 2019 + 6 / 12, "encoders (both sides)", "liu2019"),
    Milestone("ALBERT", 2019 + 8 / 12, "encoders (both sides)", "lan2020"),
    Milestone("T5", 2019 + 9 / 12, "encoder–decoders", "raffel2020"),
    Milestone("BART", 2019 + 9.5 / 12, "encoder–decoders", "lewis2020"),
    Milestone("ELECTRA", 2020 + 2 / 12, "encoders (both sides)", "clark2020"),
    Milestone("GPT-3", 2020 + 4 / 12, "decoders (left to right)", "brown2020"),
    Milestone("DeBERTa", 2020 + 5 / 12, "encoders (both sides)", "he2021"),
    Milestone("DeBERTa-v3", 2021 + 10 / 12, "encoders (both sides)", "he2023"),
)


def draw_timeline(milestones: Sequence[Milestone] = MILESTONES) -> plt.Figure:
    """The models on a time axis, one row per family, so that what came before what is read off
    the figure (GPT-1 before BERT, ULMFiT before ELMo)."""
    if not milestones:
        raise ValueError("milestones is empty: give at least one")
    families = list(dict.fromkeys(m.family for m in milestones))
    first, last = min(m.when for m in milestones), max(m.when for m in milestones)
    fig, ax = plt.subplots(figsize=(7.6, 0.75 * len(families) + 1.0), layout="constrained")
    colours = dict(zip(families, PALETTE))
    for row, family in enumerate(families):
        ax.axhline(row, color="0.88", linewidth=0.8, zorder=0)
        chosen = sorted((m for m in milestones if m.family == family), key=lambda m: m.when)
        for k, m in enumerate(chosen):
            ax.plot(m.when, row, "o", color=colours[family], markersize=6)
            # Stagger the labels over three heights so that models months apart do not overlap.
            ax.annotate(m.name, (m.when, row), xytext=(0, (7, -13, 17)[k % 3]), textcoords="offset points",
                        ha="center", fontsize=7.5)
    ax.set_yticks(range(len(families)), families, fontsize=8)
    ax.set_ylim(len(families) - 0.4, -0.6)
    ax.set_xlim(first - 0.4, last + 0.4)
    ax.set_xticks(range(int(first), int(last) + 1))
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    return fig
