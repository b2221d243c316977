"""Every claim the book asserts, re-measured under further seeds: spread and whether it held.

    .venv/bin/python bench/robustness.py                    # seeds 0 1 2 3, every page with a claim
    .venv/bin/python bench/robustness.py --seeds 1 --pages book/06_training_problems.md
    .venv/bin/python bench/robustness.py --write            # also write ctxlib/data/robustness.json
    .venv/bin/python bench/robustness.py --write --pages book/05_finetuning.md   # rerun one page, update its entries

Each page with a ``claim(...)`` (``ctxlib.claims``) is executed in a fresh kernel once per seed,
with ``$CTXBOOK_SEED`` set (the page passes ``book_seed()`` to everything it trains or samples) and
``$CTXBOOK_CLAIMS`` naming the file its claims are appended to; under the bench a failing claim is
recorded, not raised. The table then gives, per claim: its margin, the gap (how far the comparison
is from failing) at the lowest and highest seed, the noise (the gap's range over the seeds,
``ctxlib.claims.Spread.noise``), and at how many seeds it held. A claim passes when it held at every seed and
its margin is at least the noise. ``--write`` stores the record the pages show beside each claim
and ``tests/test_claims.py`` checks. About 35 minutes for four seeds on two cores; models are cached
per seed under ``--cache``, so a second run only re-executes the pages.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import yaml
from nbclient import NotebookClient

from ctxlib.claims import Claim, Spread

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "ctxlib" / "data" / "robustness.json"


def pages_with_claims() -> list[Path]:
    """The book's pages in reading order (``_toc.yml``) that assert at least one claim."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections", []) + entry.get("chapters", []))

    walk(toc.get("parts", []))
    pages = [ROOT / f"{name}.md" for name in files]
    return [page for page in pages if page.is_file() and "claim(" in page.read_text(encoding="utf-8")]


def run_page(page: Path, seed: int, record: Path, cache: Path) -> float:
    """Execute ``page`` at ``seed`` in a fresh kernel; its claims are appended to ``record``."""
    os.environ.update({"CTXBOOK_SEED": str(seed), "CTXBOOK_CLAIMS": str(record), "CTXBOOK_CACHE": str(cache),
                       "HF_HUB_OFFLINE": "1"})
    notebook = jupytext.read(page)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(page.parent)}}).execute()
    return time.perf_counter() - start


def summarise(lines: list[dict], pages: dict[str, str]) -> dict[str, dict]:
    """One entry per claim name: its seeds, scores and gaps, in seed order."""
    claims: dict[str, dict] = {}
    for line in sorted(lines, key=lambda line: line["seed"]):
        entry = claims.setdefault(line["name"], {"page": pages[line["name"]], "relation": line["relation"],
                                                 "margin": line["margin"], "asserted": line["asserted"],
                                                 "seeds": [], "left": [], "right": [], "gaps": []})
        if (entry["relation"], entry["margin"], entry["asserted"]) != (line["relation"], line["margin"],
                                                                         line["asserted"]):
            raise SystemExit(f"claim {line['name']!r} changed its relation, margin or assertion between seeds")
        if line["seed"] in entry["seeds"]:
            raise SystemExit(f"claim {line['name']!r} is made twice at seed {line['seed']}: names must be unique")
        gap = Claim(**line).gap
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
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--pages", type=Path, nargs="+", help="pages to run (default: every page with a claim)")
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / "robustness-cache")
    parser.add_argument("--write", action="store_true", help=f"write {RECORD.relative_to(ROOT)}")
    args = parser.parse_args()
    pages = [page.resolve() for page in args.pages] if args.pages else pages_with_claims()
    if args.write and (sorted(args.seeds) != sorted(set(args.seeds)) or len(args.seeds) < 4):
        parser.error("--write needs at least four distinct seeds")
    kept: dict[str, dict] = {}
    if args.write and args.pages:
        # Rerunning some pages updates their entries in the record; the others stay as measured.
        if not RECORD.exists():
            parser.error(f"--write with --pages updates {RECORD.relative_to(ROOT)}, which does not exist yet: "
                         "run every page first")
        old = json.loads(RECORD.read_text(encoding="utf-8"))
        if sorted(old["seeds"]) != sorted(args.seeds):
            parser.error(f"the record was measured at seeds {old['seeds']}; rerun its pages at the same seeds")
        rerun = {page.stem for page in pages}
        kept = {name: entry for name, entry in old["claims"].items() if entry["page"] not in rerun}
    lines: list[dict] = []
    page_of: dict[str, str] = {}
    # The claims each run records are kept beside the trained models, so that a problem found
    # when they are summarised costs a fix and a rerun of the pages, not the training.
    records = args.cache / "claims"
    records.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for page in pages:
            record = records / f"{page.stem}-{seed}.jsonl"
            record.unlink(missing_ok=True)
            seconds = run_page(page, seed, record, args.cache)
            found = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
            print(f"seed {seed}  {page.name:34s} {seconds:6.1f} s  {len(found)} claims", flush=True)
            for line in found:
                page_of[line["name"]] = page.stem
            lines += found
    claims = summarise(lines, page_of)
    bad = 0
    print(f"\n{'claim':70s} {'margin':>7s} {'gap min':>8s} {'gap max':>8s} {'noise':>7s}  held  verdict")
    for name, entry in claims.items():
        spread = Spread.of(entry)
        result = verdict(entry, args.seeds)
        bad += result not in ("ok", "shown (not asserted)")
        print(f"{entry['page'][:16] + ': ' + name:70.70s} {spread.margin:7.3g} {min(spread.gaps):8.3g} "
              f"{max(spread.gaps):8.3g} {spread.noise:7.3g}  {spread.held}/{len(spread.gaps)}   {result}")
    print(f"\n{len(claims)} claims on {len(pages)} pages at seeds {args.seeds}: {len(claims) - bad} pass, {bad} do not")
    if args.write:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        text = json.dumps({"seeds": sorted(args.seeds), "commit": commit, "claims": {**kept, **claims}},
                          indent=1) + "\n"
        partial = RECORD.with_name(f".{RECORD.name}.{os.getpid()}")
        partial.write_text(text, encoding="utf-8")
        partial.replace(RECORD)
        print(f"written {RECORD.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
