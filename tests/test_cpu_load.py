"""tools/cpu_load.py, the load `tools/test.sh --under-load` runs beside the suite: it loads every
worker it promises, and leaves none spinning when the process that started it is killed."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from test_forked_kernels import _alive, _ends

LOAD = Path(__file__).resolve().parents[1] / "tools" / "cpu_load.py"


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as file:
        return [int(child) for child in file.read().split()]


def test_the_load_runs_its_workers_and_none_outlives_it():
    load = subprocess.Popen([sys.executable, str(LOAD), "--workers", "2"], stdout=subprocess.PIPE, text=True)
    try:
        assert load.stdout.readline().startswith("cpu_load: 2 busy worker(s)")
        workers = _children(load.pid)
        assert len(workers) >= 2 and all(_alive(pid) for pid in workers)
        os.kill(load.pid, signal.SIGKILL)  # no clean-up of its own: the workers must notice
        load.wait(timeout=120)
        assert all(_ends(pid) for pid in workers), "a worker outlived the load that started it"
    finally:
        load.kill()


def test_the_load_refuses_a_workers_count_below_one():
    done = subprocess.run([sys.executable, str(LOAD), "--workers", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--workers must be at least 1; got 0" in done.stderr
