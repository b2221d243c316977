"""Peak memory and wall time of each chapter in a fresh kernel, cold and warm, against Binder's 2 GB.

    python bench/chapter_memory.py                         # every notebook page of _toc.yml (~20 min)
    python bench/chapter_memory.py book/01_polysemy.md ... # some chapters
    python bench/chapter_memory.py --json memory.json      # also write the table as JSON

Each chapter runs twice, each time in a fresh kernel, with the book build's engine
(tools/run_chapter.py: jupytext reads it, nbclient executes it in book/):

* **cold**: ``CTXBOOK_CACHE`` is a new empty folder, so the chapter trains everything it uses (the
  worst case: a reader who opens this chapter first on an image without the trained cache);
* **warm**: the same folder, now holding what the cold pass trained: what a reader gets on Binder,
  whose image binder/postBuild filled by executing every chapter once.

Memory is the resident set (RSS) of the kernel and every process it started, summed, sampled
every 20 ms; the peak reported is the largest sum, or the kernel's own high-water mark (VmHWM in
/proc/<pid>/status, which no sampling interval can miss) where that is larger. mybinder.org caps a
session's container at 2 GB; the limit covers the Jupyter server too, which is not counted here.
Run on a quiet machine: other processes slow the chapters, though not their memory. Exit status 1
if a chapter failed or went over the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from ctxlib.training.precision import this_machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from run_chapter import CELL_TIMEOUT_S, CHAPTER_BUDGET_S, execute_chapter  # noqa: E402
from toc import notebook_pages  # noqa: E402

BINDER_LIMIT_MB = 2000.0  # mybinder.org: 2 GB per session, read as 10^9 bytes (the stricter reading)
SAMPLE_S = 0.02
MB = 1e6


def _high_water_mark(pid: int) -> int:
    """The process's peak RSS in bytes so far (Linux; 0 where /proc has no such line)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory:
    """Watches one process tree from a thread: ``peak`` is the largest summed RSS seen, in bytes."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int) -> None:
        self._thread = threading.Thread(target=self._sample, args=(pid,), daemon=True)
        self._thread.start()

    def _sample(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
        except psutil.NoSuchProcess:
            return
        while not self._stop.is_set():
            try:
                processes = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0
            for process in processes:
                try:
                    total += process.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
            self.peak = max(self.peak, total, _high_water_mark(pid))
            self._stop.wait(SAMPLE_S)

    def stop(self) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.peak


@dataclass
class Run:
    seconds: float
    peak_mb: float
    error: str = ""


def _reason(exc: Exception) -> str:
    """One line: the exception a cell raised (nbclient's CellExecutionError carries its name and
    value), else the first line of the error (a cell timeout, a dead kernel)."""
    if getattr(exc, "ename", None):
        return f"{exc.ename}: {exc.evalue}"[:120]
    first = next((line.strip() for line in str(exc).splitlines() if line.strip(" -")), "")
    return f"{type(exc).__name__}: {first}"[:120]


def run_once(chapter: Path, cache: Path, timeout: int) -> Run:
    """Execute ``chapter`` once in a fresh kernel with ``cache`` as the training cache."""
    os.environ["CTXBOOK_CACHE"] = str(cache)
    memory = PeakMemory()
    start = time.perf_counter()
    try:
        _, seconds = execute_chapter(chapter, timeout, on_kernel_start=memory.watch)
        error = ""
    except Exception as exc:  # a failed chapter is a row of the table, not the end of the run
        seconds, error = time.perf_counter() - start, _reason(exc)
    return Run(seconds, memory.stop() / MB, error)


def measure(chapters: list[Path], timeout: int) -> dict[str, dict[str, Run]]:
    """Cold then warm, per chapter, each chapter with its own cache folder."""
    results = {}
    for chapter in chapters:
        with tempfile.TemporaryDirectory(prefix="ctxbook-memory-") as cache:
            cold = run_once(chapter, Path(cache), timeout)
            warm = run_once(chapter, Path(cache), timeout)
        results[chapter.as_posix()] = {"cold": cold, "warm": warm}
        print(f"  {chapter.as_posix():40s} cold {cold.seconds:6.1f} s {cold.peak_mb:6.0f} MB   "
              f"warm {warm.seconds:6.1f} s {warm.peak_mb:6.0f} MB", file=sys.stderr, flush=True)
    return results


def table(results: dict[str, dict[str, Run]]) -> str:
    lines = [this_machine(), f"{'chapter':40s} {'cold s':>7s} {'cold MB':>8s} {'warm s':>7s} {'warm MB':>8s}  "
             f"of {BINDER_LIMIT_MB:.0f} MB   cold of {CHAPTER_BUDGET_S:.0f} s"]
    for chapter, runs in results.items():
        cold, warm = runs["cold"], runs["warm"]
        peak = max(cold.peak_mb, warm.peak_mb)
        verdict = "FAILED: " + (cold.error or warm.error) if cold.error or warm.error else (
            f"{peak / BINDER_LIMIT_MB:4.0%}" + ("  OVER" if peak > BINDER_LIMIT_MB else ""))
        budget = f"{cold.seconds / CHAPTER_BUDGET_S:4.0%}" + ("  OVER" if cold.seconds > CHAPTER_BUDGET_S else "")
        lines.append(f"{chapter:40s} {cold.seconds:7.1f} {cold.peak_mb:8.0f} {warm.seconds:7.1f} "
                     f"{warm.peak_mb:8.0f}  {verdict:12s} {budget}")
    worst = max(results.items(), key=lambda item: max(r.peak_mb for r in item[1].values()))
    worst_mb = max(r.peak_mb for r in worst[1].values())
    lines.append(f"largest peak: {worst_mb:.0f} MB ({worst[0]}), {worst_mb / BINDER_LIMIT_MB:.0%} of "
                 f"mybinder.org's {BINDER_LIMIT_MB:.0f} MB; warm total {sum(r['warm'].seconds for r in results.values()):.0f} s, "
                 f"cold total {sum(r['cold'].seconds for r in results.values()):.0f} s on {os.cpu_count()} cores")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="default: every notebook page of _toc.yml")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds allowed per cell (the build's)")
    args = parser.parse_args()
    chapters = args.chapters or [ROOT / page for page in notebook_pages()]
    missing = [str(chapter) for chapter in chapters if not chapter.is_file()]
    if missing:
        parser.error(f"no such chapter: {', '.join(missing)}")
    chapters = [chapter.resolve().relative_to(ROOT) for chapter in chapters]
    os.chdir(ROOT)
    results = measure(chapters, args.timeout)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({chapter: {kind: asdict(run) for kind, run in runs.items()}
                                         for chapter, runs in results.items()}, indent=2))
    bad = [r for runs in results.values() for r in runs.values() if r.error or r.peak_mb > BINDER_LIMIT_MB]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
