"""This machine's matrix-product speeds, fp32 and bf16, quiet and beside a CPU load: why the
book reads whether a processor has bf16 units from what it reports, and never from a race.

    python bench/precision.py [--repeats 5]

Prints what the processor reports (``has_bf16_units``), then ``matmul_speed`` measured alone and
with ``tools/cpu_load.py`` keeping every core busy. A race between the two timings ("is bf16 at
least half fp32's speed?") reads the processor right when the machine is quiet and may read it
wrong when it is not; the reported units are the same either way.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ctxlib.training.precision import has_bf16_units, matmul_speed, processor_name

LOAD = Path(__file__).resolve().parents[1] / "tools" / "cpu_load.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timings of each kind per measurement")
    args = parser.parse_args()
    print(f"{processor_name()}: reports bf16 matrix units: {has_bf16_units()}")
    speeds = {"quiet": matmul_speed(repeats=args.repeats)}
    load = subprocess.Popen([sys.executable, str(LOAD)], stdout=subprocess.PIPE, text=True)
    try:
        load.stdout.readline()  # "cpu_load: N busy worker(s) ...", once its workers have started
        speeds["every core busy"] = matmul_speed(repeats=args.repeats)
    finally:
        load.terminate()
        load.wait()
    for name, speed in speeds.items():
        print(f"  {name:16s} one-thread {speed.size} × {speed.size}: fp32 {speed.fp32_gflops:6.1f} GFLOPS, "
              f"bf16 {speed.bf16_gflops:6.1f} GFLOPS, bf16 / fp32 {speed.bf16_speedup:5.2f}")
    quiet, busy = speeds.values()
    print(f"  fp32 beside the load: {busy.fp32_gflops / quiet.fp32_gflops:.2f}× its quiet speed")


if __name__ == "__main__":
    main()
