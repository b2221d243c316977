"""Keep every core of this machine busy until stopped: the load `tools/test.sh --under-load` runs
beside the whole suite, to show that no verdict depends on the machine being quiet.

    python tools/cpu_load.py            # one busy process per core, until interrupted
    python tools/cpu_load.py --workers 1

Each worker alternates one-thread matrix products (the floating-point units and caches the book's
models use) with pure-Python arithmetic (the interpreter work of a package install beside it), at
the same priority as the tests. A worker ends by itself when the process that started the load
is gone, so an interrupted run leaves nothing spinning.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time


def _busy(parent: int) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy as np  # after OMP_NUM_THREADS: one thread per worker, one worker per core

    rng = np.random.default_rng(0)
    a, b, product = rng.standard_normal((3, 256, 256), dtype=np.float32)
    while os.getppid() == parent:
        for _ in range(50):
            np.matmul(a, b, out=product)
        total = 0
        for i in range(200_000):
            total += i * i


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="busy processes to run (default: one per core)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1; got {args.workers}")
    parent, starter = os.getpid(), os.getppid()
    # fork, whatever the platform's default: each worker's parent must be this process, which is
    # how it knows to stop (under forkserver, Python 3.14's default, it would be the server).
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_busy, args=(parent,), daemon=True) for _ in range(args.workers)]
    for worker in workers:
        worker.start()
    print(f"cpu_load: {args.workers} busy worker(s) beside the tests (pid {parent})", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # daemon workers are ended on exit
    try:
        # Until stopped, or until the process that started the load is gone (a killed test run).
        while os.getppid() == starter and any(worker.is_alive() for worker in workers):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
