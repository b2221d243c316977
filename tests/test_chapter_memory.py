"""bench/chapter_memory.py's meter: the peak it reports is the memory a whole process tree held."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from chapter_memory import MB, PeakMemory  # noqa: E402

# A parent holding 150 MB that starts a child holding 250 MB; both hold theirs until the test
# releases them (a line on the parent's stdin, passed on to the child), so the meter sees both at
# once however slowly a busy machine schedules it. bytearray(b"\x01") * n writes every byte, so
# every page is resident.
TREE = textwrap.dedent("""
    import subprocess, sys
    mine = bytearray(b"\\x01") * (150 * 10**6)
    child = subprocess.Popen([sys.executable, "-c",
        "import sys; x = bytearray(b'\\\\x01') * (250 * 10**6); print('held', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    print("held", flush=True)
    child.communicate(sys.stdin.readline())
""")
# How long the test waits for the meter to see both allocations before it lets the processes end
# (and fails): a bound on a broken meter, not a speed; a working one sees them in milliseconds.
PATIENCE_S = 120


def _baseline_mb() -> float:
    """The resident memory of an idle Python, which the two processes also carry."""
    idle = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.readline()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    idle.stdout.readline()
    rss = psutil.Process(idle.pid).memory_info().rss / MB
    idle.communicate("\n")
    return rss


def test_the_peak_is_the_sum_over_the_process_tree():
    baseline = _baseline_mb()
    process = subprocess.Popen([sys.executable, "-c", TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    meter = PeakMemory()
    meter.watch(process.pid)
    assert process.stdout.readline().strip() == "held"
    deadline = time.monotonic() + PATIENCE_S
    while meter.peak < 400 * MB and time.monotonic() < deadline:
        time.sleep(0.05)
    process.communicate("\n")
    peak = meter.stop() / MB
    # Both allocations at once, plus two interpreters; a meter that saw only the parent (or only
    # the largest process) would read under 260 MB + 2 interpreters.
    assert 400 <= peak <= 400 + 2 * baseline + 40, (peak, baseline)
