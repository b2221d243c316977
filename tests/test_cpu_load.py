"""tools/cpu_load.py, the load `tools/test.sh --under-load` runs beside the suite: it loads every
worker it promises, and leaves none spinning when the process that started it is killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_forked_kernels import _alive, _ends

LOAD = Path(__file__).resolve().parents[1] / "tools" / "cpu_load.py"


def _cpu_ticks(pid: int) -> int:
    """User-mode CPU time the process has used, in clock ticks (/proc/PID/stat, field 14)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
        return int(file.read().split(")")[-1].split()[11])


def _works(pid: int, patience: float = 120) -> bool:
    """Whether process ``pid`` uses CPU time. ``patience`` bounds the wait for one that never does:
    a busy worker shows its first ticks within a second, a loaded machine may take longer."""
    deadline, start = time.monotonic() + patience, _cpu_ticks(pid)
    while time.monotonic() < deadline and _cpu_ticks(pid) == start:
        time.sleep(0.1)
    return _cpu_ticks(pid) > start


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as file:
        return [int(child) for child in file.read().split()]


def test_the_load_runs_its_workers_and_none_outlives_it():
    load = subprocess.Popen([sys.executable, str(LOAD), "--workers", "2"], stdout=subprocess.PIPE, text=True)
    try:
        assert load.stdout.readline().startswith("cpu_load: 2 busy worker(s)")
        workers = _children(load.pid)
        assert len(workers) == 2 and all(_alive(pid) and _works(pid) for pid in workers)
        os.kill(load.pid, signal.SIGKILL)  # no clean-up of its own: the workers must notice
        load.wait(timeout=120)
        assert all(_ends(pid) for pid in workers), "a worker outlived the load that started it"
    finally:
        load.kill()


def test_the_load_refuses_a_workers_count_below_one():
    done = subprocess.run([sys.executable, str(LOAD), "--workers", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--workers must be at least 1; got 0" in done.stderr


def test_the_load_ends_when_the_run_that_started_it_is_killed():
    """tools/test.sh stops the load when it exits; killed outright it cannot, so the load watches it."""
    starter = subprocess.Popen(["bash", "-c", f"'{sys.executable}' '{LOAD}' --workers 1 & wait"],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = starter.stdout.readline()
        load = int(line.rsplit("pid ", 1)[1].rstrip(")\n"))
        workers = _children(load)
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait(timeout=120)
        assert _ends(load) and all(_ends(pid) for pid in workers), "the load outlived the run that started it"
    finally:
        starter.kill()
