"""The training bar: a tqdm text bar that, in a Jupyter kernel, redraws one display in place.

In a terminal the bar is tqdm's own, on stdout. In a kernel, a text bar on stdout sends every
redraw as a stream message, and a rendered page keeps them all: myst-nb joins a cell's stream
messages with newlines, so a carriage return no longer folds them (one line per redraw, 143 on
the ELECTRA page). Here each redraw instead updates one display (``update_display_data``), which
moves in place while the cell runs and which the executed notebook stores once, as its last
state: the rendered page shows one line per run (steps, time, speed, last loss). Plain text, not
a widget: the page loads no widget manager for it.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from tqdm.std import tqdm


# tqdm moves the cursor between bars that are open at once (nested, or one left open by an
# interrupted cell): ESC [ n A and the like, which a display cannot act on.
_CURSOR_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _DisplayLine:
    """A file that tqdm writes to, shown as one display updated in place (``IPython.display``)."""

    encoding = "utf-8"  # tqdm then draws its Unicode blocks, as on a terminal

    def __init__(self) -> None:
        from IPython.display import display

        self._handle = display({"text/plain": ""}, raw=True, display_id=True)
        self._line = ""

    def write(self, text: str) -> int:
        # tqdm redraws as "\r" + the bar; a bar that ends writes "\n". Keep the last drawn line.
        for line in _CURSOR_CODES.sub("", text).replace("\n", "\r").split("\r"):
            if line.strip():
                self._line = line
                self._handle.update({"text/plain": self._line}, raw=True)
        return len(text)

    def flush(self) -> None:
        pass


def in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (IPython with a kernel attached)."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def progress_bar(total: int, description: str, enabled: bool = True, **options: Any) -> tqdm:
    """A tqdm bar over ``range(total)``: on stdout in a terminal, one display updated in place in a
    kernel (a disabled bar writes nothing anywhere)."""
    file = _DisplayLine() if enabled and in_kernel() else sys.stdout
    return tqdm(range(total), desc=description, disable=not enabled, file=file, **options)
