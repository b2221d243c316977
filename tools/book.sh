#!/usr/bin/env bash
# Command 1: set up and build the whole book, executing every chapter, then print the build
# report (per-chapter execution time against the 90 s budget, the whole build against 10 min).
#   bash tools/book.sh          # on a fresh clone: everything; after an edit: only what it changed
#   bash tools/book.sh --cold   # empty _build first (its notebooks, its trained models): what CI and
#                               # the budget's "whole book cold" measure
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COLD=0
for argument in "$@"; do
  case "$argument" in
    --cold) COLD=1 ;;
    *) echo "tools/book.sh: unknown argument '$argument' (allowed: --cold)" >&2; exit 2 ;;
  esac
done
source "$ROOT/tools/setup.sh"
cd "$ROOT"
# What the chapters train is cached under _build, so a --cold build, like CI's, trains everything.
export CTXBOOK_CACHE="${CTXBOOK_CACHE:-$ROOT/_build/cache}"
# The explorers' static form: computed here, drawn by Vega in the page with no kernel
# (ctxlib.viz.static_view). A reader's kernel, without this variable, gets the live form.
export CTXBOOK_EXPLORERS=static
# First, before anything runs: every figure the pages read from a record (the claims' seed
# ranges, the exercise solutions' figures) was measured on the code the pages run now.
python tools/records.py --check
if [ "$COLD" = 1 ]; then rm -rf _build; fi
start=$(date +%s)
# The chapters executed, two kernels at a time (one thread each, each forked from a process that
# has imported torch and the rest once: tools/forked_kernels.py), into the build's cache: every
# chapter on a cold build, otherwise only those whose code, or the ctxlib code and data it
# reads, changed since they were executed (the others' notebooks are kept).
python tools/execute_chapters.py
# -W: a warning fails the build; -n: every cross-reference must resolve. Sphinx itself rereads
# only the pages changed since the last build (execute_chapters.py marks a page it re-executed).
jupyter-book build . -W -n --keep-going
end=$(date +%s)
if [ "$COLD" = 1 ]; then
  python tools/build_report.py --total-seconds $((end - start)) --cold
else
  python tools/build_report.py --total-seconds $((end - start))
fi
echo "== the book is in $ROOT/_build/html/index.html"
