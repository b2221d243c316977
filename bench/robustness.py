"""Every claim the book asserts, re-measured under further seeds: spread and whether it held.

    .venv/bin/python bench/robustness.py                    # seeds 0 1 2 3, every page with a claim
    .venv/bin/python bench/robustness.py --seeds 1 --pages book/06_training_problems.md
    .venv/bin/python bench/robustness.py --write            # also write ctxlib/data/robustness.json
    .venv/bin/python bench/robustness.py --stale --write    # remeasure only the stale pages, update their entries

Each page with a ``claim(...)`` (``ctxlib.claims``) is executed once per seed as the build
executes it (``tools/execute_chapters.py``: a fresh kernel of one thread, two at a time), with
``$CTXBOOK_SEED`` set (the page passes ``book_seed()`` to everything it trains or samples) and
``$CTXBOOK_CLAIMS`` naming the file its claims are appended to (kept under ``--cache`` with the
digest of the code that ran, so that an invocation stopped halfway loses only the runs it had
not finished: the next one reruns only those, and pages whose code changed since); under the bench a failing claim is
recorded, not raised. The table then gives, per claim: its margin, the gap (how far the comparison
is from failing) at the lowest and highest seed, the noise (the gap's range over the seeds,
``ctxlib.claims.Spread.noise``), and at how many seeds it held. A claim passes when it held at every seed and
its margin is at least the noise. ``--write`` stores the record the pages show beside each claim
and ``tests/test_claims.py`` checks, each entry with the digest of the page's code it measured
and the machine that ran it (``tools/records.py``, ``ctxlib.records``); ``--stale`` runs only the
pages whose entries ``tools/records.py --check`` reports. About 35 minutes for every page at four
seeds on two cores; models are cached per seed under ``--cache``, so a second run only
re-executes the pages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat

from ctxlib._files import atomic_path
from ctxlib.claims import RECORD_ENV, SEED_ENV, Claim, Spread
from ctxlib.records import ROBUSTNESS, read_record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from execute_chapters import FIRST, SECONDS, execute_page  # noqa: E402
from records import claim_pages, code_digest, page_digest, stale_robustness  # noqa: E402

RECORD = ROOT / "ctxlib" / "data" / ROBUSTNESS


def run_page(page: Path, seed: int, record: Path, cache: Path) -> tuple[float, str]:
    """Execute ``page`` at ``seed`` as the build does; its claims are appended to ``record``.
    Returns the seconds and the digest of the code cells that ran (``tools/records.py``), read
    from the notebook executed, not from the page afterwards (which may have changed since)."""
    env = {SEED_ENV: str(seed), RECORD_ENV: str(record), "CTXBOOK_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    _, text, _, seconds, error = execute_page(page.relative_to(ROOT), timeout=900, allow_errors=False, env=env)
    if error is not None:
        raise RuntimeError(f"{page.name} at seed {seed} failed:\n{error}")
    cells = [cell.source for cell in nbformat.reads(text, 4).cells if cell.cell_type == "code"]
    return seconds, code_digest(cells)


def order(pages: list[Path], seeds: list[int]) -> list[tuple[Path, int]]:
    """Every (page, seed) run, seed by seed, the pages that train models others load first and
    then the longest, as the build orders them (a page waiting on another's model waits on its
    lock, so any order gives the same record)."""
    def rank(page: Path) -> tuple[int, int]:
        name = str(page.relative_to(ROOT))
        return (FIRST.index(name) if name in FIRST else len(FIRST), -SECONDS.get(name, 0))
    return [(page, seed) for seed in seeds for page in sorted(pages, key=rank)]


def summarise(lines: list[dict], pages: dict[str, tuple[Path, str]]) -> dict[str, dict]:
    """One entry per claim name: its seeds, scores and gaps in seed order, the digest of the page
    code that made it and the machine that measured it."""
    claims: dict[str, dict] = {}
    for line in sorted(lines, key=lambda line: line["seed"]):
        page, digest = pages[line["name"]]
        entry = claims.setdefault(line["name"], {"page": page.stem, "digest": digest,
                                                 "machine": line["machine"], "relation": line["relation"],
                                                 "margin": line["margin"], "asserted": line["asserted"],
                                                 "seeds": [], "left": [], "right": [], "gaps": []})
        if (entry["relation"], entry["margin"], entry["asserted"]) != (line["relation"], line["margin"],
                                                                         line["asserted"]):
            raise SystemExit(f"claim {line['name']!r} changed its relation, margin or assertion between seeds")
        if entry["digest"] != digest:
            raise SystemExit(f"page {page.name} changed between its runs at two seeds: rerun it")
        if entry["machine"] != line["machine"]:
            raise SystemExit(f"claim {line['name']!r} was measured on two machines: {entry['machine']} and "
                             f"{line['machine']}")
        if line["seed"] in entry["seeds"]:
            raise SystemExit(f"claim {line['name']!r} is made twice at seed {line['seed']}: names must be unique")
        gap = Claim(**{key: value for key, value in line.items() if key != "machine"}).gap
        entry["seeds"].append(line["seed"])
        entry["left"].append(line["left"])
        entry["right"].append(line["right"])
        entry["gaps"].append(gap)
    return claims


def verdict(entry: dict, seeds: list[int]) -> str:
    spread = Spread.of(entry)
    if sorted(entry["seeds"]) != sorted(seeds):
        return f"ran at seeds {entry['seeds']} only"
    if not entry["asserted"]:
        return "shown (not asserted)"
    failed = [seed for seed, gap in zip(spread.seeds, spread.gaps) if gap <= spread.margin]
    if failed:
        return f"FAILS at seed {', '.join(map(str, failed))}"
    if spread.margin < spread.noise:
        return f"MARGIN {spread.margin:.3g} BELOW NOISE {spread.noise:.3g}"
    return "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", help="default: 0 1 2 3, or the record's under --stale")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--pages", type=Path, nargs="+", help="pages to run (default: every page with a claim)")
    which.add_argument("--stale", action="store_true", help="only the pages whose entries tools/records.py reports")
    parser.add_argument("--jobs", type=int, default=2, help="pages at once, one thread each (default 2)")
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / "cache",
                        help="the trained models, keyed on their seeds (default: the build's, so seed 0 is trained once)")
    parser.add_argument("--write", action="store_true", help=f"write {RECORD.relative_to(ROOT)}")
    parser.add_argument("--fresh", action="store_true",
                        help="run every page again, even where an earlier invocation's run of the same code is kept")
    args = parser.parse_args()
    old = read_record(ROBUSTNESS)
    seeds = args.seeds or (old["seeds"] if args.stale and old else [0, 1, 2, 3])
    if args.stale:
        stale = stale_robustness()
        pages = [page for page in claim_pages() if page.stem in stale]
        for stem, reasons in stale.items():
            print(f"stale: {stem}: {len(reasons)} entries ({reasons[0]})")
    else:
        pages = [page.resolve() for page in args.pages] if args.pages else claim_pages()
    if args.write and (sorted(seeds) != sorted(set(seeds)) or len(seeds) < 4):
        parser.error("--write needs at least four distinct seeds")
    kept: dict[str, dict] = {}
    if args.write and (args.pages or args.stale):
        # Rerunning some pages updates their entries in the record; the others stay as measured.
        if not old:
            parser.error(f"--write with --pages or --stale updates {RECORD.relative_to(ROOT)}, which does not "
                         "exist yet: run every page first")
        if sorted(old["seeds"]) != sorted(seeds):
            parser.error(f"the record was measured at seeds {old['seeds']}; rerun its pages at the same seeds")
        rerun = {page.stem for page in pages}
        known = {page.stem for page in claim_pages()}
        kept = {name: entry for name, entry in old["claims"].items()
                if entry["page"] not in rerun and entry["page"] in known}
    if not pages:
        print("nothing to run: every entry is measured on the code it describes")
        return 0
    lines: list[dict] = []
    page_of: dict[str, tuple[Path, str]] = {}
    # The claims each run records are kept beside the trained models, so that a problem found
    # when they are summarised costs a fix and a rerun of the pages, not the training.
    records = args.cache / "claims"
    records.mkdir(parents=True, exist_ok=True)
    runs, done = [], []
    for page, seed in order(pages, seeds):
        # A run whose claims and digest are kept from an earlier invocation (stopped, or failed
        # later) is used again if the page's code is still what it ran: long work is not lost.
        kept_digest = records / f"{page.stem}-{seed}.digest"
        if not args.fresh and kept_digest.is_file() and kept_digest.read_text() == page_digest(page):
            done.append((page, seed, kept_digest.read_text()))
        else:
            kept_digest.unlink(missing_ok=True)
            (records / f"{page.stem}-{seed}.jsonl").unlink(missing_ok=True)
            runs.append((page, seed))
    if done:
        print(f"{len(done)} runs kept from an earlier invocation on the same code; {len(runs)} to run")
    start = time.perf_counter()

    def collect(page: Path, seed: int, digest: str) -> list[dict]:
        record = records / f"{page.stem}-{seed}.jsonl"
        found = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
        for line in found:
            page_of.setdefault(line["name"], (page, digest))
        return found

    for page, seed, digest in done:
        lines += collect(page, seed, digest)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_page, page, seed, records / f"{page.stem}-{seed}.jsonl", args.cache): (page, seed)
                   for page, seed in runs}
        for future in as_completed(futures):
            page, seed = futures[future]
            seconds, digest = future.result()
            (records / f"{page.stem}-{seed}.digest").write_text(digest)
            found = collect(page, seed, digest)
            lines += found
            print(f"seed {seed}  {page.name:34s} {seconds:6.1f} s  {len(found)} claims "
                  f"({time.perf_counter() - start:.0f} s since the start)", flush=True)
    claims = summarise(lines, page_of)
    bad = 0
    print(f"\n{'claim':70s} {'margin':>7s} {'gap min':>8s} {'gap max':>8s} {'noise':>7s}  held  verdict")
    for name, entry in claims.items():
        spread = Spread.of(entry)
        result = verdict(entry, seeds)
        bad += result not in ("ok", "shown (not asserted)")
        print(f"{entry['page'][:16] + ': ' + name:70.70s} {spread.margin:7.3g} {min(spread.gaps):8.3g} "
              f"{max(spread.gaps):8.3g} {spread.noise:7.3g}  {spread.held}/{len(spread.gaps)}   {result}")
    print(f"\n{len(claims)} claims on {len(pages)} pages at seeds {seeds}: {len(claims) - bad} pass, {bad} do not")
    if args.write:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        text = json.dumps({"seeds": sorted(seeds), "commit": commit, "claims": {**kept, **claims}},
                          indent=1) + "\n"
        with atomic_path(RECORD) as partial:
            partial.write_text(text, encoding="utf-8")
        print(f"written {RECORD.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
