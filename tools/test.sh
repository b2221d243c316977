#!/usr/bin/env bash
# Command 2: set up and run every test: the unit, parity and bad-input tests, the book build
# with warnings as errors, and the browser check of every rendered page in headless Chromium.
#   bash tools/test.sh                 # as CI runs it
#   bash tools/test.sh --under-load    # the same beside a busy process on every core (tools/cpu_load.py):
#                                      # no verdict may depend on the machine being quiet
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
UNDER_LOAD=0
for argument in "$@"; do
  case "$argument" in
    --under-load) UNDER_LOAD=1 ;;
    *) echo "tools/test.sh: unknown argument '$argument' (allowed: --under-load)" >&2; exit 2 ;;
  esac
done
source "$ROOT/tools/setup.sh"
cd "$ROOT"

# The browser check needs Debian's Chromium (never a browser download). Install it where apt
# can; say loudly where it cannot (the check then skips, except under CI where it fails).
if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing Debian's chromium for the browser check"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "!! NO APT OR NOT ROOT: CHROMIUM CANNOT BE INSTALLED; THE BROWSER CHECK WILL SKIP !!"
  fi
fi

# tests/test_wordpiece_js.py runs the page's WordPiece tokenizer with node (Debian's nodejs).
if ! command -v node >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing Debian's nodejs for the JavaScript tokenizer test"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null
  else
    echo "!! NO APT OR NOT ROOT: NODE CANNOT BE INSTALLED; tests/test_wordpiece_js.py WILL FAIL !!"
  fi
fi

# A run "under load" that lost its load would pass for the wrong reason: check it before each stage.
load_is_running() {
  if [ "$UNDER_LOAD" = 1 ] && ! kill -0 "$LOAD_PID" 2>/dev/null; then
    echo "!! tools/cpu_load.py is no longer running: this run is not under load" >&2
    exit 1
  fi
}
if [ "$UNDER_LOAD" = 1 ]; then
  python tools/cpu_load.py &
  LOAD_PID=$!
  trap 'kill "$LOAD_PID" 2>/dev/null || true' EXIT
  sleep 1
fi

load_is_running
echo "== 1/3 unit, parity and bad-input tests"
python -m pytest tests --ignore=tests/browser -q
load_is_running
echo "== 2/3 building the book (every chapter executed, warnings are errors)"
bash tools/book.sh --cold
load_is_running
echo "== 3/3 browser check of the rendered pages"
python -m pytest tests/browser -q
load_is_running
