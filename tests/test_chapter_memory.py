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

# A parent holding 150 MB that starts a child holding 250 MB; both hold theirs at the same time
# for half a second. bytearray(b"\x01") * n writes every byte, so every page is resident.
TREE = textwrap.dedent("""
    import subprocess, sys, time
    mine = bytearray(b"\\x01") * (150 * 10**6)
    child = subprocess.Popen([sys.executable, "-c",
        "import time; x = bytearray(b'\\\\x01') * (250 * 10**6); print('held', flush=True); time.sleep(0.5)"],
        stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    child.wait()
""")


def _baseline_mb() -> float:
    """The resident memory of an idle Python, which the two processes also carry."""
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    time.sleep(0.3)
    rss = psutil.Process(idle.pid).memory_info().rss / MB
    idle.wait()
    return rss


def test_the_peak_is_the_sum_over_the_process_tree():
    baseline = _baseline_mb()
    process = subprocess.Popen([sys.executable, "-c", TREE])
    meter = PeakMemory()
    meter.watch(process.pid)
    process.wait()
    peak = meter.stop() / MB
    # Both allocations at once, plus two interpreters; a meter that saw only the parent (or only
    # the largest process) would read under 260 MB + 2 interpreters.
    assert 400 <= peak <= 400 + 2 * baseline + 40, (peak, baseline)
