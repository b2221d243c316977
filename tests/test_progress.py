"""The training bar (ctxlib.training.progress): in a kernel it leaves one line in the executed
notebook, the bar's last state, and no stream of redraws; in a terminal it is tqdm's text bar."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from ctxlib.training.progress import in_kernel, progress_bar

CELL = """
import torch
from ctxlib.training.loop import TrainConfig, fit
model = torch.nn.Linear(3, 1)
batches = iter([torch.randn(4, 3)] * 40)
fit(model, batches, lambda m, x: m(x).pow(2).mean(), TrainConfig(steps=40, lr=1e-2, description="tiny"))
print("trained")
"""


def test_in_a_kernel_the_bar_leaves_its_last_line_only(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[0].outputs
    displays = [o for o in outputs if o.output_type == "display_data"]
    stdout = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert len(displays) == 1, outputs
    line = displays[0].data["text/plain"]
    assert line.startswith("tiny: 100%") and "40/40" in line and "loss=" in line
    assert "\r" not in line and "\n" not in line
    assert stdout == "trained\n"  # no redraws on stdout


def test_outside_a_kernel_the_bar_is_tqdms_on_stdout(capsys):
    assert not in_kernel()
    for _ in progress_bar(5, "plain", mininterval=0):
        pass
    out = capsys.readouterr().out
    assert "plain: 100%" in out and "5/5" in out
    for _ in progress_bar(5, "silent", enabled=False):
        pass
    assert capsys.readouterr().out == ""


def test_the_kernel_line_drops_cursor_moves(monkeypatch):
    """Two bars open at once: tqdm moves the cursor (ESC [ A) to redraw the lower one; the display
    keeps the bar's text, never a bare escape code."""
    from ctxlib.training import progress

    shown = []
    handle = type("Handle", (), {"update": lambda self, data, raw: shown.append(data["text/plain"])})()
    monkeypatch.setitem(__import__("sys").modules, "IPython.display",
                        type("Display", (), {"display": staticmethod(lambda *a, **k: handle)}))
    line = progress._DisplayLine()
    line.write("\rinner:  50%|#####     | 5/10\x1b[A")
    line.write("\x1b[A")
    assert shown == ["inner:  50%|#####     | 5/10"]
