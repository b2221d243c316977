"""tools/forked_kernels.py: a kernel forked from the preloaded server computes what a fresh kernel
computes (random draws after a seed, a figure's PNG bytes, the folder, the environment, sys.path),
and one whose connect process is killed does not outlive it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from forked_kernels import forked_kernels  # noqa: E402

CELLS = [
    "import os, sys, torch\ntorch.manual_seed(0)\nprint(torch.rand(3), torch.get_num_threads())",
    "print(os.getcwd(), os.environ.get('CTXBOOK_PROBE'), sys.path)",
    "import matplotlib.pyplot as plt\nplt.plot([0, 1, 4, 9])\nplt.show()",
    "import ctxlib.data.vocabulary\nprint(ctxlib.data.vocabulary.__file__)",
]


def _outputs(folder: Path) -> list:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code) for code in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return [[{key: value for key, value in output.items() if key != "execution_count"} for output in cell.outputs]
            for cell in notebook.cells]


@pytest.fixture(scope="module")
def server_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def test_a_forked_kernel_computes_what_a_fresh_kernel_computes(tmp_path, monkeypatch, server_env):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("CTXBOOK_PROBE", "fresh and forked alike")
    fresh = _outputs(tmp_path)
    with forked_kernels(server_env):
        forked = _outputs(tmp_path)
        again = _outputs(tmp_path)  # a second fork starts from the same preloaded state
    assert fresh[2][0]["data"]["image/png"]  # the figure is there, as a PNG
    assert forked == fresh
    assert again == fresh


def test_a_kernel_ends_with_its_connect_process(server_env):
    pids: list[str] = []
    with forked_kernels(server_env):
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel()
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=120)
            reply = client.execute_interactive("import os; print(os.getpid(), os.getppid())", timeout=120,
                                               output_hook=lambda message: pids.extend(
                                                   message["content"].get("text", "").split()))
            assert reply["content"]["status"] == "ok"
            kernel, parent = map(int, pids)
            connect = manager.provisioner.process
            assert kernel != connect.pid and parent != connect.pid  # forked from the server, not started by connect
            _kill(connect)
            assert _ends(kernel), "the kernel outlived its connect process"
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)


STARTER = """
import sys
from jupyter_client import KernelManager
manager = KernelManager(kernel_name="python3")
manager.start_kernel()
client = manager.client()
client.start_channels()
client.wait_for_ready(timeout=120)
client.execute_interactive("import os; print(os.getpid())", timeout=120,
                           output_hook=lambda message: print("kernel pid", message["content"].get("text", ""), end="",
                                                             flush=True))
sys.stdin.read()  # until killed
"""


def test_a_kernel_ends_when_the_process_that_started_it_dies(server_env):
    # A fresh kernel's parent poller ends it when jupyter_client's process dies; connect does that
    # for a forked kernel, which the server, not that process, is the parent of.
    with forked_kernels(server_env):
        starter = subprocess.Popen([sys.executable, "-c", STARTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        try:
            line = ""
            while not line.startswith("kernel pid"):  # the kernel's own output shares this pipe
                line = starter.stdout.readline()
                assert line, "the starter ended before its kernel answered"
            kernel = int(line.split()[-1])
            assert _alive(kernel)
            _kill(starter)
            assert _ends(kernel), "the kernel outlived the process that started it"
        finally:
            starter.kill()


def _kill(process: subprocess.Popen) -> None:
    process.kill()
    process.wait(timeout=120)


def _ends(pid: int, patience: float = 120) -> bool:
    """Whether process ``pid`` ends. ``patience`` bounds the wait for one that never does; it is no
    speed: a kernel that ends does so in a fraction of a second, and a busy machine may take longer."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            return file.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False
