#!/usr/bin/env bash
# Command 1: set up and build the whole book, executing every chapter, then print the build
# report (per-chapter execution time against the 90 s budget, the whole build against 10 min).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/tools/setup.sh"
cd "$ROOT"
# What the chapters train is cached under _build, so this build, like CI's, starts cold.
export CTXBOOK_CACHE="${CTXBOOK_CACHE:-$ROOT/_build/cache}"
# The explorers' static form: computed here, drawn by Vega in the page with no kernel
# (ctxlib.viz.static_view). A reader's kernel, without this variable, gets the live form.
export CTXBOOK_EXPLORERS=static
# First, before anything runs: every figure the pages read from a record (the claims' seed
# ranges, the exercise solutions' figures) was measured on the code the pages run now.
python tools/records.py --check
rm -rf _build
start=$(date +%s)
# Every chapter executed, two kernels at a time (one thread each, each forked from a process that
# has imported torch and the rest once: tools/forked_kernels.py), into the build's cache.
python tools/execute_chapters.py
# -W: a warning fails the build; -n: every cross-reference must resolve.
jupyter-book build . -W -n --keep-going
end=$(date +%s)
python tools/build_report.py --total-seconds $((end - start))
echo "== the book is in $ROOT/_build/html/index.html"
